"""Reading subtrees outside the engine's walk (a class's methods, a loop's body).

Rules that must look at a whole construct at once (a Dataset class and its
`__getitem__`) use `descendants`; it reads the same child fields as the
engine's walker, skipping whitespace and punctuation.
"""

from __future__ import annotations

import dataclasses
import functools
from collections import Counter
from typing import Callable, Iterator

from ddplint.lazy import cst

#: Child fields that hold only whitespace, comments or punctuation.
_SKIPPED_FIELDS = frozenset(
    {
        "asynchronous", "colon", "comma", "comment", "default_indent", "default_newline",
        "dot", "empty_lines", "encoding", "equal", "first_colon", "first_line", "footer",
        "has_trailing_newline", "header", "indent", "last_line", "lbrace", "lbracket",
        "leading_lines", "leading_whitespace", "lines_after_decorators", "lpar", "newline",
        "operator", "posonly_ind", "rbrace", "rbracket", "relative", "rpar", "second_colon",
        "semicolon", "separator", "star", "trailing_comma", "trailing_whitespace",
    }
)  # fmt: skip

_child_fields: dict[type, tuple[str, ...]] = {}


def child_fields(cls: type) -> tuple[str, ...]:
    """The fields of a node class that can hold nodes worth visiting."""
    fields = _child_fields.get(cls)
    if fields is None:
        fields = tuple(
            f.name
            for f in dataclasses.fields(cls)
            if f.name not in _SKIPPED_FIELDS and not f.name.startswith("whitespace")
        )
        _child_fields[cls] = fields
    return fields


#: Node class -> whether it is a LibCST node (isinstance on LibCST's ABCs is slow: asked once per class).
_is_node_class: dict[type, bool] = {}


@functools.cache
def leaf_kinds() -> frozenset[type]:
    """Node classes with no node below them worth visiting: names and literals
    (about a third of a module's nodes)."""
    return frozenset({cst.Name, cst.SimpleString, cst.Integer, cst.Float, cst.Imaginary, cst.Ellipsis})


def descendants(node: cst.CSTNode, into_functions: bool = True) -> Iterator[cst.CSTNode]:
    """Every node below `node`, depth first in source order; with
    `into_functions=False`, nested functions, lambdas and classes are not entered."""
    if into_functions:
        return _below(node, _LEAVES, lambda: tuple(leaf_kinds()))
    return _below(node, _SCOPES, lambda: (*leaf_kinds(), cst.FunctionDef, cst.Lambda, cst.ClassDef))


def statement_nodes(node: cst.CSTNode) -> Iterator[cst.CSTNode]:
    """`descendants(node, into_functions=False)` without what lies inside
    expressions (each expression itself is yielded): every statement, its
    targets and values, in source order, at a fraction of the nodes. Only a
    walrus (``(x := v)``) binds a name inside an expression."""
    return _below(node, _EXPRESSIONS, lambda: (cst.BaseExpression, cst.FunctionDef, cst.ClassDef))


#: Node class -> whether a walk yields it without entering it, for each kind of walk
#: (`issubclass` on LibCST's classes is slow: asked once per class).
_LEAVES: dict[type, bool] = {}
_SCOPES: dict[type, bool] = {}
_EXPRESSIONS: dict[type, bool] = {}


def _below(node: cst.CSTNode, closed: dict[type, bool], kinds: Callable[[], tuple[type, ...]]) -> Iterator[cst.CSTNode]:
    """Every node below `node`, depth first in source order, not entering those of `kinds`."""
    stack = [iter(children(node))]
    while stack:
        child = next(stack[-1], None)
        if child is None:
            stack.pop()
            continue
        yield child
        cls = child.__class__
        stop = closed.get(cls)
        if stop is None:
            stop = closed[cls] = issubclass(cls, kinds())
        if not stop:
            stack.append(iter(children(child)))


_every_field: dict[type, tuple[str, ...]] = {}


def every_field(cls: type) -> tuple[str, ...]:
    """All the fields of a node class, whitespace and punctuation included."""
    fields = _every_field.get(cls)
    if fields is None:
        fields = _every_field[cls] = tuple(f.name for f in dataclasses.fields(cls))
    return fields


def children(node: cst.CSTNode, fields: Callable[[type], tuple[str, ...]] = child_fields) -> list[cst.CSTNode]:
    """The direct child nodes of `node`, in source order (whitespace fields
    skipped; with `fields=every_field`, none skipped)."""
    found: list[cst.CSTNode] = []
    for name in fields(node.__class__):
        value = getattr(node, name)
        cls = value.__class__
        if cls is tuple or cls is list:
            found.extend(value)
        else:
            is_node = _is_node_class.get(cls)
            if is_node is None:
                is_node = _is_node_class[cls] = issubclass(cls, cst.CSTNode)
            if is_node:
                found.append(value)
    return found


def name_reads(root: cst.CSTNode) -> Counter[str]:
    """How often each name is written in `root` outside import statements,
    not counting an attribute's own name (`name` in `x.name`): a name that
    is imported and never used has no count."""
    found: Counter[str] = Counter()
    todo = [root]
    while todo:
        node = todo.pop()
        if isinstance(node, (cst.Import, cst.ImportFrom)):
            continue
        if isinstance(node, cst.Name):
            found[node.value] += 1
        elif isinstance(node, cst.Attribute):
            todo.append(node.value)
            continue
        todo.extend(children(node))
    return found


def names_in(node: cst.CSTNode) -> frozenset[str]:
    """Every plain name written in `node` (itself included)."""
    names = {n.value for n in descendants(node) if isinstance(n, cst.Name)}
    if isinstance(node, cst.Name):
        names.add(node.value)
    return frozenset(names)
