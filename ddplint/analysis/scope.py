"""Name bindings and qualified names, computed in the engine's one traversal.

ddplint resolves ``import torch.distributed as dist; dist.barrier()`` to
``torch.distributed.barrier`` itself instead of using LibCST's
`QualifiedNameProvider` (which costs ~6x the parse). The tracker keeps a
stack of scopes (module, class, function, comprehension) and updates it in
source order as the walker enters and leaves nodes; rules ask it about the
node they are visiting, so the answer reflects the bindings in effect there.

Precision choices, all towards "never invent a finding":

* A name bound again inside a conditional region of its scope (``if``,
  ``try``, loops, ``match``) keeps the earlier possibilities too:
  ``try: import torch.distributed as dist / except: dist = None`` gives
  ``dist`` the qualified names ``{"torch.distributed", None}``, where `None`
  stands for "something unknown". Rules decide whether *any* or *all*
  possibilities must match.
* Function bodies run after the module has finished executing, so from inside
  a function a module-level name resolves to the module's final bindings,
  collected by a cheap pre-pass over the top-level statements. Module-level
  code itself sees bindings in source order.
* Class bodies do not leak into their methods (Python's rule).
"""

from __future__ import annotations

import builtins
import contextlib
import enum
import functools
from dataclasses import dataclass
from typing import Callable, Iterable, Iterator

from ddplint.analysis.names import dotted_name
from ddplint.lazy import cst

#: Stands for "bound to something ddplint cannot name" in a qualified-name set.
UNKNOWN = None

QualNames = frozenset  # of str | None

_BUILTINS = frozenset(dir(builtins)) - {"None", "True", "False", "Ellipsis"}
_EMPTY: QualNames = frozenset()
_UNKNOWN_ONLY: QualNames = frozenset({UNKNOWN})
_MISSING = object()


@dataclass(frozen=True, slots=True)
class Binding:
    """What a name may refer to: qualified names and the assigned expressions.

    `values` holds the expressions (or `FunctionDef`/`ClassDef`/`Param`
    nodes) the name was bound to, in source order; empty when the binding
    site carries no expression (loop targets, ``except ... as e``).
    `iterated` holds, for a loop target, what it iterates over: (the
    iterable, None) for ``for x in xs``, (the iterable, k) for the k-th name
    of ``for i, x in enumerate(xs)``.
    """

    qualnames: QualNames
    values: tuple[cst.CSTNode, ...] = ()
    iterated: tuple[tuple[cst.BaseExpression, int | None], ...] = ()

    def merged(self, other: Binding) -> Binding:
        """Both possibilities, for a rebinding in a conditional region."""
        return Binding(self.qualnames | other.qualnames, self.values + other.values, self.iterated + other.iterated)


class ScopeKind(enum.Enum):
    """The kinds of Python scope, which differ in what they can see."""

    MODULE = "module"
    CLASS = "class"
    FUNCTION = "function"
    COMPREHENSION = "comprehension"


class Scope:
    """One scope's bindings so far, and how deep in conditional code we are."""

    __slots__ = ("kind", "node", "names", "conditional", "globals", "star_modules", "log")

    def __init__(self, kind: ScopeKind, node: cst.CSTNode | None) -> None:
        self.kind = kind
        self.node = node
        self.names: dict[str, Binding] = {}
        self.conditional = 0
        self.globals: set[str] = set()
        self.star_modules: list[str] = []
        #: (name, binding before) of every binding, in order: what the scope
        #: held at an earlier point can be rebuilt (`ScopeTracker.restored`).
        self.log: list[tuple[str, Binding | None]] = []

    def bind(self, name: str, binding: Binding) -> None:
        """Bind `name`; in conditional code, keep the previous possibilities."""
        previous = self.names.get(name)
        self.log.append((name, previous))
        if previous is not None and self.conditional:
            binding = previous.merged(binding)
        self.names[name] = binding

    def as_of(self, entries: int) -> Scope:
        """A copy holding the bindings this scope had after its first `entries` log entries."""
        copy = Scope(self.kind, self.node)
        names = dict(self.names)
        for name, previous in reversed(self.log[entries:]):
            if previous is None:
                names.pop(name, None)
            else:
                names[name] = previous
        copy.names = names
        copy.globals = set(self.globals)
        copy.star_modules = list(self.star_modules)
        copy.log = self.log[:entries]
        return copy


