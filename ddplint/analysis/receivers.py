"""Which framework object a receiver holds: a Lightning or Hugging Face
`Trainer`, a Lightning `Fabric` (the types of `knowledge.FRAMEWORK_TYPES`).

An expression is typed by what is visible, strongest first:

* its values (`ScopeTracker.values_of`): a constructor call of a framework
  class (through any alias, ``trainer = L.Trainer(...)``) or of a class of
  the module derived from one (``class MyTrainer(Trainer)``); a parameter
  annotated with one (``trainer: "pl.Trainer"``). A value that is visibly
  something else (another class's constructor) types it as nothing;
* with no value that says (a parameter without annotation, ``self.trainer``,
  ``build_trainer(cfg)``), its conventional name (``trainer``, ``fabric``)
  in a module that imports the framework's package.

Answers are sets: a module importing both Lightning and transformers leaves
a bare ``trainer`` either; the caller asks about one (type, method) pair.

What an accelerate `Accelerator` was given to prepare is followed too
(`prepared_arguments`): ``model, opt, loader = accelerator.prepare(model,
opt, loader)`` binds each name to the object prepared from the argument in
its position, seen through parameters, attributes and helper returns.
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from ddplint.knowledge import ACCELERATOR, FRAMEWORK_TYPES, PREPARE_METHODS, FrameworkType
from ddplint.analysis.names import last_name
from ddplint.analysis.tree import descendants
from ddplint.analysis.values import is_constructor_call
from ddplint.lazy import cst

if TYPE_CHECKING:
    from ddplint.analysis.view import ModelView

_CLASS_TYPES = {name: t.key for t in FRAMEWORK_TYPES for name in t.classes}
_MAX_DEPTH = 4


def framework_types(node: cst.BaseExpression, ctx: ModelView) -> frozenset[str]:
    """The framework types (`FrameworkType.key`) `node` may hold here."""
    if isinstance(node, cst.Name):
        values = ctx.values_of(node)
        if values:
            typed = [_value_types(v, ctx, 0) for v in values]
            if all(t is not None for t in typed):
                return frozenset().union(*typed)  # type: ignore[arg-type]
            if any(t for t in typed):
                return frozenset().union(*(t for t in typed if t))
    return _conventional(node, ctx)


def _value_types(value: cst.CSTNode, ctx: ModelView, depth: int) -> frozenset[str] | None:
    """The types one bound value gives; empty when it is visibly something
    else; None when it does not say."""
    if isinstance(value, cst.Param):
        annotation = value.annotation.annotation if value.annotation is not None else None
        return _annotation_types(annotation, ctx) if annotation is not None else None
    if isinstance(value, cst.Call):
        found = class_types(value.func, ctx, depth)
        if found:
            return found
        return frozenset() if is_constructor_call(value, ctx) else None
    return None


def class_types(func: cst.BaseExpression, ctx: ModelView, depth: int = 0) -> frozenset[str]:
    """The framework types a class expression builds: the class itself, or
    a class of the module derived from a framework class."""
    found = {_CLASS_TYPES[q] for q in ctx.qualified_names(func) if q in _CLASS_TYPES}
    if found or depth >= _MAX_DEPTH:
        return frozenset(found)
    for value in ctx.values_of(func) if isinstance(func, cst.Name) else ():
        if isinstance(value, cst.ClassDef):
            for base in value.bases:
                found |= class_types(base.value, ctx, depth + 1)
    return frozenset(found)


def _annotation_types(annotation: cst.BaseExpression, ctx: ModelView) -> frozenset[str] | None:
    if isinstance(annotation, cst.SimpleString):
        text = annotation.evaluated_value
        if not isinstance(text, str) or not re.fullmatch(r"[A-Za-z_][\w.]*", text):
            return None
        return _dotted_types(text, ctx)
    if isinstance(annotation, (cst.Name, cst.Attribute)):
        return class_types(annotation, ctx) or frozenset()
    return None  # `Optional[Trainer]`, unions: not read


def _dotted_types(text: str, ctx: ModelView) -> frozenset[str]:
    """`"pl.Trainer"` in a string annotation, resolved through the module's names."""
    root, _, rest = text.partition(".")
    binding = ctx.scopes.lookup(root)
    if binding is None:
        return frozenset()
    names = {q if not rest else f"{q}.{rest}" for q in binding.qualnames if q is not None}
    return frozenset(_CLASS_TYPES[n] for n in names if n in _CLASS_TYPES)


def _conventional(node: cst.BaseExpression, ctx: ModelView) -> frozenset[str]:
    name = last_name(node)
    if name is None:
        return frozenset()
    imported = _imported_packages(ctx.source)
    return frozenset(t.key for t in FRAMEWORK_TYPES if name in t.names and _imports(t, imported))


def _imports(framework: FrameworkType, imported: frozenset[str]) -> bool:
    return any(package in imported for package in framework.packages)


