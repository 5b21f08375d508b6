"""DDP014 sampler-shuffle-conflict."""

from __future__ import annotations

from ddplint.analysis.calls import BoundArguments, bind_arguments
from ddplint.analysis.classes import class_of_instance, inherits_from
from ddplint.analysis.data import DATALOADERS, DATAPIPES, ITERABLE_DATASETS, LOADER_POSITIONAL
from ddplint.analysis.values import certainly_not_none, int_value, is_none_literal, may_be_not_none, truthiness
from ddplint.lazy import cst
from ddplint.analysis.rewrite import ProposedFix, with_arg_value, without_arg
from ddplint.model import Severity
from ddplint.rule import Rule

class SamplerShuffleConflict(Rule):
    """
    ## What it does

    Flags a `torch.utils.data.DataLoader(...)` whose arguments PyTorch
    rejects with `ValueError` when the loader is built, exactly as
    `DataLoader.__init__` checks them:

    - `sampler` given together with a truthy `shuffle`;
    - `batch_sampler` given together with `batch_size` other than 1, a
      truthy `shuffle`, a `sampler`, or a truthy `drop_last`;
    - an `IterableDataset` (defined in the module) with `shuffle` other than
      `False`/`None`, or with a `sampler` or `batch_sampler`.

    Arguments are matched by keyword and by position
    (`DataLoader(ds, 32, True, sampler)` passes `shuffle=True`). Only what is
    certain from the code is flagged: `shuffle=True` or a variable that is
    always `True`, never an unknown variable such as `shuffle=args.shuffle`.
    A sampler counts as given when some path certainly passes one, which
    includes the common `sampler = DistributedSampler(ds) if distributed
    else None`: that loader works on one GPU and raises as soon as the job
    runs distributed.

    ## Why is this bad?

    The error is raised at start-up, after the job has waited in the queue
    for its nodes, and in the distributed case only, so a single-GPU test
    run does not catch it. With a `DistributedSampler`, shuffling is the
    sampler's job (`DistributedSampler(dataset, shuffle=True)`), not the
    loader's.

    ## Example

    ```python
    sampler = DistributedSampler(dataset) if distributed else None
    loader = DataLoader(dataset, batch_size=32, shuffle=True, sampler=sampler)
    ```

    ## Use instead

    ```python
    sampler = DistributedSampler(dataset, shuffle=True) if distributed else None
    loader = DataLoader(dataset, batch_size=32, shuffle=(sampler is None), sampler=sampler)
    ```

    ## Fix safety

    Safe. When the sampler is always given, `--fix` drops `shuffle=` (a
    positional `shuffle` becomes `False`): the sampler shuffles, as
    `DistributedSampler(..., shuffle=True)` does by default. When the
    sampler may be `None` (`DistributedSampler(ds) if distributed else
    None`), `shuffle=True` becomes `shuffle=(sampler is None)`, which keeps
    shuffling on one GPU. Other conflicts (`batch_sampler=`, an
    `IterableDataset`) have no automatic fix.

    ## References

    - [torch.utils.data.DataLoader](https://pytorch.org/docs/stable/data.html#torch.utils.data.DataLoader)
    - [torch.utils.data.distributed.DistributedSampler](https://pytorch.org/docs/stable/data.html#torch.utils.data.distributed.DistributedSampler)
    """

    code = "DDP014"
    name = "sampler-shuffle-conflict"
    severity = Severity.ERROR
    summary = "DataLoader arguments that PyTorch rejects with ValueError at start-up."
    tokens = ("DataLoader",)
    tags = ("correctness", "data-loading")

    def visit_Call(self, node: cst.Call) -> None:
        names = self.ctx.qualified_names(node.func)
        if not names or not names <= DATALOADERS:
            return
        args = bind_arguments(node, LOADER_POSITIONAL)
        dataset = args.value("dataset")
        dataset_class = class_of_instance(dataset, self.ctx) if dataset is not None else None
        if dataset_class is not None and inherits_from(dataset_class, ITERABLE_DATASETS | DATAPIPES, self.ctx):
            self._check_iterable(node, args, dataset_class)
            return
        self._check_sampler(node, args)
        self._check_batch_sampler(node, args)

    def _given(self, args: BoundArguments, name: str) -> cst.Arg | None:
        """The argument for `name` if some path certainly passes a non-None value."""
        arg = args.explicit.get(name)
        if arg is None or is_none_literal(arg.value) or not may_be_not_none(arg.value, self.ctx):
            return None
        return arg

    def _truthy(self, args: BoundArguments, name: str) -> cst.Arg | None:
        arg = args.explicit.get(name)
        return arg if arg is not None and truthiness(arg.value, self.ctx) is True else None

    def _check_sampler(self, node: cst.Call, args: BoundArguments) -> None:
        sampler, shuffle = self._given(args, "sampler"), self._truthy(args, "shuffle")
        if sampler is None or shuffle is None or args.explicit.get("batch_sampler") is not None:
            return
        self.report(
            node,
            f"`DataLoader` gets `sampler={self._code(sampler.value)}` together with "
            f"`shuffle={self._code(shuffle.value)}`{self._maybe(sampler)}: PyTorch raises "
            "`ValueError: sampler option is mutually exclusive with shuffle`; drop `shuffle=` "
            "(let the sampler shuffle) or pass `shuffle=(sampler is None)`",
            related=((shuffle, "`shuffle` is truthy here"), (sampler, "the sampler")),
            fix=self._shuffle_fix(node, sampler, shuffle),
        )

    def _shuffle_fix(self, call: cst.Call, sampler: cst.Arg, shuffle: cst.Arg) -> ProposedFix:
        """Let the sampler shuffle: drop `shuffle=` when a sampler is always
        given, else shuffle only when it is not (`shuffle=(sampler is None)`)."""
        if certainly_not_none(sampler.value, self.ctx):
            if shuffle.keyword is not None:
                return ProposedFix("Remove `shuffle=`; the sampler shuffles", ((call, without_arg(call, shuffle)),))
            return ProposedFix("Pass `False` for `shuffle`; the sampler shuffles",
                               ((call, with_arg_value(call, shuffle, cst.Name("False"))),))
        if not isinstance(sampler.value, cst.Name):
            return ProposedFix.display_only("Pass `shuffle=` only when no sampler is given")
        test = cst.Comparison(
            sampler.value, [cst.ComparisonTarget(cst.Is(), cst.Name("None"))], lpar=[cst.LeftParen()], rpar=[cst.RightParen()]
        )
        name = self._code(sampler.value)
        return ProposedFix(f"Shuffle only without a sampler: `shuffle=({name} is None)`",
                           ((call, with_arg_value(call, shuffle, test)),))

    def _check_batch_sampler(self, node: cst.Call, args: BoundArguments) -> None:
        batch_sampler = self._given(args, "batch_sampler")
        if batch_sampler is None:
            return
        conflicts = []
        batch_size = args.explicit.get("batch_size")
        if batch_size is not None and (
            is_none_literal(batch_size.value) or int_value(batch_size.value, self.ctx) not in (1, None)
        ):
            conflicts.append(batch_size)
        conflicts += filter(None, (self._truthy(args, "shuffle"), self._given(args, "sampler")))
        conflicts += filter(None, (self._truthy(args, "drop_last"),))
        if not conflicts:
            return
        shown = ", ".join(f"`{self._code(a.value)}` for `{self._param(args, a)}`" for a in conflicts)
        self.report(
            node,
            f"`DataLoader` gets `batch_sampler=` together with {shown}{self._maybe(batch_sampler)}: "
            "PyTorch raises `ValueError: batch_sampler option is mutually exclusive with "
            "batch_size, shuffle, sampler, and drop_last`; set those on the batch sampler instead",
            related=tuple((a, "conflicts with `batch_sampler`") for a in conflicts),
        )

    def _check_iterable(self, node: cst.Call, args: BoundArguments, dataset: cst.ClassDef) -> None:
        datapipe = inherits_from(dataset, DATAPIPES, self.ctx)
        bad = []
        shuffle = args.explicit.get("shuffle")
        if not datapipe and shuffle is not None and truthiness(shuffle.value, self.ctx) is True:
            bad.append(shuffle)
        bad += filter(None, (self._given(args, "sampler"), self._given(args, "batch_sampler")))
        if not bad:
            return
        shown = ", ".join(f"`{self._param(args, a)}={self._code(a.value)}`" for a in bad)
        self.report(
            node,
            f"`{dataset.name.value}` is an IterableDataset, which takes no shuffle, sampler or "
            f"batch_sampler, but this `DataLoader` gets {shown}: PyTorch raises `ValueError` at "
            "start-up; shuffle and shard inside the dataset's `__iter__` instead",
            related=((dataset.name, "the IterableDataset"),),
        )

    def _maybe(self, arg: cst.Arg) -> str:
        if isinstance(arg.value, cst.Name) and may_be_not_none(arg.value, self.ctx) and any(
            is_none_literal(v) or isinstance(v, cst.IfExp) for v in self.ctx.values_of(arg.value)
        ):
            return f" (whenever `{arg.value.value}` is not None)"
        return ""

    @staticmethod
    def _param(args: BoundArguments, arg: cst.Arg) -> str:
        return next(name for name, a in args.explicit.items() if a is arg)

    def _code(self, node: cst.CSTNode) -> str:
        text = self.ctx.module.code_for_node(node)
        return text if len(text) <= 40 else text[:37] + "..."
