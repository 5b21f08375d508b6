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


def positional_parameters(function: cst.FunctionDef | cst.Lambda) -> tuple[str, ...]:
    """The names a call can fill by position, in order."""
    params = function.params
    return tuple(p.name.value for p in (*params.posonly_params, *params.params))


def parameter_default(function: cst.FunctionDef, name: str) -> cst.BaseExpression | None:
    """The default expression of `function`'s parameter `name`, if it has one."""
    params = function.params
    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
        if param.name.value == name:
            return param.default
    return None


def bind_to_function(call: cst.Call, function: cst.FunctionDef, skip_self: bool) -> BoundArguments:
    """Bind `call`'s arguments to `function`'s parameters. `skip_self` for a
    method called on an instance (``self.step(x)``, ``obj.step(x)``) or a
    class called to construct one (``Cls(x)`` -> ``__init__(self, x)``): the
    first parameter is the receiver, not an argument."""
    positional = positional_parameters(function)
    if skip_self:
        positional = positional[1:]
    return bind_arguments(call, positional)


def bind_to(call: cst.Call, function: cst.FunctionDef) -> BoundArguments:
    """`bind_to_function`, the receiver skipped when a method is called on an
    object (``self.evaluate(model)``, ``meter.update(v)``: its first parameter
    is ``self``/``cls``)."""
    skip = isinstance(call.func, cst.Attribute) and positional_parameters(function)[:1] in (("self",), ("cls",))
    return bind_to_function(call, function, skip)


def bound_values(call: cst.Call, function: cst.FunctionDef, skip_self: bool) -> dict[str, cst.BaseExpression]:
    """Parameter name -> the expression `call` hands `function` for it: the
    argument, positional or keyword, else the parameter's default. A parameter
    ``*args``/``**kwargs`` may fill is left out unless its default is certain
    to stand (nothing is splatted)."""
    bound = bind_to_function(call, function, skip_self)
    result = {name: arg.value for name, arg in bound.explicit.items()}
    if not bound.open_ended:
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.default is not None:
                result.setdefault(param.name.value, param.default)
    return result


def truth(node: cst.BaseExpression | None) -> bool | None:
    """The truth value of a literal (`True`, `False`, `None`, a number, a
    string, `not` of one), else None (also for no node)."""
    if isinstance(node, cst.Name) and node.value in ("True", "False", "None"):
        return node.value == "True"
    if isinstance(node, (cst.Integer, cst.Float)):
        return node.evaluated_value != 0
    if isinstance(node, cst.SimpleString):
        return bool(node.evaluated_value)
    if isinstance(node, cst.UnaryOperation) and isinstance(node.operator, cst.Not):
        inner = truth(node.expression)
        return None if inner is None else not inner
    return None


#: A collective helper's switch as other modules see it: (parameter, its
#: index among the positional parameters or -1, the truth of the argument
#: that turns the helper's collectives off, the truth of its literal default
#: or None). ``def log(path, msg, barrier=True)`` -> ``("barrier", 2, False, True)``.
ExportedSwitch = tuple[str, int, bool, "bool | None"]

#: A call's arguments by position (int) or keyword (str), each with the truth
#: of its literal (None: not a literal); None as a whole when ``*``/``**`` splats.
LiteralArguments = tuple[tuple["int | str", "bool | None"], ...]


def export_switch(function: cst.FunctionDef, name: str, off: bool) -> ExportedSwitch:
    """`function`'s switch `name` (off when its argument has truth `off`), for other modules."""
    positional = positional_parameters(function)
    position = positional.index(name) if name in positional else -1
    return name, position, off, truth(parameter_default(function, name))


def literal_arguments(call: cst.Call) -> LiteralArguments | None:
    """The truths of the literals `call` passes, by position or keyword."""
    found: list[tuple[int | str, bool | None]] = []
    index = 0
    for arg in call.args:
        if arg.star:
            return None
        if arg.keyword is not None:
            found.append((arg.keyword.value, truth(arg.value)))
        else:
            found.append((index, truth(arg.value)))
            index += 1
    return tuple(found)


def switched_off(switch: ExportedSwitch | None, arguments: LiteralArguments | None) -> bool:
    """Whether a call with these arguments turns off a helper with this
    switch: it passes the literal that does, or leaves such a default."""
    if switch is None or arguments is None:
        return False
    name, position, off, default = switch
    given = dict(arguments)
    if name in given:
        value = given[name]
    elif position >= 0 and position in given:
        value = given[position]
    else:
        value = default
    return value is off


def string_arguments(call: cst.Call) -> dict[str, cst.Arg]:
    """The positional string literals of a call, by their text (argparse's
    flags: ``add_argument("--local_rank", "-l", ...)``)."""
    found = {}
    for arg in call.args:
        if arg.keyword is None and not arg.star and isinstance(arg.value, cst.SimpleString):
            text = arg.value.evaluated_value
            if isinstance(text, str):
                found[text] = arg
    return found


def argparse_flags(call: cst.Call) -> dict[str, cst.Arg]:
    """The option strings of ``parser.add_argument("--local_rank", "-l", ...)`` (empty for other calls)."""
    if isinstance(call.func, cst.Attribute) and call.func.attr.value == "add_argument":
        return string_arguments(call)
    return {}


def keyword_value(call: cst.Call, name: str) -> cst.BaseExpression | None:
    """The value passed as keyword `name`, if any."""
    return next((a.value for a in call.args if a.keyword is not None and a.keyword.value == name), None)
