"""From the fixes rules propose (node replacements, `ProposedFix`) to the
fixes findings carry (text edits).

A rule proposes a fix as LibCST changes: "this node becomes that node" (or
several statements, or nothing). The engine turns each change into one text
edit only when the finding is finalized: it rewrites the innermost statement
that holds the node (a line, or a compound statement whose header holds
it), generates that statement's code again with LibCST and its line's
indentation (so everything the change does not touch keeps the user's
formatting and comments), checks that the code before the change is the
text where the statement stands, and keeps the part that differs; where it
is not, the module-level statement around it is generated instead. Only
files with findings pay for it, and only for the statement around each
change.
"""

from __future__ import annotations

import difflib
import io
import tokenize
from dataclasses import dataclass
from typing import Callable, Mapping, Sequence

import libcst as cst
from libcst._nodes.internal import CodegenState
from libcst.metadata import CodeRange

from ddplint.analysis.rewrite import DELETE_LINES, ProposedFix, Replacement
from ddplint.engine.positions import HeldBy, Positions
from ddplint.model import Edit, Fix
from ddplint.textedit import LineIndex, disjoint

def resolve_fix(
    proposed: ProposedFix, module: cst.Module, text: str, positions: Mapping[cst.CSTNode, CodeRange]
) -> Fix | None:
    """The text edits of `proposed`, or None when a change cannot be placed."""
    lines = LineIndex(text)
    edits = []
    for old, new in proposed.changes:
        found = _edit(old, new, module, text, positions, lines)
        if found is None:
            return None
        edits += found
    if not disjoint(lines.range(e.span) for e in edits):
        return None
    return Fix(proposed.title, tuple(edits), proposed.applicability)


def _edit(
    old: cst.CSTNode,
    new: Replacement,
    module: cst.Module,
    text: str,
    positions: Mapping[cst.CSTNode, CodeRange],
    lines: LineIndex,
) -> list[Edit] | None:
    if new is DELETE_LINES:
        deleted = _delete_lines(old, text, positions, lines)
        return None if deleted is None else [deleted]
    held = positions.statement_of(old) if isinstance(positions, Positions) else None
    if held is not None:
        edit = _statement_edit(old, new, held, module, text, lines)
        if edit is not None:
            return [edit]
    return _module_statement_edit(old, new, module, text, positions, lines)


def _statement_edit(
    old: cst.CSTNode, new: Replacement, held: HeldBy, module: cst.Module, text: str, lines: LineIndex
) -> Edit | None:
    """The edit of the innermost statement that holds `old`, generated with
    its line's indentation: a line of a 5,000-line class, not the class. None
    when its code is not where the text has it (then the module-level
    statement is generated instead)."""
    statement = held.statement

    def render(node: cst.CSTNode | cst.FlattenSentinel) -> str:
        nodes = node.nodes if isinstance(node, cst.FlattenSentinel) else (node,)
        state = CodegenState(
            default_indent=module.default_indent,
            default_newline=module.default_newline,
            indent_tokens=[held.indent] if held.indent else [],
        )
        for each in nodes:
            if held.is_elif:
                each._codegen(state, is_elif=True)  # type: ignore[call-arg]
            else:
                each._codegen(state)
        return "".join(state.tokens)

    if statement is old:
        if held.is_elif or not isinstance(new, (cst.CSTNode, cst.FlattenSentinel)):
            return None
        changed: cst.CSTNode | cst.FlattenSentinel = new
    else:
        replacer = _Replacer(old, new)
        changed = statement.visit(replacer)  # type: ignore[assignment]
        if not replacer.done or not isinstance(changed, cst.CSTNode):
            return None
    before = render(statement)
    start = lines.offset(held.line - _lines_before_header(statement, render), 1)
    if not text.startswith(before.rstrip("\r\n"), start):
        return None
    return _differing(before, render(changed), start, text, lines)


def _module_statement_edit(
    old: cst.CSTNode,
    new: Replacement,
    module: cst.Module,
    text: str,
    positions: Mapping[cst.CSTNode, CodeRange],
    lines: LineIndex,
) -> list[Edit] | None:
    """The edit of the module-level statement that holds `old`, generated again."""
    top = _top_statement(old, module, positions)
    if top is None or old not in positions:
        return None
    before = module.code_for_node(top)
    start = lines.offset(positions[top].start.line - _lines_before_header(top, module.code_for_node), 1)
    if not text.startswith(before.rstrip("\r\n"), start):
        return None  # the statement's code is not where we think it is: propose nothing
    if top is old:
        after = _code(new, module)
    else:
        replacer = _Replacer(old, new)
        changed = top.visit(replacer)
        if not replacer.done:
            return None
        after = _code(changed, module)
    edit = _differing(before, after, start, text, lines)
    return None if edit is None else [edit]


