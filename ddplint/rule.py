"""The rule contract and the registry that rules join by being defined.

A rule is a class in the `ddplint.rules` package (the repository's `rules/`
directory) that subclasses `Rule` and sets `code`, `name`, `severity` and
`summary`. Its docstring is its documentation, in fixed Markdown sections
(see `REQUIRED_SECTIONS`); the same text is printed by `ddplint rule CODE`,
written to `docs/rules.md` and embedded in SARIF.

Rules visit LibCST nodes with ``visit_<Node>(self, node)`` and
``leave_<Node>(self, node)`` methods, exactly as LibCST visitors do, or ask
after the walk with ``check_<Node>(self, node, site)`` (and an optional
``trigger_<Node>(self, node)`` choosing the nodes; ddplint/engine/deferred.py)
when who runs the node matters. They
are not LibCST visitors: the engine runs every enabled rule in one traversal
and gives each a `FileContext` (``self.ctx``) holding the shared per-file
analyses. A fresh instance is made for every file, so instance attributes are
per-file state.

What a rule sees as ``self.ctx`` is the engine's `FileContext`: the file's
`SemanticModel` plus the sink for its findings.

This module imports neither LibCST nor the analyses: `ddplint rule` and
`ddplint doctor` load it without paying for them.
"""

from __future__ import annotations

import importlib
import inspect
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Callable, ClassVar, Union

from ddplint.config.settings import Settings
from ddplint.model import Fix, Related, Severity, Span

if TYPE_CHECKING:
    import libcst as cst

    from ddplint.analysis.rewrite import ProposedFix
    from ddplint.analysis.semantic import SemanticModel

    class RuleContext(SemanticModel):
        """What a rule sees as ``self.ctx``: the file's model plus the sink
        for its findings (`ddplint.engine.context.FileContext`)."""

        def report(self, rule: Rule, node: cst.CSTNode, message: Message, **options: object) -> None: ...

#: A finding's message, or a function of "where is this node" for messages
#: that name lines (positions are only known after the walk).
Message = Union[str, Callable[[Callable[["cst.CSTNode"], Span]], str]]

REQUIRED_SECTIONS = ("What it does", "Why is this bad?", "Example", "Use instead")
OPTIONAL_SECTIONS = ("Fix safety", "Options", "References")

_CODE_RE = re.compile(r"^DDP\d{3}$")
_NAME_RE = re.compile(r"^[a-z][a-z0-9]*(-[a-z0-9]+)*$")
_HEADING_RE = re.compile(r"^## (.+?)\s*$", re.MULTILINE)

_REGISTRY: dict[str, type[Rule]] = {}

#: The shared analyses a rule may require.
#: The shared analyses a rule may require (`analysis.semantic.OPTIONAL_ANALYSES`,
#: named here so that loading the catalogue loads no analysis: a test keeps them equal).
KNOWN_ANALYSES = frozenset({
    "rank", "loops", "data", "rank_kinds", "rank_zero", "outputs", "barriers", "amp", "devices", "models", "seeds",
    "randomness",
})  # fmt: skip


class RuleDefinitionError(TypeError):
    """A rule class is malformed (bad code, duplicate code, missing docs)."""


@dataclass(frozen=True)
class RuleDocs:
    """A rule's documentation, split into its sections (Markdown bodies)."""

    sections: dict[str, str]

    @classmethod
    def parse(cls, docstring: str, owner: str) -> RuleDocs:
        """Split ``## Heading`` sections; raise if a required one is missing."""
        text = inspect.cleandoc(docstring)
        parts = _HEADING_RE.split(text)
        sections = {parts[i]: parts[i + 1].strip() for i in range(1, len(parts) - 1, 2)}
        missing = [s for s in REQUIRED_SECTIONS if not sections.get(s)]
        unknown = [s for s in sections if s not in REQUIRED_SECTIONS + OPTIONAL_SECTIONS]
        if missing or unknown:
            raise RuleDefinitionError(
                f"{owner}: docstring sections missing {missing} / unknown {unknown}"
            )
        return cls(sections)

    def markdown(self) -> str:
        """All sections in canonical order, as Markdown."""
        order = REQUIRED_SECTIONS + OPTIONAL_SECTIONS
        return "\n\n".join(f"## {s}\n\n{self.sections[s]}" for s in order if s in self.sections)

    @property
    def what_it_does(self) -> str:
        """The first section, used as SARIF's ``fullDescription``."""
        return self.sections["What it does"]


@dataclass(frozen=True)
class PendingFinding:
    """A finding before positions are known (nodes, not lines)."""

    rule: type[Rule]
    node: cst.CSTNode
    statement: cst.CSTNode
    message: Message
    #: (node, why) in this file, or a `Related` location in another file.
    related: tuple[tuple[cst.CSTNode, str] | Related, ...]
    fix: Fix | ProposedFix | None
    #: A severity other than the rule's (a variant of the rule); the configured one still wins.
    severity: Severity | None = None


