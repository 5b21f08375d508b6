"""One test per entry of the rank catalogue (ddplint/analysis/knowledge.py),
end to end through the prefilter and the whole-project analysis: a rank
test written with the entry makes a collective under it a DDP001 finding,
in the file and through a helper in another module; a staggering context
manager keeps every rank's download out of DDP022.

The catalogue is the one place this knowledge lives; these tests are what
keeps a new entry from being known to one analysis and not to the text
prefilter (a guard on ``SLURM_NODEID`` used to pass as no rank test at all).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write
from ddplint import knowledge
from ddplint.knowledge import RANK_SOURCES, RankSource
from ddplint.analysis.collectives import COLLECTIVE_FAMILIES
from ddplint.config.resolver import ConfigResolver
from ddplint.engine.prefilter import summary_worthy, TextScan
from ddplint.runner import lint_paths

_HEADER = "import os\nimport torch.distributed as dist\n"


def _test_of(source: RankSource, receiver: str) -> tuple[str, str]:
    """(imports, an expression true on some ranks only) written with `source`."""
    if source.form == knowledge.ENV:
        return "", f'int(os.environ["{source.text}"]) == 0'
    if source.form == knowledge.FUNCTION:
        module, _, name = source.text.rpartition(".")
        return f"import {module}\n", f"{module}.{name}() == 0"
    if source.form == knowledge.CALL:
        return "from detectron2.utils import comm\n", f"comm.{source.text}() == 0"
    if source.kind in (knowledge.MAIN, knowledge.NODE_MAIN, knowledge.ONE):
        return "", f"{receiver}.{source.text}"
    return "", f"{receiver}.{source.text} == 0"


def _codes(root: Path) -> list[tuple[str, int, str]]:
    report = lint_paths([root], ConfigResolver(cwd=root), jobs=1, cache=None, project=True)
    assert not report.notices, report.notices
    return sorted((Path(f.path).name, f.span.line, f.rule) for f in report.findings if f.suppressed is None)


_TESTS = [s for s in RANK_SOURCES if s.form not in (knowledge.DECORATOR, knowledge.CONTEXT)]


@pytest.mark.parametrize("source", _TESTS, ids=lambda s: s.text)
def test_a_collective_under_the_rank_test_hangs(tmp_path: Path, source: RankSource) -> None:
    imports, test = _test_of(source, "args")
    write(tmp_path, {"train.py": f"{_HEADER}{imports}\n\ndef main(args):\n"
                                 f"    dist.init_process_group('gloo')\n    if {test}:\n        dist.barrier()\n"})
    assert _codes(tmp_path) == [("train.py", 8 + imports.count("\n"), "DDP001")]


@pytest.mark.parametrize("source", _TESTS, ids=lambda s: s.text)
def test_a_helper_in_another_module_testing_it_is_a_rank_test(tmp_path: Path, source: RankSource) -> None:
    imports, test = _test_of(source, "state")
    write(tmp_path, {
        "helpers.py": f"import os\n{imports}\n\ndef leader(state):\n    return {test}\n",
        "train.py": f"{_HEADER}from helpers import leader\n\n\ndef main(state):\n"
                    "    dist.init_process_group('gloo')\n    if leader(state):\n        dist.barrier()\n",
    })  # fmt: skip
    assert _codes(tmp_path) == [("train.py", 9, "DDP001")]


@pytest.mark.parametrize("source", [s for s in RANK_SOURCES if s.form == knowledge.DECORATOR], ids=lambda s: s.text)
def test_a_collective_in_a_rank_zero_function_hangs(tmp_path: Path, source: RankSource) -> None:
    write(tmp_path, {"train.py": f"{_HEADER}from lightning.pytorch.utilities import {source.text}\n\n\n"
                                 f"@{source.text}\ndef log_all():\n    dist.barrier()\n"})
    assert _codes(tmp_path) == [("train.py", 8, "DDP001")]


@pytest.mark.parametrize("source", [s for s in RANK_SOURCES if s.form == knowledge.CONTEXT], ids=lambda s: s.text)
def test_a_download_staggered_by_the_context_manager_is_not_every_rank_at_once(tmp_path: Path, source: RankSource) -> None:
    body = "def main(args, accelerator):\n    dist.init_process_group('gloo')\n{}"
    download = "datasets.MNIST(args.data, download=True)\n"
    header = f"{_HEADER}from torchvision import datasets\n\n\n"
    write(tmp_path, {"bare.py": header + body.format("    " + download),
                     "staggered.py": header + body.format(f"    with accelerator.{source.text}():\n        {download}")})
    assert _codes(tmp_path) == [("bare.py", 8, "DDP022")]


@pytest.mark.parametrize("names, requirements", COLLECTIVE_FAMILIES, ids=lambda v: str(sorted(v)[:2]))
def test_every_collective_makes_its_module_worth_a_summary(names, requirements) -> None:
    for name in sorted(names):
        text = "".join(f"{group[0]}\n" for group in requirements) + f"def sync(x):\n    x.{name}()\n"  # code: comments do not count
        assert summary_worthy(TextScan(text)), name


def test_the_knowledge_defines_every_name_once():
    """A vocabulary written twice is the bug the knowledge package exists to
    prevent: two topic modules defining one name would give its readers two
    answers, and a second definition in one module silently replaces the first."""
    import ast
    from pathlib import Path

    import ddplint.knowledge as package

    names: list[str] = []
    for path in sorted(Path(package.__file__).parent.glob("*.py")):
        if path.name == "__init__.py":
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            targets = node.targets if isinstance(node, ast.Assign) else [node.target] if isinstance(node, ast.AnnAssign) else []
            names += [t.id for target in targets for t in ast.walk(target) if isinstance(t, ast.Name)]
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)):
                names.append(node.name)
    assert len(names) > 100
    assert sorted({n for n in names if names.count(n) > 1}) == []
    public = {n for n in names if not n.startswith("_")}
    assert public <= set(dir(package))  # the package re-exports every topic's names
