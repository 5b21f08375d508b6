"""The promises of "What ddplint does not do", each with a test that would
fail if it were broken; and one rule's bug never hides the others."""

from __future__ import annotations

import shutil
import socket
from pathlib import Path

import pytest

from conftest import REPO, assert_valid_sarif, git_repository, run_script, write
from ddplint.model import Severity
from ddplint.rule import _REGISTRY, Rule

BAD = "from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"
SENTINEL_MODULE = "import pathlib\npathlib.Path(__file__).with_name('SENTINEL').write_text('imported')\n"


def _snapshot(root: Path) -> dict[str, int]:
    return {str(p.relative_to(root)): p.stat().st_mtime_ns for p in root.rglob("*")}


def test_check_never_imports_or_runs_user_code(ddplint, tmp_path) -> None:
    write(tmp_path, {"sitecustom.py": SENTINEL_MODULE, "train.py": "import sitecustom\n" + BAD, "conftest.py": SENTINEL_MODULE})
    run = ddplint(".", "-j", "1", cwd=tmp_path)
    assert run.status == 1 and "DDP014" in run.stdout
    assert not (tmp_path / "SENTINEL").exists()


def test_check_opens_no_network_connection(ddplint, monkeypatch) -> None:
    def refuse(*args, **kwargs):
        raise AssertionError("ddplint tried to open a network connection")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)
    run = ddplint("fixtures", "examples", "-j", "1", "--no-cache", "--format", "sarif", cwd=REPO)
    assert run.status == 1 and "AssertionError" not in run.stderr


def test_check_writes_only_its_output_and_cache(ddplint, tmp_path) -> None:
    write(tmp_path, {"pkg/a.py": BAD, "pkg/b.py": "x = 1\n"})
    before = _snapshot(tmp_path)
    ddplint(".", "--no-cache", cwd=tmp_path)
    assert _snapshot(tmp_path) == before
    ddplint(".", "--output", "report.txt", cwd=tmp_path)
    new = set(_snapshot(tmp_path)) - set(before)
    assert {n.split("/")[0] for n in new} == {"report.txt", ".ddplint_cache"}


def test_reports_hold_no_absolute_path_unless_asked(ddplint, tmp_path) -> None:
    write(tmp_path, {"a.py": BAD})
    (tmp_path / ".git").mkdir()
    for fmt in ("json", "sarif", "github", "gitlab"):
        output = ddplint(str(tmp_path / "a.py"), "--format", fmt, "--no-cache", cwd=tmp_path).stdout
        assert str(tmp_path) not in output, fmt
        assert "a.py" in output
    asked = ddplint(str(tmp_path / "a.py"), "--format", "json", "--absolute-paths", "--no-cache", cwd=tmp_path)
    assert asked.json()[0]["path"] == str(tmp_path / "a.py")


@pytest.fixture
def crashing_rule():
    """A rule that raises on every call, registered for one test only."""
    from ddplint import engine

    class _Crashing(Rule):
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

        code = "DDP989"
        name = "test-crashing-rule"
        severity = Severity.NOTE
        summary = "Test only."

        def visit_Call(self, node) -> None:
            raise ZeroDivisionError("a bug in the rule")

    engine._rules_by_code.cache_clear()
    engine._visitor_rules.cache_clear()
    yield
    _REGISTRY.pop("DDP989", None)
    engine._rules_by_code.cache_clear()
    engine._visitor_rules.cache_clear()


def test_a_crashing_rule_is_isolated(ddplint, tmp_path, crashing_rule, sarif_validator) -> None:
    write(tmp_path, {"a.py": BAD, "b.py": BAD})
    run = ddplint(".", "-j", "1", "--no-cache", cwd=tmp_path)
    assert run.status == 2
    assert run.stdout.count("DDP014") == 2  # the other rules still report, on every file
    assert run.stderr.splitlines() == [
        "a.py: error: internal error in rule DDP989: ZeroDivisionError: a bug in the rule",
        "b.py: error: internal error in rule DDP989: ZeroDivisionError: a bug in the rule",
    ]
    debug = ddplint(".", "-j", "1", "--no-cache", "--debug", cwd=tmp_path)
    assert "Traceback" in debug.stderr and "ZeroDivisionError" in debug.stderr
    log = ddplint(".", "-j", "1", "--no-cache", "--format", "sarif", cwd=tmp_path).json()
    assert_valid_sarif(sarif_validator, log)
    invocation = log["runs"][0]["invocations"][0]
    assert invocation["executionSuccessful"] is False
    assert {n["level"] for n in invocation["toolExecutionNotifications"]} == {"error"}
    assert all(r["ruleId"] != "DDP989" for r in log["runs"][0]["results"])


def test_files_above_max_file_size_are_skipped_with_a_note(ddplint, tmp_path) -> None:
    write(tmp_path, {"big.py": BAD + "x = 1\n" * 2000, "small.py": BAD, "pyproject.toml": '[tool.ddplint]\nmax-file-size = "10KB"\n'})
    run = ddplint(".", "--no-cache", cwd=tmp_path)
    assert "small.py:2:1: DDP014" in run.stdout and "big.py:" not in run.stdout
    assert run.stderr.startswith("big.py: warning: 12.1 kB is above max-file-size (10.0 kB); not linted")
    assert run.status == 1


