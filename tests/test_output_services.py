"""The services behind DDP006, DDP007, DDP021 and DDP022, asked with no rule
involved: what a call prints, logs, tracks or opens and what quiets it
(`analysis.outputs`), where every rank waits (`analysis.barriers`), and which
file a call writes, reads or downloads (`analysis.file_io`)."""

from __future__ import annotations

import textwrap

import pytest

from ddplint.analysis.file_io import download, file_write, path_read, path_written
from ddplint.analysis.guards import Runs
from ddplint.analysis.outputs import LOGGER, PRINT, PROGRESS, TRACKER, WRITER
from ddplint.testing import walk_snippet


class _Calls:
    """Asks `ask(ctx, call)` at every call during the walk; keeps the sites."""

    def __init__(self, ctx, ask) -> None:
        self.ctx, self.ask = ctx, ask
        self.answers: list = []
        self.sites: dict[str, tuple] = {}

    def visit_Call(self, node) -> None:
        text = self.ctx.module.code_for_node(node)
        self.answers.append((text, self.ask(self.ctx, node)))
        self.sites.setdefault(text, (node, self.ctx.rank.site(node)))


def _walk(source: str, ask=lambda ctx, node: None, requires=("rank", "outputs", "barriers")):
    return walk_snippet(textwrap.dedent(source), lambda ctx: _Calls(ctx, ask), requires)


def _outputs(source: str) -> dict[str, tuple[str, bool] | None]:
    """Each call -> (its output kind, silenced after the walk), or None."""
    ctx, probe = _walk(source, lambda ctx, node: ctx.outputs.of(node))
    return {text: (o.kind, ctx.outputs.silenced(o)) if o else None for text, o in probe.answers}


def test_output_kinds() -> None:
    found = _outputs(
        """
        import logging, wandb, mlflow
        from tqdm import tqdm
        from torch.utils.tensorboard import SummaryWriter
        logger = logging.getLogger(__name__)
        print("x")
        wandb.log({"loss": 1})
        mlflow.log_metric("loss", 1)
        tqdm(loader)
        SummaryWriter("runs")
        logger.info("step")
        helper.info("not a logger")
        """
    )
    assert found['print("x")'] == (PRINT, False)
    assert found['wandb.log({"loss": 1})'] == (TRACKER, False)
    assert found['mlflow.log_metric("loss", 1)'] == (TRACKER, False)
    assert found["tqdm(loader)"] == (PROGRESS, False)
    assert found['SummaryWriter("runs")'] == (WRITER, False)
    assert found['logger.info("step")'] == (LOGGER, False)
    assert found['helper.info("not a logger")'] is None


def test_output_each_rank_should_make_is_none() -> None:
    found = _outputs(
        """
        import logging, os
        logger = logging.getLogger(__name__)
        print(f"pid {os.getpid()}")
        logger.info("x", ranks=[0])
        if bad:
            logger.error("failed")
        try:
            step()
        except RuntimeError:
            print("oom")
        """
    )
    assert found['print(f"pid {os.getpid()}")'] is None
    assert found['logger.info("x", ranks=[0])'] is None
    assert found['logger.error("failed")'] is None
    assert found['print("oom")'] is None


@pytest.mark.parametrize(
    ("setup", "silenced"),
    [
        ("builtins.print = lambda *a, **k: None", True),  # MoCo's print_pass, anywhere in the module
        ("utils.init_distributed_mode(args)", True),  # DETR's helper replaces print
        ("x = 1", False),
    ],
)
def test_print_silencers(setup: str, silenced: bool) -> None:
    found = _outputs(f"import builtins\nprint('step')\n{setup}\n")
    assert found["print('step')"] == (PRINT, silenced)


def test_logger_level_from_the_rank_quiets_it() -> None:
    source = """
        import logging
        import torch.distributed as dist
        logger = logging.getLogger(__name__)
        logger.info("step")
        logger.setLevel(logging.INFO if dist.get_rank() == 0 else logging.WARN)
        """
    assert _outputs(source)['logger.info("step")'] == (LOGGER, True)
    assert _outputs(source.replace("if dist.get_rank() == 0 else", "or"))['logger.info("step")'] == (LOGGER, False)


def test_synchronising_calls_and_waits_between() -> None:
    ctx, probe = _walk(
        """
        import torch, torch.distributed as dist
        def wait_all():
            dist.barrier()
        def main(rank):
            if rank == 0:
                torch.save(state, "a.pt")
            torch.cuda.synchronize()
            torch.load("a.pt")
            wait_all()
            torch.load("b.pt")
        """
    )
    barriers = ctx.barriers
    node = {text: n for text, (n, _) in probe.sites.items()}
    function = probe.sites['torch.load("a.pt")'][1].function
    assert barriers.waits_at(node["dist.barrier()"]) and not barriers.waits_at(node["torch.cuda.synchronize()"])
    # the GPU synchronisation does not make the ranks wait; the helper that calls a barrier does
    assert barriers.waits(function, node['torch.load("a.pt")'], after=node['torch.save(state, "a.pt")']) == []
    assert len(barriers.waits(function, node['torch.load("b.pt")'], after=node['torch.save(state, "a.pt")'])) == 1
    assert barriers.waits(function, node['torch.load("b.pt")'], plain=True) == []  # a helper is no plain barrier


def test_zero_first_idiom_written_out() -> None:
    ctx, probe = _walk(
        """
        import torch.distributed as dist
        from torchvision import datasets
        def main(local_rank):
            if local_rank != 0:
                dist.barrier()
            datasets.MNIST("data", download=True)
            if local_rank == 0:
                dist.barrier()
        def other(rank):
            if rank == 0:
                datasets.CIFAR10("data", download=True)
            dist.barrier()
            datasets.CIFAR10("data", download=True)
            datasets.CIFAR100("data", download=True)
        """
    )
    (mnist, mnist_site) = probe.sites['datasets.MNIST("data", download=True)']
    assert ctx.rank.runs(mnist_site) is Runs.ALL
    assert ctx.barriers.zero_first(mnist, mnist_site, ())
    first = probe.sites['datasets.CIFAR10("data", download=True)'][1]
    late, late_site = probe.sites['datasets.CIFAR100("data", download=True)']
    assert ctx.barriers.zero_first(late, late_site, [first])
    assert not ctx.barriers.zero_first(late, late_site, [])


def test_writes_reads_and_downloads() -> None:
    def ask(ctx, node):
        written, read = path_written(node, ctx), path_read(node, ctx)
        code = ctx.module.code_for_node
        return (
            file_write(node, ctx),
            code(written) if written is not None else None,
            code(read) if read is not None else None,
            download(node, ctx),
        )

    _, probe = _walk(
        """
        import json, os, subprocess, torch
        from pathlib import Path
        torch.save(state, path)
        open(out, "w")
        json.load(open(cfg))
        Path(out).write_text(text)
        os.makedirs(folder)
        subprocess.run(["wget", url])
        os.system("ls data")
        """,
        ask,
    )
    found = dict(probe.answers)
    assert found["torch.save(state, path)"] == ("`torch.save()`", "path", None, None)
    assert found['open(out, "w")'] == ('`open(..., "w")`', "out", None, None)
    assert found["json.load(open(cfg))"] == (None, None, "cfg", None)
    assert found["Path(out).write_text(text)"] == ("`Path(out).write_text()`", "Path(out)", None, None)
    assert found["os.makedirs(folder)"] == (None, "folder", None, None)  # prepares a path, writes no file
    assert found['subprocess.run(["wget", url])'][3] == "`subprocess.run(...)` running `wget`"
    assert found['os.system("ls data")'][3] is None
