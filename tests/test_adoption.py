"""Adopting ddplint on a big repository, as a Ruff user expects: `--add-noqa`,
DDP100 unused-noqa, `# noqa` on the offending argument's line,
`--show-settings` / `--show-files`, config `extend`, and notebooks. Every
test runs the installed console script in a subprocess."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import REPO, assert_valid_sarif, run_script, write

HEAD = (
    "import torch.distributed as dist\n"
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "\n"
    "dist.init_process_group('gloo')\n"
    "sampler = DistributedSampler(ds)\n"
)
#: Four DDP014 findings: one line, one with another tool's noqa directive, a
#: multi-line call, and a call whose first line ends inside a multi-line string.
TRAIN = HEAD + (
    "a = DataLoader(ds, sampler=sampler, shuffle=True)\n"  # 6
    "b = DataLoader(ds, sampler=sampler, shuffle=True)  # noqa: E501\n"  # 7
    "c = DataLoader(\n"  # 8
    "    ds,\n"
    "    sampler=sampler,\n"
    "    shuffle=True,\n"
    ")\n"  # 12
    'd = DataLoader(ds, sampler=sampler, shuffle=True, collate_fn=make("""\n'  # 13
    "text # keep\n"
    '"""))\n'  # 15
)


def test_add_noqa_silences_every_finding_once(tmp_path: Path) -> None:
    write(tmp_path, {"train.py": TRAIN})
    first = run_script("--no-cache", "--add-noqa", "train.py", cwd=tmp_path)
    assert first.status == 0, first.stderr
    assert "Added 4 noqa directives to 1 file." in first.stderr
    lines = (tmp_path / "train.py").read_text().splitlines()
    assert lines[5].endswith("shuffle=True)  # noqa: DDP014")
    assert lines[6].endswith("shuffle=True)  # noqa: E501, DDP014")  # merged into the directive
    assert lines[7] == "c = DataLoader(  # noqa: DDP014"
    assert lines[13] == "text # keep"  # never inside the string: on the line where it ends
    assert lines[14] == '"""))  # noqa: DDP014'
    after = (tmp_path / "train.py").read_text()

    second = run_script("--no-cache", "--add-noqa", "train.py", cwd=tmp_path)
    assert second.status == 0
    assert "Added 0 noqa directives to 0 files." in second.stderr
    assert (tmp_path / "train.py").read_text() == after
    check = run_script("--no-cache", "train.py", cwd=tmp_path)
    assert check.status == 0, check.stdout
    assert "4 suppressed by noqa" in check.stdout


def test_unused_noqa_is_opt_in_and_judges_only_enabled_ddp_codes(tmp_path: Path) -> None:
    source = HEAD + (
        "a = DataLoader(ds, sampler=sampler)  # noqa: DDP014, E501\n"  # 6: DDP014 unused, E501 not ours
        "b = DataLoader(ds, sampler=sampler, shuffle=True)  # noqa: DDP014\n"  # 7: used
        "c = DataLoader(ds, sampler=sampler)  # noqa: DDP003\n"  # 8: unused, unless DDP003 is off
        "d = DataLoader(ds, sampler=sampler)  # noqa\n"  # 9: blanket, may serve another tool
    )
    write(tmp_path, {"train.py": source})
    default = run_script("--no-cache", "train.py", cwd=tmp_path)
    assert default.status == 0 and "DDP100" not in default.stdout

    opted = run_script("--no-cache", "--extend-select", "DDP100", "--format", "json", "train.py", cwd=tmp_path)
    found = sorted((f["line"], f["rule"]) for f in opted.json())
    assert found == [(6, "DDP100"), (8, "DDP100")], opted.stdout
    assert opted.status == 1

    narrow = run_script("--no-cache", "--select", "DDP014,DDP100", "--format", "json", "train.py", cwd=tmp_path)
    assert sorted(f["line"] for f in narrow.json()) == [6]  # DDP003 did not run: its directive is not judged

    fixed = run_script("--no-cache", "--extend-select", "DDP100", "--fix", "train.py", cwd=tmp_path)
    assert fixed.status == 0, fixed.stdout
    lines = (tmp_path / "train.py").read_text().splitlines()
    assert lines[5] == "a = DataLoader(ds, sampler=sampler)  # noqa: E501"
    assert lines[6].endswith("# noqa: DDP014")
    assert lines[7] == "c = DataLoader(ds, sampler=sampler)"
    assert lines[8].endswith("# noqa")


