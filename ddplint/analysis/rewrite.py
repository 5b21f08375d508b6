"""Building the nodes that fixes put in place of the user's.

Small, formatting-preserving edits of LibCST nodes: what is not changed
keeps its whitespace and comments, so the fixed code reads as the user
wrote it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Union

from ddplint.lazy import cst
from ddplint.model import Applicability

if TYPE_CHECKING:
    import libcst

class _DeleteLines:
    """Remove a statement's own lines (its comments and blank lines above stay)."""

    def __repr__(self) -> str:
        return "DELETE_LINES"


DELETE_LINES = _DeleteLines()

#: What a node becomes: another node, several statements, or (`DELETE_LINES`) nothing.
Replacement = Union["libcst.CSTNode", "libcst.FlattenSentinel", _DeleteLines]


@dataclass(frozen=True)
class ProposedFix:
    """A fix as a rule proposes it: a title and node replacements (the
    engine turns them into text edits once positions are known)."""

    title: str
    changes: tuple[tuple[cst.CSTNode, Replacement], ...]
    applicability: Applicability = Applicability.SAFE

    @classmethod
    def display_only(cls, title: str) -> ProposedFix:
        """Advice with no edit (the editor shows it; `--fix` never applies it)."""
        return cls(title, (), Applicability.DISPLAY_ONLY)


def insert_before(statement: cst.BaseStatement, *new: cst.BaseStatement) -> tuple[cst.CSTNode, Replacement]:
    """The change that puts `new` statements before `statement` (its comments stay above them)."""
    first, *rest = new
    moved = first.with_changes(leading_lines=statement.leading_lines)
    return statement, cst.FlattenSentinel([moved, *rest, statement.with_changes(leading_lines=())])

#: Expressions that need no parentheses before `.attr`, `(...)` or as an operand.
_ATOMS = ("Name", "Attribute", "Call", "Subscript", "SimpleString", "Integer", "Float", "List", "Tuple", "Dict")


def without_arg(call: cst.Call, arg: cst.Arg) -> cst.Call:
    """`call` without `arg`; the argument before it takes over its comma."""
    args = list(call.args)
    index = next(i for i, a in enumerate(args) if a is arg)
    del args[index]
    if index == len(args) and args:  # it was the last: keep the call's trailing comma style
        args[-1] = args[-1].with_changes(comma=arg.comma)
    return call.with_changes(args=args)


def with_arg_value(call: cst.Call, arg: cst.Arg, value: cst.BaseExpression) -> cst.Call:
    """`call` with `arg`'s value replaced (keyword, comma and spacing kept)."""
    return call.with_changes(args=[a.with_changes(value=value) if a is arg else a for a in call.args])


def with_keywords(call: cst.Call, keywords: tuple[str, ...], value: str = "True") -> cst.Call:
    """`call` with `keyword=value` for each of `keywords` (`f(a, x=True, y=True)`):
    appended, or replacing the value of one already passed; `value` is the
    source of an expression (`"True"`, `'"cpu"'`)."""
    args = list(call.args)
    for keyword in keywords:
        passed = [i for i, a in enumerate(args) if a.keyword is not None and a.keyword.value == keyword]
        if passed:  # `map_location=None` becomes `map_location="cpu"`: a keyword passed twice does not compile
            args[passed[0]] = args[passed[0]].with_changes(value=cst.parse_expression(value))
            continue
        if args:
            args[-1] = args[-1].with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
        args.append(cst.Arg(keyword=cst.Name(keyword), value=cst.parse_expression(value), equal=equal))
    return call.with_changes(args=args)


def keywords_fix(call: cst.Call, keywords: tuple[str, ...], applicability: Applicability) -> ProposedFix:
    """The fix that appends `keyword=True` to `call` for each of `keywords`."""
    shown = ", ".join(f"{k}=True" for k in keywords)
    return ProposedFix(f"Add `{shown}`", ((call, with_keywords(call, keywords)),), applicability)


def is_atom(node: cst.BaseExpression) -> bool:
    """Whether `node` can take `.attr` or an operator without parentheses."""
    return bool(node.lpar) or type(node).__name__ in _ATOMS


