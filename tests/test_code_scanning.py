"""SARIF that GitHub code scanning accepts, for both halves: `ddplint check`
and `ddplint doctor`, judged by GitHub's documented constraints
(tests/github_sarif.py), not only by the schema."""

from __future__ import annotations

import copy
from pathlib import Path

import pytest

from conftest import assert_valid_sarif, git_repository, run_script, write
from github_sarif import assert_code_scanning_accepts, code_scanning_problems, message_links

SAMPLER = (
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "loader = DataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"
)
GUARDED_BARRIER = (
    "import torch\nimport torch.distributed as dist\n\n"
    "def save(model):\n    if dist.get_rank() == 0:\n        torch.save(model.state_dict(), 'c.pt')\n"
    "        dist.barrier()\n"
)


@pytest.fixture(autouse=True)
def _outside_github_actions(monkeypatch) -> None:
    """Results are shown at the running workflow under Actions: not here."""
    monkeypatch.delenv("GITHUB_WORKFLOW_REF", raising=False)


def results_of(log: dict) -> list[dict]:
    return log["runs"][0]["results"]


# ------------------------------------------------------------------ the checker itself


def test_the_checker_rejects_what_code_scanning_rejects(ddplint, tmp_path) -> None:
    """Each documented constraint the checker knows is one that a real log can break."""
    write(git_repository(tmp_path), {"train.py": SAMPLER})
    log = ddplint("train.py", "--format", "sarif", "--sarif-category", "training", cwd=tmp_path).json()
    assert code_scanning_problems(log) == []
    broken = copy.deepcopy(log)
    run = broken["runs"][0]
    run["automationDetails"]["id"] = "training"
    del run["results"][0]["locations"]
    run["results"][0]["message"]["text"] = "no links"
    run["results"][0]["ruleId"] = "DDP999"
    run["tool"]["driver"]["rules"][0]["properties"]["precision"] = "certain"
    problems = "\n".join(code_scanning_problems(broken))
    for expected in ("no location", "not linked from the message", "no rule of the driver",
                     "empty category", "precision 'certain'"):  # fmt: skip
        assert expected in problems, problems


def test_message_links_respect_escapes() -> None:
    assert message_links("see [the guard](1) and [a \\[b\\]](2)") == [("the guard", 1), ("a \\[b\\]", 2)]
    assert message_links("x\\[0\\](1)") == []


# ------------------------------------------------------------------ ddplint check


def test_related_locations_are_linked_from_the_message(ddplint, tmp_path, sarif_validator) -> None:
    write(git_repository(tmp_path), {"loader.py": SAMPLER, "save.py": GUARDED_BARRIER})
    log = ddplint(".", "--format", "sarif", "--exit-zero", cwd=tmp_path).json()
    assert_valid_sarif(sarif_validator, log)
    assert_code_scanning_accepts(log)
    by_rule = {r["ruleId"]: r for r in results_of(log)}
    assert by_rule["DDP014"]["message"]["text"].endswith("(see [`shuffle` is truthy here](1) and [the sampler](2))")
    assert [loc["id"] for loc in by_rule["DDP014"]["relatedLocations"]] == [1, 2]
    ddp001 = by_rule["DDP001"]
    assert ddp001["message"]["text"].endswith("(see [the rank-dependent condition](1))")
    assert ddp001["relatedLocations"][0]["physicalLocation"]["region"]["startLine"] == 5


def test_brackets_in_a_message_are_escaped_not_links(tmp_path) -> None:
    from ddplint.model import Finding, Related, Severity, Span
    from ddplint.report import Report
    from ddplint.reporters import RenderOptions
    from ddplint.reporters.sarif import build_log

    finding = Finding(
        "DDP001", "collective-in-rank-branch", Severity.ERROR, "`stop = [x](1)` then broadcast",
        "train.py", Span(2, 1, 2, 5), related=(Related("train.py", Span(1, 1, 1, 2), "the [guard]"),),
    )  # fmt: skip
    log = build_log(Report(findings=[finding], notices=[], files=1), RenderOptions(cwd=tmp_path))
    text = results_of(log)[0]["message"]["text"]
    assert text == "`stop = \\[x\\](1)` then broadcast (see [the \\[guard\\]](1))"
    assert message_links(text) == [("the \\[guard\\]", 1)]


