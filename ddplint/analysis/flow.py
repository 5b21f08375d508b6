"""Where values come from across a module: the value service behind `model.origins`.

A name, parameter, attribute or call is followed to what it may hold, through
call sites (arguments bound to parameters, the ``self`` offset, keywords,
defaults), attributes (what any method assigns to ``self.x``), returns of
module functions and methods, and the class hierarchy (a base's method calling
``self.get_info`` reaches the subclass's override). Built from the module tree
on first use, so it answers for any function, not only the one being walked.
"""

from __future__ import annotations

import functools
from typing import Iterator

from ddplint.analysis.calls import bind_to_function, positional_parameters
from ddplint.analysis.hierarchy import class_methods, module_bases
from ddplint.analysis.tree import children, descendants, leaf_kinds, statement_nodes
from ddplint.lazy import cst

#: How many steps (a name, a parameter, an attribute, a return) one answer follows.
_FLOW_DEPTH = 12
#: How deeply resolving a receiver (`obj` of `obj.step()`) may start another resolution.
_MAX_NESTING = 4
#: Expression positions where a function, method or class escapes as a value
#: (a callback, ``dataset_cls=Records``): its callers are then not all visible.
_ESCAPES = ("Arg", "Assign", "AnnAssign", "Return", "Element", "DictElement", "Yield")
_INTROSPECTION = frozenset({"super", "isinstance", "issubclass", "type", "hasattr", "getattr"})


@functools.cache
def _escape_kinds() -> frozenset[type]:
    """The node classes of `_ESCAPES` (LibCST is imported on first use)."""
    return frozenset(getattr(cst, name) for name in _ESCAPES)


