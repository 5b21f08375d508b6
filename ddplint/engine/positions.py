"""Source positions, resolved only for the nodes a report needs.

LibCST's `PositionProvider` re-generates the whole module's code to learn
where each node is, about twice the cost of the parse, and a file with one
finding needs the places of a handful of nodes. `Positions` finds them one
statement at a time instead: CPython's own tree (cheap next to LibCST's)
says where each statement starts, and only the statement that holds a node
is generated again, with LibCST's own position-tracking state, its lines
shifted to where CPython puts the statement. The answers are LibCST's
syntactic ranges, the same as `PositionProvider`'s (a test compares them
node for node over the fixtures).
"""

from __future__ import annotations

import ast
import re
import warnings
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Callable, Iterator, Mapping

import libcst as cst
from libcst.metadata import CodeRange, MetadataWrapper, PositionProvider
from libcst.metadata.position_provider import PositionProvidingCodegenState
from libcst._position import CodePosition

from ddplint.analysis.tree import child_fields, children, descendants, every_field
from ddplint.model import Span


def resolve_positions(module: cst.Module) -> Mapping[cst.CSTNode, CodeRange]:
    """Every node's syntactic range (1-based lines, 0-based columns), at the
    cost of generating the whole module's code again."""
    wrapper = MetadataWrapper(module, unsafe_skip_copy=True)
    return wrapper.resolve(PositionProvider)


def to_span(code_range: CodeRange) -> Span:
    """A LibCST range as ddplint's 1-based line/column span."""
    return Span(
        code_range.start.line,
        code_range.start.column + 1,
        code_range.end.line,
        code_range.end.column + 1,
    )


#: The statements whose own text starts a line: every other node lies in one.
_ANCHORS = (cst.SimpleStatementLine, cst.BaseCompoundStatement)
#: Nodes with no statement below them (a lambda is an expression).
_NO_STATEMENTS = (cst.BaseExpression, cst.BaseSmallStatement)
_LINE_BREAK = re.compile(r"\r\n?|\n")


@dataclass(frozen=True)
class HeldBy:
    """The statement that holds a node: where its range starts (the line of
    its first token after decorators and blank or comment lines), the
    indentation of that line, and whether it is an ``elif``."""

    statement: cst.CSTNode
    line: int
    indent: str
    is_elif: bool


class _Stop(Exception):
    """The asked-for node is placed: the rest of the statement need not be generated."""


@dataclass
class _State(PositionProvidingCodegenState):
    """LibCST's position-tracking code generator for one statement: it notes
    the line where `anchor`'s range starts and stops once `target` is placed."""

    anchor: cst.CSTNode | None = None
    target: cst.CSTNode | None = None
    anchor_line: int = 0

    @contextmanager
    def record_syntactic_position(
        self, node: cst.CSTNode, *, start_node: cst.CSTNode | None = None, end_node: cst.CSTNode | None = None
    ) -> Iterator[None]:
        # LibCST's own rule, except that a stopped generation records nothing more.
        start = CodePosition(self.line, self.column)
        if node is self.anchor:
            self.anchor_line = self.line
        yield
        computed = self.provider._computed
        first = computed[start_node].start if start_node is not None else start
        last = computed[end_node].end if end_node is not None else CodePosition(self.line, self.column)
        computed[node] = CodeRange(first, last)

    def after_codegen(self, node: cst.CSTNode) -> None:
        super().after_codegen(node)
        if node is self.target:
            raise _Stop


class _Table:
    """What LibCST's state writes to: a provider's `_computed` table."""

    __slots__ = ("_computed",)

    def __init__(self) -> None:
        self._computed: dict[cst.CSTNode, CodeRange] = {}


