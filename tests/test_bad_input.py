"""SPEC §5: no input crashes the linter or hides the other files' findings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import run_script, write

BAD = "from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"


@pytest.fixture
def mess(tmp_path: Path) -> Path:
    """A directory holding every kind of bad input next to one real finding."""
    write(
        tmp_path,
        {
            "real.py": BAD,
            "syntax.py": "def train(model\n    pass\n",
            "latin1.py": b"name = 'caf\xe9'\n",
            "nul.py": b"x = 1\x00\n",
            "empty.py": "",
            "bad_cookie.py": b"# -*- coding: klingon -*-\nx = 1\n",
            "deep.py": "x = " + "(" * 250 + "1" + ")" * 250 + "\n",
            "unreadable.py": BAD,
        },
    )
    (tmp_path / "dangling.py").symlink_to(tmp_path / "missing-target.py")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg")
    (tmp_path / "self.py").symlink_to(tmp_path / "self.py")
    os.chmod(tmp_path / "unreadable.py", 0)
    return tmp_path


def test_every_bad_input_is_reported_and_the_rest_is_linted(ddplint, mess, monkeypatch) -> None:
    write(mess, {"huge.py": "".join(f"value_{i} = {i}\n" for i in range(50_000)) + BAD})
    if os.geteuid() == 0:  # root reads mode-000 files: make the read fail as it would for a user
        real_read = Path.read_bytes

        def read_bytes(self: Path) -> bytes:
            if self.name == "unreadable.py":
                raise PermissionError(13, "Permission denied")
            return real_read(self)

        monkeypatch.setattr(Path, "read_bytes", read_bytes)
    run = ddplint(".", "--format", "json", cwd=mess)
    findings = {(f["path"], f["rule"], f["line"]) for f in run.json()}
    assert ("real.py", "DDP014", 2) in findings
    assert ("huge.py", "DDP014", 50_002) in findings
    for name in ("syntax.py", "latin1.py", "nul.py", "bad_cookie.py", "deep.py"):
        assert (name, "DDP000", 1) in findings  # deep.py: CPython's "too many nested parentheses"
    assert not any(path == "empty.py" for path, _, _ in findings)
    latin1 = next(f for f in run.json() if f["path"] == "latin1.py")
    assert "not valid utf-8" in latin1["message"] and latin1["column"] == 12
    errors = run.stderr.splitlines()
    assert "unreadable.py: error: cannot read file: Permission denied" in errors
    assert any(line.startswith("dangling.py: error: broken symlink") for line in errors)
    assert any(line.startswith("self.py: error: broken symlink") for line in errors)
    assert [line for line in errors if "symlink loop" in line] == [
        f"pkg/loop: warning: symlink loop (points to {mess / 'pkg'}); not followed"
    ]
    assert len(errors) == 4 and "Traceback" not in run.stderr
    assert run.status == 1


def test_bad_input_through_the_console_script(mess) -> None:
    run = run_script(".", cwd=mess)
    assert run.status == 1 and "Traceback" not in run.stderr
    assert "real.py:2:1: DDP014" in run.stdout
    assert "syntax.py:1:10: DDP000" in run.stdout


def test_deep_nesting_does_not_crash(ddplint, tmp_path) -> None:
    # Valid for CPython (below its limit of 200 brackets) and deep for LibCST and the walker.
    nested = "x = " + "[" * 190 + "]" * 190 + "\n"
    chain = "y = " + " + ".join(["1"] * 900) + "\n"
    write(tmp_path, {"deep.py": nested + chain + BAD, "real.py": BAD})
    run = ddplint(".", cwd=tmp_path)
    assert "Traceback" not in run.stderr
    assert "real.py:2:1: DDP014" in run.stdout
    assert "deep.py:4:1: DDP014" in run.stdout


def test_explicit_unreadable_symlink_argument(ddplint, tmp_path) -> None:
    """README: a broken symlink gets a one-line error, exit 1, and every other
    file is still linted (pre-commit passes staged files explicitly)."""
    (tmp_path / "link.py").symlink_to(tmp_path / "missing.py")
    write(tmp_path, {"real.py": BAD})
    run = ddplint("link.py", "real.py", cwd=tmp_path)
    assert run.status == 1
    assert run.stderr == f"link.py: error: broken symlink (points to {tmp_path / 'missing.py'}: No such file or directory); not linted\n"
    assert "real.py:2:1: DDP014" in run.stdout


def test_warnings_about_the_users_code_stay_off_stderr(tmp_path: Path) -> None:
    """Invalid escapes are the user's Python's business, not lines in our output."""
    write(tmp_path, {"escapes.py": 'import re\nPATTERN = re.compile("\\d+")\n' + BAD})
    run = run_script(".", cwd=tmp_path, env={"PYTHONWARNINGS": "always"})
    assert run.status == 1 and "DDP" in run.stdout
    assert run.stderr == ""


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ('"""doc"""\nimport os\nfrom __future__ import annotations\n', "from __future__ imports must occur at the beginning of the file"),
        ('"""doc"""\n"not a docstring"\nfrom __future__ import annotations\n', "from __future__ imports must occur at the beginning of the file"),
        ("from __future__ import rested_snopes\n", "future feature rested_snopes is not defined"),
        ("from __future__ import braces\n", "not a chance"),
    ],
)
def test_future_statements_rejected_by_the_compiler_are_ddp000(source: str, message: str) -> None:
    """CPython rejects these after parsing (in its compiler); `python file.py` fails, so DDP000 says so."""
    from ddplint.config import Settings
    from ddplint.engine import check_source

    with pytest.raises(SyntaxError, match=message):
        compile(source, "f.py", "exec", dont_inherit=True)
    (finding,) = check_source("f.py", source, Settings.all_rules()).findings
    assert finding.rule == "DDP000" and finding.message.startswith(message)


def test_valid_future_statements_are_fine() -> None:
    from ddplint.config import Settings
    from ddplint.engine import check_source

    source = '"""doc"""\n# comment\nfrom __future__ import annotations\nfrom __future__ import division, print_function\nx = "__future__"\n'
    assert not check_source("f.py", source, Settings.all_rules()).findings
