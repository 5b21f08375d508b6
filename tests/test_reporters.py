"""Output formats: SARIF (against the official schema), JSON, GitHub, text."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from conftest import REPO, assert_valid_sarif, write
from ddplint.rule import all_rules

BAD = (
    "import torch\nfrom torch.utils.data import DataLoader, DistributedSampler\n\n"
    "loader = DataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"
    "scaler = torch.cuda.amp.GradScaler()\n"
    "quiet = DataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)  # noqa: DDP014\n"
)


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    (tmp_path / ".git").mkdir()
    return write(tmp_path, {"src/train.py": BAD, "src/broken.py": "def f(:\n", "src/ok.py": "x = 1\n"})


def sarif(ddplint, cwd: Path, *args: str) -> dict:
    run = ddplint(*args, "--format", "sarif", cwd=cwd)
    assert run.status in (0, 1), run.stderr
    return run.json()


# ------------------------------------------------------------------ SARIF


def test_sarif_validates_against_the_official_schema(ddplint, repo, sarif_validator) -> None:
    assert_valid_sarif(sarif_validator, sarif(ddplint, repo, "src"))


def test_sarif_of_the_examples_and_fixtures_validates(ddplint, sarif_validator) -> None:
    for target in ("examples", "fixtures"):
        assert_valid_sarif(sarif_validator, sarif(ddplint, REPO, target))


def test_sarif_driver_lists_every_rule_with_docs(ddplint, repo) -> None:
    run = sarif(ddplint, repo, "src")["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "ddplint" and driver["semanticVersion"] and driver["informationUri"]
    rules = driver["rules"]
    assert [r["id"] for r in rules] == [r.code for r in all_rules()]
    for descriptor, rule in zip(rules, all_rules()):
        assert descriptor["name"] == rule.name
        assert descriptor["shortDescription"]["text"] == rule.summary
        assert descriptor["fullDescription"]["text"]
        assert "## Why is this bad?" in descriptor["help"]["markdown"]
        assert descriptor["help"]["text"]
        assert descriptor["defaultConfiguration"]["level"] == rule.severity.value
        assert descriptor["helpUri"].endswith(f"docs/rules.md#{rule.code.lower()}-{rule.name}")


def test_sarif_results(ddplint, repo) -> None:
    log = sarif(ddplint, repo, "src")
    assert log["$schema"].endswith("sarif-schema-2.1.0.json") and log["version"] == "2.1.0"
    run = log["runs"][0]
    rules = [r["id"] for r in run["tool"]["driver"]["rules"]]
    results = run["results"]
    by_rule = {}
    for result in results:
        assert result["level"] in ("error", "warning", "note")
        assert rules[result["ruleIndex"]] == result["ruleId"]
        location = result["locations"][0]["physicalLocation"]
        assert location["artifactLocation"]["uriBaseId"] == "%SRCROOT%"
        assert not location["artifactLocation"]["uri"].startswith(("/", "file:"))
        region = location["region"]
        assert {"startLine", "startColumn", "endLine", "endColumn"} <= region.keys()
        assert len(result["partialFingerprints"]["ddplint/v1"]) == 32
        by_rule.setdefault(result["ruleId"], []).append(result)
    assert by_rule["DDP000"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/broken.py"
    ddp014 = by_rule["DDP014"]
    assert [r["locations"][0]["physicalLocation"]["region"]["startLine"] for r in ddp014] == [4, 6]
    assert "suppressions" not in ddp014[0]
    assert ddp014[1]["suppressions"] == [{"kind": "inSource", "justification": "# noqa: DDP014"}]
    assert ddp014[0]["relatedLocations"][0]["message"]["text"]
    assert by_rule["DDP012"][0]["level"] == "note"
    assert run["originalUriBaseIds"]["%SRCROOT%"]
    assert run["invocations"][0]["executionSuccessful"] is True
    assert run["columnKind"] == "unicodeCodePoints"


def test_sarif_has_no_absolute_paths(ddplint, repo) -> None:
    text = json.dumps(sarif(ddplint, repo, "src"))
    assert str(repo) not in text


def test_sarif_uris_are_relative_to_the_repository_root(ddplint, repo) -> None:
    run = sarif(ddplint, repo / "src", "train.py")["runs"][0]
    assert run["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/train.py"


def test_sarif_fingerprints_survive_edits_above(ddplint, repo) -> None:
    def prints() -> list[tuple[str, str]]:
        results = sarif(ddplint, repo, "src/train.py")["runs"][0]["results"]
        return [(r["ruleId"], r["partialFingerprints"]["ddplint/v1"]) for r in results]

    before = prints()
    (repo / "src/train.py").write_text("# a comment\n" * 10 + BAD)
    assert prints() == before
    assert len({p for _, p in before}) == len(before)


def test_sarif_notifications_for_unreadable_files(ddplint, repo, sarif_validator) -> None:
    (repo / "src/gone.py").symlink_to(repo / "src/nowhere.py")
    log = sarif(ddplint, repo, "src")
    assert_valid_sarif(sarif_validator, log)
    notes = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert notes[0]["level"] == "error" and "broken symlink" in notes[0]["message"]["text"]
    assert notes[0]["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "src/gone.py"


def test_sarif_of_a_clean_run_validates(ddplint, tmp_path, sarif_validator) -> None:
    write(tmp_path, {"a.py": "x = 1\n"})
    log = sarif(ddplint, tmp_path, ".")
    assert_valid_sarif(sarif_validator, log)
    assert log["runs"][0]["results"] == []


# ------------------------------------------------------------------ JSON


def test_json_matches_the_documented_schema(ddplint, repo) -> None:
    schema = json.loads((REPO / "docs" / "json-output.schema.json").read_text())
    findings = ddplint("src", "--format", "json", cwd=repo).json()
    jsonschema.validate(findings, schema)
    assert [f["rule"] for f in findings] == ["DDP000", "DDP014", "DDP012"]
    first = findings[1]
    assert first["path"] == "src/train.py" and (first["line"], first["column"]) == (4, 10)
    assert first["name"] == "sampler-shuffle-conflict" and first["severity"] == "error"
    assert first["related"]
    assert first["fix"]["applicability"] == "safe" and first["fix"]["title"].startswith("Remove `shuffle=`")
    (edit,) = first["fix"]["edits"]
    assert (edit["line"], edit["end_line"], edit["content"]) == (4, 4, "")


def test_json_records_what_could_not_be_linted_as_sarif_does(tmp_path) -> None:
    """A broken symlink: SARIF's tool execution notification, and in JSON a
    notification item after the findings (the console script, both formats)."""
    from conftest import run_script

    write(tmp_path, {"src/train.py": BAD})
    (tmp_path / "src" / "gone.py").symlink_to("missing.py")
    schema = json.loads((REPO / "docs" / "json-output.schema.json").read_text())
    run = run_script("check", "--no-cache", "src", "--format", "json", cwd=tmp_path)
    assert run.status == 1
    items = run.json()
    jsonschema.validate(items, schema)
    findings = [i for i in items if "rule" in i]
    (note,) = [i for i in items if i.get("kind") == "notification"]
    assert items[-1] is note and findings and all(f["path"] == "src/train.py" for f in findings)
    assert note["path"] == "src/gone.py" and note["level"] == "error" and note["internal"] is False
    assert "broken symlink" in note["message"]
    log = run_script("check", "--no-cache", "src", "--format", "sarif", cwd=tmp_path).json()
    (sarif_note,) = log["runs"][0]["invocations"][0]["toolExecutionNotifications"]
    assert sarif_note["message"]["text"] == note["message"] and sarif_note["level"] == note["level"]
    assert sarif_note["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == note["path"]
    # A notification is not a finding to the schema, nor a finding a notification.
    for broken in ({**note, "rule": "DDP001"}, {**findings[0], "kind": "notification"}, {**note, "level": "fatal"}):
        with pytest.raises(jsonschema.ValidationError):
            jsonschema.validate([broken], schema)


# ------------------------------------------------------------------ GitHub


def test_github_annotations(ddplint, repo) -> None:
    lines = ddplint("src", "--format", "github", cwd=repo).stdout.splitlines()
    assert lines[1].startswith(
        "::error file=src/train.py,line=4,col=10,endLine=4,endColumn=70,"
        "title=DDP014 sampler-shuffle-conflict::`DataLoader` gets"
    )
    assert lines[2].startswith("::notice file=src/train.py,line=5,")
    assert len(lines) == 3  # the suppressed finding is not annotated


def test_github_escapes_properties_and_data() -> None:
    from ddplint.model import Finding, Severity, Span
    from ddplint.reporters.github import annotation

    finding = Finding("DDP014", "x", Severity.WARNING, "50% done\nnext", "a,b:c.py", Span(1, 1, 1, 2))
    assert annotation(finding) == (
        "::warning file=a%2Cb%3Ac.py,line=1,col=1,endLine=1,endColumn=2,title=DDP014 x::50%25 done%0Anext"
    )


def test_sarif_ddp001_carries_the_guard(ddplint, tmp_path, sarif_validator) -> None:
    write(
        tmp_path,
        {
            "train.py": (
                "import torch\nimport torch.distributed as dist\n\n"
                "def save(model):\n    if dist.get_rank() == 0:\n        torch.save(model.state_dict(), 'c.pt')\n"
                "        dist.barrier()\n"
            )
        },
    )
    log = sarif(ddplint, tmp_path, ".")
    assert_valid_sarif(sarif_validator, log)
    (result,) = log["runs"][0]["results"]
    assert result["ruleId"] == "DDP001"
    assert "`dist.barrier()`" in result["message"]["text"]
    assert "`dist.get_rank() == 0` (line 5)" in result["message"]["text"]
    related = result["relatedLocations"][0]
    assert related["physicalLocation"]["region"]["startLine"] == 5
    assert related["message"]["text"] == "the rank-dependent condition"
