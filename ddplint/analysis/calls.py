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


def bind_to(call: cst.Call, function: cst.FunctionDef) -> BoundArguments:
    """Bind `call`'s arguments to `function`'s parameters; a method called on
    an object (``self.evaluate(model)``, ``meter.update(v)``) receives the
    object as its first parameter (``self``/``cls``)."""
    params = function.params
    positional = tuple(p.name.value for p in (*params.posonly_params, *params.params))
    if isinstance(call.func, cst.Attribute) and positional[:1] in (("self",), ("cls",)):
        positional = positional[1:]
    return bind_arguments(call, positional)
def positional_parameters(function: cst.FunctionDef | cst.Lambda) -> tuple[str, ...]:
    """The names a call can fill by position, in order."""
    params = function.params
    return tuple(p.name.value for p in (*params.posonly_params, *params.params))


def bind_to_function(call: cst.Call, function: cst.FunctionDef, skip_self: bool) -> BoundArguments:
    """Bind `call`'s arguments to `function`'s parameters. `skip_self` for a
    method called on an instance (``self.step(x)``, ``obj.step(x)``) or a
    class called to construct one (``Cls(x)`` → ``__init__(self, x)``): the
    first parameter is the receiver, not an argument."""
    positional = positional_parameters(function)
    if skip_self:
        positional = positional[1:]
    return bind_arguments(call, positional)


def parameter_default(function: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    """The default expression of `function`'s parameter `name`, if it has one."""
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return param.default
    return None
