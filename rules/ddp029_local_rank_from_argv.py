"""DDP029 local-rank-from-argv."""

from __future__ import annotations

from ddplint.analysis.calls import argparse_flags, keyword_value
from ddplint.knowledge import LOCAL_RANK_FLAGS
from ddplint.analysis.guards import Site
from ddplint.analysis.rank_kinds import LOCAL_ENV, environment_reads
from ddplint.analysis.rewrite import ProposedFix, with_env_default, with_string_after
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import Rule

_OLD, _NEW = LOCAL_RANK_FLAGS


class LocalRankFromArgv(Rule):
    """
    ## What it does

    Flags `parser.add_argument("--local_rank", ...)` when the script has no
    other way to learn its local rank: the `--local-rank` spelling is not
    accepted too, the default does not read `LOCAL_RANK`, and the module
    reads `LOCAL_RANK` (or `SLURM_LOCALID`, ...) from the environment nowhere.

    Not flagged: both spellings declared, an environment default
    (`default=int(os.environ.get("LOCAL_RANK", -1))`), a module that reads
    `LOCAL_RANK` elsewhere (`args.local_rank = int(os.environ["LOCAL_RANK"])`),
    and modules that never run distributed. A script started by the
    DeepSpeed launcher (it imports `deepspeed` and calls
    `deepspeed.initialize` or `deepspeed.add_config_arguments`) gets a note
    only: that launcher passes `--local_rank`.

    ## Why is this bad?

    Since PyTorch 2.0 `torch.distributed.launch` passes `--local-rank=N`,
    which this parser does not know: `error: unrecognized arguments:
    --local-rank=0` at launch (with `parse_known_args` it is dropped
    silently). `torchrun` passes no argument at all and sets `LOCAL_RANK`:
    `args.local_rank` keeps its default on every process, and every rank
    trains on GPU 0 (or the script thinks it is not distributed).

    ## Example

    ```python
    parser.add_argument("--local_rank", type=int, default=-1)
    args = parser.parse_args()
    torch.cuda.set_device(args.local_rank)
    ```

    ## Use instead

    ```python
    parser.add_argument("--local_rank", "--local-rank", type=int,
                        default=int(os.environ.get("LOCAL_RANK", -1)))
    ```

    ## Fix safety

    The fix adds the `--local-rank` spelling and makes the default read
    `LOCAL_RANK` (keeping the old default as the fallback). It is safe: an
    explicit `--local_rank` still wins, and without one the value is the one
    the launcher set. Offered only where `os` is imported as the module `os`.

    ## References

    - [torchrun: migrating from torch.distributed.launch](https://pytorch.org/docs/stable/elastic/run.html)
    """

    code = "DDP029"
    name = "local-rank-from-argv"
    severity = Severity.WARNING
    summary = "`--local_rank` from argv only: a crash under torch.distributed.launch, every rank on GPU 0 under torchrun."
    tokens = ("add_argument",)
    context_tokens = ("local_rank",)
    distributed_only = True
    preview = True

    def trigger_Call(self, node: cst.Call) -> bool:
        return argparse_flags(node).keys() & {_OLD, _NEW} == {_OLD}  # the old spelling only

    def check_Call(self, node: cst.Call, site: Site) -> None:
        if environment_reads(self.ctx.module) & LOCAL_ENV:
            return None  # the module (the flag's default included) reads the local rank from the environment
        if self.ctx.deepspeed_launched:
            return self.report(node, _DEEPSPEED, severity=Severity.NOTE)
        title = "Accept `--local-rank` too and default to `LOCAL_RANK` from the environment"
        both = with_string_after(node, argparse_flags(node)[_OLD], _NEW)  # then the environment as the default:
        fix = ProposedFix(title, ((node, with_env_default(both, "LOCAL_RANK", keyword_value(node, "default"), "-1")),))
        return self.report(node, _MESSAGE, fix=fix if self.ctx.scopes.names_module("os") else ProposedFix.display_only(title))


_MESSAGE = '`--local_rank` is read from argv only: `torch.distributed.launch` passes `--local-rank` since PyTorch 2.0 \
(`unrecognized arguments: --local-rank=0`), `torchrun` passes nothing (it sets `LOCAL_RANK`) and every rank keeps the \
default GPU; accept both spellings and default to `int(os.environ.get("LOCAL_RANK", -1))`'
_DEEPSPEED = '`--local_rank` is read from argv only: the DeepSpeed launcher passes it, but under `torchrun` (which sets \
`LOCAL_RANK` and passes none) every rank keeps the default; default to `int(os.environ.get("LOCAL_RANK", -1))` to run under both'
