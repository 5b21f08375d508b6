"""Where users run ddplint: pre-commit (the real tool), GitHub code scanning's
documented SARIF requirements, the composite Action, and GitLab Code Quality."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from conftest import REPO, assert_valid_sarif, write

BAD = "from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"
GOOD = "from torch.utils.data import DataLoader\nDataLoader(ds, shuffle=True)\n"


# ------------------------------------------------------------------ pre-commit


def _git(repo: Path, *args: str) -> None:
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True)


@pytest.mark.slow
def test_pre_commit_try_repo(tmp_path: Path) -> None:
    repo = write(tmp_path / "project", {"train.py": BAD, "util.py": GOOD})
    _git(repo, "init", "-q")
    _git(repo, "add", ".")
    env = {**os.environ, "PRE_COMMIT_HOME": str(tmp_path / "cache"), "GIT_AUTHOR_NAME": "t",
           "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"}  # fmt: skip
    pre_commit = [sys.executable, "-m", "pre_commit", "try-repo", str(REPO), "ddplint", "--all-files"]
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


def assert_code_scanning_accepts(log: dict) -> None:
    """GitHub code scanning's documented SARIF requirements, beyond the schema."""
    assert log["version"] == "2.1.0" and log["$schema"]
    (run,) = log["runs"]
    driver = run["tool"]["driver"]
    assert driver["name"] and driver["semanticVersion"] and driver["informationUri"].startswith("https://")
    ids = [rule["id"] for rule in driver["rules"]]
    assert len(ids) == len(set(ids))
    for rule in driver["rules"]:
        assert 0 < len(rule["shortDescription"]["text"]) <= 1024
        assert rule["fullDescription"]["text"] and rule["help"]["markdown"]
        assert rule["defaultConfiguration"]["level"] in ("error", "warning", "note")
        properties = rule["properties"]
        assert properties["tags"] and properties["precision"] in ("very-high", "high", "medium", "low")
        assert properties["problem.severity"] in ("error", "warning", "recommendation")
    assert len(run["results"]) <= 25_000
    for result in run["results"]:
        assert result["ruleId"] in ids and ids[result["ruleIndex"]] == result["ruleId"]
        assert result["message"]["text"] and result["level"] in ("error", "warning", "note")
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert not location["artifactLocation"]["uri"].startswith(("/", "file:"))
        region = location["region"]
        assert region["startLine"] >= 1 and region.get("startColumn", 1) >= 1
        assert result["partialFingerprints"]


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    return write(tmp_path, {"src/a.py": BAD, "src/b.py": BAD + BAD.splitlines()[1] + "\n"})


def test_sarif_meets_code_scanning_requirements(ddplint, repo, sarif_validator) -> None:
    log = ddplint("src", "--format", "sarif", "--sarif-category", "training", cwd=repo).json()
    assert_valid_sarif(sarif_validator, log)
    assert_code_scanning_accepts(log)
    assert log["runs"][0]["automationDetails"] == {"id": "training"}


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
    uses = [step.get("uses", "") for step in action["runs"]["steps"]]
    assert any(u.startswith("github/codeql-action/upload-sarif@") for u in uses)
    workflow = yaml.safe_load((REPO / "docs" / "github-code-scanning.yml").read_text())
    assert workflow["permissions"]["security-events"] == "write"


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
