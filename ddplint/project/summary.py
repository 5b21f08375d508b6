"""A module's summary: what other modules may need to know about it.

Facts that hinge on imported names keep those names as the module spells
them (``.dist.get_rank``, ``utils.misc.reduce``); `ProjectIndex` resolves
them. Imports, re-exports and definition lines come from CPython's own
tree, which the syntax check builds anyway, so a module that LibCST never
parses (an ``__init__.py`` of re-exports) still has a summary.
"""

from __future__ import annotations

import ast
import re
import sys
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, Iterator, Mapping

if TYPE_CHECKING:
    from ddplint.project.facts import Fact


#: The facts that quiet output on the other ranks (`Fact` fields), which `ModuleSummary.quieted` records asked.
QUIETING = ("silences_logging", "silences_print")


@dataclass(frozen=True)
class Symbol:
    """One top-level function, class or variable of a module.

    Each fact is known locally (`rank`, `collective`, `silences_print`,
    `dataset`) or hinges on imported names (`*_via`): it holds if one of
    those does. `collective_via` gives each imported callee with how the
    call is shown in a message and the literals it passes
    (`ddplint.analysis.calls.LiteralArguments`: a callee's switch may turn
    the call off); `switch` is the parameter that turns `collective` off.
    """

    line: int = 0
    rank: bool = False
    rank_via: tuple[str, ...] = ()
    collective: tuple[str, ...] = ()
    collective_via: tuple[tuple[str, str, tuple[tuple[int | str, bool | None], ...] | None], ...] = ()
    switch: tuple[str, int, bool, bool | None] | None = None
    silences_print: bool = False
    silences_via: tuple[str, ...] = ()
    dataset: str | None = None
    dataset_via: tuple[str, ...] = ()
    #: Per-rank randomness that using it brings: a Dataset whose per-sample
    #: code draws random numbers (augmentation), a function that draws noise
    #: or steps a model in train mode (also through the imported functions in
    #: `silences_via`, every imported name its calls reach), a trainer class.
    random: bool = False
    #: Calling it configures `logging` per rank: a handler added or a level set
    #: under a rank test (stdout on the main process only); also through `silences_via`.
    silences_logging: bool = False
    #: A class deriving from a Hugging Face trainer (through `dataset_via`,
    #: its imported bases, when one of them does).
    hf_trainer: bool = False
    #: The ranks its result is true on (`RankAnalysis.return_picks`): a rank test of any name.
    picks: str | None = None
    #: The parameters it only calls, under a rank guard (`ExecutionModel.handed_runs`):
    #: (position or name, a `Runs` member's name), what it runs a function handed there on.
    handed: tuple[tuple[int | str, str], ...] = ()

    @property
    def empty(self) -> bool:
        return not (
            self.rank or self.rank_via or self.collective or self.collective_via or self.silences_print
            or self.silences_via or self.dataset or self.dataset_via or self.random or self.silences_logging or self.hf_trainer
            or self.picks or self.handed
        )  # fmt: skip


