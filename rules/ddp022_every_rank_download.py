"""DDP022 every-rank-download."""

from __future__ import annotations

from ddplint.analysis.file_io import DOWNLOAD_TOKENS, download
from ddplint.analysis.rank import Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule


class EveryRankDownload(Rule):
    """
    ## What it does

    Flags a download that more than one rank runs into the same place: a
    `torchvision`/`torchaudio`/`torchtext` dataset (or a module class
    derived from one) built with `download=True`,
    `urllib.request.urlretrieve`, `wget.download`, `gdown.download`,
    `torch.hub.download_url_to_file`, torchvision's
    `download_url`/`download_and_extract_archive` (and helpers of those
    names, under any import alias), and `wget` run through
    `subprocess`/`os.system`. Lightning's `setup()` and `*_dataloader()`
    hooks run in every process, so a download there counts too (download in
    `prepare_data()`).

    Not flagged: downloads under a rank guard (`if local_rank == 0:`, one
    per node, is the usual fix), inside a rank-staggered block
    (`with accelerator.main_process_first():`), in a one-process branch, or
    in the launcher before `mp.spawn`, and a destination that depends on the
    rank (`f"/tmp/rank{rank}"`: more traffic, but no race).

    ## Why is this bad?

    Every rank starts the same download into the same directory at once:
    N copies of the traffic, and the archive is written and extracted by
    several processes together. A rank that finds a half-written file
    raises `RuntimeError: File not found or corrupted` or `BadZipFile`, or
    reads a truncated archive; the failure depends on timing, so a re-run
    "fixes" it.

    ## Example

    ```python
    train_set = torchvision.datasets.CIFAR10(root="data", train=True, download=True)
    ```

    ## Use instead

    ```python
    if local_rank == 0:
        torchvision.datasets.CIFAR10(root="data", train=True, download=True)
    dist.barrier()
    train_set = torchvision.datasets.CIFAR10(root="data", train=True, download=False)
    ```

    ## References

    - [torchvision datasets: download](https://pytorch.org/vision/stable/datasets.html)
    """

    code = "DDP022"
    name = "every-rank-download"
    severity = Severity.WARNING
    summary = "Every rank downloads the same dataset into the same path at once."
    requires = frozenset({"rank", "barriers"})
    distributed_only = True
    tokens = DOWNLOAD_TOKENS
    tags = ("correctness", "data-loading")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        #: The downloads checked so far (in walk order): one rank's, then a barrier, is the zero-first idiom.
        self.earlier: list[Site] = []

    def trigger_Call(self, node: cst.Call) -> bool:
        return not self.ctx.barriers.waits_at(node) and download(node, self.ctx) is not None

    def check_Call(self, node: cst.Call, site: Site) -> None:
        rank, earlier = self.ctx.rank, self.earlier
        self.earlier = [*earlier, site]
        if rank.staggered(site.guards) or not rank.runs(site).many or self.ctx.barriers.zero_first(node, site, earlier):
            return  # `main_process_first()`, or written out: rank 0 downloads, the others find the files
        if rank.is_rank_dependent(rank.deps_of_all(a.value for a in node.args)):
            return  # `/tmp/rank{rank}/`: each rank has its own destination (N× the traffic, no race)
        test = self.ctx.rank_advice.own_test(site, per_node=True)
        on = f"under `if {test.text}:` (one process per node, or rank 0 on a shared disk)" if test else "on local rank 0 of each node"
        self.report(
            node,
            f"{download(node, self.ctx)} runs on {rank.runs(site).value}: they all download into the same path at once "
            f"and can read each other's half-written files; "
            f"download {on}, then `dist.barrier()`",
        )