def test_noqa_on_the_offending_arguments_line(tmp_path: Path) -> None:
    call = HEAD + "loader = DataLoader(\n    ds,\n    sampler=sampler,\n    shuffle=True,  # noqa: DDP014\n)\n"
    loop = (
        "import torch.distributed as dist\n"
        "from torch.utils.data import DataLoader, DistributedSampler\n\n\n"
        "def main(ds, model):\n"
        "    dist.init_process_group('gloo')\n"
        "    loader = DataLoader(ds, sampler=DistributedSampler(ds))\n"
        "    for epoch in range(10):\n"  # 8: DDP002's loop
        "        for batch in loader:  # noqa: DDP002\n"  # 9: in the body: not about the loop
        "            model(batch)\n"
    )
    write(tmp_path, {"call.py": call, "loop.py": loop})
    run = run_script("--no-cache", "--format", "json", "call.py", "loop.py", cwd=tmp_path)
    assert [(f["path"], f["line"], f["rule"]) for f in run.json()] == [("loop.py", 8, "DDP002")], run.stdout
    (tmp_path / "loop.py").write_text(loop.replace("range(10):\n", "range(10):  # noqa: DDP002\n"))
    assert run_script("--no-cache", "call.py", "loop.py", cwd=tmp_path).status == 0


def test_show_settings_and_files_follow_extend(tmp_path: Path) -> None:
    write(tmp_path, {
        "pyproject.toml": '[tool.ddplint]\nignore = ["DDP007"]\nmax-lines = 500\nextend-exclude = ["generated"]\n',
        "svc/ddplint.toml": 'extend = "../pyproject.toml"\nextend-select = ["DDP100"]\n',
        "svc/train.py": "x = 1\n",
        "svc/generated/out.py": "x = 1\n",
        "svc/nb.ipynb": json.dumps({"cells": [], "metadata": {}, "nbformat": 4, "nbformat_minor": 5}),
    })  # fmt: skip
    shown = run_script("check", "--show-settings", "svc/train.py", cwd=tmp_path)
    assert shown.status == 0, shown.stderr
    assert f"Config file: {(tmp_path / 'svc' / 'ddplint.toml').resolve()}" in shown.stdout
    assert f"Extends: {(tmp_path / 'pyproject.toml').resolve()}" in shown.stdout
    assert "max-lines = 500" in shown.stdout
    assert '"DDP100",  # unused-noqa' in shown.stdout and '"DDP007"' not in shown.stdout

    files = run_script("check", "--show-files", "svc", cwd=tmp_path)
    assert files.status == 0, files.stderr
    assert files.stdout.splitlines() == [str(tmp_path / "svc" / "nb.ipynb"), str(tmp_path / "svc" / "train.py")]

    (tmp_path / "pyproject.toml").write_text('[tool.ddplint]\nextend = "svc/ddplint.toml"\n')
    cycle = run_script("check", "svc", cwd=tmp_path)
    assert cycle.status == 2
    assert len(cycle.stderr.splitlines()) == 1 and "cycle" in cycle.stderr and "svc/ddplint.toml" in cycle.stderr


def _notebook(*cells: tuple[str, str]) -> str:
    return json.dumps({
        "cells": [
            {"cell_type": kind, "metadata": {}, "source": source.splitlines(keepends=True),
             **({"execution_count": None, "outputs": []} if kind == "code" else {})}
            for kind, source in cells
        ],
        "metadata": {"language_info": {"name": "python"}},
        "nbformat": 4,
        "nbformat_minor": 5,
    }, indent=1)  # fmt: skip