def parenthesized(node: cst.BaseExpression) -> cst.BaseExpression:
    """`node`, in parentheses unless it is an atom."""
    if is_atom(node):
        return node
    return node.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])


def dotted(name: str) -> cst.BaseExpression:
    """`a.b.c` as a Name/Attribute chain."""
    first, *rest = name.split(".")
    node: cst.BaseExpression = cst.Name(first)
    for part in rest:
        node = cst.Attribute(value=node, attr=cst.Name(part))
    return node


def method_call(receiver: cst.BaseExpression, method: str) -> cst.Call:
    """`receiver.method()`, parenthesizing the receiver when it needs it."""
    return cst.Call(func=cst.Attribute(value=parenthesized(receiver), attr=cst.Name(method)))


def with_arg_after(call: cst.Call, arg: cst.Arg, new: cst.Arg) -> cst.Call:
    """`call` with `new` inserted right after `arg` (``f(a, b)`` -> ``f(a, new, b)``)."""
    args = list(call.args)
    index = next(i for i, a in enumerate(args) if a is arg)
    args[index : index + 1] = [arg.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), new.with_changes(comma=arg.comma)]
    return call.with_changes(args=args)


def with_keyword(call: cst.Call, name: str, value: cst.BaseExpression) -> cst.Call:
    """`call` with keyword `name` set to `value`: replaced where it is passed, appended otherwise."""
    for arg in call.args:
        if arg.keyword is not None and arg.keyword.value == name:
            return with_arg_value(call, arg, value)
    equal = cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""), whitespace_after=cst.SimpleWhitespace(""))
    return with_arg_after(call, call.args[-1], cst.Arg(value, keyword=cst.Name(name), equal=equal))


def with_string_after(call: cst.Call, arg: cst.Arg, text: str) -> cst.Call:
    """`call` with the string `text` inserted after the string argument `arg`,
    in `arg`'s quotes (an argparse flag's second spelling)."""
    quote = arg.value.quote if isinstance(arg.value, cst.SimpleString) else '"'
    return with_arg_after(call, arg, cst.Arg(cst.SimpleString(f"{quote}{text}{quote}")))


def with_env_default(call: cst.Call, variable: str, fallback: cst.BaseExpression | None, default: str) -> cst.Call:
    """`call` with ``default=int(os.environ.get(variable, <fallback>))``: the
    old default (`fallback`, `default` when none is passed) stays the fallback."""
    shown = cst.Module([]).code_for_node(fallback) if fallback is not None else default
    return with_keyword(call, "default", cst.parse_expression(f'int(os.environ.get("{variable}", {shown}))'))


def first_import(module: cst.Module) -> cst.SimpleStatementLine | None:
    """The module-level statement before which a new import goes: the first
    import that is not `from __future__`."""
    for statement in module.body:
        if isinstance(statement, cst.SimpleStatementLine) and isinstance(statement.body[0], (cst.Import, cst.ImportFrom)):
            first = statement.body[0]
            if not (isinstance(first, cst.ImportFrom) and isinstance(first.module, cst.Name) and first.module.value == "__future__"):
                return statement
    return None


def without_alias(
    line: cst.SimpleStatementLine, node: cst.Import | cst.ImportFrom, alias: cst.ImportAlias, alone: bool
) -> tuple[cst.CSTNode, Replacement]:
    """The change that removes `alias` from its import: the name, the
    statement, the line, or (`alone` in its block) the line becomes `pass`."""
    names = [a for a in node.names if a is not alias]  # type: ignore[union-attr]
    if names:
        if node.names[-1] is alias:  # type: ignore[index]  # keep the statement's trailing-comma style
            names[-1] = names[-1].with_changes(comma=alias.comma)
        return node, node.with_changes(names=names)
    if len(line.body) > 1:
        return line, line.with_changes(body=[s for s in line.body if s is not node])
    if alone:
        return line, line.with_changes(body=[cst.Pass()])
    return line, DELETE_LINES