@dataclass(frozen=True)
class ModuleSummary:
    """The facts of a module's top-level names, its imports and re-exports.

    `aliases` maps each name a top-level import binds to what it imports
    (relative imports keep their dots); `stars` are the modules it
    star-imports; `exports` is ``__all__`` when the module defines it as a
    literal.
    """

    symbols: Mapping[str, Symbol] = field(default_factory=dict)
    aliases: Mapping[str, str] = field(default_factory=dict)
    stars: tuple[str, ...] = ()
    exports: tuple[str, ...] | None = None
    #: Attribute chains read from imported names (``dist.get_rank`` after
    #: ``import deepspeed.comm as dist`` -> ``deepspeed.comm.get_rank``),
    #: so a module import brings only the facts the module uses. None: not
    #: read yet (few modules import one that has facts; `ProjectIndex` asks).
    uses: tuple[str, ...] | None = ()
    #: The imported names whose rank dependence the module's lint asked
    #: about, and those it calls or derives classes from: facts about other
    #: names cannot change its findings. None when unknown (facts about any
    #: name its text uses could).
    consulted: tuple[str, ...] | None = None
    #: For each rule left out that facts could enable, the requirements its
    #: text did not meet (`Rule.facts_replace`: DDP001 without a collective,
    #: a rank test, or both): facts about names its text uses that meet all
    #: of one rule's could change its findings, whatever `consulted` holds.
    unrun: tuple[tuple[str, ...], ...] = ()
    called: tuple[str, ...] = ()
    #: Which of the facts that quiet output (`silences_print`, `silences_logging`)
    #: its lint asked about (`Outputs.silenced`): facts of the others about
    #: the names it calls change nothing. Unknown: both.
    quieted: tuple[str, ...] = QUIETING
    #: The called names whose being a collective helper would change a finding.
    collective_called: tuple[str, ...] = ()
    #: The module's top-level functions (by name) and the methods of its
    #: top-level classes (``Class.method``), facts or not: a function that
    #: other modules call per rank runs per rank (`FileFacts.callers`).
    defined: tuple[str, ...] = ()
    #: Imported names the module calls on many ranks with rank-independent
    #: arguments, as (name, entry, runs): who makes the call (a `Runs`
    #: member's name), where the module's own code decides (entry ``""``) or
    #: at most, when other modules call its `entry` on every rank
    #: (`ExecutionModel.runs_by_entry`). None: to be filled in by the walk (a
    #: module that imports linted ones).
    per_rank_calls: tuple[tuple[str, str, str], ...] | None = ()
    #: The entries (top-level functions, ``Class.method``) whose callers in
    #: other modules would change an answer its lint gave (`unknown_top_level`).
    #: None: not known (a module not linted as distributed code: any caller
    #: fact may change its findings).
    runs_unknown: tuple[str, ...] | None = None
    #: Whether its own text shows distributed code: else its module-level code
    #: runs per rank only while no other module calls its functions.
    distributed_by_text: bool = True
    #: Top-level functions the module does not call whose own body shows that
    #: every rank runs them (`ExecutionModel.body_entries`): judged as such
    #: unless another module imports or calls them.
    entries: tuple[str, ...] = ()
    #: The line of each top-level definition (``Class.method`` too), for the
    #: facts' locations: read from CPython's tree with the imports, and handed
    #: to the file's re-lints with them (`ProjectRole.layout`).
    lines: Mapping[str, int] = field(default_factory=dict)

    def needs_callers(self, callers: Mapping[str, str], before: Mapping[str, str]) -> bool:
        """Whether who runs its functions (`FileFacts.callers`, changed from
        `before`) could change its findings (not the per-rank calls it
        reports: those hold who calls its entries as a variable)."""
        changed = {name for name in {*callers, *before} if callers.get(name) != before.get(name)}
        if not changed:
            return False
        if self.runs_unknown is None or self.per_rank_calls is None:
            return True
        if not self.distributed_by_text and bool(callers) != bool(before):
            return True  # its module-level code runs per rank now, or no longer
        # An entry that reaches a function its lint found unknown, or one whose
        # runners came from the callers' facts it had then (`before`): those answers change.
        return bool(changed & (set(self.runs_unknown) | set(before)))

    def layout(self) -> ModuleSummary:
        """What `imports_summary` read of the module (its imports, re-exports,
        definitions and their lines), without what its lint added."""
        return ModuleSummary(
            aliases=self.aliases, stars=self.stars, exports=self.exports, defined=self.defined, lines=self.lines
        )

    def with_symbols(self, symbols: Mapping[str, Symbol]) -> ModuleSummary:
        return replace(self, symbols={k: v for k, v in symbols.items() if not v.empty})

    def shows_the_same(self, other: ModuleSummary) -> bool:
        """Whether other modules see the same facts in `other`: the same
        symbols, imports and re-exports (what its own lint consulted aside)."""
        return (self.symbols, self.aliases, self.stars, self.exports, self.defined, self.per_rank_calls) == (
            other.symbols, other.aliases, other.stars, other.exports, other.defined, other.per_rank_calls
        )

    def needs(self, facts: Mapping[str, Fact], text: Callable[[], str | None] | None = None) -> bool:
        """Whether `facts` (about the names this module imports) could change
        its findings. When its lint did not record what it consulted, facts
        about names its `text` (read on demand) never uses change nothing."""
        if self.consulted is None:
            return self._may_use_any(facts, text)
        if self.unrun and self._enable_unrun(facts, text):
            return True
        return any(
            (fact.rank and name in self.consulted)
            or (bool(fact.collective) and name in self.collective_called)
            or (self._asked_of_calls(fact) and name in self.called)
            for name, fact in facts.items()
        )

    def _asked_of_calls(self, fact: Fact) -> bool:
        """Whether its lint asked a question `fact` answers about the names it calls."""
        return bool(
            fact.dataset or fact.random or fact.hf_trainer or fact.handed
            or any(getattr(fact, kind) for kind in self.quieted)
        )  # fmt: skip

    def _may_use_any(self, facts: Mapping[str, Fact], text: Callable[[], str | None] | None) -> bool:
        """Whether `text` (read on demand; None: unknown) may use a name `facts` are about."""
        if not facts:
            return False
        source = text() if text is not None else None
        return source is None or any(self._may_use(source, name) for name in facts)

    def _enable_unrun(self, facts: Mapping[str, Fact], text: Callable[[], str | None] | None) -> bool:
        """Whether `facts` (all it has: a lint that left rules out had none)
        may meet every requirement one of those rules missed."""
        return any(
            all(self._may_use_any({n: f for n, f in facts.items() if f.stands_for(need)}, text) for need in missed)
            for missed in self.unrun
        )

    def _may_use(self, text: str, key: str) -> bool:
        """Whether `text` may use the imported name that facts key as `key`
        beyond importing it. Every name a module's lint can ask about starts
        with a name an import binds: the name a ``from`` import binds
        (``.meters.RunningMean``), or one it binds before an attribute
        (``.meters.RunningMean.sync`` through instances, ``utils.is_primary``
        after ``import utils``), or a name a star import binds unseen
        (``.dist.barrier`` after ``from .dist import *``). That name must
        occur again (comments and strings count, to err on the side of
        re-linting; its entry in a literal ``__all__`` does not); a key of no
        import's name may be used."""
        exact = [name for name, imported in self.aliases.items() if imported == key]
        if exact:
            return any(self._occurs_again(name, text) for name in exact)
        owners = [name for name, imported in self.aliases.items() if key.startswith(imported + ".")]
        starred = [key[len(star) + 1 :].split(".", 1)[0] for star in self.stars if key.startswith(star + ".")]
        starred = [symbol for symbol in starred if symbol.isidentifier()]
        if not owners and not starred:
            return True
        return any(self._occurs_again(name, text) for name in owners) or any(
            re.search(rf"\b{re.escape(symbol)}\b", text) is not None for symbol in starred
        )

    def _occurs_again(self, name: str, text: str) -> bool:
        """Whether the name an import binds occurs in `text` beyond that
        import and its entry in ``__all__`` (a re-export: no lint asks about it)."""
        listed = self.exports is not None and name in self.exports
        return len(re.findall(rf"\b{re.escape(name)}\b", text)) > 1 + listed

    def to_json(self) -> dict[str, Any]:
        return {
            "symbols": {name: _symbol_json(s) for name, s in self.symbols.items()},
            "aliases": dict(self.aliases),
            "stars": list(self.stars),
            "exports": None if self.exports is None else list(self.exports),
            "uses": None if self.uses is None else list(self.uses),
            "consulted": None if self.consulted is None else list(self.consulted),
            "unrun": [list(missed) for missed in self.unrun],
            "called": list(self.called),
            "quieted": list(self.quieted),
            "collective_called": list(self.collective_called),
            "defined": list(self.defined),
            "per_rank_calls": None if self.per_rank_calls is None else [list(c) for c in self.per_rank_calls],
            "runs_unknown": None if self.runs_unknown is None else list(self.runs_unknown),
            "distributed_by_text": self.distributed_by_text,
            "entries": list(self.entries),
            "lines": dict(self.lines),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ModuleSummary:
        symbols = {name: _symbol_from_json(s) for name, s in data["symbols"].items()}
        exports = data["exports"]
        aliases, stars, consulted, uses = dict(data["aliases"]), tuple(data["stars"]), data["consulted"], data["uses"]
        calls = data.get("per_rank_calls", ())
        return cls(
            symbols, aliases, stars, None if exports is None else tuple(exports), None if uses is None else tuple(uses),
            None if consulted is None else tuple(consulted), tuple(tuple(m) for m in data.get("unrun", ())),
            tuple(data["called"]), tuple(data.get("quieted", QUIETING)),
            tuple(data["collective_called"]),
            tuple(data.get("defined", ())), None if calls is None else tuple((q, e, runs) for q, e, runs in calls),
            None if (unknown := data.get("runs_unknown")) is None else tuple(unknown),
            data.get("distributed_by_text", True),
            tuple(data.get("entries", ())),
            dict(data.get("lines", {})),
        )  # fmt: skip


def _symbol_json(symbol: Symbol) -> dict[str, Any]:
    return {k: v for k, v in symbol.__dict__.items() if v != getattr(_DEFAULT, k)}


def _symbol_from_json(data: Mapping[str, Any]) -> Symbol:
    values = dict(data)
    for key in ("rank_via", "collective", "silences_via", "dataset_via"):
        if key in values:
            values[key] = tuple(values[key])
    if "collective_via" in values:
        values["collective_via"] = tuple(
            (q, shown, None if arguments is None else tuple(tuple(a) for a in arguments))
            for q, shown, arguments in values["collective_via"]
        )  # fmt: skip
    if values.get("switch") is not None:
        values["switch"] = tuple(values["switch"])
    if "handed" in values:
        values["handed"] = tuple((slot, runs) for slot, runs in values["handed"])
    return Symbol(**values)


_DEFAULT = Symbol()


def imports_summary(tree: ast.Module) -> ModuleSummary:
    """The imports, re-exports and ``__all__`` of a module, and the line of
    each top-level definition, from CPython's tree."""
    aliases: dict[str, str] = {}
    stars: list[str] = []
    exports: tuple[str, ...] | None = None
    lines: dict[str, int] = {}
    defined: list[str] = []
    for node in _top_level(tree.body):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.asname:
                    aliases[alias.asname] = alias.name
                else:
                    head = alias.name.split(".", 1)[0]
                    aliases[head] = head
        elif isinstance(node, ast.ImportFrom):
            module = "." * node.level + (node.module or "")
            prefix = module if module.endswith(".") else module + "."
            for alias in node.names:
                if alias.name == "*":
                    stars.append(module)
                else:
                    aliases[alias.asname or alias.name] = prefix + alias.name
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            lines.setdefault(node.name, node.lineno)
            if not isinstance(node, ast.ClassDef):
                defined.append(node.name)
            else:  # its methods, as `Class.method`: other modules call them through instances
                for member in node.body:
                    if isinstance(member, (ast.FunctionDef, ast.AsyncFunctionDef)):
                        lines.setdefault(f"{node.name}.{member.name}", member.lineno)
                        defined.append(f"{node.name}.{member.name}")
        elif isinstance(node, ast.Assign) and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
            exports = _string_list(node.value)
    return ModuleSummary(
        aliases=aliases, stars=tuple(stars), exports=exports, defined=tuple(dict.fromkeys(defined)), lines=lines
    )


def attribute_uses(text: str, aliases: Mapping[str, str]) -> tuple[str, ...]:
    """The attribute chains the module's text reads from its imported names,
    as qualified names (one regular-expression pass; comments may add a few)."""
    names = sorted(
        (b for b in aliases if b.isidentifier() and aliases[b].split(".", 1)[0] not in EXTERNAL_ROOTS and b + "." in text),
        key=len, reverse=True,
    )  # fmt: skip - the substring test keeps the per-file pattern small (compiling it is most of the cost)
    if not names:
        return ()
    pattern = re.compile(r"(?<![\w.])(" + "|".join(map(re.escape, names)) + r")((?:\.\w+)+)")
    return tuple(sorted({aliases[m.group(1)] + m.group(2) for m in pattern.finditer(text)}))


#: Import roots whose modules are never linted with the project.
EXTERNAL_ROOTS = frozenset(getattr(sys, "stdlib_module_names", ())) | {"torch", "numpy", "builtins"}


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """Top-level statements, including those in module-level if/try/with blocks."""
    for node in body:
        yield node
        if isinstance(node, (ast.If, ast.For, ast.While, ast.With)):
            yield from _top_level(node.body)
            yield from _top_level(getattr(node, "orelse", []))
        elif isinstance(node, ast.Try) or type(node).__name__ == "TryStar":
            yield from _top_level(node.body)
            for handler in node.handlers:
                yield from _top_level(handler.body)
            yield from _top_level(node.orelse)
            yield from _top_level(node.finalbody)


def _string_list(node: ast.expr) -> tuple[str, ...] | None:
    if isinstance(node, (ast.List, ast.Tuple)) and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts
    ):
        return tuple(e.value for e in node.elts)
    return None
