"""Unit tests of the services DDP028/DDP029/DDP033 ask: which environment
variables a module reads, whether the DeepSpeed launcher starts it, argparse
flags and the fixes' argument rewrites."""

from __future__ import annotations

import textwrap

import libcst as cst
import pytest

from ddplint.analysis.calls import argparse_flags, keyword_value
from ddplint.analysis.collectives import FullGather
from ddplint.analysis.metrics import ShardedEval
from ddplint.analysis.rank_kinds import environment_reads
from ddplint.analysis.rewrite import with_env_default, with_string_after
from ddplint.model import Applicability
from ddplint.testing import model_of


@pytest.mark.parametrize(
    ("source", "reads"),
    [
        ('import os\nr = int(os.environ["LOCAL_RANK"])', {"LOCAL_RANK"}),
        ('import os\nr = os.environ.get("LOCAL_RANK", 0)', {"LOCAL_RANK"}),
        ('import os\nr = os.getenv("WORLD_SIZE")', {"WORLD_SIZE"}),
        ('from os import environ\nif "LOCAL_RANK" in environ:\n    pass', {"LOCAL_RANK"}),
        ('def f():\n    import os\n    return os.environ["RANK"]', {"RANK"}),
        # writes are not reads
        ('import os\nos.environ["LOCAL_RANK"] = "0"', set()),
        ('import os\ndel os.environ["LOCAL_RANK"]', set()),
        ('env = {"LOCAL_RANK": 1}\nr = env["LOCAL_RANK"]', set()),
    ],
)
def test_environment_reads(source: str, reads: set[str]) -> None:
    assert environment_reads(cst.parse_module(source)) == reads


@pytest.mark.parametrize(
    ("source", "launched"),
    [
        ("import deepspeed\nengine, *_ = deepspeed.initialize(model=m)", True),
        ("import deepspeed\nparser = deepspeed.add_config_arguments(parser)", True),
        ("from deepspeed import initialize\ninitialize(model=m)", True),
        ("import deepspeed\nfrom deepspeed.accelerator import get_accelerator\nget_accelerator()", False),
        ("def initialize(model):\n    return model\ninitialize(m)", False),
    ],
)
def test_deepspeed_launched(source: str, launched: bool) -> None:
    assert model_of(source).model.deepspeed_launched is launched


def _call(source: str) -> cst.Call:
    node = cst.parse_expression(source)
    assert isinstance(node, cst.Call)
    return node


def test_argparse_flags_and_keywords() -> None:
    call = _call('parser.add_argument("--local_rank", "-l", type=int, default=-1)')
    assert set(argparse_flags(call)) == {"--local_rank", "-l"}
    assert argparse_flags(_call('print("--local_rank")')) == {}
    assert cst.Module([]).code_for_node(keyword_value(call, "default")) == "-1"
    assert keyword_value(call, "help") is None


@pytest.mark.parametrize(
    ("before", "after"),
    [
        (
            "p.add_argument('--local_rank', type=int, default=0)",
            "p.add_argument('--local_rank', '--local-rank', type=int, default=int(os.environ.get(\"LOCAL_RANK\", 0)))",
        ),
        (
            'p.add_argument("--local_rank", type=int)',
            'p.add_argument("--local_rank", "--local-rank", type=int, default=int(os.environ.get("LOCAL_RANK", -1)))',
        ),
        (
            'p.add_argument("--local_rank",)',
            'p.add_argument("--local_rank", "--local-rank", default=int(os.environ.get("LOCAL_RANK", -1)),)',
        ),
    ],
)
def test_flag_alias_and_environment_default(before: str, after: str) -> None:
    call = _call(before)
    fixed = with_string_after(call, argparse_flags(call)["--local_rank"], "--local-rank")
    default = keyword_value(call, "default")
    fixed = with_env_default(fixed, "LOCAL_RANK", default, "-1")
    assert cst.Module([]).code_for_node(fixed) == textwrap.dedent(after)


@pytest.mark.parametrize(
    ("sampler", "words"),
    [
        (None, "`accelerator.prepare` sharded pads its last batch"),
        ("DistributedSampler(ds, shuffle=False)", "pads the dataset to a multiple of the world size"),
        ("DistributedSampler(ds, drop_last=False)", "pads the dataset to a multiple of the world size"),
        ("DistributedSampler(ds, drop_last=True)", "has `drop_last=True` and leaves out the samples"),
    ],
)
def test_how_sharded_evaluations_are_evened(sampler: str | None, words: str) -> None:
    loop = cst.parse_statement("for batch in loader:\n    pass\n")
    assert isinstance(loop, cst.For)
    evaluation = ShardedEval(loop, None if sampler is None else _call(sampler))
    assert words in evaluation.evened


@pytest.mark.parametrize(
    ("config", "missing", "applicability", "after"),
    [
        (
            "FullStateDictConfig(offload_to_cpu=True)", ("rank0_only",), Applicability.UNSAFE,
            "FullStateDictConfig(offload_to_cpu=True, rank0_only=True)",
        ),
        ("StateDictOptions(full_state_dict=True)", ("cpu_offload",), Applicability.SAFE,
         "StateDictOptions(full_state_dict=True, cpu_offload=True)"),
    ],
)  # fmt: skip
def test_full_gather_fix_adds_the_missing_keywords(config, missing, applicability, after) -> None:
    call = _call(config)
    fix = FullGather(call, call, missing).fix
    assert fix is not None and fix.applicability is applicability
    [(node, replacement)] = fix.changes
    assert node is call and cst.Module([]).code_for_node(replacement) == after
    assert FullGather(call, None, missing).fix is None  # no config call to add them to
