"""The command line, in-process and as the installed console script."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import REPO, assert_valid_sarif, run_script, write

BAD = "from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"
GOOD = "from torch.utils.data import DataLoader\nDataLoader(ds, shuffle=True)\n"
NOTE_ONLY = "import torch\ns = torch.cuda.amp.GradScaler()\n"


@pytest.fixture
def project(tmp_path: Path) -> Path:
    return write(tmp_path, {"bad.py": BAD, "good.py": GOOD})


def test_examples_report_ddp014(ddplint) -> None:
    run = ddplint("examples/", cwd=REPO)
    assert run.status == 1
    assert any(line.startswith("examples/train_ddp.py:39:14: DDP014 ") for line in run.stdout.splitlines())
    assert "train_ddp_fixed.py" not in run.stdout
    assert run.stdout.splitlines()[-1].startswith("Found ")


def test_clean_file_exits_zero(ddplint, project) -> None:
    run = ddplint("good.py", cwd=project)
    assert run.status == 0
    assert run.stdout == "No findings in 1 file.\n"
    assert run.stderr == ""


def test_bare_invocation_lints_the_current_directory(ddplint, project) -> None:
    run = ddplint(cwd=project)
    assert run.status == 1
    assert run.stdout.startswith("bad.py:2:1: DDP014 ")
    assert run.stdout.splitlines()[-1] == "Found 1 finding (1 error) in 1 of 2 files. 1 fixable with `--fix`."


def test_check_subcommand_is_the_default(ddplint, project) -> None:
    assert ddplint("check", ".", cwd=project).stdout == ddplint(".", cwd=project).stdout


@pytest.mark.parametrize(
    "how",
    ["--ignore", "config", "noqa", "noqa-prefix", "file-noqa", "per-file-ignores", "select-other"],
)
def test_each_way_of_silencing(ddplint, project, how) -> None:
    args = ["bad.py"]
    if how == "--ignore":
        args += ["--ignore", "DDP014"]
    elif how == "config":
        write(project, {"pyproject.toml": '[tool.ddplint]\nignore = ["DDP014"]\n'})
    elif how == "noqa":
        write(project, {"bad.py": BAD.replace("True)", "True)  # noqa: DDP014")})
    elif how == "noqa-prefix":
        write(project, {"bad.py": BAD.replace("True)", "True)  # noqa: DDP0")})
    elif how == "file-noqa":
        write(project, {"bad.py": "# ddplint: noqa: DDP014\n" + BAD})
    elif how == "per-file-ignores":
        write(project, {"pyproject.toml": '[tool.ddplint]\nper-file-ignores = { "bad.py" = ["DDP014"] }\n'})
    elif how == "select-other":
        args += ["--select", "DDP012"]
    run = ddplint(*args, cwd=project)
    assert run.status == 0, run.stdout + run.stderr
    assert "DDP014" not in run.stdout


def test_noqa_for_another_code_does_not_silence(ddplint, project) -> None:
    write(project, {"bad.py": BAD.replace("True)", "True)  # noqa: DDP012, E501")})
    assert ddplint("bad.py", cwd=project).status == 1


def test_noqa_on_last_line_of_multiline_statement(ddplint, tmp_path) -> None:
    source = "from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(\n    ds, sampler=DistributedSampler(ds),\n    shuffle=True,\n)  # noqa: DDP014\n"
    write(tmp_path, {"m.py": source})
    assert ddplint("m.py", cwd=tmp_path).status == 0


def test_noqa_inside_a_string_does_not_silence(ddplint, tmp_path) -> None:
    source = 'from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(ds, sampler=DistributedSampler(ds), shuffle=True, collate_fn="# noqa")\n'
    write(tmp_path, {"m.py": source})
    assert ddplint("m.py", cwd=tmp_path).status == 1


@pytest.mark.parametrize("option", ["--select", "--ignore", "--extend-select"])
def test_unknown_code_is_a_usage_error(ddplint, project, option) -> None:
    run = ddplint(".", option, "DDP999", cwd=project)
    assert run.status == 2
    assert run.stderr == f"ddplint: error: {option}: unknown rule code or prefix 'DDP999'\n"
    assert run.stdout == ""


@pytest.mark.parametrize(
    ("config", "message"),
    [
        ("select = 3", "pyproject.toml: [tool.ddplint] select: expected a list of rule codes, got int"),
        ('ignore = ["XYZ1"]', "pyproject.toml: [tool.ddplint] ignore: unknown rule code or prefix 'XYZ1'"),
        ("max-workers-per-rank = 0", "pyproject.toml: [tool.ddplint] max-workers-per-rank: expected a positive integer, got 0"),
        ('fail-on = "fatal"', "pyproject.toml: [tool.ddplint] fail-on: expected one of note, warning, error, got 'fatal'"),
        ("colour = true", "pyproject.toml: [tool.ddplint] colour: unknown key"),
        ("select = [", "pyproject.toml: invalid TOML"),
    ],
)
def test_bad_config_is_one_line_naming_file_and_key(ddplint, project, config, message) -> None:
    write(project, {"pyproject.toml": f"[tool.ddplint]\n{config}\n"})
    run = ddplint(".", cwd=project)
    assert run.status == 2
    assert run.stderr.startswith(f"ddplint: error: {message}")
    assert run.stderr.count("\n") == 1
    assert "Traceback" not in run.stderr


def test_missing_path_is_a_usage_error(ddplint, project) -> None:
    run = ddplint("nope/", "bad.py", cwd=project)
    assert run.status == 2
    assert run.stderr == "ddplint: error: path does not exist: nope\n"


def test_fail_on_and_exit_zero(ddplint, tmp_path) -> None:
    write(tmp_path, {"n.py": NOTE_ONLY, "e.py": BAD})
    assert ddplint("n.py", cwd=tmp_path).status == 0  # a note is below the default fail-on
    assert ddplint("n.py", "--fail-on", "note", cwd=tmp_path).status == 1
    assert ddplint("e.py", "--fail-on", "error", cwd=tmp_path).status == 1
    assert ddplint("e.py", "--exit-zero", cwd=tmp_path).status == 0
    write(tmp_path, {"pyproject.toml": '[tool.ddplint]\nfail-on = "note"\n'})
    assert ddplint("n.py", cwd=tmp_path).status == 1


def test_severity_override(ddplint, tmp_path) -> None:
    write(tmp_path, {"n.py": NOTE_ONLY, "pyproject.toml": '[tool.ddplint]\nseverity = { DDP012 = "error" }\n'})
    run = ddplint("n.py", "--format", "json", cwd=tmp_path)
    assert run.status == 1
    assert run.json()[0]["severity"] == "error"


def test_output_file(ddplint, project) -> None:
    run = ddplint(".", "--format", "json", "--output", "report.json", cwd=project)
    assert run.status == 1 and run.stdout == ""
    assert json.loads((project / "report.json").read_text())[0]["rule"] == "DDP014"


def test_statistics_and_quiet(ddplint, tmp_path) -> None:
    write(tmp_path, {"a.py": BAD + NOTE_ONLY, "b.py": BAD})
    stats = ddplint(".", "--statistics", cwd=tmp_path).stdout.splitlines()
    assert stats[0].split() == ["2", "DDP014", "sampler-shuffle-conflict", "[error]"]
    assert stats[1].split() == ["1", "DDP012", "deprecated-cuda-amp", "[note]"]
    quiet = ddplint(".", "-q", cwd=tmp_path).stdout.splitlines()
    assert len(quiet) == 3 and all(": DDP01" in line for line in quiet)
    write(tmp_path, {"a.py": GOOD, "b.py": GOOD})
    assert ddplint(".", "-q", cwd=tmp_path).stdout == ""


def test_no_colour_when_not_a_tty(ddplint, project) -> None:
    assert "\x1b[" not in ddplint(".", cwd=project).stdout


def test_colour_on_a_tty_unless_disabled(project) -> None:
    import pty

    def on_tty(*args: str, env: dict) -> bytes:
        primary, secondary = pty.openpty()
        code = "import sys; from ddplint.cli import main; sys.exit(main(sys.argv[1:]))"
        subprocess.run([sys.executable, "-c", code, *args], cwd=project, stdout=secondary, env=env, timeout=60)
        import os

        os.close(secondary)
        chunks = []
        while True:
            try:
                chunk = os.read(primary, 65536)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(primary)
        return b"".join(chunks)

    import os

    base = {k: v for k, v in os.environ.items() if k != "NO_COLOR"}
    assert b"\x1b[" in on_tty(".", env=base)
    assert b"\x1b[" not in on_tty(".", "--no-color", env=base)
    assert b"\x1b[" not in on_tty(".", env={**base, "NO_COLOR": "1"})


def test_stdin_with_filename(ddplint, project) -> None:
    run = ddplint("-", "--stdin-filename", "scripts/train.py", cwd=project, stdin=BAD.encode())
    assert run.status == 1
    assert run.stdout.startswith("scripts/train.py:2:1: DDP014 ")


def test_stdin_filename_alone_reads_stdin(ddplint, project) -> None:
    run = ddplint("--stdin-filename", "x.py", cwd=project, stdin=BAD.encode())
    assert run.stdout.startswith("x.py:2:1: DDP014")


def test_stdin_honours_per_file_ignores_and_excludes(ddplint, project) -> None:
    write(project, {"pyproject.toml": '[tool.ddplint]\nper-file-ignores = { "scripts/*" = ["DDP014"] }\nextend-exclude = ["vendor/"]\n'})
    assert ddplint("-", "--stdin-filename", "scripts/t.py", cwd=project, stdin=BAD.encode()).status == 0
    assert ddplint("-", "--stdin-filename", "vendor/t.py", cwd=project, stdin=BAD.encode()).status == 0
    assert ddplint("-", "--stdin-filename", "src/t.py", cwd=project, stdin=BAD.encode()).status == 1


def test_rule_docs(ddplint) -> None:
    run = ddplint("rule", "DDP014")
    assert run.status == 0
    assert run.stdout.startswith("# DDP014 sampler-shuffle-conflict")
    for section in ("## What it does", "## Why is this bad?", "## Example", "## Use instead"):
        assert section in run.stdout
    listing = ddplint("rule").stdout
    assert "DDP012  deprecated-cuda-amp" in listing and "DDP014" in listing
    bad = ddplint("rule", "DDP999")
    assert bad.status == 2 and bad.stderr.startswith("ddplint: error: unknown rule code")


def test_rule_lists_the_doctor_checks_and_finds_rules_by_name(tmp_path) -> None:
    """As the installed console script."""
    from ddplint.rule import all_rules
    from ddplint.runtime.check import all_checks

    def rule(*args: str):
        return run_script("rule", *args, cwd=tmp_path)

    listing = rule().stdout.splitlines()
    assert [line.split()[0] for line in listing] == [r.code for r in (*all_rules(), *all_checks())]
    (rt006,) = [line for line in listing if line.startswith("RT006")]
    assert rt006.split()[1:4] == ["worker-memory-growth", "warning", "doctor"]
    by_name = rule("unguarded-save")
    assert by_name.status == 0 and by_name.stdout == rule("DDP006").stdout
    assert by_name.stdout.startswith("# DDP006 unguarded-save\n")
    for query in ("RT006", "rt006", "worker-memory-growth"):
        run = rule(query)
        assert run.status == 0 and run.stdout.startswith("# RT006 worker-memory-growth\n"), query
    typo = rule("unguarded-sav")
    assert typo.status == 2 and typo.stdout == ""
    assert typo.stderr.count("\n") == 1 and typo.stderr.startswith("ddplint: error: unknown rule code or name 'unguarded-sav'")
    assert "did you mean unguarded-save (DDP006)" in typo.stderr
    nothing_close = rule("xyzzy")
    assert nothing_close.status == 2 and "did you mean" not in nothing_close.stderr
    assert "`ddplint rule` lists them all" in nothing_close.stderr


def test_version(ddplint) -> None:
    from ddplint import __version__

    assert ddplint("--version").stdout == f"ddplint {__version__}\n"
    assert ddplint("version").stdout == f"ddplint {__version__}\n"


# ------------------------------------------------------------------ console script


def test_console_script_on_examples() -> None:
    run = run_script("examples/", cwd=REPO)
    assert run.status == 1
    assert "examples/train_ddp.py:39:14: DDP014 " in run.stdout


def test_console_script_sarif_and_stdin(tmp_path, sarif_validator) -> None:
    run = run_script("-", "--stdin-filename", "t.py", "--format", "sarif", cwd=tmp_path, stdin=BAD.encode())
    assert run.status == 1
    log = json.loads(run.stdout)
    assert_valid_sarif(sarif_validator, log)
    assert log["runs"][0]["results"][0]["ruleId"] == "DDP014"


def test_console_script_usage_error_has_no_traceback(tmp_path) -> None:
    run = run_script("--select", "NOPE1", ".", cwd=tmp_path)
    assert run.status == 2
    assert "Traceback" not in run.stderr and run.stderr.count("\n") == 1


def test_python_dash_m(tmp_path) -> None:
    proc = subprocess.run([sys.executable, "-m", "ddplint", "--version"], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0 and proc.stdout.startswith("ddplint ")


@pytest.mark.parametrize("args", [["--version"], ["rule"], ["rule", "DDP014"]])
def test_light_commands_do_not_import_libcst(args) -> None:
    code = (
        "import sys; from ddplint.cli import main; status = main(sys.argv[1:]); "
        "assert 'libcst' not in sys.modules, 'libcst was imported'; sys.exit(status)"
    )
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("extra", [[], ["--no-project"]])
def test_files_no_rule_applies_to_do_not_import_libcst(tmp_path, extra) -> None:
    """The prefilter's verdict and DDP000 come from CPython alone: a pre-commit
    run over files with nothing distributed in them never pays for LibCST."""
    (tmp_path / "util.py").write_text("import os\n\n\ndef home():\n    return os.environ['HOME']\n")
    (tmp_path / "broken.py").write_text("def f(:\n")
    code = (
        "import sys; from ddplint.cli import main; status = main(sys.argv[1:]); "
        "assert 'libcst' not in sys.modules, 'libcst was imported'; print(status)"
    )
    args = ["check", "--no-cache", "-q", *extra, "util.py", "broken.py"]
    proc = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True, cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert "broken.py:1:" in proc.stdout and "DDP000" in proc.stdout
    assert proc.stdout.strip().endswith("1")  # the syntax error is a finding
