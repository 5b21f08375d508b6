"""Where users run ddplint: pre-commit (the real tool), GitHub code scanning's
documented SARIF requirements, the composite Action, and GitLab Code Quality."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import GIT_IDENTITY, REPO, assert_valid_sarif, git_repository, write
from github_sarif import assert_code_scanning_accepts

BAD = "from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"
GOOD = "from torch.utils.data import DataLoader\nDataLoader(ds, shuffle=True)\n"
WARNING_ONLY = (  # DDP002, a warning: below --fail-on error
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "sampler = DistributedSampler(ds)\nloader = DataLoader(ds, sampler=sampler)\n"
    "for epoch in range(3):\n    for batch in loader:\n        pass\n"
)


# ------------------------------------------------------------------ pre-commit


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env={**os.environ, **GIT_IDENTITY})


def hook_repository(tmp_path: Path) -> Path:
    """This source as a repository of its own, committed, for `pre-commit
    try-repo` (the source may be a tarball or `git archive` export, no repository)."""
    source = tmp_path / "ddplint-src"
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".venv", ".ddplint_cache", ".hypothesis",
        ".pytest_cache", "tests", "fixtures", "bench", "examples",
    ))  # fmt: skip
    return git_repository(source, commit=True)


@pytest.mark.slow
def test_pre_commit_try_repo(tmp_path: Path) -> None:
    repo = write(tmp_path / "project", {"train.py": BAD, "util.py": GOOD})
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    env = {**os.environ, **GIT_IDENTITY, "PRE_COMMIT_HOME": str(tmp_path / "cache")}
    hooks = hook_repository(tmp_path)
    pre_commit = [sys.executable, "-m", "pre_commit", "try-repo", str(hooks), "ddplint", "--all-files"]
    failing = subprocess.run(pre_commit, cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    assert failing.returncode == 1, failing.stdout + failing.stderr
    assert "train.py:2:1: DDP014" in failing.stdout
    (repo / "train.py").write_text(GOOD)
    _git(repo, "add", ".")
    passing = subprocess.run(pre_commit, cwd=repo, capture_output=True, text=True, env=env, timeout=900)
    assert passing.returncode == 0, passing.stdout + passing.stderr


def test_hook_definition() -> None:
    (hook,) = yaml.safe_load((REPO / ".pre-commit-hooks.yaml").read_text())
    assert hook["id"] == "ddplint" and hook["language"] == "python"
    assert hook["entry"] == "ddplint check --force-exclude"
    assert hook["types_or"] == ["python", "pyi"] and hook["require_serial"] is True


# ------------------------------------------------------------------ code scanning


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    return write(tmp_path, {"src/a.py": BAD, "src/b.py": BAD + BAD.splitlines()[1] + "\n"})


def test_sarif_meets_code_scanning_requirements(ddplint, repo, sarif_validator) -> None:
    log = ddplint("src", "--format", "sarif", "--sarif-category", "training", cwd=repo).json()
    assert_valid_sarif(sarif_validator, log)
    assert_code_scanning_accepts(log)
    assert log["runs"][0]["automationDetails"] == {"id": "training/"}  # category "training", not a run id


def test_identical_lines_get_distinct_fingerprints(ddplint, repo) -> None:
    results = ddplint("src/b.py", "--format", "sarif", cwd=repo).json()["runs"][0]["results"]
    prints = [r["partialFingerprints"]["ddplint/v1"] for r in results]
    assert len(prints) == 2 and prints[0] != prints[1]


def test_sarif_truncates_to_code_scanning_limit(monkeypatch, repo, sarif_validator) -> None:
    from ddplint.reporters import RenderOptions, sarif
    from ddplint.runner import lint_paths

    monkeypatch.setattr(sarif, "MAX_RESULTS", 1)
    report = lint_paths([repo / "src"])
    log = sarif.build_log(report, RenderOptions(cwd=repo))
    assert_valid_sarif(sarif_validator, log)
    assert len(log["runs"][0]["results"]) == 1
    (note,) = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert "2 results left out" in note["message"]["text"]


def test_action_definition() -> None:
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert set(action["inputs"]) >= {"path", "args", "category", "upload"}
    assert action["runs"]["using"] == "composite"
    steps = action["runs"]["steps"]
    assert steps[0]["uses"].startswith("actions/setup-python@")  # before anything runs python
    uses = [step.get("uses", "") for step in steps]
    upload = next(i for i, u in enumerate(uses) if u.startswith("github/codeql-action/upload-sarif@"))
    assert any("run" in step for step in steps[upload + 1 :]), "no gate after the upload"
    workflow = yaml.safe_load((REPO / "docs" / "github-code-scanning.yml").read_text())
    assert workflow["permissions"]["security-events"] == "write"


# ------------------------------------------------------------------ the composite Action, step by step

_EXPRESSION = re.compile(r"\$\{\{\s*inputs\.([\w-]+)\s*\}\}")
_CONDITION = re.compile(r"^inputs\.([\w-]+) (==|!=) '([^']*)'$")


def run_action(cwd: Path, inputs: dict[str, str], stubs: Path | None = None) -> list[tuple[str, int]]:
    """Run action.yml's `run:` steps as GitHub would: `${{ inputs.X }}` is
    substituted as text into env: values and scripts alike (so an input
    spliced into a script is run by bash, as on GitHub), and each script
    runs under `bash --noprofile --norc -eo pipefail` with
    GITHUB_ACTION_PATH at this source. `uses:` steps are skipped. `stubs`
    goes first on PATH. Returns (step name, exit status) of every step run."""
    action = yaml.safe_load((REPO / "action.yml").read_text())
    given = {name: inputs.get(name, spec.get("default", "")) for name, spec in action["inputs"].items()}
    path = os.pathsep.join([*([str(stubs)] if stubs else []), os.path.dirname(sys.executable), os.environ["PATH"]])
    ran = []
    for step in action["runs"]["steps"]:
        condition = step.get("if")
        if condition is not None:
            name, op, value = _CONDITION.match(condition).groups()
            if (given[name] == value) != (op == "=="):
                continue
        if "run" not in step:
            continue
        env = {key: _substitute(str(value), given) for key, value in step.get("env", {}).items()}
        proc = subprocess.run(
            ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", _substitute(step["run"], given)],
            cwd=cwd, capture_output=True, text=True, timeout=120,
            env={**os.environ, "PATH": path, "GITHUB_ACTION_PATH": str(REPO), **env},
        )  # fmt: skip
        ran.append((step["name"], proc.returncode))
    return ran


def _substitute(text: str, given: dict[str, str]) -> str:
    """GitHub's expression substitution, for the one form an action should use."""
    text = _EXPRESSION.sub(lambda m: given[m.group(1)], text)
    if "${{" in text:
        pytest.fail(f"an expression this harness does not evaluate: {text}")
    return text