class ValueFlow:
    """Where values come from across the module's functions and classes.

    Built once from the module tree (lazily, when a rule first asks), so it
    answers for any function, not only the one the walker is in:

    * a parameter holds the arguments bound to it at every call site of its
      function (module functions, ``self.`` methods through the class
      hierarchy, constructors ``Cls(...)`` → ``__init__`` with the ``self``
      offset, ``super().__init__(...)``, keywords, defaults). Unknown (the
      parameter itself) when some call is not visible: no caller in the
      module, ``*args``, or the function escapes as a value;
    * ``self.x`` holds what any method of the class (its module bases and
      subclasses included) assigns to it; ``obj.x`` too when ``obj`` is built
      from a module class;
    * a call of a module function or method holds what it returns.

    `origins` answers every possibility (the union over call sites and
    branches), with the nodes it could not follow (a `Param`, an unknown call)
    among them, so "all of them are X" fails on disagreement and on unknowns,
    while "some of them is X" reads a branch (``return DistributedSampler(..)
    if distributed else RandomSampler(..)``).
    """

    def __init__(self, module: cst.Module, module_names: dict, walrus: bool = True) -> None:
        self.module_names = module_names
        #: Whether the module may bind names inside expressions (``(x := v)``): else a
        #: function's bindings are read from its statements alone (`statement_nodes`).
        self._body_nodes = functools.partial(descendants, into_functions=False) if walrus else statement_nodes
        #: function -> the class whose body defines it (methods only)
        self.owner: dict[cst.FunctionDef, cst.ClassDef] = {}
        #: function -> the function it is nested in
        self.outer: dict[cst.FunctionDef, cst.FunctionDef | None] = {}
        #: Param node -> its function
        self.param_owner: dict[cst.Param, cst.FunctionDef] = {}
        #: every call with the function it is written in (None: module level)
        self.calls: list[tuple[cst.Call, cst.FunctionDef | None]] = []
        self.classes: list[cst.ClassDef] = []
        #: names (and ``.attr`` names) used as values rather than called
        self.escaped: set[str] = set()
        self._locals: dict[cst.FunctionDef, tuple[dict, set]] = {}
        #: function -> (name, attribute) -> the values its body assigns to ``<name>.<attribute>``
        #: (read in the same walk as its local names: ``self.x = ...`` in a method)
        self._attributes: dict[cst.FunctionDef, dict[tuple[str, str], list[cst.BaseExpression]]] = {}
        self._callers: dict[cst.FunctionDef, list | None] = {}
        self._targets: dict[int, tuple] = {}
        self._nesting = 0
        self._resolving: set[int] = set()
        self._methods: dict[cst.ClassDef, dict[str, cst.FunctionDef]] = {}
        self._bases: dict[cst.ClassDef, list[cst.ClassDef]] = {}
        self._returned: dict[cst.FunctionDef, list | None] = {}
        #: Origins that hold wherever they are asked (top-level queries only): what ``self.<attribute>``
        #: holds in a class's methods, by (class, attribute); a parameter's arguments, by (param,)
        self._followed: dict[tuple, tuple[cst.CSTNode, ...]] = {}
        self._call_functions: dict[int, cst.FunctionDef | None] | None = None
        #: calls by the name they call: ``"step"`` for ``x.step()``, ``"()step"`` for ``step()``
        self._by_name: dict[str, list[tuple[int, cst.Call, cst.FunctionDef | None]]] | None = None
        self._index(module)
        #: names of the methods of the module's classes (`x.append()` is none of them)
        self.method_names = frozenset(f.name.value for f in self.owner)

    # ------------------------------------------------------------ index

    def _index(self, module: cst.Module) -> None:
        # (node, function it is in, class whose methods are its direct children)
        todo: list[tuple[cst.CSTNode, cst.FunctionDef | None, cst.ClassDef | None]] = [(module, None, None)]
        harmless: set[int] = set()  # `isinstance(x, Cls)`, `super(Cls, self)`: not an escape
        escapes, leaves = _escape_kinds(), leaf_kinds()
        while todo:
            node, function, cls = todo.pop()
            for child in children(node):
                kind = child.__class__  # LibCST's node classes are final: `is` instead of its slow ABC isinstance
                if kind in leaves:
                    continue  # a name or a literal: nothing below it
                if kind is cst.FunctionDef:
                    if cls is not None:
                        self.owner[child] = cls
                    self.outer[child] = function
                    params = child.params
                    for param in (*params.posonly_params, *params.params, *params.kwonly_params):
                        self.param_owner[param] = child
                    todo.append((child, child, None))
                    continue
                if kind is cst.ClassDef:
                    self.classes.append(child)
                    todo.append((child.body, function, child))
                    todo.extend((base, function, None) for base in child.bases)
                    continue
                if kind is cst.Call:
                    self.calls.append((child, function))
                    if isinstance(child.func, cst.Name) and child.func.value in _INTROSPECTION:
                        harmless.update(id(a) for a in child.args)
                elif kind in escapes and id(child) not in harmless:
                    value = getattr(child, "value", None)
                    if isinstance(value, cst.Name):
                        self.escaped.add(value.value)
                    elif isinstance(value, cst.Attribute):
                        self.escaped.add("." + value.attr.value)
                todo.append((child, function, None))

    def function_of_call(self, call: cst.Call) -> cst.FunctionDef | None:
        """The function `call` is written in (None: module level, or not a call of this module)."""
        if self._call_functions is None:
            self._call_functions = {id(c): f for c, f in self.calls}
        return self._call_functions.get(id(call))

    def module_values(self, node: cst.BaseExpression) -> tuple[cst.CSTNode, ...]:
        """The values a module-level name has once the module has run."""
        if isinstance(node, cst.Name):
            binding = self.module_names.get(node.value)
            if binding is not None:
                return binding.values
        return ()

    def _local_bindings(self, function: cst.FunctionDef) -> tuple[dict, set]:
        """(name -> assigned values, names bound some other way) in a function body."""
        cached = self._locals.get(function)
        if cached is not None:
            return cached
        values: dict[str, list] = {}
        opaque: set[str] = set()
        attributes: dict[tuple[str, str], list[cst.BaseExpression]] = {}
        for node in self._body_nodes(function.body):
            kind = node.__class__  # LibCST's node classes are final: `is` instead of its slow ABC isinstance
            if kind is cst.Assign:
                for target in node.targets:
                    _collect_target(target.target, node.value, values, opaque)
                    _collect_attribute(target.target, node.value, attributes)
            elif kind is cst.AnnAssign or kind is cst.NamedExpr:
                if node.value is not None:
                    _collect_target(node.target, node.value, values, opaque)
                    _collect_attribute(node.target, node.value, attributes)
            elif kind is cst.FunctionDef or kind is cst.ClassDef:
                values.setdefault(node.name.value, []).append(node)
            elif kind is cst.For or kind is cst.AugAssign:
                _collect_target(node.target, None, values, opaque)
            elif kind is cst.WithItem:
                if node.asname is not None:
                    _collect_target(node.asname.name, None, values, opaque)
            elif kind is cst.Import or kind is cst.ImportFrom or kind is cst.Global or kind is cst.Nonlocal:
                opaque.update(n.value for n in descendants(node) if isinstance(n, cst.Name))
        self._locals[function] = (values, opaque)
        self._attributes[function] = attributes
        return values, opaque

    def _attribute_bindings(self, function: cst.FunctionDef) -> dict[tuple[str, str], list[cst.BaseExpression]]:
        """(name, attribute) -> the values `function`'s body assigns to ``<name>.<attribute>``."""
        if function not in self._attributes:
            self._local_bindings(function)
        return self._attributes[function]

    # ------------------------------------------------------------ calls

    def methods_of(self, cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
        """The methods of an instance of `cls`, through its module bases."""
        table = self._methods.get(cls)
        if table is None:
            table = self._methods[cls] = class_methods(cls, self.module_values)
        return table

    def bases(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """The module classes `cls` derives from, nearest first."""
        found = self._bases.get(cls)
        if found is None:
            found = self._bases[cls] = module_bases(cls, self.module_values)
        return found

    def subclasses(self, cls: cst.ClassDef) -> list[cst.ClassDef]:
        """Module classes deriving from `cls`."""
        return [c for c in self.classes if cls in self.bases(c)]

    def class_of(self, function: cst.FunctionDef | None) -> cst.ClassDef | None:
        """The class whose method `function` is (or whose method encloses it)."""
        while function is not None:
            cls = self.owner.get(function)
            if cls is not None:
                return cls
            function = self.outer.get(function)
        return None

    def call_targets(self, call: cst.Call, function: cst.FunctionDef | None) -> tuple[tuple[cst.FunctionDef, bool], ...]:
        """(function, skips self) for each module function or method `call` may
        run: ``helper(x)``, ``self.step(x)`` (an override in a module subclass
        too), ``super().__init__(x)``, ``obj.step(x)`` with ``obj = Cls(...)``,
        ``Cls(x)`` → ``__init__``."""
        key = id(call)
        cached = self._targets.get(key)
        if cached is None:
            self._targets[key] = ()  # while resolving it (`obj.step()` with `obj = make(obj)`)
            self._resolving.add(key)
            try:
                cached = self._targets[key] = tuple(self._call_targets(call, function))
            finally:
                self._resolving.discard(key)
        return cached

    def _call_targets(self, call: cst.Call, function: cst.FunctionDef | None) -> Iterator[tuple[cst.FunctionDef, bool]]:
        func = call.func
        if isinstance(func, cst.Name):
            for value in self._name_values(func.value, function):
                if isinstance(value, cst.FunctionDef):
                    yield value, False
                elif isinstance(value, cst.ClassDef):
                    init = self.methods_of(value).get("__init__")
                    if init is not None:
                        yield init, True
            return
        if not isinstance(func, cst.Attribute):
            return
        name, receiver = func.attr.value, func.value
        if name not in self.method_names:
            return
        cls = self.class_of(function)
        if isinstance(receiver, cst.Call) and isinstance(receiver.func, cst.Name) and receiver.func.value == "super":
            if cls is not None:
                for base in self.bases(cls):
                    if name in _own_methods(base):
                        yield _own_methods(base)[name], True
                        break
            return
        if self._is_self(receiver, function) and cls is not None:
            classes = [cls, *self.subclasses(cls)]
        else:
            classes = [v for v in self._instances(receiver, function)]
        seen: set[int] = set()
        for candidate in classes:
            method = self.methods_of(candidate).get(name)
            if method is not None and id(method) not in seen:
                seen.add(id(method))
                yield method, not _is_static(method)

    def _is_self(self, node: cst.BaseExpression, function: cst.FunctionDef | None) -> bool:
        """`node` is the first parameter of the method `function` (or of the method around it)."""
        if not isinstance(node, cst.Name):
            return False
        while function is not None and function not in self.owner:
            function = self.outer.get(function)
        if function is None or _is_static(function):
            return False
        positional = positional_parameters(function)
        return bool(positional) and positional[0] == node.value

    def _instances(self, node: cst.BaseExpression, function: cst.FunctionDef | None) -> list[cst.ClassDef]:
        """The module classes `node` may be an instance of (``Cls(...)`` calls among its origins)."""
        found = []
        for origin in self.origins(node, function):
            if isinstance(origin, cst.Call) and isinstance(origin.func, cst.Name):
                found += [v for v in self._name_values(origin.func.value, None) if isinstance(v, cst.ClassDef)]
        return found

    def callers(self, target: cst.FunctionDef) -> list[tuple[cst.Call, cst.FunctionDef | None, bool]] | None:
        """(call, function it is in, skips self) for every call of `target` in the
        module; None when some may not be visible (no call at all here, or the
        function escapes as a value)."""
        if target in self._callers:
            return self._callers[target]
        self._callers[target] = None  # recursion guard
        name = target.name.value
        cls = self.owner.get(target)
        escaped = ("." + name in self.escaped) if cls is not None else name in self.escaped
        if cls is not None and name == "__init__":
            escaped = cls.name.value in self.escaped
        found = []
        complete = True
        if not escaped:
            for call, function in self._calls_naming(name):
                if id(call) in self._resolving:  # its targets are not known yet: no answer, and none kept
                    complete = False
                    continue
                for candidate, skip in self.call_targets(call, function):
                    if candidate is target:
                        found.append((call, function, skip))
        result = (found or None) if complete else None
        if complete:
            self._callers[target] = result
        else:
            del self._callers[target]
        return result

    def _calls_naming(self, name: str) -> list[tuple[cst.Call, cst.FunctionDef | None]]:
        """The calls that may run a function or method called `name`, in source
        order: ``obj.name()`` runs methods named `name` only, ``name()`` what
        `name` is bound to (a def binds its own name), and ``__init__`` runs
        for a call of any name (a class)."""
        if self._by_name is None:
            self._by_name = {}
            for position, (call, function) in enumerate(self.calls):
                func = call.func
                if func.__class__ is cst.Attribute:
                    self._by_name.setdefault(func.attr.value, []).append((position, call, function))
                elif func.__class__ is cst.Name:
                    self._by_name.setdefault("()" + func.value, []).append((position, call, function))
        found = [*self._by_name.get(name, ()), *self._by_name.get("()" + name, ())]
        if name == "__init__":
            found += [c for key, calls in self._by_name.items() if key[:2] == "()" and key != "()__init__" for c in calls]
        found.sort(key=lambda entry: entry[0])
        return [(call, function) for _, call, function in found]

    # ------------------------------------------------------------ values

    def origins(self, node: cst.CSTNode, function: cst.FunctionDef | None) -> tuple[cst.CSTNode, ...]:
        """Every value `node` (written in `function`) may hold, followed through
        local names, parameters, attributes and returns; nodes that cannot be
        followed stand for themselves."""
        if self._nesting > _MAX_NESTING:  # receivers resolved while resolving receivers
            return (node,)
        if self._nesting == 0 and not self._resolving:
            key: tuple | None = None
            if node.__class__ is cst.Param:
                key = (node,)  # a parameter holds the same arguments wherever its function reads it
            elif node.__class__ is cst.Attribute and self._is_self(node.value, function):
                # `self.x` anywhere in a class holds the same values: followed once per (class, attribute).
                cls = self.class_of(function)
                key = None if cls is None else (cls, node.attr.value)
            if key is not None:
                if key not in self._followed:
                    self._followed[key] = self._origins(node, function)
                return self._followed[key]
        return self._origins(node, function)

    def _origins(self, node: cst.CSTNode, function: cst.FunctionDef | None) -> tuple[cst.CSTNode, ...]:
        self._nesting += 1
        try:
            found: dict[int, cst.CSTNode] = {}
            self._follow(node, function, found, set(), 0)
        finally:
            self._nesting -= 1
        return tuple(found.values())

    def parameter(self, function: cst.FunctionDef, name: str) -> cst.Param | None:
        """`function`'s parameter called `name`."""
        params = function.params
        for param in (*params.posonly_params, *params.params, *params.kwonly_params):
            if param.name.value == name:
                return param
        return None

    def parameter_values(self, param: cst.Param) -> tuple[cst.CSTNode, ...]:
        """The arguments bound to `param` at every call site (defaults where a
        call leaves it out); the `param` itself when some call is unknown."""
        found: dict[int, cst.CSTNode] = {}
        self._follow(param, self.param_owner.get(param), found, set(), 0)
        return tuple(found.values())

    def returns(self, function: cst.FunctionDef) -> tuple[cst.CSTNode, ...]:
        """What `function` may return (generators: nothing known)."""
        found: dict[int, cst.CSTNode] = {}
        self._returns(function, found, set(), 0)
        return tuple(found.values())

    def attribute_values(self, cls: cst.ClassDef, attr: str) -> tuple[cst.CSTNode, ...]:
        """What the methods of `cls` (bases and subclasses included) assign to ``self.<attr>``."""
        found: dict[int, cst.CSTNode] = {}
        self._attribute(cls, attr, found, set(), 0)
        return tuple(found.values())

    def _follow(self, node: cst.CSTNode, function: cst.FunctionDef | None, found: dict, seen: set, depth: int) -> None:
        key = (id(node), id(function))
        if key in seen or depth > _FLOW_DEPTH:
            return
        seen.add(key)
        depth += 1
        if isinstance(node, cst.Name) and node.value not in ("True", "False", "None"):
            values = self._name_values(node.value, function, keep_params=True)
            if not values:
                found[id(node)] = node
            for value, where in values:
                self._follow(value, where, found, seen, depth)
        elif isinstance(node, cst.Param):
            self._parameter(node, found, seen, depth)
        elif isinstance(node, cst.Attribute) and not isinstance(node.value, cst.Call):
            classes = self._receiver_classes(node.value, function)
            if not classes:
                found[id(node)] = node
            for cls in classes:
                self._attribute(cls, node.attr.value, found, seen, depth)
        elif isinstance(node, cst.IfExp):
            self._follow(node.body, function, found, seen, depth)
            self._follow(node.orelse, function, found, seen, depth)
        elif isinstance(node, cst.BooleanOperation):
            self._follow(node.left, function, found, seen, depth)
            self._follow(node.right, function, found, seen, depth)
        elif isinstance(node, cst.Call):
            targets = self.call_targets(node, function)
            if not targets or any(skip and t.name.value == "__init__" for t, skip in targets):
                found[id(node)] = node  # a constructor, or nothing known: the call is the value
                return
            for target, _ in targets:
                self._returns(target, found, seen, depth)
        else:
            found[id(node)] = node

    def name_values(self, name: str, function: cst.FunctionDef | None) -> list[tuple[cst.CSTNode, cst.FunctionDef | None]]:
        """(value, the function it is written in) for each value `name` may hold
        seen from `function` (every assignment; a parameter stands for itself);
        empty when it is bound some other way (a loop, ``with ... as``, an import)."""
        return self._name_values(name, function, keep_params=True)

    def _name_values(self, name: str, function: cst.FunctionDef | None, keep_params: bool = False) -> list:
        """The values of `name` seen from `function`: its locals (syntactic,
        every assignment), its parameters, enclosing functions, the module."""
        scope = function
        while scope is not None:
            values, opaque = self._local_bindings(scope)
            if name in opaque:
                return []
            if name in values:
                return [(v, scope) for v in values[name]] if keep_params else values[name]
            params = scope.params
            for param in (*params.posonly_params, *params.params, *params.kwonly_params, params.star_arg, params.star_kwarg):
                if isinstance(param, cst.Param) and param.name.value == name:
                    return [(param, scope)] if keep_params else [param]
            scope = self.outer.get(scope)
        binding = self.module_names.get(name)
        values = binding.values if binding is not None else ()
        return [(v, None) for v in values] if keep_params else list(values)

    def _parameter(self, param: cst.Param, found: dict, seen: set, depth: int) -> None:
        function = self.param_owner.get(param)
        sites = self.callers(function) if function is not None else None
        name = param.name.value
        if not sites or (function is not None and self._is_self(param.name, function)):
            found[id(param)] = param
            return
        for call, caller, skip in sites:
            bound = bind_to_function(call, function, skip)
            value = bound.value(name)
            if value is not None:
                self._follow(value, caller, found, seen, depth)
            elif bound.open_ended or param.default is None:
                found[id(param)] = param
            else:
                self._follow(param.default, self.outer.get(function), found, seen, depth)

    def _returns(self, function: cst.FunctionDef, found: dict, seen: set, depth: int) -> None:
        if function not in self._returned:
            nodes = list(descendants(function.body, into_functions=False))
            generator = any(isinstance(n, cst.Yield) for n in nodes)
            self._returned[function] = None if generator else [
                n.value for n in nodes if isinstance(n, cst.Return) and n.value is not None
            ]
        returned = self._returned[function]
        if returned is None:  # a generator
            found[id(function)] = function
            return
        for value in returned:
            self._follow(value, function, found, seen, depth)

    def _receiver_classes(self, receiver: cst.BaseExpression, function: cst.FunctionDef | None) -> list[cst.ClassDef]:
        if self._is_self(receiver, function):
            cls = self.class_of(function)
            return [cls] if cls is not None else []
        return self._instances(receiver, function)

    def _attribute(self, cls: cst.ClassDef, attr: str, found: dict, seen: set, depth: int) -> None:
        related = [cls, *self.bases(cls), *self.subclasses(cls)]
        assigned = False
        for current in related:
            for method in _own_methods(current).values():
                positional = positional_parameters(method)
                if not positional or _is_static(method):
                    continue
                for value in self._attribute_bindings(method).get((positional[0], attr), ()):
                    assigned = True
                    self._follow(value, method, found, seen, depth)
        if not assigned:
            found[id(cls)] = cls  # nothing visible assigns it (a class attribute, a property)


def _collect_target(target: cst.BaseExpression, value: cst.BaseExpression | None, values: dict, opaque: set) -> None:
    if isinstance(target, cst.Name):
        if value is None:
            opaque.add(target.value)
        else:
            values.setdefault(target.value, []).append(value)
    elif isinstance(target, (cst.Tuple, cst.List)):
        for element in target.elements:
            _collect_target(element.value, None, values, opaque)
    elif isinstance(target, cst.StarredElement):
        _collect_target(target.value, None, values, opaque)


def _own_methods(cls: cst.ClassDef) -> dict[str, cst.FunctionDef]:
    return {s.name.value: s for s in cls.body.body if isinstance(s, cst.FunctionDef)}


def _is_static(function: cst.FunctionDef) -> bool:
    return any(isinstance(d.decorator, cst.Name) and d.decorator.value == "staticmethod" for d in function.decorators)


def _collect_attribute(target: cst.BaseExpression, value: cst.BaseExpression, attributes: dict) -> None:
    """``<name>.<attr> = value``, by (name, attr)."""
    if target.__class__ is cst.Attribute and target.value.__class__ is cst.Name:
        attributes.setdefault((target.value.value, target.attr.value), []).append(value)
