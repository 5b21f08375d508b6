"""DDP002 missing-set-epoch."""

from __future__ import annotations

from dataclasses import dataclass, field

from ddplint.analysis.calls import bind_arguments, bind_to_function
from ddplint.analysis.data import BATCH_SAMPLERS, is_dataloader, is_distributed_sampler, loader_arguments
from ddplint.analysis.names import dotted_name, last_name
from ddplint.analysis.rewrite import ProposedFix, insert_before
from ddplint.analysis.tree import descendants
from ddplint.analysis.values import truthiness
from ddplint.lazy import cst
from ddplint.model import Applicability, Severity
from ddplint.rule import Rule

#: `DistributedSampler.__init__`'s positional parameters.
SAMPLER_POSITIONAL = ("dataset", "num_replicas", "rank", "shuffle", "seed", "drop_last")
#: ColossalAI's `Plugin.prepare_dataloader` positional parameters (shuffle defaults to False).
PLUGIN_LOADER_POSITIONAL = ("dataset", "batch_size", "shuffle")
#: Callables that iterate the loader they are given (`enumerate(loader)`).
ITERATING = frozenset({"builtins.iter", "builtins.enumerate", "builtins.zip", "itertools.islice", "itertools.cycle"})


@dataclass(frozen=True, eq=False)
class _Iteration:
    """Somewhere a loader (or a parameter) is iterated."""

    keys: frozenset
    params: frozenset[str]
    loops: tuple[cst.For, ...]
    function: cst.FunctionDef | None
    #: What the loop iterates (`train_loader` of `enumerate(train_loader)`).
    expr: cst.BaseExpression | None = None


@dataclass(frozen=True, eq=False)
class _HelperCall:
    """A call of a module function or method, with what each parameter it
    binds refers to: (loader/sampler keys, names mentioned) per parameter name."""

    bound: tuple[tuple[cst.FunctionDef, bool, dict[str, tuple[frozenset, frozenset[str]]]], ...]
    loops: tuple[cst.For, ...]
    function: cst.FunctionDef | None

    @property
    def targets(self) -> tuple[cst.FunctionDef, ...]:
        return tuple(target for target, _, _ in self.bound)


@dataclass(frozen=True, eq=False)
class _SetEpoch:
    keys: frozenset
    params: frozenset[str]
    mentions: frozenset[str]
    loops: tuple[cst.For, ...]
    function: cst.FunctionDef | None


@dataclass
class _Facts:
    samplers: dict[int, cst.Call] = field(default_factory=dict)
    loaders: dict[int, tuple[cst.Call, cst.Call]] = field(default_factory=dict)
    builders: dict[cst.FunctionDef, set] = field(default_factory=dict)
    iterations: list[_Iteration] = field(default_factory=list)
    calls: list[_HelperCall] = field(default_factory=list)
    set_epochs: list[_SetEpoch] = field(default_factory=list)
    prepared: set = field(default_factory=set)


