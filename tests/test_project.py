"""Whole-project analysis: helpers, rank tests and datasets across modules."""

from __future__ import annotations

import dataclasses
import json
import re
import shutil
from collections import Counter
from pathlib import Path

import pytest

from conftest import FIXTURES, git_repository, write
from test_fixtures import compare, expectations, known_misses
from ddplint import runner
from ddplint.cache import Cache
from ddplint.config.resolver import ConfigResolver
from ddplint.engine import check_bytes
from ddplint.project.role import ProjectRole
from ddplint.project.index import ModuleEntry, ProjectIndex
from ddplint.project.modules import module_names
from ddplint.project.summary import ModuleSummary
from ddplint.rule import all_rules
from ddplint.runner import lint_paths

PROJECTS = sorted(p for p in (FIXTURES / "projects").iterdir() if p.is_dir())
RULE_DIRS = [FIXTURES / rule.code for rule in all_rules()]


def findings(root: Path, project: bool = True, cache: Cache | None = None, jobs: int = 1) -> Counter:
    report = lint_paths([root], ConfigResolver(cwd=root), jobs=jobs, cache=cache, project=project)
    assert not report.notices, report.notices
    return Counter(
        (str(Path(f.path).resolve().relative_to(root.resolve())), f.span.line, f.rule)
        for f in report.findings
        if f.suppressed is None
    )


def lints(monkeypatch) -> list[str]:
    """The files linted from now on, one entry a lint (a first round that
    only reads a module's layout, for a lint once facts are known, is none)."""
    linted: list[str] = []
    real = runner._lint_task

    def lint(task):  # type: ignore[no-untyped-def]
        if not task.project.layout_only:
            linted.append(task.display)
        return real(task)

    monkeypatch.setattr(runner, "_lint_task", lint)
    return linted


def wrappers(lib: str) -> str:
    """A module wrapping each top-level function and class of `lib` (saved as
    `base.py`): the facts of its names reach a script only after their own
    round, a round after the script's first lint (which had `base`'s)."""
    names = re.findall(r"^(def|class) (\w+)", lib, re.M)
    imports = ", ".join(f"{name} as _{name}" for _, name in names)
    defined = "".join(
        f"\n\nclass {name}(_{name}):\n    pass\n" if kind == "class" else f"\n\ndef {name}():\n    return _{name}()\n"
        for kind, name in names
    )
    return f"from base import {imports}\n{defined}"


def annotated(root: Path, read=expectations) -> Counter:
    expected: Counter = Counter()
    for path in sorted(root.rglob("*.py")):
        for (line, code), count in read(path).items():
            expected[(str(path.relative_to(root)), line, code)] += count
    return expected


@pytest.mark.parametrize("root", PROJECTS, ids=lambda p: p.name)
def test_project_findings_match_annotations(root: Path) -> None:
    problem = compare(annotated(root), annotated(root, known_misses), findings(root))
    assert problem is None, problem


@pytest.mark.parametrize("root", PROJECTS, ids=lambda p: p.name)
def test_project_results_do_not_depend_on_jobs(root: Path, monkeypatch) -> None:
    monkeypatch.setattr(runner, "MIN_FILES_FOR_POOL", 1)
    assert findings(root, jobs=2) == findings(root, jobs=1)


@pytest.mark.parametrize("root", RULE_DIRS, ids=lambda p: p.name)
def test_no_finding_of_the_rule_fixtures_changes(root: Path) -> None:
    assert findings(root, project=True) == findings(root, project=False)


def test_the_cross_module_cases_need_the_project() -> None:
    """Module by module, the helpers are unknown: the findings that need them
    are missed and the false positives they remove come back."""
    root = FIXTURES / "projects" / "detr_style"
    local, project = findings(root, project=False), findings(root)
    assert ("main.py", 19, "DDP001") in project - local
    assert {("main.py", 15, "DDP007"), ("main.py", 20, "DDP006")} <= set(local - project)


