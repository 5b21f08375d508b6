"""From the fixes rules propose (node replacements, `ProposedFix`) to the
fixes findings carry (text edits).

A rule proposes a fix as LibCST changes: "this node becomes that node" (or
several statements, or nothing). The engine turns each change into one text
edit only when the finding is finalized: it rewrites the module-level
statement that holds the node, generates that statement's code again with
LibCST (so everything the change does not touch keeps the user's
formatting and comments), and keeps the part that differs. Only files with
findings pay for it, and only for the statement around each change.
"""

from __future__ import annotations

from typing import Mapping, Sequence

import libcst as cst
from libcst.metadata import CodeRange

from ddplint.analysis.rewrite import DELETE_LINES, ProposedFix, Replacement
from ddplint.model import Edit, Fix
from ddplint.textedit import LineIndex, disjoint

def resolve_fix(
    proposed: ProposedFix, module: cst.Module, text: str, positions: Mapping[cst.CSTNode, CodeRange]
) -> Fix | None:
    """The text edits of `proposed`, or None when a change cannot be placed."""
    lines = LineIndex(text)
    edits = []
    for old, new in proposed.changes:
        edit = _edit(old, new, module, text, positions, lines)
        if edit is None:
            return None
        edits.append(edit)
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
) -> Edit | None:
    if new is DELETE_LINES:
        return _delete_lines(old, text, positions, lines)
    top = _top_statement(old, module, positions)
    if top is None or old not in positions:
        return None
    before = module.code_for_node(top)
    start = lines.offset(positions[top].start.line - _lines_before_header(top, before, module), 1)
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
    prefix = _common_prefix(before, after)
    suffix = _common_suffix(before[prefix:], after[prefix:])
    removed_end = len(before) - suffix
    content = after[prefix : len(after) - suffix]
    end = min(start + removed_end, len(text))
    return Edit(lines.span(start + prefix, end), content)


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


def _lines_before_header(top: cst.BaseStatement, code: str, module: cst.Module) -> int:
    """How many lines of `top`'s code (comments, blank lines, decorators)
    come before the line where its range starts."""
    bare = top.with_changes(leading_lines=())
    if isinstance(bare, (cst.FunctionDef, cst.ClassDef)):
        bare = bare.with_changes(decorators=(), lines_after_decorators=())
    return code[: len(code) - len(module.code_for_node(bare))].count("\n")


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