class MissingSetEpoch(Rule):
    """
    ## What it does

    Flags an epoch loop that iterates a DataLoader whose sampler is a
    shuffling `DistributedSampler` (any alias; `ElasticDistributedSampler`
    too, and the loader ColossalAI's `plugin.prepare_dataloader(...,
    shuffle=True)` builds over one) but never calls
    `set_epoch(<the loop variable>)` on it: not on the
    sampler, not as `loader.sampler.set_epoch(epoch)`,
    `loader.batch_sampler.sampler.set_epoch(epoch)` or `loader.set_epoch`,
    and not in a helper of the module that receives the loader or sampler
    together with the epoch. A constant argument (`set_epoch(0)`) counts as
    missing. The loader may be built in a builder function of the module,
    or returned beside others (`return train_loader, val_loader`), and
    iterated directly (`for b in loader`, `enumerate`, `tqdm`, `zip`,
    `iter`, `with tqdm(loader) as bar: for b in bar`) or in a helper called
    from the epoch loop (`train_one_epoch(...)`). The finding points at the
    epoch loop's `for` line, with the sampler as a related location.

    Not flagged: `DistributedSampler(..., shuffle=False)`; other samplers;
    a loader iterated once with no loop around it; loaders handed to
    `accelerator.prepare(...)`, which sets the epoch itself.

    ## Why is this bad?

    `DistributedSampler` shuffles with a seed derived from its epoch, which
    only `set_epoch` changes. Without it every epoch visits the samples in
    the same order (and every rank the same shard of it), so the model
    trains on an identical sequence each epoch: no error, just worse
    convergence.

    ## Example

    ```python
    sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        for batch in loader:
            train_step(batch)
    ```

    ## Use instead

    ```python
    sampler = DistributedSampler(train_set)
    loader = DataLoader(train_set, batch_size=32, sampler=sampler)
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        for batch in loader:
            train_step(batch)
    ```

    ## Fix safety

    With `--unsafe-fixes`, the fix inserts `<loader>.sampler.set_epoch(<epoch>)`
    as the first statement of the epoch loop, where the loop variable is a
    plain name, the loader is a name (or attribute) bound outside the loop
    and was given its `sampler=`. It is unsafe because it changes the data
    order of every epoch after the first (the point of the fix, but training
    curves change) and because the loop variable must really count epochs
    (`for epoch in range(start, epochs)`). Anywhere else, and where the loop
    already calls `set_epoch` with the wrong value (the new call would be
    undone), the fix is advice only.

    ## References

    - [DistributedSampler: call set_epoch at the start of each epoch](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    """

    code = "DDP002"
    name = "missing-set-epoch"
    severity = Severity.WARNING
    summary = "A DistributedSampler's epoch is never set: every epoch has the same order."
    tokens = ("DistributedSampler", "ElasticDistributedSampler", "prepare_dataloader")
    tags = ("correctness", "data-loading")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.facts = _Facts()

    # ------------------------------------------------------------ collection

    def visit_Call(self, node: cst.Call) -> None:
        ctx, facts = self.ctx, self.facts
        if is_distributed_sampler(node, ctx):
            shuffle = bind_arguments(node, SAMPLER_POSITIONAL).value("shuffle")
            if shuffle is None or truthiness(shuffle, ctx) is not False:
                facts.samplers[id(node)] = node
        elif self._plugin_loader(node):
            facts.samplers[id(node)] = node  # the plugin's loader holds a DistributedSampler of its own
            facts.loaders[id(node)] = (node, node)
        elif is_dataloader(node, ctx):
            sampler = self._loader_sampler(node)
            if sampler is not None:
                facts.loaders[id(node)] = (node, sampler)
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "set_epoch":
            keys, params = self._receiver(node.func.value)
            mentions = frozenset(n for a in node.args for n in _names_in(a.value))
            facts.set_epochs.append(_SetEpoch(keys, params, mentions, self._loops(), ctx.enclosing_function()))
        elif isinstance(node.func, cst.Attribute) and node.func.attr.value == "prepare":
            for arg in node.args:
                facts.prepared |= self._keys(arg.value)
        self._maybe_iteration_call(node)
        self._maybe_helper_call(node)

    def visit_For(self, node: cst.For) -> None:
        for expr in _iterated(node.iter, self.ctx):
            self._record_iteration(expr, self._loops())
            # `with tqdm(loader) as pbar: for batch in pbar:` iterates the loader.
            for value in self.ctx.values_of(expr) if isinstance(expr, cst.Name) else ():
                if isinstance(value, cst.Call):
                    for inner in _iterated(value, self.ctx):
                        if inner is not value:
                            self._record_iteration(inner, self._loops())

    def visit_Return(self, node: cst.Return) -> None:
        function = self.ctx.enclosing_function()
        if function is not None and node.value is not None:
            # `return train_loader, val_loader`: the builder stands for either (unpacked by the caller).
            parts = [e.value for e in node.value.elements] if isinstance(node.value, cst.Tuple) else [node.value]
            for part in parts:
                self.facts.builders.setdefault(function, set()).update(self._keys(part))

    def _maybe_iteration_call(self, node: cst.Call) -> None:
        if self.ctx.qualified_names(node.func) & {"builtins.iter"} and node.args:
            self._record_iteration(node.args[0].value, self._loops())

    def _record_iteration(self, expr: cst.BaseExpression, loops: tuple) -> None:
        keys, params = self._keys(expr), self._params_in(expr)
        if keys or params:
            self.facts.iterations.append(_Iteration(frozenset(keys), params, loops, self.ctx.enclosing_function(), expr))

    def _maybe_helper_call(self, node: cst.Call) -> None:
        function = self.ctx.enclosing_function()
        targets = self.ctx.flow.call_targets(node, function)
        if not targets:
            return
        described: dict[int, tuple[frozenset, frozenset[str]]] = {}
        bound = []
        for target, skip_self in targets:
            arguments = {}
            for name, arg in bind_to_function(node, target, skip_self).explicit.items():
                if id(arg) not in described:
                    described[id(arg)] = (
                        frozenset(self._keys(arg.value)) | self._sampler_keys(arg.value), _names_in(arg.value)
                    )
                arguments[name] = described[id(arg)]
            bound.append((target, skip_self, arguments))
        self.facts.calls.append(_HelperCall(tuple(bound), self._loops(), function))

    def _loader_sampler(self, node: cst.Call) -> cst.Call | None:
        args = loader_arguments(node, self.ctx)
        candidates = [args.value("sampler")]
        batch_sampler = args.value("batch_sampler")
        if batch_sampler is not None and not isinstance(batch_sampler, cst.Call):
            batch_sampler = next((v for v in self.ctx.origins(batch_sampler) if isinstance(v, cst.Call)), None)
        if isinstance(batch_sampler, cst.Call) and self.ctx.qualified_names(batch_sampler.func) & BATCH_SAMPLERS:
            inner = bind_arguments(batch_sampler, ("sampler", "batch_size", "drop_last")).value("sampler")
            candidates.append(inner)
        for candidate in candidates:
            for key in self._sampler_keys(candidate):
                return key[1]
        return None

    def _plugin_loader(self, node: cst.Call) -> bool:
        """ColossalAI's `plugin.prepare_dataloader(dataset, batch_size, shuffle=True)`:
        a DataLoader over a shuffling DistributedSampler, built for the caller."""
        func = node.func
        if not (isinstance(func, cst.Attribute) and func.attr.value == "prepare_dataloader"):
            return False
        shuffle = bind_arguments(node, PLUGIN_LOADER_POSITIONAL).value("shuffle")
        return shuffle is not None and truthiness(shuffle, self.ctx) is True and "colossalai" in self.ctx.source

    def _sampler_keys(self, expr: cst.BaseExpression | None) -> frozenset:
        """("sampler", call) for the DistributedSampler calls `expr` may be."""
        if expr is None:
            return frozenset()
        values = self.ctx.origins(expr)
        return frozenset(("sampler", v) for v in values if isinstance(v, cst.Call) and is_distributed_sampler(v, self.ctx))

    def _keys(self, expr: cst.BaseExpression) -> set:
        """What loaders `expr` may be: ("loader", DataLoader call) or ("builder", function)."""
        keys: set = set()
        direct = (expr,) if isinstance(expr, cst.Call) else self.ctx.values_of(expr)
        # the values followed through parameters, attributes and returns too (`self.train_loader`)
        values = {id(v): v for v in (*direct, *self.ctx.origins(expr))}.values()
        for value in values:
            if not isinstance(value, cst.Call):
                continue
            if is_dataloader(value, self.ctx) or self._plugin_loader(value):
                keys.add(("loader", value))
            elif isinstance(value.func, cst.Name):
                keys.update(("builder", f) for f in self.ctx.values_of(value.func) if isinstance(f, cst.FunctionDef))
        return keys

    def _receiver(self, receiver: cst.BaseExpression) -> tuple[frozenset, frozenset[str]]:
        """What a `set_epoch` receiver is: the sampler itself, or a loader's sampler."""
        base = receiver
        keys = set(self._sampler_keys(base))  # `self.sampler` may be the sampler itself
        while isinstance(base, cst.Attribute) and base.attr.value in ("sampler", "batch_sampler"):
            base = base.value
        keys |= set(self._keys(base)) | set(self._sampler_keys(base))
        return frozenset(keys), self._params_in(base)

    def _params_in(self, expr: cst.BaseExpression) -> frozenset[str]:
        function = self.ctx.enclosing_function()
        if function is None or not isinstance(expr, cst.Name):
            return frozenset()
        params = {p.name.value for p in (*function.params.posonly_params, *function.params.params, *function.params.kwonly_params)}
        return frozenset({expr.value} & params)

    def _loops(self) -> tuple[cst.For, ...]:
        """The `for` loops whose body holds the node being visited, innermost first."""
        loops = []
        stack = self.ctx.stack
        for node, child in zip(reversed(stack[:-1]), reversed(stack[1:])):
            if isinstance(node, (cst.FunctionDef, cst.Lambda)):
                break
            if isinstance(node, cst.For) and child is node.body:
                loops.append(node)
        return tuple(loops)

    # ------------------------------------------------------------ decision

    def finish(self) -> None:
        facts = self.facts
        flagged: set[int] = set()
        for loader, sampler in facts.loaders.values():
            if id(sampler) not in facts.samplers or ("loader", loader) in facts.prepared:
                continue
            keys = self._aliases(loader)
            for loops, function, iterated in self._iterations_of(keys):
                if loops and id(loops[0]) not in flagged and not self._sets_epoch(loops, function, keys, sampler):
                    flagged.add(id(loops[0]))
                    shown = self._sampler_shown(sampler, loader, function, iterated)
                    self._report(loops[0], sampler, shown, self._set_epoch_fix(loops, loader, iterated))

    def _aliases(self, loader: cst.Call) -> frozenset:
        """The keys that denote this loader: itself and the builders returning it."""
        keys = {("loader", loader)}
        changed = True
        while changed:
            changed = False
            for function, returned in self.facts.builders.items():
                if returned & keys and ("builder", function) not in keys:
                    keys.add(("builder", function))
                    changed = True
        return frozenset(keys)

    def _iterations_of(self, keys: frozenset) -> list[tuple[tuple, cst.FunctionDef | None, cst.BaseExpression | None]]:
        """(loops around the iteration, function, what is iterated there) for
        each place the loader is iterated (a helper's parameter: None)."""
        found = [(it.loops, it.function, it.expr if it.keys & keys else None) for it in self.facts.iterations if it.keys & keys]
        for call in self.facts.calls:
            for target, _, arguments in call.bound:
                for name, (arg_keys, _) in arguments.items():
                    if arg_keys & keys and any(
                        name in it.params and it.function is target for it in self.facts.iterations
                    ):
                        found.append((call.loops, call.function, None))
        return found

    def _sets_epoch(self, loops: tuple, function, keys: frozenset, sampler: cst.Call) -> bool:
        """Whether some loop around the iteration calls set_epoch(<its variable>) on it."""
        targets = frozenset(n for loop in loops for n in _names_in(loop.target))
        refers = keys | {("sampler", sampler)}
        for record in self.facts.set_epochs:
            if record.function is function and record.keys & refers and record.mentions & targets:
                if any(loop in record.loops for loop in loops):
                    return True
        for call in self.facts.calls:
            if call.function is not function or not any(loop in call.loops for loop in loops):
                continue
            if self._helper_sets_epoch(call, refers, targets):
                return True
        return False

    def _helper_sets_epoch(self, call: _HelperCall, refers: frozenset, targets: frozenset[str]) -> bool:
        nothing = (frozenset(), frozenset())
        for target, skip_self, given in call.bound:
            params = frozenset(_parameters(target)[1 if skip_self else 0 :])  # not `self`
            for record in self.facts.set_epochs:
                if record.function is not target:
                    continue
                # the receiver is a parameter given the sampler, or resolves to it itself (`self.sampler`)
                receiver_ok = bool(record.keys & refers) or any(given.get(p, nothing)[0] & refers for p in record.params)
                # the epoch is a parameter given the loop variable, or state of the object (`self.epoch`)
                epoch_ok = any(given.get(p, nothing)[1] & targets for p in record.mentions) or bool(
                    record.mentions and not record.mentions & params
                )
                if receiver_ok and epoch_ok:
                    return True
        return False

    def _set_epoch_fix(self, loops: tuple, loader: cst.Call, iterated: cst.BaseExpression | None) -> ProposedFix:
        """Insert `<loader>.sampler.set_epoch(<epoch>)` first in the epoch loop
        (unsafe: review it), when the loop, the loader and its sampler are plain."""
        epoch_loop = loops[0]
        title = "Call `set_epoch(epoch)` on the sampler at the start of each epoch"
        body = epoch_loop.body
        plain = (
            isinstance(epoch_loop.target, cst.Name)
            and isinstance(body, cst.IndentedBlock)
            and iterated is not None
            and dotted_name(iterated) is not None
            and any(a.keyword is not None and a.keyword.value == "sampler" for a in loader.args)
        )
        if not plain or self._bound_inside(iterated, epoch_loop) or _calls_set_epoch(epoch_loop):
            return ProposedFix.display_only(title)  # (a wrong `set_epoch(0)` would undo the new call)
        loader_code = self.ctx.module.code_for_node(iterated)
        call = cst.parse_statement(f"{loader_code}.sampler.set_epoch({epoch_loop.target.value})\n")
        return ProposedFix(title, (insert_before(body.body[0], call),), Applicability.UNSAFE)

    def _bound_inside(self, expr: cst.BaseExpression, loop: cst.For) -> bool:
        """Whether the name at the root of `expr` gets a value inside `loop` (then
        it may not exist yet where the fix puts `set_epoch`)."""
        root = expr
        while isinstance(root, cst.Attribute):
            root = root.value
        if not isinstance(root, cst.Name):
            return True
        for node in descendants(loop.body):
            target = node.target if isinstance(node, (cst.AssignTarget, cst.For, cst.AnnAssign, cst.NamedExpr)) else None
            if target is not None and root.value in _names_in(target):
                return True
        return False

    def _sampler_shown(self, sampler: cst.Call, loader: cst.Call, function, iterated) -> str:
        """The sampler as the loop's function can name it: the variable or
        `self.` attribute it was assigned to, else `<loader>.sampler`."""
        if sampler is loader:  # a plugin's `prepare_dataloader(...)`: its sampler is the loader's
            named = iterated is not None and dotted_name(iterated) is not None
            return f"{self.ctx.module.code_for_node(iterated)}.sampler" if named else "sampler"
        for node in descendants(function if function is not None else self.ctx.module, into_functions=False):
            if isinstance(node, cst.Assign) and node.value is sampler and len(node.targets) == 1:
                return self.ctx.module.code_for_node(node.targets[0].target)
        owner = self.ctx.module
        for node in descendants(owner):
            if isinstance(node, cst.Assign) and node.value is sampler and len(node.targets) == 1:
                target = node.targets[0].target
                if isinstance(target, cst.Attribute) and dotted_name(target.value) == "self" and function is not None:
                    params = _parameters(function)
                    if params and params[0] == "self":
                        return self.ctx.module.code_for_node(target)  # `self.train_sampler`, set in `__init__`
        if iterated is not None and dotted_name(iterated) is not None and any(
            a.keyword is not None and a.keyword.value == "sampler" for a in loader.args
        ):
            return f"{self.ctx.module.code_for_node(iterated)}.sampler"
        return "sampler"

    def _report(self, loop: cst.For, sampler: cst.Call, shown: str, fix: ProposedFix) -> None:
        variable = self.ctx.module.code_for_node(loop.target)
        self.report(
            loop,
            f"this loop iterates a DataLoader with a shuffling DistributedSampler but never calls "
            f"`set_epoch({variable})` on it, so every epoch uses the same order; call "
            f"`{shown}.set_epoch({variable})` at the start of each epoch",
            related=((sampler, "the DistributedSampler"),),
            statement=loop,
            fix=fix,
        )


def _calls_set_epoch(loop: cst.For) -> bool:
    return any(
        isinstance(n, cst.Call) and isinstance(n.func, cst.Attribute) and n.func.attr.value == "set_epoch"
        for n in descendants(loop.body)
    )


def _parameters(function: cst.FunctionDef) -> list[str]:
    params = function.params
    return [p.name.value for p in (*params.posonly_params, *params.params, *params.kwonly_params)]


def _names_in(node: cst.CSTNode) -> frozenset[str]:
    names = {n.value for n in descendants(node) if isinstance(n, cst.Name)}
    if isinstance(node, cst.Name):
        names.add(node.value)
    return frozenset(names)


def _iterated(expr: cst.BaseExpression, ctx) -> list[cst.BaseExpression]:
    """The expressions a `for` iterates: `loader` in `enumerate(tqdm(loader))`, `zip(a, b)`."""
    if isinstance(expr, cst.Call):
        names = ctx.qualified_names(expr.func)
        wrapper = names & ITERATING or (last_name(expr.func) or "") in ("tqdm", "trange", "track", "islice")
        if wrapper:
            return [e for a in expr.args if a.keyword is None for e in _iterated(a.value, ctx)]
        return []
    return [expr]
