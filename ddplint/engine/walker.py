"""The one traversal: every analysis and every enabled rule, in a single walk.

LibCST's own `CSTNode.visit` rebuilds every node it passes (it is written
for transformers), which costs nearly as much as the parse. This walker only
reads: it descends through each node class's child fields, skipping the
whitespace and punctuation fields that no rule looks at, and calls the
``visit_<Node>``/``leave_<Node>`` methods of the analyses and rules from
dispatch tables keyed by node class. Analyses run before rules on the way in
and after them on the way out, so a rule always sees the analyses' state for
the node it is visiting.

A rule that raises is switched off for the rest of the file and reported;
the other rules go on (an exception in an analysis aborts the file).
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from typing import Any, Callable, Iterable

import libcst as cst

from ddplint.analysis.tree import _child_fields, child_fields
from ddplint.lazy import libcst

libcst()  # node classes whose isinstance tests cost no Python call: the walk asks millions

Callback = Callable[[cst.CSTNode], None]

_is_node_class: dict[type, bool] = {}

_hooks_by_class: dict[type, list[tuple[str, type, str]]] = {}


def _hooks(owner_cls: type) -> list[tuple[str, type, str]]:
    """(phase, node class, method name) for every visit_/leave_/check_ method
    (and the trigger_ methods that go with check_ ones)."""
    hooks = _hooks_by_class.get(owner_cls)
    if hooks is None:
        hooks = []
        for attr in dir(owner_cls):
            phase, _, node_name = attr.partition("_")
            if phase not in ("visit", "leave", "check", "trigger") or not node_name:
                continue
            node_cls = getattr(cst, node_name, None)
            if not (isinstance(node_cls, type) and issubclass(node_cls, cst.CSTNode)):
                raise TypeError(f"{owner_cls.__qualname__}.{attr}: {node_name} is not a LibCST node")
            if not dataclasses.is_dataclass(node_cls) or getattr(node_cls, "__abstractmethods__", None):
                raise TypeError(f"{owner_cls.__qualname__}.{attr}: {node_name} is abstract")
            hooks.append((phase, node_cls, attr))
        _hooks_by_class[owner_cls] = hooks
    return hooks


class Walker:
    """Runs `analyses` (must not fail) and `rules` (isolated) over one module."""

    def __init__(
        self,
        analyses: Iterable[Any],
        rules: Iterable[Any],
        on_rule_error: Callable[[Any, BaseException], None],
        stack: list[cst.CSTNode],
        defer: Callable[[Any, cst.CSTNode, Callback], None] | None = None,
    ) -> None:
        self._analyses = list(analyses)
        self._rules = list(rules)
        self._on_rule_error = on_rule_error
        #: Ancestors of the node being visited (shared with the FileContext).
        self.stack = stack
        #: Called with (rule, node, its check_ method) for each node a rule's
        #: ``check_<Node>`` wants after the walk (and its ``trigger_<Node>`` accepts).
        self._defer = defer
        self._build_tables()

    def active(self, rule: Any) -> bool:
        """Whether `rule` is still on (no hook of it has raised)."""
        return rule in self._rules

    def _build_tables(self) -> None:
        enter: dict[type, list[tuple[Any, Callback]]] = defaultdict(list)
        leave: dict[type, list[tuple[Any, Callback]]] = defaultdict(list)
        for owner in [*self._analyses, *self._rules]:
            hooks = _hooks(type(owner))
            triggers = {node_cls: attr for phase, node_cls, attr in hooks if phase == "trigger"}
            for phase, node_cls, attr in hooks:
                if phase in ("visit", "leave"):
                    (enter if phase == "visit" else leave)[node_cls].append((owner, getattr(owner, attr)))
            for phase, node_cls, attr in hooks:  # after the owner's own visit_ (it may note state there)
                if phase == "check":
                    if self._defer is None:
                        raise TypeError(f"{type(owner).__qualname__}.{attr}: deferred checks need the engine's walk")
                    enter[node_cls].append((owner, self._deferrer(owner, getattr(owner, attr), triggers.get(node_cls))))
        for table in leave.values():  # analyses leave after the rules
            table.reverse()
        self._enter = {k: tuple(v) for k, v in enter.items()}
        self._leave = {k: tuple(v) for k, v in leave.items()}

    def _deferrer(self, owner: Any, check: Callback, trigger_name: str | None) -> Callback:
        defer = self._defer
        assert defer is not None
        trigger = getattr(owner, trigger_name) if trigger_name else None

        def record(node: cst.CSTNode) -> None:
            if trigger is None or trigger(node):
                defer(owner, node, check)

        return record

    def fail(self, owner: Any, exc: BaseException) -> None:
        """Switch a rule off for the rest of the file and report its error
        (an analysis's error aborts the file)."""
        self._fail(owner, exc)

    def _fail(self, owner: Any, exc: BaseException) -> None:
        if owner not in self._rules:
            raise exc
        self._rules.remove(owner)
        self._build_tables()
        self._on_rule_error(owner, exc)

    def walk(self, module: cst.Module) -> None:
        """Traverse `module` once, dispatching to every hook."""
        self._walk(module)

    def _walk(self, node: cst.CSTNode) -> None:
        cls = node.__class__
        stack = self.stack
        stack.append(node)
        callbacks = self._enter.get(cls)
        if callbacks:
            for owner, callback in callbacks:
                try:
                    callback(node)
                except Exception as exc:  # noqa: BLE001 - isolation is the point
                    self._fail(owner, exc)
        fields = _child_fields.get(cls)
        if fields is None:
            fields = child_fields(cls)
        walk = self._walk
        for name in fields:
            value = getattr(node, name)
            value_cls = value.__class__
            if value_cls is tuple or value_cls is list:
                for child in value:
                    walk(child)
            else:
                is_node = _is_node_class.get(value_cls)
                if is_node is None:  # isinstance on LibCST's ABCs is slow: remember per class
                    is_node = _is_node_class[value_cls] = isinstance(value, cst.CSTNode)
                if is_node:
                    walk(value)
        callbacks = self._leave.get(cls)
        if callbacks:
            for owner, callback in callbacks:
                try:
                    callback(node)
                except Exception as exc:  # noqa: BLE001
                    self._fail(owner, exc)
        stack.pop()