@pytest.mark.parametrize(("category", "written"), [("training", "training/"), ("lint/training/", "lint/training/")])
def test_category_is_a_category_not_a_run_id(ddplint, tmp_path, category, written) -> None:
    write(git_repository(tmp_path), {"train.py": SAMPLER})
    log = ddplint("train.py", "--format", "sarif", "--sarif-category", category, cwd=tmp_path).json()
    assert log["runs"][0]["automationDetails"] == {"id": written}


def test_precision_is_each_rules_measured_precision(ddplint, tmp_path) -> None:
    """docs/precision.md's mapping: >= 0.95 very-high, >= 0.9 high, >= 0.75
    medium, below low; a rule the ecosystem check never measured: medium."""
    from ddplint.measured import precision

    write(git_repository(tmp_path), {"train.py": SAMPLER})
    rules = ddplint("train.py", "--format", "sarif", cwd=tmp_path).json()["runs"][0]["tool"]["driver"]["rules"]
    claimed = {rule["id"]: rule["properties"]["precision"] for rule in rules}

    def documented(value: float | None) -> str:
        if value is None:
            return "medium"
        return "very-high" if value >= 0.95 else "high" if value >= 0.9 else "medium" if value >= 0.75 else "low"

    assert claimed == {code: documented(precision(code)) for code in claimed}
    # The measurement spans the scale: measured rules at the top and at the bottom, and unmeasured ones.
    assert {"very-high", "low", "medium"} <= set(claimed.values())
    assert any(precision(code) is None for code in claimed)


# ------------------------------------------------------------------ ddplint doctor

DOCTOR = ("doctor", "--nproc-per-node", "1", "--only", "RT001", "--shm-gib", "100000", "--format", "sarif")


def doctor_sarif(ddplint, cwd: Path, *args: str) -> dict:
    run = ddplint(*DOCTOR, *args, cwd=cwd)
    assert run.status == 1, run.stderr  # the impossible /dev/shm requirement fails
    return run.json()


def location_of(result: dict) -> tuple[str, int]:
    (location,) = result["locations"]
    physical = location["physicalLocation"]
    return physical["artifactLocation"]["uri"], physical["region"]["startLine"]


def test_doctor_results_have_a_location_code_scanning_accepts(ddplint, tmp_path, sarif_validator) -> None:
    root = write(git_repository(tmp_path), {"pyproject.toml": "[project]\nname = 'x'\n"})
    log = doctor_sarif(ddplint, root, "--sarif-category", "preflight")
    assert_valid_sarif(sarif_validator, log)
    assert_code_scanning_accepts(log)
    (shm,) = [r for r in results_of(log) if r["ruleId"] == "RT001"]
    assert location_of(shm) == ("pyproject.toml", 1)
    assert shm["properties"]["required_bytes"] == 100000 * 2**30  # the measured values stay
    assert log["runs"][0]["automationDetails"] == {"id": "preflight/"}


def test_doctor_sarif_location_option(ddplint, tmp_path) -> None:
    root = write(git_repository(tmp_path), {"pyproject.toml": "", "jobs/launch.sh": "torchrun train.py\n"})
    (root / "jobs" / "sub").mkdir()
    log = doctor_sarif(ddplint, root / "jobs" / "sub", "--sarif-location", "../launch.sh")
    assert {location_of(r) for r in results_of(log)} == {("jobs/launch.sh", 1)}
    assert_code_scanning_accepts(log)