@dataclass(frozen=True)
class ScopeMark:
    """A point of the walk, for `ScopeTracker.restored`."""

    scopes: tuple[tuple[Scope, int], ...]
    function_depth: int


def import_from_module(node: cst.ImportFrom) -> str:
    """The module an ``ImportFrom`` reads, with leading dots if relative."""
    dots = "." * len(node.relative)
    module = dotted_name(node.module) if node.module is not None else ""
    return dots + (module or "")


def import_bindings(node: cst.Import | cst.ImportFrom) -> Iterable[tuple[str, str]]:
    """(bound name, qualified name) for each name an import statement binds."""
    if isinstance(node, cst.Import):
        for alias in node.names:
            full = dotted_name(alias.name) or ""
            if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
                yield alias.asname.name.value, full
            else:
                head = full.split(".", 1)[0]
                yield head, head
        return
    if isinstance(node.names, cst.ImportStar):
        return
    module = import_from_module(node)
    prefix = module if module.endswith(".") else module + "."
    for alias in node.names:
        name = dotted_name(alias.name) or ""
        bound = name
        if alias.asname is not None and isinstance(alias.asname.name, cst.Name):
            bound = alias.asname.name.value
        yield bound, prefix + name


class ScopeTracker:
    """Walker analysis: maintains scopes; answers qualified-name questions."""

    def __init__(self, module: cst.Module) -> None:
        self.module_scope = Scope(ScopeKind.MODULE, module)
        self.stack: list[Scope] = [self.module_scope]
        self.function_depth = 0
        self.final_module_names = _module_final_bindings(module)
        #: Answers of `qualified_names`, valid until the next binding or scope change.
        self._cache: dict[int, QualNames] = {}
        self._lookups: dict[str, Binding | None] = {}
        #: Counts binding and scope changes: answers derived from the bindings
        #: (rank guards) stay valid while it is unchanged.
        self.generation = 0

    # ----------------------------------------------------------- positions

    def mark(self) -> ScopeMark:
        """Where the walk is, to answer name questions there after the walk (cheap:
        a length per enclosing scope)."""
        return ScopeMark(tuple((scope, len(scope.log)) for scope in self.stack), self.function_depth)

    @contextlib.contextmanager
    def restored(self, mark: ScopeMark) -> Iterator[None]:
        """Answer as at `mark` (names bound later in its scopes are not seen),
        then return to the present."""
        saved = (self.stack, self.module_scope, self.function_depth)
        self.stack = [scope.as_of(entries) for scope, entries in mark.scopes]
        self.module_scope, self.function_depth = self.stack[0], mark.function_depth
        self._changed()
        try:
            yield
        finally:
            self.stack, self.module_scope, self.function_depth = saved
            self._changed()

    # ----------------------------------------------------------- queries

    @property
    def current(self) -> Scope:
        """The innermost scope at the node being visited."""
        return self.stack[-1]

    def lookup(self, name: str) -> Binding | None:
        """The binding `name` has here, or None if it is not bound anywhere
        (kept, as `qualified_names`, until a binding or scope changes)."""
        found = self._lookups.get(name, _MISSING)
        if found is _MISSING:
            found = self._lookups[name] = self._lookup(name)
        return found  # type: ignore[return-value]

    def _lookup(self, name: str) -> Binding | None:
        stack = self.stack
        innermost = stack[-1]
        if name in innermost.globals:
            return self._module_binding(name)
        for scope in reversed(stack):
            if scope.kind is ScopeKind.CLASS and scope is not innermost:
                continue
            if scope.kind is ScopeKind.MODULE:
                return self._module_binding(name)
            binding = scope.names.get(name)
            if binding is not None:
                return binding
        return None  # pragma: no cover - the module scope always answers

    def names_module(self, name: str) -> bool | None:
        """Whether `name` denotes the module of that name here (`os` after
        `import os`): True; False when it is bound to something else; None
        when it is not bound at all (a fix that writes `name.x` must import it)."""
        binding = self.lookup(name)
        return None if binding is None else binding.qualnames == frozenset({name})

    def _module_binding(self, name: str) -> Binding | None:
        if self.function_depth:
            binding = self.final_module_names.get(name)
            if binding is not None:
                return binding
        binding = self.module_scope.names.get(name)
        if binding is not None:
            return binding
        stars = self.module_scope.star_modules
        if stars:
            # `from torch import *`: a name the module never binds comes from a star
            # import (`manual_seed` is `torch.manual_seed`), or is a builtin that the
            # star may shadow (`max` is `torch.max` there, `print` is not).
            starred = frozenset(f"{m}.{name}" for m in stars)
            return Binding(starred | {f"builtins.{name}"} if name in _BUILTINS else starred)
        if name in _BUILTINS:
            return Binding(frozenset({f"builtins.{name}"}))
        return None

    def qualified_names(self, node: cst.BaseExpression) -> QualNames:
        """Every qualified name `node` may denote here (`UNKNOWN` for the rest).

        Empty for expressions that are not a Name/Attribute chain or whose
        root name is unbound. Several rules ask about the same node while
        the walker is on it, so answers are cached until a binding changes.
        """
        key = id(node)
        cached = self._cache.get(key)
        if cached is None:
            cached = self._cache[key] = self._resolve(node)
        return cached

    def _resolve(self, node: cst.BaseExpression) -> QualNames:
        if isinstance(node, cst.Name):
            binding = self.lookup(node.value)
            return binding.qualnames if binding is not None else _EMPTY
        if isinstance(node, cst.Attribute):
            base = self.qualified_names(node.value)
            if not base:
                return _EMPTY
            attr = node.attr.value
            return frozenset(None if q is None else f"{q}.{attr}" for q in base)
        return _EMPTY

    def imported_qualnames(self, node: cst.BaseExpression) -> frozenset[str]:
        """The qualified names a Name/Attribute chain may denote through an
        import (``utils.is_primary`` after ``import utils``); empty for local
        values, parameters and builtins."""
        root = node
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return frozenset()
        binding = self.lookup(root.value)
        if binding is None or binding.values:
            return frozenset()
        return frozenset(q for q in self.qualified_names(node) if q is not None and not q.startswith("builtins."))

    def values_of(self, node: cst.BaseExpression) -> tuple[cst.CSTNode, ...]:
        """The expressions a Name was bound to (empty if unknown)."""
        if isinstance(node, cst.Name):
            binding = self.lookup(node.value)
            if binding is not None:
                return binding.values
        return ()

    # ----------------------------------------------------------- binding helpers

    def _changed(self) -> None:
        self._cache.clear()
        self._lookups.clear()
        self.generation += 1

    def _bind(self, name: str, binding: Binding) -> None:
        self._changed()
        scope = self.current
        if name in scope.globals:
            self.module_scope.bind(name, binding)
        else:
            scope.bind(name, binding)

    def _bind_target(self, target: cst.BaseExpression, value: cst.BaseExpression | None) -> None:
        """Bind the names in `target`; `value` None means "no expression" (loop targets)."""
        if isinstance(target, cst.Name):
            if value is None:
                self._bind(target.value, Binding(_UNKNOWN_ONLY))
                return
            self._bind(target.value, Binding(self._alias_qualnames(value), (value,)))
        elif isinstance(target, (cst.Tuple, cst.List)):
            elements = [e.value for e in target.elements]
            if isinstance(value, (cst.Tuple, cst.List)) and len(value.elements) == len(elements) and not any(
                isinstance(e, cst.StarredElement) for e in value.elements
            ):
                for element, element_value in zip(elements, value.elements):
                    self._bind_target(element, element_value.value)
                return
            for element in elements:  # `rank, world_size = get_dist_info()`: each part of the whole
                self._bind_part(element, value)
        elif isinstance(target, cst.StarredElement):
            self._bind_part(target.value, value)

    def _bind_part(self, target: cst.BaseExpression, whole: cst.BaseExpression | None) -> None:
        """Bind a name unpacked from `whole`. Its value is unknown, but when `whole`
        is a call the name keeps it, so `rank, size = get_dist_info()` is traced."""
        if isinstance(target, cst.Name):
            self._bind(target.value, Binding(_UNKNOWN_ONLY, (whole,) if isinstance(whole, cst.Call) else ()))
        else:
            self._bind_target(target, None)

    def _bind_loop_target(self, target: cst.BaseExpression, iterable: cst.BaseExpression) -> None:
        """Bind a loop target (no expression), keeping what it iterates over:
        the name itself, or each name of a flat tuple target by position."""
        if isinstance(target, cst.Name):
            self._bind(target.value, Binding(_UNKNOWN_ONLY, (), ((iterable, None),)))
        elif isinstance(target, (cst.Tuple, cst.List)):
            for index, element in enumerate(target.elements):
                if isinstance(element.value, cst.Name) and not isinstance(element, cst.StarredElement):
                    self._bind(element.value.value, Binding(_UNKNOWN_ONLY, (), ((iterable, index),)))
                else:
                    self._bind_target(element.value, None)
        else:
            self._bind_target(target, None)

    def _alias_qualnames(self, value: cst.BaseExpression) -> QualNames:
        """``amp = torch.cuda.amp`` makes `amp` an alias; anything else is unknown."""
        if isinstance(value, (cst.Name, cst.Attribute)):
            names = self.qualified_names(value)
            if names:
                return names
        return _UNKNOWN_ONLY

    def _push(self, kind: ScopeKind, node: cst.CSTNode) -> Scope:
        self._changed()
        scope = Scope(kind, node)
        self.stack.append(scope)
        if kind is ScopeKind.FUNCTION:
            self.function_depth += 1
        return scope

    def _pop(self) -> None:
        self._changed()
        scope = self.stack.pop()
        if scope.kind is ScopeKind.FUNCTION:
            self.function_depth -= 1

    def _bind_params(self, params: cst.Parameters) -> None:
        for param in (
            *params.posonly_params,
            *params.params,
            *params.kwonly_params,
            params.star_arg,
            params.star_kwarg,
        ):
            if isinstance(param, cst.Param):
                self._bind(param.name.value, Binding(_UNKNOWN_ONLY, (param,)))

    # ----------------------------------------------------------- walker hooks

    def visit_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._bind(node.name.value, Binding(_UNKNOWN_ONLY, (node,)))
        self._push(ScopeKind.FUNCTION, node)
        self._bind_params(node.params)

    def leave_FunctionDef(self, node: cst.FunctionDef) -> None:
        self._pop()

    def visit_Lambda(self, node: cst.Lambda) -> None:
        self._push(ScopeKind.FUNCTION, node)
        self._bind_params(node.params)

    def leave_Lambda(self, node: cst.Lambda) -> None:
        self._pop()

    def visit_ClassDef(self, node: cst.ClassDef) -> None:
        self._push(ScopeKind.CLASS, node)

    def leave_ClassDef(self, node: cst.ClassDef) -> None:
        self._pop()
        self._bind(node.name.value, Binding(_UNKNOWN_ONLY, (node,)))

    def _visit_comprehension(self, node: cst.BaseComp) -> None:
        self._push(ScopeKind.COMPREHENSION, node)
        comp_for: cst.CompFor | None = node.for_in
        while comp_for is not None:
            self._bind_loop_target(comp_for.target, comp_for.iter)
            comp_for = comp_for.inner_for_in

    def _leave_comprehension(self, node: cst.BaseComp) -> None:
        self._pop()

    visit_ListComp = visit_SetComp = visit_DictComp = visit_GeneratorExp = _visit_comprehension
    leave_ListComp = leave_SetComp = leave_DictComp = leave_GeneratorExp = _leave_comprehension

    def leave_Import(self, node: cst.Import) -> None:
        for bound, qualname in import_bindings(node):
            self._bind(bound, Binding(frozenset({qualname})))

    def leave_ImportFrom(self, node: cst.ImportFrom) -> None:
        if isinstance(node.names, cst.ImportStar):
            self._changed()
            self.current.star_modules.append(import_from_module(node))
            return
        for bound, qualname in import_bindings(node):
            self._bind(bound, Binding(frozenset({qualname})))

    def leave_Assign(self, node: cst.Assign) -> None:
        for target in node.targets:
            self._bind_target(target.target, node.value)

    def leave_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._bind_target(node.target, node.value)

    def leave_AugAssign(self, node: cst.AugAssign) -> None:
        if isinstance(node.target, cst.Name):
            self._bind(node.target.value, Binding(_UNKNOWN_ONLY, (node,)))

    def leave_NamedExpr(self, node: cst.NamedExpr) -> None:
        self._bind_target(node.target, node.value)

    def visit_For(self, node: cst.For) -> None:
        self.current.conditional += 1
        self._bind_loop_target(node.target, node.iter)

    def leave_For(self, node: cst.For) -> None:
        self.current.conditional -= 1

    def visit_With(self, node: cst.With) -> None:
        for item in node.items:
            if item.asname is not None:  # `with tqdm(loader) as bar:` keeps the call, as an unpacked part does
                self._bind_part(item.asname.name, item.item)

    def visit_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self.current.conditional += 1
        if node.name is not None:
            self._bind_target(node.name.name, None)

    def leave_ExceptHandler(self, node: cst.ExceptHandler) -> None:
        self.current.conditional -= 1

    def _enter_conditional(self, node: cst.CSTNode) -> None:
        self.current.conditional += 1

    def _leave_conditional(self, node: cst.CSTNode) -> None:
        self.current.conditional -= 1

    visit_If = visit_While = visit_Try = visit_TryStar = visit_Match = _enter_conditional
    leave_If = leave_While = leave_Try = leave_TryStar = leave_Match = _leave_conditional

    def visit_Global(self, node: cst.Global) -> None:
        self._changed()
        self.current.globals.update(item.name.value for item in node.names)