NOTEBOOK = _notebook(
    ("markdown", "# Train on two processes\n"),
    ("code", "%matplotlib inline\n!pip install accelerate\nimport torch.distributed as dist\n"
     "from torch.utils.data import DataLoader, DistributedSampler\nfrom accelerate import notebook_launcher\n"),
    ("code", "def train(ds):\n    dist.init_process_group('gloo')\n    files = !ls\n    %time sampler = DistributedSampler(ds)\n"
     "    sampler = DistributedSampler(ds)\n    return DataLoader(ds, sampler=sampler, shuffle=True)\n"),
    ("code", "%%bash\necho this is not python (\n"),
    ("code", "notebook_launcher(train, (None,), num_processes=2)\n"),
)  # fmt: skip


def test_notebook_cells_are_linted_with_cell_positions(tmp_path: Path, sarif_validator) -> None:
    write(tmp_path, {"nb.ipynb": NOTEBOOK, "other.py": "x = 1\n"})
    text = run_script("--no-cache", ".", cwd=tmp_path)
    assert text.status == 1, text.stderr
    assert text.stdout.startswith("nb.ipynb:cell 3:6:12: DDP014 "), text.stdout
    assert "in 1 of 2 files" in text.stdout

    found = run_script("--no-cache", "--format", "json", "nb.ipynb", cwd=tmp_path).json()
    assert [(f["rule"], f["cell"], f["line"], f["column"]) for f in found] == [("DDP014", 3, 6, 12)]
    assert found[0]["fix"] is None  # its edits would be in the joined cells, not in the notebook's JSON
    jsonschema.validate(found, json.loads((REPO / "docs" / "json-output.schema.json").read_text()))

    sarif = json.loads(run_script("--no-cache", "--format", "sarif", "nb.ipynb", cwd=tmp_path).stdout)
    assert_valid_sarif(sarif_validator, sarif)
    result = sarif["runs"][0]["results"][0]
    assert result["properties"]["cell"] == 3
    in_file = next(n for n, line in enumerate(NOTEBOOK.splitlines(), 1) if "shuffle=True)" in line)
    assert result["locations"][0]["physicalLocation"]["region"] == {"startLine": in_file, "endLine": in_file}

    silenced = NOTEBOOK.replace('shuffle=True)\\n"', 'shuffle=True)  # noqa: DDP014\\n"')
    assert silenced != NOTEBOOK
    (tmp_path / "nb.ipynb").write_text(silenced)
    assert run_script("--no-cache", "nb.ipynb", cwd=tmp_path).status == 0


@pytest.mark.parametrize(
    ("line", "python"),
    [
        ("files = !ls", "files = None"), ("    a, b = %who_ls", "    a, b = None"), ("x[0] =  !nvidia-smi", "x[0] =  None"),
        ("self.out = %time f()", "self.out = None"), ("d['k'] = !echo", "d['k'] = None"), ("x == !y", "x == !y"),
    ],
)  # fmt: skip
def test_a_magic_assignment_keeps_its_target(line: str, python: str) -> None:
    from ddplint.engine.notebook import python_lines

    assert python_lines([line]) == [python]


@pytest.mark.parametrize("line", [" " * 100_000, "a, " * 50_000, "\t" * 100_000 + "x"])
def test_a_long_code_line_is_read_once(line: str) -> None:
    """A line's possible targets split one way only: the pattern that read a
    run of spaces as leading space, target or space before `=` took 35 s on
    4,000 spaces (a cell's long line would never end)."""
    from ddplint.engine.notebook import python_lines

    assert python_lines([line]) == [line]


def test_malformed_notebook_is_one_line_naming_it(tmp_path: Path) -> None:
    write(tmp_path, {"broken.ipynb": "{not json", "fine.ipynb": _notebook(("code", "x = 1\n"))})
    run = run_script("--no-cache", ".", cwd=tmp_path)
    assert run.status == 1
    assert run.stderr.splitlines() == [run.stderr.splitlines()[0]]
    assert run.stderr.startswith("broken.ipynb: error: not a Jupyter notebook: invalid JSON")
