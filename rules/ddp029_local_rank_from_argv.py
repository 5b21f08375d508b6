"""DDP029 local-rank-from-argv."""

from __future__ import annotations

from ddplint.analysis.catalogue import DEEPSPEED_ENTRY_POINTS, LOCAL_RANK_FLAGS
from ddplint.analysis.guards import Site
from ddplint.analysis.rank_kinds import LOCAL_ENV, environment_reads
from ddplint.analysis.rewrite import ProposedFix, with_arg_value
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
    summary = "`--local_rank` read from argv only: a crash under torch.distributed.launch, every rank on GPU 0 under torchrun."
    tokens = ("add_argument",)
    context_tokens = ("local_rank",)
    distributed_only = True
    preview = True
    tags = ("correctness", "launch")

    def __init__(self, ctx) -> None:
        super().__init__(ctx)
        self.env_read = False
        self.deepspeed = False

    def visit_Module(self, node: cst.Module) -> None:
        self.env_read = bool(environment_reads(node) & LOCAL_ENV)

    def visit_Call(self, node: cst.Call) -> None:
        if not self.deepspeed and self.ctx.qualified_names(node.func) & DEEPSPEED_ENTRY_POINTS:
            self.deepspeed = True

    def trigger_Call(self, node: cst.Call) -> bool:
        flags = _flags(node)
        return not self.env_read and _OLD in flags and _NEW not in flags

    def check_Call(self, node: cst.Call, site: Site) -> None:
        default = next((a for a in node.args if a.keyword is not None and a.keyword.value == "default"), None)
        if default is not None and environment_reads(default.value) & LOCAL_ENV:
            return
        if self.deepspeed:
            self.report(
                node,
                "`--local_rank` is read from argv only: the DeepSpeed launcher passes it, but under `torchrun` "
                "(which sets `LOCAL_RANK` and passes no argument) it keeps its default on every rank; "
                'add `default=int(os.environ.get("LOCAL_RANK", -1))` to run under both',
                severity=Severity.NOTE,
            )
            return
        self.report(
            node,
            "`--local_rank` is read from argv only: `torch.distributed.launch` passes `--local-rank` since "
            "PyTorch 2.0 (`unrecognized arguments: --local-rank=0`) and `torchrun` passes nothing (it sets "
            "`LOCAL_RANK`), so every rank keeps the default GPU; accept both spellings and default to "
            '`int(os.environ.get("LOCAL_RANK", -1))`',
            fix=self._fix(node, default),
        )

    def _fix(self, node: cst.Call, default: cst.Arg | None) -> ProposedFix:
        title = 'Accept `--local-rank` too and default to `LOCAL_RANK` from the environment'
        os_module = self.ctx.scopes.lookup("os")
        if os_module is None or os_module.qualnames != frozenset({"os"}):
            return ProposedFix.display_only(title)
        fallback = default.value if default is not None else cst.parse_expression("-1")
        env = cst.parse_expression(f'int(os.environ.get("LOCAL_RANK", {self.ctx.module.code_for_node(fallback)}))')
        index = next(i for i, a in enumerate(node.args) if _flag(a) == _OLD)
        flag = node.args[index]
        second = cst.Arg(cst.SimpleString(_quoted(flag, _NEW)), comma=flag.comma if flag.comma else cst.MaybeSentinel.DEFAULT)
        args = [*node.args[:index], flag.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), second, *node.args[index + 1 :]]
        call = node.with_changes(args=args)
        if default is not None:
            call = with_arg_value(call, default, env)
        else:
            last = call.args[-1]
            tail = last.comma
            new = cst.Arg(env, keyword=cst.Name("default"), equal=cst.AssignEqual(cst.SimpleWhitespace(""), cst.SimpleWhitespace("")))
            call = call.with_changes(args=[*call.args[:-1], last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" "))), new.with_changes(comma=tail)])
        return ProposedFix(title, ((node, call),))


def _flag(arg: cst.Arg) -> str | None:
    value = arg.value
    if arg.keyword is None and isinstance(value, cst.SimpleString):
        text = value.evaluated_value
        return text if isinstance(text, str) else None
    return None


def _flags(call: cst.Call) -> set[str]:
    if not isinstance(call.func, cst.Attribute) or call.func.attr.value != "add_argument":
        return set()
    return {f for f in map(_flag, call.args) if f is not None}


def _quoted(like: cst.Arg, text: str) -> str:
    quote = like.value.quote if isinstance(like.value, cst.SimpleString) else '"'
    return f"{quote}{text}{quote}"