class Rule:
    """Base class of every static rule; subclasses register themselves."""

    code: ClassVar[str]
    name: ClassVar[str]
    severity: ClassVar[Severity]
    summary: ClassVar[str]
    #: Identifiers without which the rule cannot fire; a file containing none
    #: of the enabled rules' tokens is never given to LibCST. ``None``: always run.
    tokens: ClassVar[tuple[str, ...] | None] = None
    #: Substrings of which the file must also contain one (for DDP001: some
    #: rank test; the configured ``rank-names`` are added). ``None``: no such need.
    context_tokens: ClassVar[tuple[str, ...] | None] = None
    #: A regular expression the text must match as well, where the tokens
    #: occur in many files the rule cannot fire on (DDP013: an optimisation
    #: step called, not the word ``step``). Every match contains one of
    #: `context_tokens`, which are looked for first; the configured
    #: ``rank-names`` still meet the context alone. ``None``: the tokens suffice.
    context_pattern: ClassVar[str | None] = None
    #: Which of those requirements (``"tokens"``, ``"context_tokens"``) a fact
    #: about an imported helper can meet instead: for DDP001 a collective
    #: helper stands for the collective and a rank helper for the rank test.
    #: Only these are waived in a file that imports facts.
    facts_replace: ClassVar[frozenset[str]] = frozenset()
    #: Findings are kept only in modules in distributed context (SPEC §2).
    distributed_only: ClassVar[bool] = False
    #: Free-form tags for SARIF (``properties.tags``).
    tags: ClassVar[tuple[str, ...]] = ()
    #: Optional shared analyses the rule uses (``"rank"``); each runs once per file.
    requires: ClassVar[frozenset[str]] = frozenset()
    #: Preview rules run only with ``--preview`` (or ``preview = true``), or
    #: when selected by their exact code: their precision on the ecosystem
    #: check of real training repositories is below 0.9 (docs/ecosystem.md).
    preview: ClassVar[bool] = False
    #: Rules off by default run only when a selector names them (a code, a
    #: prefix or ``ALL``).
    default_enabled: ClassVar[bool] = True
    docs: ClassVar[RuleDocs]

    @classmethod
    def status(cls) -> str:
        """``preview``, ``stable`` or ``opt-in`` (stable, off by default)."""
        if cls.preview:
            return "preview"
        return "stable" if cls.default_enabled else "opt-in"

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        if "code" not in cls.__dict__:
            return  # an intermediate base class, not a rule
        _validate(cls)
        cls.docs = RuleDocs.parse(cls.__doc__ or "", cls.__qualname__)
        if cls.code in _REGISTRY and _REGISTRY[cls.code] is not cls:
            other = _REGISTRY[cls.code].__qualname__
            raise RuleDefinitionError(f"{cls.__qualname__}: code {cls.code} already used by {other}")
        _REGISTRY[cls.code] = cls

    def __init__(self, ctx: RuleContext) -> None:
        self.ctx = ctx

    def report(
        self,
        node: cst.CSTNode,
        message: Message,
        *,
        related: tuple[tuple[cst.CSTNode, str], ...] = (),
        fix: Fix | ProposedFix | None = None,
        statement: cst.CSTNode | None = None,
        preview: bool = False,
        severity: Severity | None = None,
    ) -> None:
        """Record a finding anchored at `node`; `related` pairs (node, why).

        `message` may be a function of a node-to-`Span` lookup, for messages
        that name other lines. From `finish()`, pass the saved `statement`.
        A `preview` finding (a variant of the rule still below the precision
        bar) is kept only when preview is on. `severity` marks a variant
        less (or more) severe than the rule; configuration still overrides it.
        """
        if preview and not self.ctx.settings.preview:
            return
        self.ctx.report(self, node, message, related=related, fix=fix, statement=statement, severity=severity)

    def finish(self) -> None:
        """Called once after the whole module was traversed."""


def _validate(cls: type[Rule]) -> None:
    where = cls.__qualname__
    if not _CODE_RE.match(cls.code):
        raise RuleDefinitionError(f"{where}: code {cls.code!r} is not of the form DDP000")
    if not _NAME_RE.match(getattr(cls, "name", "")):
        raise RuleDefinitionError(f"{where}: name must be kebab-case")
    if not isinstance(getattr(cls, "severity", None), Severity):
        raise RuleDefinitionError(f"{where}: severity must be a Severity")
    summary = getattr(cls, "summary", "")
    if not summary or "\n" in summary:
        raise RuleDefinitionError(f"{where}: summary must be one line")
    unknown = set(cls.requires) - KNOWN_ANALYSES
    if unknown:
        raise RuleDefinitionError(f"{where}: requires unknown analyses {sorted(unknown)} (known: {sorted(KNOWN_ANALYSES)})")
    if cls.context_pattern is not None:
        if not cls.context_tokens:
            raise RuleDefinitionError(f"{where}: context_pattern needs context_tokens (the substrings each match contains)")
        try:
            re.compile(cls.context_pattern)
        except re.error as exc:
            raise RuleDefinitionError(f"{where}: context_pattern is not a regular expression ({exc})") from None
    if not cls.facts_replace <= {"tokens", "context_tokens"}:
        raise RuleDefinitionError(f"{where}: facts_replace names requirements other than tokens, context_tokens")


def all_rules() -> tuple[type[Rule], ...]:
    """Every registered rule, ordered by code (imports the catalogue once)."""
    importlib.import_module("ddplint.rules")
    return tuple(_REGISTRY[code] for code in sorted(_REGISTRY))


def all_rules_settings() -> Settings:
    """Settings with every registered rule enabled, preview on, no overrides."""
    return Settings.enabling(rule.code for rule in all_rules())


def get_rule(code: str) -> type[Rule] | None:
    """The rule with this exact code, or None."""
    importlib.import_module("ddplint.rules")
    return _REGISTRY.get(code.upper())
