"""Where a finding points: a loop's header, not its whole block (DDP002),
and one finding per attribute (DDP005)."""

from __future__ import annotations

import json

from conftest import run_script
from ddplint.testing import lint

LOOP = """\
import torch.distributed as dist
from torch.utils.data import DataLoader
from torch.utils.data.distributed import DistributedSampler


def train(model, dataset, optimizer, epochs):
    dist.init_process_group("nccl")
    sampler = DistributedSampler(dataset)
    loader = DataLoader(dataset, batch_size=8, sampler=sampler)
    for epoch in range(
        epochs
    ):
        for batch in loader:
            loss = model(batch)
            loss.backward()
            optimizer.step()
"""


def test_ddp002_points_at_the_for_header_with_the_sampler_related() -> None:
    (finding,) = lint(LOOP, select=["DDP002"])
    span = finding.span
    assert (span.line, span.column, span.end_line, span.end_column) == (10, 5, 12, 7)  # `for epoch in range(...):`
    (related,) = finding.related
    assert (related.span.line, related.message) == (8, "the DistributedSampler")


def test_ddp002_header_range_in_the_cli_json(tmp_path) -> None:
    (tmp_path / "train.py").write_text(LOOP, encoding="utf-8")
    done = run_script("check", "--no-cache", "--select", "DDP002", "--format", "json", "--exit-zero", "train.py", cwd=tmp_path)
    (finding,) = json.loads(done.stdout)
    assert (finding["line"], finding["end_line"], finding["end_column"]) == (10, 12, 7)


def test_a_noqa_on_the_for_line_suppresses_ddp002() -> None:
    source = LOOP.replace("    for epoch in range(\n", "    for epoch in range(  # noqa: DDP002\n")
    assert not [f for f in lint(source, select=["DDP002"]) if not f.suppressed]


def test_ddp005_one_finding_per_attribute() -> None:
    source = (
        "import json\nfrom torch.utils.data import Dataset\n\n"
        "class Manifest(Dataset):\n"
        "    def __init__(self, path):\n"
        "        if path.endswith('.json'):\n            self.rows = json.load(open(path))\n"
        "        else:\n            self.rows = [line.split() for line in open(path)]\n"
        "    def __len__(self):\n        return len(self.rows)\n"
        "    def __getitem__(self, i):\n        return self.rows[i]\n"
    )
    findings = lint(source, select=["DDP005"])
    assert [f.span.line for f in findings] == [7]