def _differing(before: str, after: str, start: int, text: str, lines: LineIndex) -> Edit | None:
    """The edit from `before` (the code at `start` in `text`) to `after`:
    the part that differs, keeping the comments it would remove (None when
    it cannot)."""
    prefix = _common_prefix(before, after)
    suffix = _common_suffix(before[prefix:], after[prefix:])
    removed_end = len(before) - suffix
    if _loses_comments(before, prefix, removed_end):
        kept = _keeping_comments(before, after)
        if kept is None:
            return None  # no way to fix it without losing a comment: propose nothing
        prefix = _common_prefix(before, kept)
        suffix = _common_suffix(before[prefix:], kept[prefix:])
        removed_end, after = len(before) - suffix, kept
    content = after[prefix : len(after) - suffix]
    return Edit(lines.span(start + prefix, min(start + removed_end, len(text))), content)


@dataclass(frozen=True)
class _Token:
    """A token of a statement's code, owning the text between the previous
    token and itself: `text` is that gap and then the token's own `string`."""

    type: int
    start: int
    end: int
    row: int
    text: str
    gap: int

    @property
    def string(self) -> str:
        return self.text[self.gap :]

    @property
    def code(self) -> bool:
        return self.type not in _NOT_CODE


_NOT_CODE = frozenset(
    {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
)


def _tokens(code: str) -> list[_Token] | None:
    """`code`'s tokens, every character owned by exactly one; None if it does not tokenize."""
    starts = [0]
    for line in code.splitlines(keepends=True):
        starts.append(starts[-1] + len(line))

    def offset(row: int, column: int) -> int:
        return min(starts[min(row, len(starts)) - 1] + column, len(code))

    found: list[_Token] = []
    cursor = 0
    try:
        for token in tokenize.generate_tokens(io.StringIO(code).readline):
            begin = min(max(offset(*token.start), cursor), len(code))
            end = max(offset(*token.end), begin)
            found.append(_Token(token.type, cursor, end, token.start[0], code[cursor:end], begin - cursor))
            cursor = end
    except (tokenize.TokenError, SyntaxError):
        return None
    if cursor < len(code):
        row = found[-1].row if found else 1
        found.append(_Token(tokenize.ENDMARKER, cursor, len(code), row, code[cursor:], len(code) - cursor))
    return found


def _doomed(comment: _Token, tokens: list[_Token], removed: Callable[[int], bool]) -> bool:
    """Whether a comment goes with its line: the line holds code, and all of it is removed."""
    code = [i for i, t in enumerate(tokens) if t.row == comment.row and t.code]
    return bool(code) and all(removed(i) for i in code)


def _loses_comments(before: str, start: int, end: int) -> bool:
    """Whether replacing `before[start:end]` removes a comment that is to
    stay: one on a line that keeps code, or on a line of its own."""
    if "#" not in before[start:end]:
        return False
    tokens = _tokens(before)
    if tokens is None:
        return True
    for token in tokens:
        if token.type != tokenize.COMMENT or token.end <= start or token.end - len(token.string) >= end:
            continue
        if not _doomed(token, tokens, lambda i: tokens[i].end - len(tokens[i].string) >= start and tokens[i].end <= end):
            return True
    return False


def _indent(code: str, token: _Token) -> str:
    """The indentation of the line `token`'s own string starts on."""
    line_start = code.rfind("\n", 0, token.end - len(token.string)) + 1
    line = code[line_start:]
    return line[: len(line) - len(line.lstrip(" \t"))]


def _keeping_comments(before: str, after: str) -> str | None:
    """`after`, but with every comment of `before` on its line, token by
    token: only the comments of lines whose code is all removed go with it.
    None when the change moves or adds comments (then keeping them all in
    place is a guess)."""
    old, new = _tokens(before), _tokens(after)
    if old is None or new is None:
        return None
    keys = lambda tokens: [(t.type, t.string) for t in tokens]  # noqa: E731
    opcodes = difflib.SequenceMatcher(None, keys(old), keys(new), autojunk=False).get_opcodes()
    removed = [False] * len(old)
    for tag, i1, i2, j1, j2 in opcodes:
        if tag != "equal":
            if any(t.type == tokenize.COMMENT for t in new[j1:j2]):
                return None
            removed[i1:i2] = [True] * (i2 - i1)
    out: list[str] = []

    def emit(text: str, token: _Token | None = None) -> None:
        """Append `text`; at the start of a line kept from `before`, with that line's indentation."""
        if token is not None and out and out[-1].endswith("\n") and "\n" not in text:
            text = _indent(before, token) + text.lstrip(" \t")
        out.append(text)

    for tag, i1, i2, j1, j2 in opcodes:
        if tag == "equal":
            for i, j in zip(range(i1, i2), range(j1, j2)):
                emit(new[j].text, old[i])
            continue
        insertion = "".join(t.text for t in new[j1:j2])
        pending_newline = False
        for i in range(i1, i2):
            token = old[i]
            if token.code and insertion:
                emit(insertion, token)
                insertion = ""
            if token.type == tokenize.COMMENT and not _doomed(token, old, lambda k: removed[k]):
                emit(token.text, token)
                pending_newline = True
            elif pending_newline and token.type in (tokenize.NL, tokenize.NEWLINE):
                emit(token.text)
                pending_newline = False
        if insertion:
            emit(insertion, old[i1] if i1 < len(old) else None)
    return "".join(out)


def _delete_lines(
    statement: cst.CSTNode, text: str, positions: Mapping[cst.CSTNode, CodeRange], lines: LineIndex
) -> Edit | None:
    """The edit that removes the whole lines `statement` stands on."""
    where = positions.get(statement)
    if where is None:
        return None
    start = lines.offset(where.start.line, 1)
    if text[start : lines.offset(where.start.line, where.start.column + 1)].strip():
        return None  # something else starts the line
    end_line = where.end.line + 1
    end = lines.offset(end_line, 1) if end_line <= len(lines.starts) else len(text)
    return Edit(lines.span(start, end), "")


def _lines_before_header(top: cst.CSTNode, render: Callable[[cst.CSTNode], str]) -> int:
    """How many lines of `top`'s code (blank and comment lines, decorators)
    come before the line where its range starts."""
    count = len(getattr(top, "leading_lines", ()))
    for decorator in getattr(top, "decorators", ()):
        count += render(decorator).count("\n")
    return count + len(getattr(top, "lines_after_decorators", ()))


def _top_statement(
    node: cst.CSTNode, module: cst.Module, positions: Mapping[cst.CSTNode, CodeRange]
) -> cst.BaseStatement | None:
    """The module-level statement whose range holds `node`'s range."""
    target = positions.get(node)
    if target is None:
        return None
    body: Sequence[cst.BaseStatement] = module.body
    where = (target.start.line, target.start.column)
    low, high = 0, len(body)
    while low < high:  # the last statement that starts at or before the node
        middle = (low + high) // 2
        if _start(body[middle], positions) <= where:
            low = middle + 1
        else:
            high = middle
    return body[low - 1] if low else None


def _start(statement: cst.BaseStatement, positions: Mapping[cst.CSTNode, CodeRange]) -> tuple[int, int]:
    """Where a statement starts (its first decorator: LibCST's range starts at `def`)."""
    decorators = getattr(statement, "decorators", ())
    start = positions[decorators[0] if decorators else statement].start
    return start.line, start.column


def _code(node: Replacement, module: cst.Module) -> str:
    if isinstance(node, cst.FlattenSentinel):
        return "".join(module.code_for_node(n) for n in node.nodes)
    return module.code_for_node(node)


class _Replacer(cst.CSTTransformer):
    """Replaces one node, found by identity, and stops descending past it."""

    def __init__(self, old: cst.CSTNode, new: Replacement) -> None:
        super().__init__()
        self.old, self.new, self.done = old, new, False

    def on_visit(self, node: cst.CSTNode) -> bool:
        return not self.done

    def on_leave(self, original: cst.CSTNode, updated: cst.CSTNode) -> Replacement:  # type: ignore[override]
        if original is self.old:
            self.done = True
            return self.new
        return updated


def _common_prefix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    i = 0
    while i < limit and a[i] == b[i]:
        i += 1
    return i


def _common_suffix(a: str, b: str) -> int:
    limit = min(len(a), len(b))
    i = 0
    while i < limit and a[-1 - i] == b[-1 - i]:
        i += 1
    return i