def _module_final_bindings(module: cst.Module) -> dict[str, Binding]:
    """Bindings at the end of module execution, from the top-level statements.

    Descends into compound statements (``if``/``try``/``with``/loops) but not
    into function or class bodies, and resolves aliases in source order.
    """
    tracker = ScopeTracker.__new__(ScopeTracker)
    tracker.module_scope = Scope(ScopeKind.MODULE, module)
    tracker.stack = [tracker.module_scope]
    tracker._cache = {}
    tracker._lookups = {}
    tracker.generation = 0
    tracker.function_depth = 0
    tracker.final_module_names = {}
    _prepass_block(tracker, module.body, conditional=False)
    return tracker.module_scope.names


def _prepass_block(tracker: ScopeTracker, body: Iterable[cst.CSTNode], conditional: bool) -> None:
    scope = tracker.module_scope
    scope.conditional += conditional
    hooks = _prepass_hooks()
    for stmt in body:
        smalls = stmt.body if isinstance(stmt, cst.SimpleStatementLine) else (stmt,)
        for small in smalls:
            hook = hooks.get(type(small))
            if hook is not None:
                hook(tracker, small)
        if isinstance(stmt, cst.FunctionDef):
            tracker._bind(stmt.name.value, Binding(_UNKNOWN_ONLY, (stmt,)))
        elif isinstance(stmt, cst.ClassDef):
            tracker._bind(stmt.name.value, Binding(_UNKNOWN_ONLY, (stmt,)))
        elif isinstance(stmt, cst.With):
            _prepass_block(tracker, stmt.body.body, conditional=False)
        elif isinstance(stmt, (cst.If, cst.For, cst.While, cst.Try, cst.TryStar)):
            for block in _sub_blocks(stmt):
                _prepass_block(tracker, block, conditional=True)
    scope.conditional -= conditional


def _sub_blocks(stmt: cst.BaseCompoundStatement) -> Iterable[Iterable[cst.CSTNode]]:
    yield stmt.body.body
    if isinstance(stmt, (cst.Try, cst.TryStar)):
        for handler in stmt.handlers:
            yield handler.body.body
        if stmt.finalbody is not None:
            yield stmt.finalbody.body.body
    orelse = getattr(stmt, "orelse", None)
    while orelse is not None:
        yield orelse.body.body
        orelse = orelse.orelse if isinstance(orelse, cst.If) else None


@functools.cache  # built on first use: naming LibCST's classes imports LibCST
def _prepass_hooks() -> dict[type, Callable[[ScopeTracker, cst.CSTNode], None]]:
    return {
        cst.Import: ScopeTracker.leave_Import,
        cst.ImportFrom: ScopeTracker.leave_ImportFrom,
        cst.Assign: ScopeTracker.leave_Assign,
        cst.AnnAssign: ScopeTracker.leave_AnnAssign,
    }