def test_methods_of_imported_classes_and_named_rank_helpers_need_the_project(tmp_path) -> None:
    """A method reached through an instance of another module's class, and
    a rank test by a project helper of any name, are known from the other
    module only; a warm cache gives the same answers."""
    methods, helpers = FIXTURES / "projects" / "imported_methods", FIXTURES / "projects" / "body_entries"
    wanted = {
        methods: {("fit.py", 17, "DDP001"), ("tools/meters.py", 23, "DDP006"), ("loop.py", 24, "DDP001")},
        helpers: {("trainer/custom.py", 9, "DDP007"), ("trainer/host.py", 11, "DDP006")},
    }
    for root, found in wanted.items():
        local, project = findings(root, project=False), findings(root)
        assert found <= set(project - local)
        cache = Cache(tmp_path / root.name)
        assert findings(root, cache=cache) == project
        assert findings(root, cache=cache) == project


def test_an_entry_point_by_its_body_yields_to_callers_in_other_modules(tmp_path) -> None:
    """`export_all` tests the rank, so alone it runs on every rank; in the
    project `launch.py` calls it under a rank-0 test, and that caller wins,
    cold and from the cache; `fit_model`, which nobody calls, stays an entry."""
    root = FIXTURES / "projects" / "body_entries"
    local, project = findings(root, project=False), findings(root)
    assert ("trainer/export.py", 10, "DDP006") in local - project
    assert ("trainer/fit.py", 9, "DDP007") in local & project
    cache = Cache(tmp_path / "cache")
    assert findings(root, cache=cache) == project == findings(root, cache=cache)


def test_an_import_of_an_entry_point_alone_makes_its_callers_decide(tmp_path) -> None:
    """Imported by name (`from pkg.jobs import save_all`) the function has
    callers elsewhere; a package's own re-export of it does not count."""
    body = (
        "import torch\nimport torch.distributed as dist\n\n\n"
        "def save_all(net):\n    dist.barrier()\n    torch.save(net.state_dict(), 'w.pt')\n"
    )
    alone = write(tmp_path / "alone", {"pkg/__init__.py": "from .jobs import save_all\n", "pkg/jobs.py": body})
    assert ("pkg/jobs.py", 7, "DDP006") in findings(alone)
    used = write(tmp_path / "used", {
        "pkg/__init__.py": "from .jobs import save_all\n", "pkg/jobs.py": body,
        "main.py": "from pkg import save_all\n\nif __name__ == '__main__':\n    pass\n",
    })  # fmt: skip
    assert ("pkg/jobs.py", 7, "DDP006") not in findings(used)


def test_messages_name_the_helper_and_point_into_its_file(monkeypatch) -> None:
    root = FIXTURES / "projects" / "detr_style"
    monkeypatch.chdir(root)
    report = lint_paths([Path(".")], ConfigResolver(cwd=root), project=True)
    (finding,) = [f for f in report.findings if f.rule == "DDP001"]
    assert "`utils.reduce_dict()` from util/misc.py:35 (which calls `dist.all_reduce()`)" in finding.message
    assert any(r.path == "util/misc.py" and r.span.line == 35 for r in finding.related)


def test_sarif_related_location_is_in_the_helpers_file(ddplint, tmp_path) -> None:
    """The helper's file, relative to the repository root (a repository of
    the test's own: the suite also runs from a tarball), linked from the message."""
    from github_sarif import assert_code_scanning_accepts, message_links

    root = git_repository(tmp_path / "repo")
    shutil.copytree(FIXTURES / "projects" / "detr_style", root / "detr_style")
    run = ddplint(".", "--format", "sarif", "--no-cache", "--exit-zero", cwd=root / "detr_style")
    log = json.loads(run.stdout)
    assert_code_scanning_accepts(log)
    (result,) = [r for r in log["runs"][0]["results"] if r["ruleId"] == "DDP001"]
    uris = {loc["physicalLocation"]["artifactLocation"]["uri"] for loc in result["relatedLocations"]}
    assert "detr_style/util/misc.py" in uris, uris
    linked = {target for _, target in message_links(result["message"]["text"])}
    assert linked == {loc["id"] for loc in result["relatedLocations"]}