_IMPORT = re.compile(r"^[ \t]*(?:from[ \t]+(\w+)|import[ \t]+(\w+))", re.MULTILINE)


@functools.lru_cache(maxsize=8)
def _imported_packages(source: str) -> frozenset[str]:
    """The top-level packages the module imports, anywhere in it (training
    scripts import inside ``main()`` too)."""
    return frozenset(a or b for a, b in _IMPORT.findall(source))


def is_accelerator(node: cst.BaseExpression, ctx: ModelView) -> bool:
    """Whether `node` holds an accelerate `Accelerator` (built from the class,
    annotated with it, or called ``accelerator`` in a module importing accelerate)."""
    return ACCELERATOR in framework_types(node, ctx)


def prepare_call(node: cst.CSTNode, ctx: ModelView) -> bool:
    """``accelerator.prepare(...)`` (``prepare_data_loader``, ``prepare_scheduler``)."""
    return (
        isinstance(node, cst.Call)
        and isinstance(node.func, cst.Attribute)
        and node.func.attr.value in PREPARE_METHODS
        and is_accelerator(node.func.value, ctx)
    )


def prepared_arguments(node: cst.BaseExpression, ctx: ModelView) -> tuple[cst.BaseExpression, ...]:
    """The arguments of ``accelerator.prepare(...)`` whose prepared object
    `node` may hold here: ``loader = accelerator.prepare(loader)``, the
    position of a name in ``a, b = accelerator.prepare(x, y)``, through
    parameters, ``self.x`` and helper returns. Empty when it holds none."""
    unpacked = _unpacked_prepares(ctx)
    found: dict[int, cst.BaseExpression] = {}
    for origin in {id(o): o for o in (node, *ctx.origins(node))}.values():
        if isinstance(origin, cst.Call) and prepare_call(origin, ctx):
            candidates = [(origin, 0)]
        elif isinstance(origin, (cst.Name, cst.Attribute)):
            candidates = unpacked.get(ctx.module.code_for_node(origin), [])
        else:
            candidates = []
        for call, index in candidates:
            positional = [a.value for a in call.args if a.keyword is None and not a.star]
            if index < len(positional):
                found[id(positional[index])] = positional[index]
    return tuple(found.values())


def _unpacked_prepares(ctx: ModelView) -> dict[str, list[tuple[cst.Call, int]]]:
    """The targets of ``a, self.b = accelerator.prepare(x, y)`` anywhere in
    the module, by their text, with the call and their position."""
    cached = _UNPACKED.get(id(ctx.module))
    if cached is not None and cached[0] is ctx.module:
        return cached[1]
    table: dict[str, list[tuple[cst.Call, int]]] = {}
    for statement in descendants(ctx.module):
        if isinstance(statement, cst.Assign) and isinstance(statement.value, cst.Call):
            for target in statement.targets:
                if isinstance(target.target, (cst.Tuple, cst.List)) and prepare_call(statement.value, ctx):
                    for index, element in enumerate(target.target.elements):
                        if isinstance(element, cst.StarredElement):
                            break
                        text = ctx.module.code_for_node(element.value)
                        table.setdefault(text, []).append((statement.value, index))
    _UNPACKED.clear()
    _UNPACKED[id(ctx.module)] = (ctx.module, table)
    return table


#: The last module's table (one module is linted at a time).
_UNPACKED: dict[int, tuple[cst.Module, dict]] = {}
def imported_method_names(func: cst.BaseExpression, ctx: ModelView) -> frozenset[str]:
    """``obj.method`` where `obj` holds an instance of an imported class, as
    the method's qualified name (``tools.meters.RunningMean.synchronize``
    after ``meter = RunningMean()`` and ``from tools.meters import RunningMean``):
    the name under which the project's facts about the method are kept.

    The receiver is such a call itself (``RunningMean().synchronize()``), or
    its values are followed (`ModelView.origins`: locals, ``self.x`` that a
    method assigns, parameters); every one of them must be a call of an
    imported name, else the receiver's type is not known."""
    if not isinstance(func, cst.Attribute):
        return frozenset()
    receiver = func.value
    if isinstance(receiver, cst.Call):  # `Pipeline(folder).setup()`: the instance, used at once
        return frozenset(f"{q}.{func.attr.value}" for q in ctx.scopes.imported_qualnames(receiver.func))
    if isinstance(receiver, cst.Name):
        if ctx.scopes.imported_qualnames(receiver) or not ctx.values_of(receiver):
            return frozenset()  # a module (`utils.f`) or an unbound name: not an instance
    elif not (isinstance(receiver, cst.Attribute) and isinstance(receiver.value, cst.Name) and receiver.value.value == "self"):
        return frozenset()
    names: set[str] = set()
    origins = ctx.origins(receiver)
    for value in origins:
        classes = ctx.scopes.imported_qualnames(value.func) if isinstance(value, cst.Call) else frozenset()
        if not classes:
            return frozenset()
        names.update(f"{q}.{func.attr.value}" for q in classes)
    return frozenset(names)
