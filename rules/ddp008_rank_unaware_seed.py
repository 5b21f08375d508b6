"""DDP008 rank-unaware-seed."""

from __future__ import annotations

from ddplint.analysis.guards import Site
from ddplint.analysis.seeding import SEED_TOKENS, seed_call
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class RankUnawareSeed(Rule):
    """
    ## What it does

    In distributed code, flags a seed call whose seed is the same on every
    rank: `torch.manual_seed`, `torch.cuda.manual_seed(_all)`,
    `np.random.seed`, `random.seed`, Lightning's `seed_everything` and the
    `set_seed` of transformers and accelerate, called with a literal, a
    config value or `args.seed` (`seed_everything(seed, workers=True)` too:
    `workers=True` seeds the DataLoader workers, not the ranks), where
    per-rank randomness is in play: dropout or random augmentation built or
    configured in the module, random draws in the training loop or what it
    calls, training steps on a model put in train mode (`model.train()`:
    its dropout draws on every forward, even where the model's code is
    elsewhere; not when the model is a class of the module visibly free of
    randomness: torch.nn layers without dropout, no drop-path, no dropout
    rate configured, nothing drawn in its `forward`), or a Dataset whose samples are drawn at random, defined in the
    module or in another linted module (SwAV's `MultiCropDataset`, an
    `ImageFolder` subclass with random crops in `src/`). A module that
    seeds nothing at all is DDP034's (off by default).

    Only seeds that are certainly the same everywhere are flagged: literals,
    seed settings (`seed`, `args.seed`, `config["seed"]`), loop counters, and
    arithmetic on those; a seed offset by something else
    (`base_seed + stage_index`) is taken as deliberate, and so is a seed
    that only a one-process run sets (`if args.local_rank == -1:`). Modules
    using tensor parallelism (`torch.distributed.tensor.parallel`) are not
    checked: the ranks of a tensor-parallel group must draw the same random
    numbers. Tools that join a process group need no seed.

    Not flagged: a seed derived from the rank (`seed + rank`,
    `seed + dist.get_rank()`, `args.seed + accelerator.process_index`);
    accelerate's `set_seed(seed, device_specific=True)`; a seed call in a
    helper whose seed parameter receives a rank-dependent value at every call
    site in the module; seed calls under a rank guard; and a constant seed
    followed later in the same function by a rank-dependent reseed. That
    last pattern is deliberate: FSDP, tensor and pipeline parallelism need
    the *same* seed on every rank while the model's parameters are
    initialised (so the shards match), and a per-rank seed afterwards for
    dropout and data augmentation.

    ## Why is this bad?

    With the same seed everywhere, every rank draws the same dropout masks
    and the same random augmentations: N GPUs see N copies of one random
    stream, and the effective batch is less diverse than its size says.
    With no seed at all, runs cannot be reproduced.

    ## Example

    ```python
    dist.init_process_group("nccl")
    torch.manual_seed(42)
    augment = torchvision.transforms.RandomResizedCrop(224)
    ```

    ## Use instead

    ```python
    dist.init_process_group("nccl")
    torch.manual_seed(42 + dist.get_rank())
    augment = torchvision.transforms.RandomResizedCrop(224)
    ```

    ## Fix safety

    With `--unsafe-fixes`, `torch.manual_seed(seed)` becomes
    `torch.manual_seed(seed + rank)` when a global-rank variable (`rank`,
    `global_rank`, `world_rank`, `RANK`) is bound where the seed is set; a
    `local_rank` is never used, as it repeats on every node; accelerate's
    `set_seed(seed)` becomes `set_seed(seed, device_specific=True)`. Unsafe: every
    rank but rank 0 gets a different random stream, so model initialisation
    done after the seed must be broadcast (DDP does it at wrapping) and
    results change. Without such a variable the fix is advice only.

    ## References

    - [PyTorch: Reproducibility](https://pytorch.org/docs/stable/notes/randomness.html)
    - [accelerate.utils.set_seed](https://huggingface.co/docs/accelerate/package_reference/utilities#accelerate.utils.set_seed)
    """

    code = "DDP008"
    name = "rank-unaware-seed"
    severity = Severity.WARNING
    summary = "Every rank seeds its random generators with the same seed."
    requires = frozenset({"rank", "seeds", "randomness"})
    distributed_only = True
    tokens = SEED_TOKENS
    tags = ("reproducibility", "correctness")

    def trigger_Call(self, node: cst.Call) -> bool:
        return seed_call(node, self.ctx)

    def check_Call(self, node: cst.Call, site: Site) -> None:
        seeds, randomness = self.ctx.seeds, self.ctx.randomness
        seed = seeds.of(node)
        if seed is None or randomness.common_by_design or not randomness.in_play(seeds):
            return  # the ranks need the same random stream, or nothing a rank draws would differ
        if seeds.shared(seed):
            self.report(
                node,
                f"{seed.shown} gives every rank the same seed, so all ranks draw the same dropout masks, "
                f"augmentations and noise; {seeds.advice(seed)}",
                fix=seed.fix,
            )
        elif seeds.shared_by_workers(seed):
            self.report(
                node,
                f"{seed.shown} seeds each DataLoader worker from its worker seed, which is the same on every "
                "rank here (the ranks share the torch seed), so the workers of all ranks draw the same "
                f"numbers; add the rank (`worker_seed + {self.ctx.rank_advice.rank(seed.site)}`)",
                fix=seed.fix,
            )