def test_language_server_never_runs_workspace_code(tmp_path) -> None:
    from lsprotocol.types import TextDocumentItem
    from pygls.workspace import Workspace

    from ddplint.lsp import DdplintServer

    text = "import helper\n" + BAD
    write(tmp_path, {"helper.py": SENTINEL_MODULE, "train.py": text})
    server = DdplintServer()
    server.protocol._workspace = Workspace(tmp_path.as_uri())  # as after `initialize`
    uri = (tmp_path / "train.py").as_uri()
    server.workspace.put_text_document(TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    findings, _ = server.findings(uri)
    assert [f.rule for f in findings] == ["DDP014"]
    assert not (tmp_path / "SENTINEL").exists()


def test_stdin_reads_only_the_configs_of_its_own_file(tmp_path) -> None:
    """An editor lints a buffer from whatever directory it runs in: a broken
    config there, or in another sub-project, is not the buffer's."""
    project = tmp_path / "proj"
    shutil.copytree(REPO / "fixtures" / "projects" / "detr_style", project)
    git_repository(project)  # another repository than the working directory's
    write(tmp_path, {"elsewhere/pyproject.toml": "[tool.ddplint\nselect =\n"})
    main = (project / "main.py").read_bytes()
    args = ("-", "--stdin-filename", "../proj/main.py", "--format", "json", "--no-cache")
    run = run_script(*args, cwd=tmp_path / "elsewhere", stdin=main)
    assert run.status == 1 and run.stderr == ""
    found = sorted((f["path"], f["line"], f["rule"], tuple(r["path"] for r in f["related"])) for f in run.json())
    assert found == [
        ("../proj/main.py", 19, "DDP001", ("../proj/main.py", "../proj/util/misc.py")),  # the project's facts, as from there
        ("../proj/main.py", 24, "DDP006", ()),
    ]

    write(project, {"pyproject.toml": '[tool.ddplint]\nfail-on = "error"\n', "vendored/pyproject.toml": "[tool.ddplint]\nselect = 3\n"})
    own = run_script("-", "--stdin-filename", "util/t.py", "--no-cache", cwd=project, stdin=BAD.encode())
    assert own.status == 1 and "util/t.py:2:1: DDP014" in own.stdout and own.stderr == ""
    broken = run_script("-", "--stdin-filename", "vendored/t.py", "--no-cache", cwd=project, stdin=BAD.encode())
    assert broken.status == 2  # its own config is broken: that is its business
    assert broken.stderr == "ddplint: error: vendored/pyproject.toml: [tool.ddplint] select: expected a list of rule codes, got int\n"


def _dense(calls: int) -> str:
    """Valid Python of few lines and many tokens (a data table on one line: five tokens a call)."""
    return BAD + "table = [" + ",".join(f"f({i})" for i in range(calls)) + "]\n"


def test_a_file_dense_in_tokens_is_skipped_with_a_note_naming_max_tokens(tmp_path) -> None:
    # 70,000 calls on one line: 1.2 MB, 3 lines, 350,000 tokens (LibCST: about 30 s and 1.2 GB)
    write(tmp_path, {"dense.py": _dense(70_000), "train.py": BAD})
    run = run_script(".", "--no-cache", "-j", "1", cwd=tmp_path, timeout=120)
    assert "train.py:2:1: DDP014" in run.stdout and "dense.py:" not in run.stdout
    assert run.stderr == "dense.py: warning: above max-tokens (300,000 tokens); not linted\n"
    assert run.status == 1
    write(tmp_path, {"ddplint.toml": "max-tokens = 1000\n", "dense.py": _dense(300)})  # 1,5xx tokens
    run = run_script(".", "--no-cache", "-j", "1", cwd=tmp_path)
    assert run.stderr == "dense.py: warning: above max-tokens (1,000 tokens); not linted\n"
    write(tmp_path, {"ddplint.toml": "max-tokens = 2000\n"})
    run = run_script(".", "--no-cache", "-j", "1", cwd=tmp_path)  # raised: linted
    assert "dense.py:2:1: DDP014" in run.stdout and run.stderr == ""
    stdin = run_script("-", "--stdin-filename", "dense.py", "--no-cache", cwd=tmp_path, stdin=_dense(2000).encode())
    assert stdin.stderr == "dense.py: warning: above max-tokens (2,000 tokens); not linted\n" and "DDP014" not in stdin.stdout


def test_max_tokens_counts_a_string_literal_once(tmp_path) -> None:
    """A long data literal is one token (LibCST reads it at once): linted."""
    write(tmp_path, {"data.py": BAD + "BLOB = '" + "ab, " * 200_000 + "'\n", "ddplint.toml": "max-tokens = 1000\n"})
    run = run_script(".", "--no-cache", "-j", "1", cwd=tmp_path)
    assert "data.py:2:1: DDP014" in run.stdout and run.stderr == ""
