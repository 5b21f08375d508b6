"""Matching a call's arguments to a callee's parameters, as Python would."""

from __future__ import annotations

from dataclasses import dataclass, field

from ddplint.lazy import cst


@dataclass(frozen=True)
class BoundArguments:
    """The arguments a call passes explicitly, by parameter name.

    `open_ended` is true when ``*args`` or ``**kwargs`` may pass parameters
    that are not visible here: what is in `explicit` is certain, but the
    absence of a parameter is not.
    """

    explicit: dict[str, cst.Arg] = field(default_factory=dict)
    open_ended: bool = False

    def value(self, name: str) -> cst.BaseExpression | None:
        """The expression passed for `name`, if it is passed explicitly."""
        arg = self.explicit.get(name)
        return arg.value if arg is not None else None


def bind_arguments(call: cst.Call, positional: tuple[str, ...]) -> BoundArguments:
    """Bind `call`'s arguments to parameters named `positional` (in order)."""
    explicit: dict[str, cst.Arg] = {}
    open_ended = False
    index = 0
    for arg in call.args:
        if arg.star:
            open_ended = True
            if arg.star == "*":
                index = len(positional)  # later positionals land somewhere unknown
        elif arg.keyword is not None:
            explicit[arg.keyword.value] = arg
        elif index < len(positional):
            explicit[positional[index]] = arg
            index += 1
    return BoundArguments(explicit, open_ended)


def parameter_names(function: cst.FunctionDef) -> tuple[tuple[str, ...], dict[str, cst.BaseExpression]]:
    """(the positional parameters' names, in order; every parameter's default)."""
    params = function.params
    positional = tuple(p.name.value for p in (*params.posonly_params, *params.params))
    defaults = {
        p.name.value: p.default
        for p in (*params.posonly_params, *params.params, *params.kwonly_params)
        if p.default is not None
    }  # fmt: skip
    return positional, defaults


def bind_to_function(call: cst.Call, function: cst.FunctionDef, bound_self: bool) -> dict[str, cst.BaseExpression]:
    """Parameter name -> the expression `call` hands `function` for it: the
    argument, positional or keyword, else the parameter's default. With
    `bound_self` the receiver fills the first positional parameter
    (``self.save(path, False)``). A parameter ``*args``/``**kwargs`` may fill
    is left out unless its default is certain to stand (nothing is splatted)."""
    positional, defaults = parameter_names(function)
    if bound_self:
        positional = positional[1:]
    bound = bind_arguments(call, positional)
    result = {name: arg.value for name, arg in bound.explicit.items()}
    if not bound.open_ended:
        for name, default in defaults.items():
            result.setdefault(name, default)
    return result


def truth(node: cst.BaseExpression | None) -> bool | None:
    """The truth value of a literal argument (`True`, `False`, `None`, a
    number, a string), else None."""
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return node.value == "True"
    if isinstance(node, cst.Integer):
        return node.evaluated_value != 0
    if isinstance(node, cst.SimpleString):
        return bool(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        inner = truth(node.expression)
        return None if inner is None else not inner
    return None
