"""Deferred checks: a rule's ``check_<Node>(node, site)`` runs after the walk,
with the walk's position restored (ddplint/engine/deferred.py)."""

from __future__ import annotations

from typing import Iterator

import pytest

from ddplint.analysis.guards import Runs
from ddplint.config.settings import Settings
from ddplint.engine import _rules_by_code, _visitor_rules, check_source
from ddplint.lazy import cst
from ddplint.model import Severity
from ddplint.rule import _REGISTRY, Rule

CODE = "DDP988"
SEEN: list[tuple[str, str, Runs, str | None]] = []


@pytest.fixture
def probe() -> Iterator[type[Rule]]:
    class SaveProbe(Rule):
        """
        ## What it does

        Test probe: reports `torch.save` calls run on every rank.

        ## Why is this bad?

        It is a test.

        ## Example

        ```python
        torch.save(x, "a.pt")
        ```

        ## Use instead

        ```python
        pass
        ```
        """

        code = CODE
        name = "save-probe"
        severity = Severity.WARNING
        summary = "A test probe."
        requires = frozenset({"rank"})

        def trigger_Call(self, node: cst.Call) -> bool:
            return self.ctx.qualified_name(node.func) is not None

        def check_Call(self, node: cst.Call, site) -> None:
            name = self.ctx.qualified_name(node.func)
            runs = self.ctx.rank.runs(site)
            function = self.ctx.enclosing_function()
            SEEN.append((self.ctx.module.code_for_node(node), str(name), runs, function.name.value if function else None))
            if name == "x.boom":
                raise RuntimeError("check failed")
            if name == "torch.save" and runs is Runs.ALL:
                self.report(node, "every rank saves")

    SEEN.clear()
    _rules_by_code.cache_clear()  # the engine's view of the registry: now with the probe
    _visitor_rules.cache_clear()
    try:
        yield SaveProbe
    finally:
        _REGISTRY.pop(CODE, None)
        _rules_by_code.cache_clear()
        _visitor_rules.cache_clear()


def lint(source: str):
    return check_source("train.py", source, Settings(rules=frozenset({CODE})), prefilter=False)


def test_who_runs_is_final_when_the_check_runs(probe) -> None:
    # During the walk `save()` has no caller yet; after it, main() calls it on every rank.
    source = (
        "import torch\nimport torch.distributed as dist\n\n"
        "def save(model):\n    torch.save(model, 'm.pt')\n\n"
        "def main(model):\n    dist.init_process_group('nccl')\n    save(model)\n\n"
        "main(None)\n"
    )
    result = lint(source)
    assert [(f.rule, f.span.line) for f in result.findings] == [(CODE, 5)]
    assert ("torch.save(model, 'm.pt')", "torch.save", Runs.ALL, "save") in SEEN


def test_names_resolve_as_they_did_at_the_node(probe) -> None:
    # `save` is rebound after the call: the check still sees torch.save.
    source = "import torch\n\nsave = torch.save\nsave({}, 'a.pt')\nsave = print\nsave('b')\n"
    result = lint(source)
    assert [f.span.line for f in result.findings] == [4]
    assert [(shown, name) for shown, name, _, _ in SEEN] == [("save({}, 'a.pt')", "torch.save"), ("save('b')", "builtins.print")]


def test_a_finding_is_anchored_at_its_statement_for_noqa(probe) -> None:
    source = "import torch\n\ntorch.save(\n    {},\n    'a.pt',\n)  # noqa: DDP988\ntorch.save({}, 'b.pt')\n"
    findings = [(f.span.line, f.suppressed is not None) for f in lint(source).findings]
    assert findings == [(3, True), (7, False)]


def test_the_trigger_chooses_the_nodes(probe) -> None:
    lint("import torch\n\n(lambda: 1)()\ntorch.save({}, 'a.pt')\n")
    assert [shown for shown, *_ in SEEN] == ["torch.save({}, 'a.pt')"]


def test_a_failing_check_switches_its_rule_off(probe) -> None:
    source = "import torch\nfrom x import boom\n\nboom()\ntorch.save({}, 'a.pt')\n"
    result = lint(source)
    assert result.findings == ()
    assert len(result.notices) == 1 and "DDP988" in result.notices[0].message
    assert [name for _, name, _, _ in SEEN] == ["x.boom"]


def test_a_check_without_the_rank_analysis_gets_a_plain_site() -> None:
    class Plain(Rule):
        """
        ## What it does

        Test probe.

        ## Why is this bad?

        It is a test.

        ## Example

        ```python
        f()
        ```

        ## Use instead

        ```python
        pass
        ```
        """

        code = "DDP987"
        name = "plain-probe"
        severity = Severity.NOTE
        summary = "A test probe."

        def check_Call(self, node: cst.Call, site) -> None:
            assert not self.ctx.runs("rank") and site.guards == ()
            function = site.function.name.value if site.function is not None else None
            self.report(node, f"in {function}")

    _rules_by_code.cache_clear()
    _visitor_rules.cache_clear()
    try:
        result = check_source("f.py", "def g():\n    if x:\n        f()\n", Settings(rules=frozenset({"DDP987"})))
        assert [(f.span.line, f.message) for f in result.findings] == [(3, "in g")] and not result.notices
    finally:
        _REGISTRY.pop("DDP987", None)
        _rules_by_code.cache_clear()
        _visitor_rules.cache_clear()
