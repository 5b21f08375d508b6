"""DDP024 unseeded-ranks."""

from __future__ import annotations

from ddplint.analysis.guards import Runs, Site
from ddplint.analysis.seeding import Seeded
from ddplint.analysis.splits import GENERATOR_NAMES, shared_in, split_draw
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class UnseededRanks(Rule):
    """
    ## What it does

    Flags a train/validation split drawn from a global random generator on
    every rank when the ranks do not share a seed for it: `random_split`
    without `generator=`, scikit-learn's `train_test_split` (and a
    `datasets.Dataset.train_test_split`) without a seed, or an index
    permutation (`np.random.permutation`, `torch.randperm`,
    `random.shuffle`, `np.random.shuffle`) that the function then cuts into
    parts (`perm[:n]` and `perm[n:]`, `np.split(perm, ...)`). Every rank
    runs it -- a plain script, Lightning's `setup()`, a datamodule, a helper
    the training path calls -- and before it that generator is seeded with
    the rank in the seed (`seed + rank`, accelerate's
    `set_seed(seed, device_specific=True)`), or not at all.

    Not flagged: a seeded `generator=` / `random_state=` / `seed=`, a split
    made on one rank (and then broadcast or written), a function that
    broadcasts objects from one rank, a common seed (the same on every
    rank) before the split, a split in the training loop (a per-step draw
    is not a split), one-process code and the launcher's parent. Where the
    module seeds nothing but is a library of helpers (no `__main__` block,
    or other modules call the function), the program that may seed is
    elsewhere and nothing is said.

    ## Why is this bad?

    Each rank draws its own split, so the samples one rank validates on are
    samples another rank trains on. Nothing fails: the validation scores
    are inflated, by more the more ranks there are, and a model picked by
    them is picked on training data.

    ## Example

    ```python
    dist.init_process_group("nccl")
    torch.manual_seed(args.seed + dist.get_rank())
    train_set, val_set = torch.utils.data.random_split(dataset, [0.9, 0.1])
    ```

    ## Use instead

    ```python
    dist.init_process_group("nccl")
    torch.manual_seed(args.seed + dist.get_rank())
    split = torch.Generator().manual_seed(args.seed)
    train_set, val_set = torch.utils.data.random_split(dataset, [0.9, 0.1], generator=split)
    ```

    Or split once on rank 0 and broadcast the indices
    (`dist.broadcast_object_list`) or write them to disk.

    ## References

    - [torch.utils.data.random_split](https://pytorch.org/docs/stable/data.html#torch.utils.data.random_split)
    - [sklearn.model_selection.train_test_split](https://scikit-learn.org/stable/modules/generated/sklearn.model_selection.train_test_split.html)
    """

    code = "DDP024"
    name = "unseeded-ranks"
    severity = Severity.WARNING
    summary = "A train/validation split drawn on every rank without a common seed: each rank validates on another's training data."
    requires = frozenset({"rank", "seeds"})
    distributed_only = True
    tokens = ("random_split", "train_test_split", "permutation", "randperm", "shuffle")
    tags = ("correctness", "reproducibility")

    def trigger_Call(self, node: cst.Call) -> bool:
        return split_draw(node, self.ctx) is not None

    def check_Call(self, node: cst.Call, site: Site) -> None:
        ctx, draw = self.ctx, split_draw(node, self.ctx)
        # (who runs it asked last: the module's own answers first, so that facts from other modules matter less often)
        if draw is None or ctx.rank.execution.repeated(site) or ctx.rank.runs(site) is not Runs.ALL:
            return  # not drawn once on every rank
        seeded, seed = ctx.seeds.before(site, draw.generator)
        if seeded not in (Seeded.PER_RANK, Seeded.NOTHING) or shared_in(site.function, ctx):
            return  # seeded alike, or the split is handed from one rank to all
        nothing = f"with nothing seeding {GENERATOR_NAMES[draw.generator]} before it"
        where = lambda span: nothing if seed is None else f"after a seed offset by the rank (line {span(seed.node).line})"  # noqa: E731
        self.report(
            node,
            lambda span: (
                f"{draw.shown} runs on every rank {where(span)}: each rank draws its own split, so the validation "
                "samples of one rank are training samples of another and validation scores come out inflated; "
                f"{draw.fix}, or split once on rank 0 and broadcast the indices or write them to disk"
            ),
        )