def recording_stubs(directory: Path, log: Path, ddplint: bool = True) -> Path:
    """`python` (and `ddplint`) stand-ins that record their argv (JSON lines),
    except that `python` runs action/run.py for real; no pip install runs."""
    directory.mkdir()
    recorder = f"import json, sys; open({str(log)!r}, 'a').write(json.dumps(sys.argv[1:]) + '\\n')"
    if ddplint:
        (directory / "ddplint").write_text(f"#!{sys.executable}\n{recorder}\n")
    (directory / "python").write_text(
        f"#!/bin/sh\ncase \"$1\" in *run.py) exec {sys.executable} \"$@\";; esac\n"
        f"exec {sys.executable} -c {shlex.quote(recorder)} \"$@\"\n"
    )
    for stub in directory.iterdir():
        stub.chmod(0o755)
    return directory


HOSTILE = {
    "path": 'src "dir with space" $(touch pwned-path)',
    "args": "--fail-on error; touch pwned-args `touch pwned-tick` --select 'DDP0' \"it's\" |",
    "category": 'cat"; touch pwned-category; echo "',
    "version": "1.0; touch pwned-version $(touch pwned-version2)",
}


def test_action_inputs_reach_ddplint_as_words_and_never_run(tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    log = tmp_path / "argv.jsonl"
    ran = run_action(work, HOSTILE, stubs=recording_stubs(tmp_path / "stubs", log))
    assert [status for _, status in ran] == [0, 0, 0], ran
    assert not list(tmp_path.rglob("pwned*")), "an input was executed"
    install, sarif, gate = [json.loads(line) for line in log.read_text().splitlines()]
    assert install == ["-m", "pip", "install", "--quiet", "ddplint==" + HOSTILE["version"]]
    words = ["src", "dir with space", "$(touch", "pwned-path)", "--fail-on", "error;", "touch", "pwned-args",
             "`touch", "pwned-tick`", "--select", "DDP0", "it's", "|"]  # fmt: skip
    assert sarif == ["check", *words, "--format", "sarif", "--sarif-category", HOSTILE["category"],
                     "--output", "ddplint.sarif", "--exit-zero"]  # fmt: skip
    assert gate == ["check", "--format", "text", *words]


def test_action_installs_its_own_commit_without_a_version(tmp_path: Path) -> None:
    log = tmp_path / "argv.jsonl"
    run_action(tmp_path, {"upload": "false"}, stubs=recording_stubs(tmp_path / "stubs", log))
    install, sarif, gate = [json.loads(line) for line in log.read_text().splitlines()]
    assert install == ["-m", "pip", "install", "--quiet", str(REPO)]
    assert sarif[-5:] == ["--sarif-category", "ddplint", "--output", "ddplint.sarif", "--exit-zero"]  # the outputs' file
    assert gate == ["check", "--format", "github", "."]


def test_action_refuses_an_unbalanced_quote(tmp_path: Path) -> None:
    stubs = recording_stubs(tmp_path / "stubs", tmp_path / "argv.jsonl")
    ran = dict(run_action(tmp_path, {"args": "--select 'DDP0", "upload": "false"}, stubs=stubs))
    assert ran["Run ddplint (fail on findings)"] == 1
    assert len((tmp_path / "argv.jsonl").read_text().splitlines()) == 1  # pip only: ddplint never started


@pytest.mark.parametrize(("source", "gate"), [(BAD, 1), (WARNING_ONLY, 0)])
def test_action_uploads_then_gates_on_the_users_fail_on(tmp_path: Path, source: str, gate: int) -> None:
    """The real ddplint: the SARIF step never fails (the upload must happen),
    the last step fails the job exactly when `--fail-on error` says so."""
    work = write(tmp_path / "work", {"src/train.py": source})
    stubs = recording_stubs(tmp_path / "stubs", tmp_path / "pip.jsonl", ddplint=False)  # the installed ddplint
    inputs = {"path": "src", "args": "--fail-on error --no-cache", "category": "training"}
    ran = run_action(work, inputs, stubs=stubs)
    assert ran == [("Install ddplint", 0), ("Run ddplint (SARIF for code scanning)", 0),
                   ("Run ddplint (fail on findings)", gate)]  # fmt: skip
    log = json.loads((work / "ddplint.sarif").read_text())
    assert_code_scanning_accepts(log)
    assert log["runs"][0]["automationDetails"] == {"id": "training/"} and log["runs"][0]["results"]


@pytest.mark.parametrize("upload", ["true", "false"])
def test_action_outputs_the_sarif_file_and_counts(tmp_path: Path, monkeypatch, upload: str) -> None:
    """action.yml's outputs are what the SARIF step writes to $GITHUB_OUTPUT:
    the file and its unsuppressed findings by level (with or without upload)."""
    action = yaml.safe_load((REPO / "action.yml").read_text())
    names = ["sarif-file", "findings", "errors", "warnings", "notes"]
    assert {name: spec["value"] for name, spec in action["outputs"].items()} == {
        name: f"${{{{ steps.sarif.outputs.{name} }}}}" for name in names
    }
    (sarif_step,) = [step for step in action["runs"]["steps"] if step.get("id") == "sarif"]
    assert "if" not in sarif_step  # the outputs exist with upload: "false" too
    suppressed = BAD + "loader2 = DataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)  # noqa: DDP014\n"
    work = write(tmp_path / "work", {"src/train.py": suppressed})
    outputs = tmp_path / "github_output"
    monkeypatch.setenv("GITHUB_OUTPUT", str(outputs))
    stubs = recording_stubs(tmp_path / "stubs", tmp_path / "pip.jsonl", ddplint=False)
    ran = run_action(work, {"path": "src", "args": "--no-cache --select ALL", "upload": upload}, stubs=stubs)
    assert ("Run ddplint (SARIF for code scanning)", 0) in ran
    written = dict(line.split("=", 1) for line in outputs.read_text().splitlines())
    assert list(written) == names and written["sarif-file"] == "ddplint.sarif"
    results = json.loads((work / "ddplint.sarif").read_text())["runs"][0]["results"]
    active = [r["level"] for r in results if "suppressions" not in r]
    assert len(active) < len(results)  # the suppressed finding is in the SARIF, not in the counts
    expected = {"findings": len(active), "errors": active.count("error"),
                "warnings": active.count("warning"), "notes": active.count("note")}  # fmt: skip
    assert {k: int(v) for k, v in written.items() if k != "sarif-file"} == expected
    assert expected["errors"] >= 1 and expected["findings"] == sum(expected.values()) - expected["findings"]


def test_readme_action_workflow_works_when_pasted() -> None:
    """The README's Action snippet is a whole workflow: the permissions the
    upload needs, a checkout before the Action, outputs action.yml declares."""
    readme = (REPO / "README.md").read_text()
    blocks = re.findall(r"```yaml\n(.*?)```", readme, flags=re.DOTALL)
    (text,) = [b for b in blocks if "ddplint/ddplint@" in b and "jobs:" in b]
    workflow = yaml.safe_load(text)
    assert workflow["permissions"] == {"contents": "read", "security-events": "write"}
    (job,) = workflow["jobs"].values()
    uses = [step.get("uses", "") for step in job["steps"]]
    checkout = next(i for i, u in enumerate(uses) if u.startswith("actions/checkout@"))
    ours = next(i for i, u in enumerate(uses) if u.startswith("ddplint/ddplint@"))
    assert checkout < ours
    action = yaml.safe_load((REPO / "action.yml").read_text())
    assert set(job["steps"][ours]["with"]) <= set(action["inputs"])
    step_id = job["steps"][ours]["id"]
    used = re.findall(rf"steps\.{step_id}\.outputs\.([\w-]+)", text)
    assert used and set(used) <= set(action["outputs"])


# ------------------------------------------------------------------ GitLab


def test_gitlab_code_quality(ddplint, repo) -> None:
    issues = ddplint("src", "--format", "gitlab", cwd=repo).json()
    assert len(issues) == 3
    for issue in issues:
        assert set(issue) >= {"description", "check_name", "fingerprint", "severity", "location"}
        assert issue["severity"] in ("info", "minor", "major", "critical", "blocker")
        assert issue["location"]["path"].startswith("src/")
        assert issue["location"]["lines"]["begin"] >= 1
        assert isinstance(issue["fingerprint"], str) and len(issue["fingerprint"]) == 32
    assert len({i["fingerprint"] for i in issues}) == 3
    assert issues[0]["check_name"] == "DDP014 sampler-shuffle-conflict" and issues[0]["severity"] == "critical"


def test_server_command_exists_and_rule_listing_does_not_import_pygls() -> None:
    code = "import sys; from ddplint.cli import main; main(['rule']); assert 'pygls' not in sys.modules"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True).returncode == 0
    assert shutil.which("ddplint", path=os.path.dirname(sys.executable))