def test_doctor_shows_results_at_the_workflow_that_ran_it(ddplint, tmp_path, monkeypatch) -> None:
    root = write(git_repository(tmp_path), {"pyproject.toml": "", ".github/workflows/gpu.yml": "on: push\n"})
    monkeypatch.setenv("GITHUB_WORKFLOW_REF", "org/repo/.github/workflows/gpu.yml@refs/heads/main")
    log = doctor_sarif(ddplint, root)
    assert {location_of(r) for r in results_of(log)} == {(".github/workflows/gpu.yml", 1)}


def test_doctor_shows_results_at_the_probed_module(ddplint, tmp_path) -> None:
    root = write(git_repository(tmp_path), {"pyproject.toml": "", "mypkg/__init__.py": "", "mypkg/train.py": ""})
    log = doctor_sarif(ddplint, root, "--step", "mypkg.train:make_step")
    assert {location_of(r) for r in results_of(log)} == {("mypkg/train.py", 1)}


def test_doctor_sarif_location_must_exist(ddplint, tmp_path) -> None:
    run = ddplint(*DOCTOR, "--sarif-location", "nope.sh", cwd=tmp_path)
    assert run.status == 2 and "--sarif-location: no such file: nope.sh" in run.stderr


def test_doctor_never_points_at_a_file_that_is_not_there(tmp_path) -> None:
    """No project file, no probe module, no --sarif-location: the results have
    no location (not a made-up pyproject.toml), and stderr says what to pass."""
    root = git_repository(tmp_path / "repo")
    run = run_script(*DOCTOR, cwd=root, env={"GITHUB_WORKFLOW_REF": ""})
    assert run.status == 1, run.stderr
    (shm,) = [r for r in results_of(run.json()) if r["ruleId"] == "RT001"]
    assert "locations" not in shm
    assert "pass --sarif-location FILE" in run.stderr
    # A config in the working directory (a subdirectory of the repository) is where they go.
    write(root, {"jobs/ddplint.toml": "[ddplint]\n"})
    run = run_script(*DOCTOR, cwd=root / "jobs", env={"GITHUB_WORKFLOW_REF": ""})
    log = run.json()
    assert {location_of(r) for r in results_of(log)} == {("jobs/ddplint.toml", 1)}
    assert (root / "jobs" / "ddplint.toml").is_file() and "--sarif-location" not in run.stderr
    assert_code_scanning_accepts(log)


def test_sarif_uris_are_relative_to_the_git_top_level_from_a_subdirectory(tmp_path, sarif_validator) -> None:
    """Run from a subdirectory of the repository, as the installed script:
    URIs stay relative to the top-level under %SRCROOT%; outside git they are
    relative to the working directory."""
    root = write(git_repository(tmp_path / "repo"), {"src/pkg/train.py": SAMPLER})
    log = run_script("check", "--no-cache", "train.py", "--format", "sarif", cwd=root / "src" / "pkg").json()
    assert_valid_sarif(sarif_validator, log)
    assert_code_scanning_accepts(log)
    run = log["runs"][0]
    locations = [r["locations"][0]["physicalLocation"]["artifactLocation"] for r in run["results"]]
    assert locations and all(loc == {"uri": "src/pkg/train.py", "uriBaseId": "%SRCROOT%"} for loc in locations)
    assert "%SRCROOT%" in run["originalUriBaseIds"]
    assert "uri" not in run["originalUriBaseIds"]["%SRCROOT%"]  # no path of this machine
    # Paths given from another subdirectory name the same artifact.
    again = run_script("check", "--no-cache", "../src/pkg/train.py", "--format", "sarif", cwd=write(root, {"docs/x": ""}) / "docs")
    assert {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in again.json()["runs"][0]["results"]} == {
        "src/pkg/train.py"
    }
    outside = write(tmp_path / "plain", {"sub/train.py": SAMPLER})
    log = run_script("check", "--no-cache", "sub/train.py", "--format", "sarif", cwd=outside).json()
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {"sub/train.py"}