def test_no_project_flag(ddplint) -> None:
    root = FIXTURES / "projects" / "detr_style"
    on = ddplint(".", "--format", "json", "--no-cache", "--exit-zero", cwd=root).json()
    off = ddplint(".", "--format", "json", "--no-cache", "--exit-zero", "--no-project", cwd=root).json()
    assert {f["rule"] for f in on} == {"DDP001", "DDP006"}
    assert {f["rule"] for f in off} == {"DDP006", "DDP007"}


def test_editing_a_helper_relints_its_importers_only(tmp_path, monkeypatch) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURES / "projects" / "detr_style", root)
    write(root, {"other.py": "import torch\nprint(torch.ones(1))\n"})
    cache = Cache(tmp_path / "cache")
    assert ("main.py", 19, "DDP001") in findings(root, cache=cache)
    linted = lints(monkeypatch)
    findings(root, cache=cache)
    assert linted == []  # warm: nothing linted again
    misc = root / "util" / "misc.py"
    misc.write_text(misc.read_text().replace("dist.all_reduce(values)", "values = values.clone()"))
    after = findings(root, cache=cache)
    assert ("main.py", 19, "DDP001") not in after
    assert sorted({str(Path(d).relative_to(root)) for d in linted}) == ["main.py", "util/misc.py"]


def test_facts_about_names_a_module_never_uses_do_not_relint_it(tmp_path, monkeypatch) -> None:
    """A package ``__init__`` that star-imports a collective helper passes the
    fact on to `train.py` (through the index) without being linted again."""
    root = write(tmp_path / "proj", {
        "pkg/dist.py": "import torch.distributed as dist\n\n\ndef sync():\n    dist.barrier()\n",
        "pkg/__init__.py": "from .dist import *\n\n__version__ = '1.0'\n",
        "train.py": "import torch.distributed as dist\nfrom pkg import sync\n\nif dist.get_rank() == 0:\n    sync()\n",
    })  # fmt: skip
    linted = lints(monkeypatch)
    assert ("train.py", 5, "DDP001") in findings(root)
    counts = Counter(str(Path(d).relative_to(root)) for d in linted)
    assert counts == {"pkg/dist.py": 1, "pkg/__init__.py": 1, "train.py": 1}  # no module imports it: once, with facts


@pytest.mark.parametrize("jobs", [1, 2])
def test_a_script_no_module_imports_is_linted_once_with_the_facts_of_its_imports(tmp_path, monkeypatch, jobs) -> None:
    """Its first round reads only its imports; its one lint already knows
    that `sync` performs a collective. A script CPython rejects has its
    DDP000 from that first round, and no lint after it."""
    root = write(tmp_path / "proj", {
        "comm.py": "import torch.distributed as dist\n\n\ndef sync():\n    dist.barrier()\n",
        "train.py": "import torch.distributed as dist\nfrom comm import sync\n\nif dist.get_rank() == 0:\n    sync()\n",
        "broken.py": "from comm import sync\n\nif True\n    sync()\n",
        **{f"more{i}.py": "import comm\n" for i in range(8)},  # enough files for a pool at -j2
    })  # fmt: skip
    linted = lints(monkeypatch) if jobs == 1 else []  # a pool's workers run the function they were forked with
    found = findings(root, jobs=jobs)
    assert found == Counter({("train.py", 5, "DDP001"): 1, ("broken.py", 3, "DDP000"): 1})
    if jobs == 1:
        counts = Counter(str(Path(d).relative_to(root)) for d in linted)
        assert counts["train.py"] == 1 and counts["comm.py"] == 1 and counts["broken.py"] == 0


def test_a_script_reading_a_helper_as_a_module_attribute_is_linted_once_with_its_fact(tmp_path, monkeypatch) -> None:
    """`comm.sync` is read as an attribute of the imported module: the
    script's one lint has the fact (the index reads the attribute uses of a
    module whose first round read only its layout)."""
    root = write(tmp_path / "proj", {
        "comm.py": "import torch.distributed as dist\n\n\ndef sync():\n    dist.barrier()\n",
        "train.py": "import torch.distributed as dist\nimport comm\n\nif dist.get_rank() == 0:\n    comm.sync()\n",
    })  # fmt: skip
    linted = lints(monkeypatch)
    assert findings(root) == Counter({("train.py", 5, "DDP001"): 1})
    assert Counter(str(Path(d).relative_to(root)) for d in linted) == {"comm.py": 1, "train.py": 1}


