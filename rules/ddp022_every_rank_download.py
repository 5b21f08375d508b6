"""DDP022 every-rank-download."""

from __future__ import annotations

from ddplint.analysis.classes import base_names
from ddplint.analysis.execution import Runs
from ddplint.analysis.names import last_name
from ddplint.analysis.rank import GuardKind, Site
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

#: Dataset packages whose constructors download with `download=True`.
DATASET_PACKAGES = ("torchvision.datasets.", "torchaudio.datasets.", "torchtext.datasets.")
#: Calls that fetch a file into a local path.
DOWNLOADS = frozenset(
    {
        "urllib.request.urlretrieve", "wget.download", "gdown.download", "gdown.download_folder",
        "torch.hub.download_url_to_file", "torchvision.datasets.utils.download_url",
        "torchvision.datasets.utils.download_and_extract_archive", "torchvision.datasets.utils.download_file_from_google_drive",
    }
)  # fmt: skip
#: Helpers that download by name, whichever module defines them (BLIP's `download_url`).
DOWNLOAD_NAMES = frozenset({"download_url", "download_and_extract_archive", "urlretrieve", "download_file"})
#: Calls that run a command line, and the tools that download to a file.
SHELL_CALLS = frozenset(
    {"subprocess.run", "subprocess.call", "subprocess.check_call", "subprocess.check_output", "subprocess.Popen",
     "os.system"}
)  # fmt: skip
DOWNLOAD_TOOLS = ("wget", "gdown")


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
    requires = frozenset({"rank"})
    distributed_only = True
    tokens = ("download", "urlretrieve", "download_url", "download_url_to_file", "download_and_extract_archive",
              "download_file", "wget")  # fmt: skip
    tags = ("correctness", "data-loading")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.sites: list[tuple[Site, str]] = []
        #: Barriers and downloads in walk order, for the zero-first idioms.
        self.order: list[tuple[str, Site]] = []

    def visit_Call(self, node: cst.Call) -> None:
        ctx = self.ctx
        if last_name(node.func) in ("barrier", "wait_for_everyone"):
            self.order.append(("barrier", ctx.rank.site(node)))
            return
        names = ctx.qualified_names(node.func)
        shown = f"`{ctx.module.code_for_node(node.func)}(...)`"
        site = ctx.rank.site(node, ctx.rank.deps_of_all(a.value for a in node.args))
        if self._dataset(node, names) and _downloads(node):
            self.sites.append((site, f"{shown} with `download=True`"))
        elif names & DOWNLOADS or (_download_name(node, names) and not _defined_here(node, ctx)):
            self.sites.append((site, shown))
        elif names & SHELL_CALLS and _runs_download_tool(node):
            self.sites.append((site, f"{shown} running `wget`"))
        else:
            return
        self.order.append(("download", self.sites[-1][0]))

    def finish(self) -> None:
        rank = self.ctx.rank
        for site, shown in self.sites:
            if any(g.kind is GuardKind.STAGGERED and rank.is_rank_dependent(g.deps) for g in site.guards):
                continue  # `main_process_first()`: rank 0 downloads, the others find the files
            runs = rank.runs(site)
            if not runs.many or self._after_zero_first(site):
                continue
            if rank.is_rank_dependent(site.deps):
                continue  # `/tmp/rank{rank}/`: each rank has its own destination (N× the traffic, no race)
            self.report(
                site.node,
                f"{shown} runs on {runs.value}: they all download into the same path at once and can read each "
                f"other's half-written files; {self._advice(site)}",
                statement=site.statement,
            )


    def _advice(self, site: Site) -> str:
        """Download once per node (or once), in the module's own rank test, then wait."""
        test = self.ctx.rank_advice.own_test(site, per_node=True)
        if test is None:
            return "download on local rank 0 of each node, then `dist.barrier()`"
        return f"download under `if {test.text}:` (one process per node, or rank 0 on a shared disk), then `dist.barrier()`"

    def _after_zero_first(self, site: Site) -> bool:
        """The zero-first idioms written out: the other ranks wait at a barrier
        before the download (`if local_rank != 0: dist.barrier()`), or one rank
        already downloaded and a barrier followed (the files are there)."""
        rank = self.ctx.rank
        index = next(i for i, (_, s) in enumerate(self.order) if s is site)
        earlier = [s for kind, s in self.order[:index] if s.function is site.function and kind == "barrier"]
        if any(rank.runs(b) is Runs.ALL_BUT_ONE for b in earlier):
            return True
        downloads = [
            i for i, (kind, s) in enumerate(self.order[:index])
            if kind == "download" and s.function is site.function and rank.runs(s) in (Runs.ONE, Runs.PER_NODE)
        ]  # fmt: skip
        return any(
            kind == "barrier" and s.function is site.function
            for first in downloads for kind, s in self.order[first + 1 : index]
        )


    def _dataset(self, node: cst.Call, names: frozenset) -> bool:
        """A dataset of the catalogued packages, or a module class derived from one
        (`class IndexedCIFAR10(datasets.CIFAR10)` runs the same `download()`)."""
        if any(n and n.startswith(DATASET_PACKAGES) for n in names):
            return True
        if not isinstance(node.func, cst.Name):
            return False
        classes = [v for v in self.ctx.values_of(node.func) if isinstance(v, cst.ClassDef)]
        return any(n.startswith(DATASET_PACKAGES) for c in classes for n in base_names(c, self.ctx))


def _download_name(call: cst.Call, names: frozenset) -> bool:
    """A helper named for a download, as written or as imported (`download_url as fetch`)."""
    return last_name(call.func) in DOWNLOAD_NAMES or any(n and n.rsplit(".", 1)[-1] in DOWNLOAD_NAMES for n in names)


def _runs_download_tool(call: cst.Call) -> bool:
    """`subprocess.run(["wget", url, ...])`, `os.system(f"wget {url} -P data")`."""
    if not call.args:
        return False
    command = call.args[0].value
    first: str | None = None
    if isinstance(command, (cst.List, cst.Tuple)) and command.elements:
        element = command.elements[0].value
        first = element.evaluated_value if isinstance(element, cst.SimpleString) else None
    elif isinstance(command, cst.SimpleString):
        first = command.evaluated_value.split(" ", 1)[0]
    elif isinstance(command, cst.FormattedString) and command.parts:
        part = command.parts[0]
        first = part.value.split(" ", 1)[0] if isinstance(part, cst.FormattedStringText) else None
    return isinstance(first, str) and first in DOWNLOAD_TOOLS


def _downloads(call: cst.Call) -> bool:
    return any(
        a.keyword is not None and a.keyword.value == "download" and isinstance(a.value, cst.Name) and a.value.value == "True"
        for a in call.args
    )


def _defined_here(call: cst.Call, ctx) -> bool:
    """The module's own helper: judged by what it calls."""
    return isinstance(call.func, cst.Name) and any(isinstance(v, cst.FunctionDef) for v in ctx.values_of(call.func))
