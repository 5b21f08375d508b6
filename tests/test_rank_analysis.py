"""Unit tests of the rank analysis (rank dependence and rank guards),
independent of any rule. `probe(expr)` marks what is asked about."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddplint.analysis.rank import GuardKind, RankAnalysis
from ddplint.config import Settings
from ddplint.engine.context import FileContext
from ddplint.testing import walk_snippet


class _Probe:
    def __init__(self, ctx: FileContext) -> None:
        self.ctx = ctx
        self.deps: list = []
        self.guards: list = []

    def visit_Call(self, node: cst.Call) -> None:
        if isinstance(node.func, cst.Name) and node.func.value == "probe":
            if node.args:
                self.deps.append(self.ctx.rank.deps(node.args[0].value))
            self.guards.append(self.ctx.rank.guards()[0])


def analyse(source: str, rank_names: tuple[str, ...] = ()):
    settings = Settings(frozenset(), rank_names=rank_names)
    ctx, probe = walk_snippet(textwrap.dedent(source), _Probe, ["rank"], settings)
    return ctx.rank, probe


RANK_DEPENDENT = {
    "get_rank": "import torch.distributed as dist\nprobe(dist.get_rank())",
    "get_rank_alias": "from torch.distributed import get_rank as gr\nprobe(gr() == 0)",
    "node_local_rank": "import torch.distributed as td\nprobe(td.get_node_local_rank())",
    "deepspeed": "import deepspeed.comm as dc\nprobe(dc.get_rank())",
    "environ_subscript": "import os\nprobe(int(os.environ['LOCAL_RANK']))",
    "environ_get": "import os\nprobe(os.environ.get('RANK', '0') == '0')",
    "getenv": "from os import getenv\nprobe(getenv('SLURM_PROCID'))",
    "from_os_import_environ": "from os import environ\nprobe(environ['OMPI_COMM_WORLD_RANK'])",
    "attribute_convention": "probe(args.local_rank in (-1, 0))",
    "accelerator": "probe(accelerator.is_main_process)",
    "lightning": "probe(self.trainer.is_global_zero)",
    "hf_callback_call": "probe(state.is_world_process_zero())",
    "xla": "import torch_xla.core.xla_model as xm\nprobe(xm.is_master_ordinal())",
    "parameter_named_rank": "def f(rank):\n    probe(rank == 0)",
    "assigned": "import torch.distributed as dist\nis_main = dist.get_rank() == 0\nprobe(not is_main)",
    "walrus": "import torch.distributed as dist\nif (r := dist.get_rank()) == 0:\n    probe(r)",
    "unpacked": "rank, world_size = get_dist_info()\nprobe(rank == 0)",
    "ternary": "probe(0 if args.rank else 1)",
    "fstring": "probe(f'cuda:{local_rank}')",
    "helper": "import torch.distributed as dist\ndef is_main_process():\n    return dist.get_rank() == 0\nprobe(is_main_process())",
    "helper_defined_later": (
        "def main():\n    probe(leader())\nimport torch.distributed as dist\ndef leader():\n    return dist.get_rank() == 0"
    ),
    "helper_of_helper": "import os\ndef a():\n    return int(os.environ['RANK'])\ndef b():\n    return a() == 0\nprobe(b())",
    "self_attribute": (
        "import torch.distributed as dist\nclass T:\n    def __init__(self):\n        self.leader = dist.get_rank() == 0\n"
        "    def m(self):\n        probe(self.leader)"
    ),
    "property": (
        "import torch.distributed as dist\nclass T:\n    @property\n    def leader(self):\n        return dist.get_rank() == 0\n"
        "    def m(self):\n        probe(self.leader)"
    ),
    "method": (
        "import torch.distributed as dist\nclass T:\n    def first(self):\n        return dist.get_rank() == 0\n"
        "    def m(self):\n        probe(self.first())"
    ),
    "imported_get_rank": "from utils.dist import get_rank\nprobe(get_rank() == 0)",
    "configured_name": "probe(args.my_rank == 0)",
}

UNIFORM = {
    "world_size": "import torch.distributed as dist\nprobe(dist.get_world_size() > 1)",
    "is_initialized": "import torch.distributed as dist\nprobe(dist.is_initialized())",
    "distributed_flag": "probe(args.distributed)",
    "cuda": "import torch\nprobe(torch.cuda.is_available() and torch.cuda.device_count() > 1)",
    "num_gpus": "probe(num_gpus > 1)",
    "loop_variable": "for rank in range(world_size):\n    probe(rank == 0)",
    "is_none": "def f(rank=None):\n    probe(rank is None)",
    "unset": "probe(args.local_rank != -1)",
    "nanogpt_ddp": "import os\nddp = int(os.environ.get('RANK', -1)) != -1\nprobe(ddp)",
    "hf_trainer_control": "probe(self.control.should_save)",
    "literal_rank": "rank = 0\nprobe(rank == 0)",
    "device_attribute": "device = torch.device('cuda', local_rank)\nprobe(device.type == 'cuda')",
    "other_env": "import os\nprobe(os.environ.get('WORLD_SIZE'))",
    "uniform_helper": "import torch.distributed as dist\ndef distributed():\n    return dist.is_initialized()\nprobe(distributed())",
}


@pytest.mark.parametrize("name", sorted(RANK_DEPENDENT))
def test_rank_dependent(name: str) -> None:
    rank, probe = analyse(RANK_DEPENDENT[name], rank_names=("my_rank",))
    assert rank.is_rank_dependent(probe.deps[0])


@pytest.mark.parametrize("name", sorted(UNIFORM))
def test_uniform(name: str) -> None:
    rank, probe = analyse(UNIFORM[name])
    assert not rank.is_rank_dependent(probe.deps[0])


GUARDS = {
    "if_body": ("if rank == 0:\n    probe()", [(GuardKind.BRANCH, 0, 2)]),
    "else": ("if rank == 0:\n    pass\nelse:\n    probe()", [(GuardKind.BRANCH, 1, 2)]),
    "elif_chain": ("if rank == 0:\n    pass\nelif rank == 1:\n    probe()\nelse:\n    pass", [(GuardKind.BRANCH, 1, 3)]),
    "condition_itself": ("if probe() == rank:\n    pass", []),
    "ternary": ("x = probe() if rank == 0 else None", [(GuardKind.BRANCH, 0, 2)]),
    "short_circuit": ("rank == 0 and probe()", [(GuardKind.SHORT_CIRCUIT, 0, 1)]),
    "while": ("while rank < 3:\n    probe()", [(GuardKind.LOOP, 0, 1)]),
    "early_return": ("def f():\n    if rank != 0:\n        return\n    probe()", [(GuardKind.BRANCH, 1, 2)]),
    "early_continue": ("for x in xs:\n    if rank:\n        continue\n    probe()", [(GuardKind.BRANCH, 1, 2)]),
    "raise_is_not_an_early_exit": ("def f():\n    if rank != 0:\n        raise ValueError\n    probe()", []),
    "decorator": ("@rank_zero_only\ndef f():\n    probe()", [(GuardKind.DECORATOR, 0, 1)]),
    "accelerate_decorator": ("@accelerator.on_main_process\ndef f():\n    probe()", [(GuardKind.DECORATOR, 0, 1)]),
    "staggered": ("with accelerator.main_process_first():\n    probe()", [(GuardKind.STAGGERED, 0, 1)]),
    "nested": (
        "if rank == 0:\n    if args.x:\n        while rank:\n            probe()",
        [(GuardKind.LOOP, 0, 1), (GuardKind.BRANCH, 0, 2)],
    ),
    "function_boundary": ("if rank == 0:\n    def f():\n        probe()", []),
    "elif_excluding_the_earlier_test": (
        "if not in_order and self.should_log():\n    pass\nelif in_order:\n    probe()",
        [],
    ),
}


@pytest.mark.parametrize("name", sorted(GUARDS))
def test_guards(name: str) -> None:
    source, expected = GUARDS[name]
    rank, probe = analyse(source)
    guards = [g for g in probe.guards[0] if rank.is_rank_dependent(g.deps)]
    assert [(g.kind, g.branch, g.branches) for g in guards] == expected


def test_the_analysis_runs_once_per_file_for_all_rules(monkeypatch) -> None:
    """However many rules require it, one RankAnalysis per file."""
    from ddplint.engine import check_source
    from ddplint.model import Severity
    from ddplint.rule import _REGISTRY, Rule

    created = []
    original = RankAnalysis.__init__

    def counting(self, ctx):
        created.append(ctx.path)
        original(self, ctx)

    monkeypatch.setattr(RankAnalysis, "__init__", counting)

    class SecondRankRule(Rule):
        """
        ## What it does
        Test only.
        ## Why is this bad?
        Test only.
        ## Example
        Test only.
        ## Use instead
        Test only.
        """

        code = "DDP990"
        name = "test-second-rank-rule"
        severity = Severity.NOTE
        summary = "Test only."
        requires = frozenset({"rank"})
        tokens = ("barrier",)

        def visit_Call(self, node) -> None:
            self.ctx.rank.guards()

    try:
        source = "import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n"
        result = check_source("a.py", source, Settings(frozenset({"DDP001", "DDP990"})))
        assert [f.rule for f in result.findings] == ["DDP001"]
        assert created == ["a.py"]
        # A file that is parsed and linted (DDP012 applies to it) by rules that
        # do not need the analysis: none is made.
        amp = "import torch\nwith torch.cuda.amp.autocast():\n    pass\n"
        parsed = check_source("b.py", amp, Settings(frozenset({"DDP012"})))
        assert [f.rule for f in parsed.findings] == ["DDP012"]  # it was parsed
        assert created == ["a.py"]
    finally:
        del _REGISTRY["DDP990"]
        from ddplint import engine

        engine._rules_by_code.cache_clear()
        engine._visitor_rules.cache_clear()


def _function_runs(source: str) -> dict[str, str]:
    rank, _ = analyse(source)
    return {f.name.value: rank.execution.function_runs(f).name for fs in rank.functions.values() for f in fs}


ENTRY_POINTS = {
    # Nobody in the module calls them; their body shows more than one rank runs them.
    "rank_parameter_compared": ("import torch.distributed as dist\ndef fit(rank):\n    if rank == 0:\n        pass", "ALL"),
    "get_rank_test": ("import torch.distributed as dist\ndef f():\n    if dist.get_rank() != 0:\n        return", "ALL"),
    "unguarded_barrier": ("import torch.distributed as dist\ndef f():\n    dist.barrier()", "ALL"),
    "helper_import": ("from .dist import is_main_process\ndef f():\n    if is_main_process():\n        pass", "ALL"),
    # Not entry points: no evidence, or evidence of one rank, or one-rank helpers, tests.
    "device_only": ("import torch.distributed as dist\ndef f(rank):\n    dev = f'cuda:{rank}'", "UNKNOWN"),
    "unset_test": ("import torch.distributed as dist\ndef f(local_rank):\n    if local_rank != -1:\n        pass", "UNKNOWN"),
    "guarded_barrier": (
        "import torch.distributed as dist\ndef f(rank):\n    if rank is not None:\n        dist.barrier()", "ALL"
    ),
    "one_rank_name": ("import torch.distributed as dist\ndef save_on_master(rank):\n    if rank == 0:\n        pass", "UNKNOWN"),
    "test_function": ("import torch.distributed as dist\ndef test_it():\n    dist.barrier()", "UNKNOWN"),
    "not_distributed": ("import torch\ndef f(rank):\n    if rank == 0:\n        pass", "UNKNOWN"),
    "method": ("import torch.distributed as dist\nclass T:\n    def f(self):\n        dist.barrier()", "UNKNOWN"),
}


@pytest.mark.parametrize("name", sorted(ENTRY_POINTS))
def test_entry_points_from_the_body(name: str) -> None:
    source, expected = ENTRY_POINTS[name]
    runs = _function_runs(source)
    assert runs[[n for n in runs if n != "__init__"][0]] == expected


def test_callers_in_the_module_win_over_the_body() -> None:
    runs = _function_runs(
        "import torch.distributed as dist\n"
        "def export(rank):\n    if rank == 0:\n        pass\n"
        "def worker(rank):\n    dist.init_process_group('nccl')\n    if rank == 0:\n        export(rank)\n"
    )
    assert runs == {"export": "ONE", "worker": "ALL"}


def test_a_caller_of_a_rank_testing_helper_is_an_entry_point() -> None:
    runs = _function_runs(
        "import torch.distributed as dist\n"
        "def log(rank):\n    if rank == 0:\n        pass\n"
        "def loop(rank):\n    log(rank)\n"
    )
    assert runs == {"log": "ALL", "loop": "ALL"}


@pytest.mark.parametrize(
    ("test", "expected"),
    [
        ("rank != src", ("ALL_BUT_ONE", "ONE")),
        ("src == rank", ("ONE", "ALL_BUT_ONE")),
        ("rank != 3", ("ALL_BUT_ONE", "ONE")),
        ("rank != local_rank", ("SOME", "SOME")),  # both sides differ per rank
        ("rank != 'cpu'", ("SOME", "SOME")),  # not a rank number
    ],
)
def test_rank_compared_with_a_uniform_value(test: str, expected: tuple[str, str]) -> None:
    rank, probe = analyse(f"def f(rank, src, local_rank):\n    if {test}:\n        probe()\n    else:\n        probe()")
    got = tuple(rank.execution.guards_runs([g for g in guards if rank.is_rank_dependent(g.deps)]).name for guards in probe.guards)
    assert got == expected