def test_a_cached_lint_with_facts_is_reused_only_in_the_same_role(tmp_path) -> None:
    """Linted as a script (no module imports it), `train.py` keeps no facts of
    its own functions; once `main.py` imports it, the same bytes with the
    same facts are linted again for them (`step` calls a collective helper)."""
    root = write(tmp_path / "proj", {
        "comm.py": "import torch.distributed as dist\n\n\ndef sync():\n    dist.barrier()\n",
        "train.py": (
            "import torch.distributed as dist\nfrom comm import sync\n\n\ndef step():\n    sync()\n\n\n"
            "if dist.get_rank() == 0:\n    sync()\n"
        ),
    })  # fmt: skip
    cache = Cache(tmp_path / "cache")
    assert findings(root, cache=cache) == Counter({("train.py", 10, "DDP001"): 1})
    write(root, {"main.py": "import torch.distributed as dist\nfrom train import step\n\nif dist.get_rank() == 0:\n    step()\n"})
    assert findings(root, cache=cache) == findings(root) == Counter({("train.py", 10, "DDP001"): 1, ("main.py", 5, "DDP001"): 1})


@pytest.mark.parametrize("listed", [False, True])
def test_a_package_re_exporting_a_class_is_not_linted_again_for_facts_about_its_methods(tmp_path, monkeypatch, listed) -> None:
    """The facts of `Meter.sync` reach `train.py` through `pkg/__init__.py`,
    which only re-exports the class (its name occurs in the import, and in
    ``__all__``): nothing there calls the method, so its lint stands."""
    exports = "\n__all__ = ['Meter']\n" if listed else ""
    root = write(tmp_path / "proj", {
        "pkg/meters.py": "import torch.distributed as dist\n\n\nclass Meter:\n    def sync(self):\n        dist.barrier()\n",
        "pkg/__init__.py": f"from .meters import Meter\n{exports}",
        "train.py": "import torch.distributed as dist\nfrom pkg import Meter\n\nmeter = Meter()\nif dist.get_rank() == 0:\n    meter.sync()\n",
    })  # fmt: skip
    linted = lints(monkeypatch)
    assert findings(root) == Counter({("train.py", 6, "DDP001"): 1})
    counts = Counter(str(Path(d).relative_to(root)) for d in linted)
    assert counts == {"pkg/meters.py": 1, "pkg/__init__.py": 1, "train.py": 1}


@pytest.mark.parametrize(
    ("text", "needed"),
    [
        ("from .meters import Meter\n", False),
        ("from .meters import Meter\n\n__all__ = ['Meter']\n", False),
        ("from .meters import Meter\n\nDEFAULT = Meter()\n", True),  # an instance: its methods may be called
        ("from .meters import Meter as M\n\nM().sync()\n", True),
        ("from .meters import *\n", False),
        ("from .meters import *\n\nMeter().sync()\n", True),
        ("import pkg.meters\n", False),
        ("import pkg.meters\n\npkg.meters.Meter().sync()\n", True),
    ],
)
def test_facts_about_a_class_s_methods_matter_where_the_text_names_the_class(text, needed) -> None:
    """A module whose lint recorded nothing it consulted is linted again for
    facts about `Meter.sync` only where its text names what binds the class
    beyond importing it (and listing it in ``__all__``)."""
    from ddplint.engine import read_layout
    from ddplint.project.facts import Fact

    layout = read_layout(text, "pkg/__init__.py")
    assert not isinstance(layout, Exception) and layout[0].consulted is None
    key = "pkg.meters.Meter.sync" if "import pkg" in text else ".meters.Meter.sync"
    fact = Fact("pkg/meters.py", 5, collective=("`dist.barrier()`",))
    assert layout[0].needs({key: fact}, lambda: text) is needed