class Positions(Mapping[cst.CSTNode, CodeRange]):
    """The syntactic range of any node of `module` (whose code is `text`),
    each found when first asked: one statement's code is generated, not the
    module's. Where CPython's statements and LibCST's do not pair up (a
    text CPython reads differently), the whole module is generated once."""

    def __init__(self, module: cst.Module, text: str, tree: ast.Module | None = None) -> None:
        self._module = module
        self._text = text
        self._tree = tree  # CPython's tree of `text`, when the caller has it; else parsed when first needed
        self._known: dict[cst.CSTNode, CodeRange] = {}
        self._anchor_of: dict[cst.CSTNode, cst.CSTNode] | None = None
        self._every_node = False  # whether the index holds whitespace and punctuation too
        self._starts_of: list[tuple[int, int]] | None = None
        self._starts: dict[cst.CSTNode, tuple[int, int]] = {}
        self._elifs: set[cst.CSTNode] = set()
        self._whole: Mapping[cst.CSTNode, CodeRange] | None = None
        self._line_starts: list[int] | None = None
        #: node -> a statement that holds it (`hint`)
        self._hints: dict[cst.CSTNode, cst.CSTNode] = {}
        self._statements_placed: bool | None = None

    def hint(self, node: cst.CSTNode, statement: cst.CSTNode) -> None:
        """`node` lies in `statement` (a line of simple statements or a compound
        statement: the one a rule reported it in). Its range is then found from
        where that statement starts, without an index of every node (most
        files report a few nodes, each in its statement, and nothing else)."""
        if isinstance(statement, _ANCHORS):
            self._hints[node] = statement

    def __getitem__(self, node: cst.CSTNode) -> CodeRange:
        known = self._known.get(node)
        if known is not None:
            return known
        held = self._placed(node) if self._anchor_of is None and self._whole is None else None
        if held is not None:  # its statement's start is enough
            found = self._place(held, node, stop=True)
            if found is not None:
                return found
        anchor = self._anchor(node)
        if self._whole is not None:
            return self._whole[node]
        found = None if anchor is None else self._place(anchor, node, stop=True)
        if found is None:  # a node the index skips (whitespace, punctuation): the whole module, once
            return self._everything()[node]
        return found

    def statement_of(self, node: cst.CSTNode) -> HeldBy | None:
        """The innermost statement that holds `node` (a line of simple
        statements, or a compound statement whose header, decorators or own
        lines hold it), as it stands in the text; None when not known."""
        anchor = self._held(node) if self._anchor_of is None else None
        if anchor is None:
            anchor = self._anchor(node)
        if anchor is None:
            return None
        line, byte_column = self._starts[anchor]
        return HeldBy(anchor, line, self._line_prefix(line, byte_column), anchor in self._elifs)

    def __iter__(self) -> Iterator[cst.CSTNode]:
        return iter(self._everything())

    def __len__(self) -> int:
        return len(self._everything())

    def _everything(self) -> Mapping[cst.CSTNode, CodeRange]:
        if self._whole is None:
            self._whole = resolve_positions(self._module)
        return self._whole

    def _anchor(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The anchor statement that holds `node`. The nodes a report names
        are found in an index of the nodes the walk visits; whitespace and
        punctuation (asked by few fixes) in one of every node, built then."""
        if self._anchor_of is None:
            self._anchor_of = self._index(child_fields)
        anchor = self._anchor_of.get(node)
        if anchor is None and not self._every_node and self._whole is None:
            self._every_node = True
            self._anchor_of = self._index(every_field)
            anchor = self._anchor_of.get(node)
        return anchor

    def _index(self, fields: Callable[[type], tuple[str, ...]]) -> dict[cst.CSTNode, cst.CSTNode]:
        """The innermost anchor statement of each node reached through `fields`, and
        where each anchor starts by CPython's tree: both list statements in
        source order."""
        if self._starts_of is None:
            self._starts_of = self._statement_starts()
            if self._starts_of is None:
                self._everything()
                return {}
        starts = self._starts_of
        anchor_of: dict[cst.CSTNode, cst.CSTNode] = {}
        taken = 0
        # Depth first in source order (`_pair` counts CPython's statements).
        stack: list[tuple[cst.CSTNode, cst.CSTNode | None]] = [(self._module, None)]
        while stack:
            node, anchor = stack.pop()
            if isinstance(node, _ANCHORS):
                anchor = node
            taken = self._pair(node, starts, taken)
            if taken < 0:
                break
            if anchor is not None:
                anchor_of[node] = anchor
            stack.extend((child, anchor) for child in reversed(children(node, fields)))
        if stack or taken != len(starts):
            self._everything()
            return {}
        return anchor_of

    def _held(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """The innermost statement of `node` without an index of every node,
        where that is certain: a statement holds itself, and a line of simple
        statements a node a hint places in it (no statement lies between)."""
        held = self._placed(node)
        if held is node or (isinstance(held, cst.SimpleStatementLine) and any(n is node for n in descendants(held))):
            return held
        return None

    def _placed(self, node: cst.CSTNode) -> cst.CSTNode | None:
        """A statement that holds `node` (itself, or the one a hint names), once
        statements are paired with their starts; None when none is known."""
        held = node if isinstance(node, _ANCHORS) else self._hints.get(node)
        return held if held is not None and self._place_statements() and held in self._starts else None

    def _place_statements(self) -> bool:
        """Pair every statement (a line of simple statements, a compound
        statement) with where CPython's tree starts it, reading statements
        alone (not the expressions in them); False where they do not pair up."""
        if self._statements_placed is None:
            self._statements_placed = False
            if self._starts_of is None:
                self._starts_of = self._statement_starts()
            starts = self._starts_of
            if starts is None:
                return False
            taken = 0
            todo: list[cst.CSTNode] = [self._module]
            while todo and taken >= 0:
                node = todo.pop()
                taken = self._pair(node, starts, taken)
                todo.extend(child for child in reversed(children(node)) if not isinstance(child, _NO_STATEMENTS))
            self._statements_placed = taken == len(starts)
        return self._statements_placed

    def _pair(self, node: cst.CSTNode, starts: list[tuple[int, int]], taken: int) -> int:
        """Give `node`, met in source order after `taken` of CPython's
        statements, its start if it is a statement; the count after it (the
        statements of a one-line suite, `if x: a; b`, are CPython's but lie
        in their header's). -1: LibCST has more statements than CPython."""
        if isinstance(node, _ANCHORS):
            if taken >= len(starts):
                return -1
            self._starts[node] = starts[taken]
            if isinstance(node, cst.If) and isinstance(node.orelse, cst.If):
                self._elifs.add(node.orelse)
            return taken + (len(node.body) if isinstance(node, cst.SimpleStatementLine) else 1)
        if isinstance(node, cst.SimpleStatementSuite):
            return taken + len(node.body)
        return taken

    def _statement_starts(self) -> list[tuple[int, int]] | None:
        """Where each of CPython's statements starts, in source order (None
        where CPython cannot parse the text)."""
        tree = self._tree
        if tree is None:
            try:
                with warnings.catch_warnings():
                    warnings.simplefilter("ignore")
                    tree = ast.parse(self._text)
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                return None
        self._tree = None  # read once: the starts are what it was for
        return sorted(_statement_positions(tree))

    def _place(self, anchor: cst.CSTNode, node: cst.CSTNode, stop: bool) -> CodeRange | None:
        """Generate `anchor`'s code (with `stop`, only up to `node`) and shift it into place."""
        line, byte_column = self._starts[anchor]
        indent = self._line_prefix(line, byte_column)
        state = _State(
            default_indent=self._module.default_indent,
            default_newline=self._module.default_newline,
            provider=_Table(),  # type: ignore[arg-type]
            indent_tokens=[indent] if indent else [],
            anchor=anchor,
            target=node if stop and node is not anchor else None,
        )
        computed: dict[cst.CSTNode, CodeRange] = state.provider._computed  # type: ignore[attr-defined]
        try:
            if anchor in self._elifs:
                anchor._codegen(state, is_elif=True)  # type: ignore[call-arg]
            else:
                anchor._codegen(state)
        except _Stop:
            if not state.anchor_line:  # placed before the anchor's range starts (a decorator)
                return self._place(anchor, node, stop=False)
            self._known[node] = _shifted(computed[node], line - state.anchor_line)
            return self._known[node]
        shift = line - state.anchor_line
        for each, place in computed.items():
            self._known.setdefault(each, _shifted(place, shift))
        return self._known.get(node)

    def _line_prefix(self, line: int, byte_column: int) -> str:
        """The text of `line` before CPython's (UTF-8 byte) column."""
        if self._line_starts is None:
            self._line_starts = [0, *(m.end() for m in _LINE_BREAK.finditer(self._text))]
        if not byte_column or line > len(self._line_starts):
            return ""
        start = self._line_starts[line - 1]
        return self._text[start : start + byte_column].encode("utf-8")[:byte_column].decode("utf-8", errors="ignore")


def _shifted(place: CodeRange, lines: int) -> CodeRange:
    if not lines:
        return place
    return CodeRange(
        CodePosition(place.start.line + lines, place.start.column),
        CodePosition(place.end.line + lines, place.end.column),
    )


#: What holds statements in CPython's tree (a `try`'s handlers, a `match`'s cases).
_BLOCKS = (ast.stmt, ast.excepthandler, ast.match_case)


def _statement_positions(tree: ast.Module) -> list[tuple[int, int]]:
    """Where each statement of `tree` starts, descending only through the
    fields that hold statements (a tenth of the nodes: no expression holds one)."""
    found: list[tuple[int, int]] = []
    todo: list[ast.AST] = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.stmt):
            found.append((node.lineno, node.col_offset))
        for name in node._fields:
            value = getattr(node, name, None)
            if value.__class__ is list and value and isinstance(value[0], _BLOCKS):
                todo.extend(value)
    return found
