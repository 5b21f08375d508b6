"""The rule catalogue: registration by definition, docs, and the generated docs files."""

from __future__ import annotations

import re

import pytest

from conftest import REPO
from ddplint.docs import rules_index, rules_reference
from ddplint.model import Severity
from ddplint.rule import REQUIRED_SECTIONS, Rule, RuleDefinitionError, all_rules


def test_codes_and_names_are_unique() -> None:
    rules = all_rules()
    assert len({r.code for r in rules}) == len(rules)
    assert len({r.name for r in rules}) == len(rules)


def test_every_rule_module_is_named_after_its_code() -> None:
    for rule in all_rules():
        module = rule.__module__.rsplit(".", 1)[1]
        assert module == f"{rule.code.lower()}_{rule.name.replace('-', '_')}", module


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rule_is_documented(rule) -> None:
    for section in REQUIRED_SECTIONS:
        assert rule.docs.sections[section].strip()
    assert "```python" in rule.docs.sections["Example"]
    assert "```python" in rule.docs.sections["Use instead"]
    assert rule.summary.endswith(".") and len(rule.summary) <= 120


def test_a_duplicate_code_is_refused() -> None:
    with pytest.raises(RuleDefinitionError, match="already used"):

        class Duplicate(Rule):
            """
            ## What it does
            x
            ## Why is this bad?
            x
            ## Example
            x
            ## Use instead
            x
            """

            code = "DDP014"
            name = "duplicate"
            severity = Severity.NOTE
            summary = "A duplicate."


def test_missing_docs_are_refused() -> None:
    with pytest.raises(RuleDefinitionError, match="missing"):

        class Undocumented(Rule):
            """Only a line."""

            code = "DDP998"
            name = "undocumented"
            severity = Severity.NOTE
            summary = "No sections."


def test_rules_installed_as_a_subpackage() -> None:
    import ddplint.rules

    assert ddplint.rules.__name__ == "ddplint.rules"
    assert all(r.__module__.startswith("ddplint.rules.") for r in all_rules())


def test_docs_rules_md_is_up_to_date() -> None:
    assert (REPO / "docs" / "rules.md").read_text(encoding="utf-8") == rules_reference(), (
        "regenerate with: python -m ddplint.docs > docs/rules.md"
    )


def test_readme_rule_table_is_up_to_date() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = re.search(r"<!-- rules-table:start -->\n(.*?)<!-- rules-table:end -->", readme, re.S).group(1)
    assert table == rules_index("docs/rules.md"), "update the README's table from ddplint.docs.rules_index"


def test_readme_quick_start_has_exactly_two_commands() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    block = re.search(r"## Quick start\n\n```sh\n(.*?)```", readme, re.S).group(1)
    commands = [line for line in block.splitlines() if line.strip()]
    assert len(commands) == 2
    assert "ddplint examples/" in commands[0] and "pytest" in commands[1]
    assert "torch==2.13.0" in commands[1]


def test_runtime_checks_are_registered_and_documented() -> None:
    from ddplint.runtime.check import Status, all_checks

    checks = all_checks()
    assert [c.code for c in checks] == [f"RT00{i}" for i in range(1, 9)]
    assert [c.name for c in checks] == [
        "shm-capacity", "accelerator-availability", "process-group-handshake", "cpu-oversubscription",
        "pinned-memory-budget", "worker-memory-growth", "memory-plateau", "environment",
    ]  # fmt: skip
    assert {c.code for c in checks if not c.per_rank} == {"RT006", "RT007"}  # the probes: rank 0 only
    for check in checks:
        assert check.docs.sections["Why is this bad?"].strip() and check.summary.endswith(".")
    assert Status("fail") is Status.FAIL


def test_docs_runtime_checks_md_is_up_to_date() -> None:
    from ddplint.docs import checks_reference

    assert (REPO / "docs" / "runtime-checks.md").read_text(encoding="utf-8") == checks_reference(), (
        "regenerate with: python -m ddplint.docs runtime > docs/runtime-checks.md"
    )


def test_rule_command_shows_a_doctor_check(ddplint) -> None:
    run = ddplint("rule", "rt003")
    assert run.status == 0 and run.stdout.startswith("# RT003 process-group-handshake")