def test_a_collective_helper_relints_only_the_modules_that_call_it_under_a_rank_guard(tmp_path, monkeypatch) -> None:
    """Called on every rank, a collective helper hangs nobody; called under a
    rank test, directly or through a function of the caller, it does. (Both
    callers perform collectives of their own, so DDP001 runs on them at once.)"""
    root = write(tmp_path / "proj", {
        "comm.py": "import torch.distributed as dist\n\n\ndef sync():\n    dist.barrier()\n",
        "everyone.py": (
            "import torch.distributed as dist\nfrom comm import sync\n\n\ndef step(rank):\n    if rank == 0:\n"
            "        print('step')\n    sync()\n\n\nstep(dist.get_rank())\nsync()\ndist.barrier()\n"
        ),
        "chain.py": (
            "import torch.distributed as dist\nfrom comm import sync\n\n\ndef finish():\n    sync()\n\n\n"
            "if dist.get_rank() == 0:\n    finish()\ndist.barrier()\n"
        ),
        "main.py": "import chain\nimport everyone\n",  # imported, they are linted before the facts are known
    })  # fmt: skip
    linted = lints(monkeypatch)
    found = findings(root)
    assert [(path, line) for path, line, code in found if code == "DDP001"] == [("chain.py", 10)]
    counts = Counter(str(Path(d).relative_to(root)) for d in linted)
    assert counts == {"comm.py": 1, "everyone.py": 1, "chain.py": 2, "main.py": 1}


@pytest.mark.parametrize("guarded", [False, True])
def test_a_file_linted_with_facts_is_linted_again_only_for_facts_it_consulted(tmp_path, monkeypatch, guarded) -> None:
    """`helpers.flush` gets its fact a round after `comm.sync` (`helpers.py`
    holds no collective of its own: it is walked once facts reach it). By
    then `train.py` was linted with the fact about `sync`; the new fact about
    `flush` lints it again only where it calls `flush` under a rank test."""
    call = "if dist.get_rank() == 0:\n    flush()\n" if guarded else "flush()\n"
    root = write(tmp_path / "proj", {
        "comm.py": "import torch.distributed as dist\n\n\ndef sync():\n    dist.barrier()\n",
        "helpers.py": "from comm import sync\n\n\ndef flush():\n    sync()\n",
        "train.py": (
            "import torch.distributed as dist\n\nfrom comm import sync\nfrom helpers import flush\n\n"
            "dist.init_process_group('gloo')\nif dist.get_rank() == 0:\n    sync()\n" + call
        ),
    })  # fmt: skip
    linted = lints(monkeypatch)
    found = [(path, line) for path, line, code in findings(root) if code == "DDP001"]
    assert found == ([("train.py", 8), ("train.py", 10)] if guarded else [("train.py", 8)])
    counts = Counter(str(Path(d).relative_to(root)) for d in linted)
    assert counts == {"comm.py": 1, "helpers.py": 2, "train.py": 2 if guarded else 1}


def test_config_src_roots(tmp_path) -> None:
    root = write(
        tmp_path,
        {
            "ddplint.toml": 'src = ["lib"]\n',
            "lib/helpers.py": "import torch.distributed as dist\n\ndef sync():\n    dist.barrier()\n",
            "app/train.py": (
                "import torch.distributed as dist\nfrom helpers import sync\n\n"
                "dist.init_process_group('gloo')\nif dist.get_rank() == 0:\n    sync()\n"
            ),
        },
    )
    assert ("app/train.py", 6, "DDP001") in findings(root)


# ---------------------------------------------------------------- module names


def test_module_names_from_every_root(tmp_path) -> None:
    file = tmp_path / "src" / "pkg" / "util.py"
    names, is_package = module_names(file, [tmp_path, tmp_path / "src", file.parent])
    assert names == ("src.pkg.util", "pkg.util", "util") and not is_package
    names, is_package = module_names(tmp_path / "pkg" / "__init__.py", [tmp_path])
    assert names == ("pkg",) and is_package
    assert module_names(tmp_path / "my-scripts" / "x.py", [tmp_path])[0] == ()


