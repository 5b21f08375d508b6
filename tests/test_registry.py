"""The rule catalogue: registration by definition, docs, and the generated docs files."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from conftest import REPO
from ddplint.docs import rules_index, rules_reference
from ddplint.model import Severity
from ddplint.rule import REQUIRED_SECTIONS, Rule, RuleDefinitionError, all_rules


def test_codes_and_names_are_unique() -> None:
    """Read from the rule modules' sources: the registry, keyed by code,
    could not hold a duplicate to find."""
    declared: dict[str, list[str]] = {}
    for path in sorted((REPO / "rules").glob("ddp*.py")):
        for match in re.finditer(r'^\s+code = "(DDP\d{3})"$', path.read_text(encoding="utf-8"), re.M):
            declared.setdefault(match.group(1), []).append(path.name)
    assert {code: files for code, files in declared.items() if len(files) > 1} == {}
    assert sorted(declared) == [r.code for r in all_rules()]
    names = [r.name for r in all_rules()]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("rule", all_rules(), ids=lambda r: r.code)
def test_every_rules_documented_example_triggers_it(rule) -> None:
    """The *Example* section's code, linted as a file with the default rules
    and this one, preview on: the rule reports it."""
    from ddplint.config import Settings
    from ddplint.config.selection import resolve
    from ddplint.engine import check_source

    if rule.code == "DDP000":
        pytest.skip("the example is a file that does not parse, shown as text")
    example = re.search(r"```python\n(.*?)```", rule.docs.sections["Example"], re.S).group(1)
    source = _EXAMPLE_PRELUDE + example
    settings = Settings(rules=resolve((), preview=True) | {rule.code}, preview=True)
    found = {f.rule for f in check_source("train.py", source, settings).findings}
    assert rule.code in found, f"{rule.code}'s example is not reported (found {sorted(found)})"


#: What an example assumes is in scope: the usual imports of a training script.
_EXAMPLE_PRELUDE = (
    "import json\nimport os\nimport random\nimport numpy as np\nimport torch\nimport torch.nn as nn\n"
    "import torch.nn.functional as F\nimport torch.distributed as dist\nimport torch.multiprocessing as mp\n"
    "import torch.backends.cudnn as cudnn\nimport torchvision\nfrom torch.utils.data import DataLoader, Dataset\n"
    "from torch.utils.data.distributed import DistributedSampler\n"
    "from torch.nn.parallel import DistributedDataParallel as DDP\n"
    "from torch.distributed.fsdp import FullyShardedDataParallel as FSDP\n"
    "from transformers import AutoTokenizer\nfrom PIL import Image\n"
)


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


def test_an_unknown_required_analysis_is_refused_when_the_class_is_defined() -> None:
    """A typo in `requires` would otherwise raise for every file the rule
    applies to, and lose the other rules' findings there."""
    with pytest.raises(RuleDefinitionError, match="requires unknown analyses"):

        class Typo(Rule):
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

            code = "DDP997"
            name = "typo"
            severity = Severity.NOTE
            summary = "A typo."
            requires = frozenset({"rnak"})


@pytest.mark.parametrize(
    ("tokens", "pattern", "why"),
    [(None, r"\.step\(", "needs context_tokens"), (("step",), r"step(", "not a regular expression")],
)
def test_a_context_pattern_must_come_with_its_tokens_and_compile(tokens, pattern, why) -> None:
    """The pattern refines the context tokens (tried first, they keep it
    cheap); one that does not compile would fail on every file."""
    with pytest.raises(RuleDefinitionError, match=why):

        class Refined(Rule):
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

            code = "DDP996"
            name = "refined"
            severity = Severity.NOTE
            summary = "Refined."
            context_tokens = tokens
            context_pattern = pattern


def test_known_analyses_are_the_models() -> None:
    from ddplint.analysis.semantic import OPTIONAL_ANALYSES
    from ddplint.rule import KNOWN_ANALYSES

    assert KNOWN_ANALYSES == set(OPTIONAL_ANALYSES)


def test_the_rule_contract_loads_no_analysis() -> None:
    """`ddplint rule` and `ddplint doctor` import the contract: it must not load
    LibCST or the analyses (the doctor measures its own memory)."""
    import subprocess
    import sys

    code = "import sys, ddplint.rule; print(sorted(m for m in sys.modules if m.startswith(('libcst', 'ddplint.analysis'))))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


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
        "regenerate with: python -m ddplint.docs --write"
    )


def test_readme_rule_table_is_up_to_date() -> None:
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    table = re.search(r"<!-- rules-table:start -->\n(.*?)<!-- rules-table:end -->", readme, re.S).group(1)
    assert table == rules_index("docs/rules.md"), "regenerate with: python -m ddplint.docs --write"


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
        "regenerate with: python -m ddplint.docs --write"
    )


def test_rule_command_shows_a_doctor_check(ddplint) -> None:
    run = ddplint("rule", "rt003")
    assert run.status == 0 and run.stdout.startswith("# RT003 process-group-handshake")


def test_one_command_regenerates_the_documents(tmp_path: Path) -> None:
    from ddplint.docs import write_all

    (tmp_path / "docs").mkdir()
    readme = (REPO / "README.md").read_text(encoding="utf-8")
    stale = re.sub(r"(<!-- rules-table:start -->\n).*?(<!-- rules-table:end -->)", r"\1| stale |\n\2", readme, flags=re.S)
    (tmp_path / "README.md").write_text(stale, encoding="utf-8")
    changed = write_all(tmp_path)
    assert sorted(p.name for p in changed) == ["README.md", "rules.md", "runtime-checks.md"]
    assert (tmp_path / "README.md").read_text(encoding="utf-8") == readme
    assert (tmp_path / "docs" / "rules.md").read_text(encoding="utf-8") == (REPO / "docs" / "rules.md").read_text(encoding="utf-8")
    assert write_all(tmp_path) == []
