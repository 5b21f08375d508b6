"""DDP100 unused-noqa: the ``# noqa: DDPxxx`` directives that suppressed
nothing in this run, each with a fix that removes the unused codes (or the
whole directive when none is left).

Judged are only the DDP codes of rules enabled for the file in this run
(``# noqa: E501`` belongs to another tool, and a rule that did not run cannot
have needed its directive); a blanket ``# noqa`` is not judged (it may serve
another tool), and neither is a code that covers DDP100 itself.
"""

from __future__ import annotations

from typing import Iterable

from ddplint.config.settings import Settings
from ddplint.engine.findings import make_finding
from ddplint.engine.suppression import (
    Comment,
    Suppressions,
    directive_codes,
    raw_directives,
    source_comments,
)
from ddplint.model import Edit, Finding, Fix, Span
from ddplint.rule import get_rule

UNUSED_NOQA = "DDP100"


def unused_noqa(
    path: str, text: str, settings: Settings, used: Iterable[tuple[int, str]] = ()
) -> tuple[Finding, ...]:
    """The DDP100 findings of a file whose findings used the (line, code)
    directives in `used` (none: nothing was suppressed)."""
    if UNUSED_NOQA not in settings.rules or not _names_ddplint_codes(text):
        return ()
    rule = get_rule(UNUSED_NOQA)
    assert rule is not None
    judged = sorted(code for code in settings.rules if code != UNUSED_NOQA)
    used_codes: dict[int, set[str]] = {}
    for line, code in used:
        used_codes.setdefault(line, set()).add(code)
    comments = source_comments(text)
    own = Suppressions.from_comments((c.line, c.text) for c in comments)  # DDP100 is silenced as any rule is
    lines = text.splitlines()
    findings = []
    for comment in comments:
        parsed = directive_codes(comment.text)
        if parsed is None or parsed[1] is None:
            continue
        match, codes = parsed
        fired = used_codes.get(comment.line, set())
        unused = [
            code
            for code in codes
            if code.startswith("DDP")
            and not UNUSED_NOQA.startswith(code)
            and any(c.startswith(code) for c in judged)
            and not any(c.startswith(code) for c in fired)
        ]
        if not unused:
            continue
        start = comment.column + match.start()
        span = Span(comment.line, start + 1, comment.line, comment.column + match.end() + 1)
        shown = ", ".join(unused)
        message = f"`# noqa` for {shown} suppressed nothing: no finding of {'it' if len(unused) == 1 else 'them'} on this line in this run"
        fix = Fix(f"Remove the unused `# noqa` code{'s' if len(unused) > 1 else ''} {shown}", (_removal(comment, match, codes, unused, lines),))
        suppressed = own.match(UNUSED_NOQA, (comment.line,))
        findings.append(make_finding(rule, settings, message, path, span, lines, fix=fix, suppressed=suppressed))
    return tuple(findings)


def _names_ddplint_codes(text: str) -> bool:
    """Whether a directive of `text` may name a DDP code (the only ones judged),
    read from the raw text (which holds every directive a comment does)."""
    return any(codes and any(code.startswith("DDP") for code in codes) for codes in raw_directives(text))


def _removal(comment: Comment, match, codes: tuple[str, ...], unused: list[str], lines: list[str]) -> Edit:
    kept = [c for c in codes if c not in unused]
    line = comment.line
    if kept:  # rewrite the codes, keep the directive
        start, end = comment.column + match.start("codes"), comment.column + match.end("codes")
        return Edit(Span(line, start + 1, line, end + 1), ", ".join(kept))
    rest = comment.text[match.end():]
    before = comment.text[: match.start()]
    if before.strip():  # after other comment text (a type-ignore first): drop the directive and the blanks before it
        start = comment.column + len(before.rstrip())
        return Edit(Span(line, start + 1, line, comment.column + match.end() + 1), "")
    if rest.strip():  # a directive followed by its reason: the words stay a comment
        return Edit(Span(line, comment.column + 1, line, comment.column + match.end() + 1), "#")
    text = lines[line - 1] if line <= len(lines) else ""
    start = len(text[: comment.column].rstrip())  # with the blanks before the comment
    return Edit(Span(line, start + 1, line, comment.column + len(comment.text) + 1), "")