def test_relative_names() -> None:
    module = ModuleEntry("a/b/c.py", ("a.b.c",), False, ModuleSummary())
    package = ModuleEntry("a/b/__init__.py", ("a.b",), True, ModuleSummary())
    assert ProjectIndex.absolute(".d.x", module) == "a.b.d.x"
    assert ProjectIndex.absolute("..x", module) == "a.x"
    assert ProjectIndex.absolute(".d", package) == "a.b.d"
    assert ProjectIndex.absolute("....x", module) is None
    assert ProjectIndex.absolute("abs.x", module) == "abs.x"


@pytest.mark.parametrize("tabs", [False, True])
def test_stdin_uses_the_project_on_disk(ddplint, tmp_path, tabs) -> None:
    """The buffer's imports are read from its outline, or (indented with
    tabs, which the outline does not measure) from its whole tree."""
    root = tmp_path / "proj"
    shutil.copytree(FIXTURES / "projects" / "detr_style", root)
    main = (root / "main.py").read_bytes()
    if tabs:
        main = re.sub(rb"(?m)^((?:    )+)", lambda m: b"\t" * (len(m.group(1)) // 4), main)
        assert b"\n\t" in main
    run = ddplint("-", "--stdin-filename", "main.py", "--format", "json", "--exit-zero", cwd=root, stdin=main)
    from_stdin = sorted((f["line"], f["rule"]) for f in run.json())
    on_disk = sorted((f["line"], f["rule"]) for f in ddplint(".", "--format", "json", "--exit-zero", cwd=root).json() if f["path"] == "main.py")
    assert from_stdin == on_disk == [(19, "DDP001"), (24, "DDP006")]


def test_stdin_knows_the_callers_of_an_entry_point_by_its_body(ddplint, tmp_path) -> None:
    root = tmp_path / "proj"
    shutil.copytree(FIXTURES / "projects" / "body_entries", root)
    for name, expected in (("trainer/export.py", []), ("trainer/fit.py", [(9, "DDP007")])):
        text = (root / name).read_bytes()
        run = ddplint("-", "--stdin-filename", name, "--format", "json", "--exit-zero", cwd=root, stdin=text)
        assert sorted((f["line"], f["rule"]) for f in run.json()) == expected


def test_messages_never_carry_an_absolute_path(tmp_path, monkeypatch) -> None:
    """Linted by absolute path from elsewhere, a helper in another file is
    named relative to its repository, not by the machine's absolute path."""
    root = tmp_path / "repo"
    shutil.copytree(FIXTURES / "projects" / "detr_style", root)
    (root / ".git").mkdir()
    monkeypatch.chdir(tmp_path)
    report = lint_paths([root.resolve()], ConfigResolver(cwd=tmp_path), project=True)
    (finding,) = [f for f in report.findings if f.rule == "DDP001"]
    assert "from util/misc.py:35" in finding.message
    assert str(tmp_path) not in finding.message


def test_a_relint_given_what_the_first_lint_read_answers_as_one_reading_the_file_again() -> None:
    """Re-lints take the file's imports and definitions from its first lint
    (`ProjectRole.layout`: no CPython tree read again): the same findings and
    summary as a re-lint that reads them itself, in every fixture project."""
    relinted = 0
    for root in PROJECTS:
        resolver = ConfigResolver(cwd=root)
        found = runner.discover([root], resolver)
        tasks = [runner._found_task(s, resolver, True, ProjectRole(summarize=True)) for s in found.files]
        _, _, last = runner._lint_project(tasks, [root], resolver, runner._workers(1), cache=None)
        for task in last:
            if task.project.layout is None:
                continue
            relinted += 1
            data = task.read()
            carried = check_bytes(task.display, data, task.settings, task.prefilter, task.project)
            again = dataclasses.replace(task.project, layout=None)
            assert carried == check_bytes(task.display, data, task.settings, task.prefilter, again), task.display
    assert relinted >= len(PROJECTS) // 2, relinted  # the facts of most projects re-lint a file


@pytest.mark.parametrize("shared", [False, True])
def test_callers_arriving_relint_a_library_only_where_a_rule_asked_who_runs_it(tmp_path, monkeypatch, shared) -> None:
    """`report` prints once and `save_own` writes the process's own file:
    DDP007 and DDP006 settle both without asking who runs them, so the
    script's calls (which make them per-rank code) lint `lib.py` only once;
    the same calls reach `save`, a shared write whose rule did ask."""
    lib = (
        "import torch\nimport torch.distributed as dist\n\n\ndef report(loss):\n    print('final loss', loss)\n\n\n"
        "def save_own(state):\n    torch.save(state, f'ckpt_{dist.get_rank()}.pt')\n"
    )
    train = "import torch.distributed as dist\nfrom lib import report, save_own\n\ndist.init_process_group('gloo')\nreport(1.0)\nsave_own({})\n"
    if shared:
        lib += "\n\ndef save(state):\n    torch.save(state, 'ckpt.pt')\n"
        train = train.replace("save_own\n", "save_own, save\n") + "save({})\n"
    root = write(tmp_path / "proj", {"lib.py": lib, "train.py": train})
    linted = lints(monkeypatch)
    found = [(path, line, code) for path, line, code in findings(root) if code in ("DDP006", "DDP007")]
    assert found == ([("lib.py", 14, "DDP006")] if shared else [])
    assert Counter(str(Path(d).relative_to(root)) for d in linted)["lib.py"] == (2 if shared else 1)


@pytest.mark.parametrize("helper", [None, "is_first", "sync"])
def test_facts_that_cannot_enable_a_rule_left_out_relint_only_where_consulted(tmp_path, monkeypatch, helper) -> None:
    """`train.py` tests the rank but holds no collective, so DDP001 is left
    out of its first lint: only a collective helper it uses can enable it.
    `AugData` is a Dataset that draws per sample (a fact no rule left out
    needs, about a name the script only tests against: not called, not
    derived from) and `is_first` a rank helper (the rank test is there
    already): with either it is linted once; `sync`, a collective helper it
    calls, lints it again."""
    lib = (
        "import random\nimport torch.distributed as dist\nfrom torch.utils.data import Dataset\n\n\n"
        "class AugData(Dataset):\n    def __len__(self):\n        return 10\n\n"
        "    def __getitem__(self, i):\n        return i + random.random()\n\n\n"
        "def is_first():\n    return dist.get_rank() == 0\n\n\ndef sync():\n    dist.barrier()\n"
    )
    train = (
        "import torch.distributed as dist\nfrom torch.utils.data import DataLoader\nfrom lib import AugData\n\n\n"
        "def report(loader):\n    if isinstance(loader.dataset, AugData) and dist.get_rank() == 0:\n        print('augmented')\n"
    )
    if helper:
        train = train.replace("AugData\n", f"AugData, {helper}\n") + f"\n\n{helper}()\n"
    root = write(tmp_path / "proj", {"base.py": lib, "lib.py": wrappers(lib), "train.py": train})
    linted = lints(monkeypatch)
    index = runner._lint_project
    projects: list = []
    monkeypatch.setattr(runner, "_lint_project", lambda *a, **k: projects.append(index(*a, **k)) or projects[-1])
    assert not [f for f in findings(root) if f[0] == "train.py"]
    symbols = next(e.summary.symbols for e in projects[0][1].entries if e.display.endswith("base.py"))
    assert symbols["AugData"].random and symbols["is_first"].rank and symbols["sync"].collective
    assert Counter(str(Path(d).relative_to(root)) for d in linted)["train.py"] == (2 if helper == "sync" else 1)


@pytest.mark.parametrize("helper", ["sync", "is_first"])
def test_a_rule_left_out_for_want_of_a_rank_test_is_enabled_by_a_rank_helper_alone(tmp_path, monkeypatch, helper) -> None:
    """`train.py` performs a collective but tests no rank in its text, so
    DDP001 is left out of its first lint: a collective helper cannot enable
    it, a rank helper does (and its re-lint finds the barrier it guards)."""
    lib = "import torch.distributed as dist\n\n\ndef is_first():\n    return dist.get_rank() == 0\n\n\ndef sync():\n    dist.barrier()\n"
    call = "if is_first():\n    dist.barrier()\n" if helper == "is_first" else "sync()\ndist.barrier()\n"
    train = f"import torch.distributed as dist\nfrom lib import {helper}\n\ndist.init_process_group('gloo')\n{call}"
    root = write(tmp_path / "proj", {"base.py": lib, "lib.py": wrappers(lib), "train.py": train})
    linted = lints(monkeypatch)
    found = [(path, line) for path, line, code in findings(root) if code == "DDP001"]
    assert found == ([("train.py", 6)] if helper == "is_first" else [])
    assert Counter(str(Path(d).relative_to(root)) for d in linted)["train.py"] == (2 if helper == "is_first" else 1)


@pytest.mark.parametrize("every_step", [False, True])
def test_a_logging_helper_relints_only_a_module_whose_rules_asked_what_quiets_its_logs(tmp_path, monkeypatch, every_step) -> None:
    """`setup` configures `logging` on the main process only (a fact about a
    name the script calls). Logged once, the script's line is no finding
    whoever logs it, so the fact changes nothing and the script is linted
    once; logged every step, the fact decides, and quiets it."""
    lib = (
        "import logging\nimport torch.distributed as dist\n\n\ndef setup():\n"
        "    if dist.get_rank() != 0:\n        logging.getLogger().setLevel(logging.WARNING)\n"
    )
    log = "for batch in range(3):\n    loss.backward()\n    logging.info('step')\n" if every_step else "logging.info('done')\n"
    train = f"import logging\nimport torch.distributed as dist\nfrom lib import setup\n\ndist.init_process_group('gloo')\nsetup()\n{log}"
    root = write(tmp_path / "proj", {"base.py": lib, "lib.py": wrappers(lib), "train.py": train})
    linted = lints(monkeypatch)
    assert not [f for f in findings(root) if f[0] == "train.py"]
    assert Counter(str(Path(d).relative_to(root)) for d in linted)["train.py"] == (2 if every_step else 1)
    alone = [(path, line) for path, line, code in findings(root, project=False) if code == "DDP007"]
    assert alone == ([("train.py", 9)] if every_step else [])  # without the helper's fact


def test_a_summary_reads_back_from_the_cache_as_it_was() -> None:
    """Every field of a summary survives its JSON (a warm run decides its re-lints from it)."""
    from ddplint.project.summary import Symbol

    summary = ModuleSummary(
        symbols={
            "f": Symbol(line=3, rank=True, collective=("`dist.barrier()`",), switch=("sync", 1, True, None)),
            "on_main": Symbol(line=8, handed=((0, "ONE"), ("fn", "ONE"))),
        },
        aliases={"dist": "torch.distributed"}, stars=(".util",), exports=("f",), uses=("util.is_main",),
        consulted=("util.is_main",), unrun=(("tokens",), ("tokens", "context_tokens")), called=("util.log",), quieted=("silences_print",), collective_called=("util.sync",),
        defined=("f", "C.step"), per_rank_calls=(("util.log", "f", "ALL"),), runs_unknown=("f",),
        distributed_by_text=False, entries=("f",), lines={"f": 3, "C.step": 9},
    )  # fmt: skip
    defaults = ModuleSummary()
    assert all(getattr(summary, f.name) != getattr(defaults, f.name) for f in dataclasses.fields(ModuleSummary))
    assert ModuleSummary.from_json(json.loads(json.dumps(summary.to_json()))) == summary


def test_a_fact_reads_back_from_its_json_as_it_was() -> None:
    """Every field of a fact survives its JSON (the facts a file was linted with key its cache entry)."""
    from ddplint.project.facts import Fact

    fact = Fact(
        "util.py", 7, rank=True, collective=("`dist.barrier()`",), silences_print=True, dataset="map", random=True,
        silences_logging=True, switch=("sync", 1, True, None), hf_trainer=True, picks="ONE",
        handed=((0, "ONE"), ("fn", "ONE")),
    )  # fmt: skip
    defaults = Fact("", 0)
    assert all(getattr(fact, f.name) != getattr(defaults, f.name) for f in dataclasses.fields(Fact))
    assert Fact.from_json(json.loads(json.dumps(fact.to_json()))) == fact
