"""Which framework object a receiver holds: a Lightning or Hugging Face
`Trainer`, a Lightning `Fabric` (the types of `catalogue.FRAMEWORK_TYPES`).

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
"""

from __future__ import annotations

import functools
import re
from typing import TYPE_CHECKING

from ddplint.analysis.catalogue import FRAMEWORK_TYPES, FrameworkType
from ddplint.analysis.names import last_name
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


def imported_method_names(func: cst.BaseExpression, ctx: ModelView) -> frozenset[str]:
    """``obj.method`` where `obj` holds an instance of an imported class, as
    the method's qualified name (``tools.meters.RunningMean.synchronize``
    after ``meter = RunningMean()`` and ``from tools.meters import RunningMean``):
    the name under which the project's facts about the method are kept.

    The receiver's values are followed (`ModelView.origins`: locals,
    ``self.x`` that a method assigns, parameters); every one of them must be
    a call of an imported name, else the receiver's type is not known."""
    if not isinstance(func, cst.Attribute):
        return frozenset()
    receiver = func.value
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
