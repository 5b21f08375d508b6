"""The package's layers: a module imports only its own layer and those below,
and no modules import each other around a circle.

Every import counts: module level, function-local and ``if TYPE_CHECKING:``
ones alike (a circle hidden behind a function-local import is still one).
The layers, lowest first (docs/architecture.md):

    core → knowledge → syntax → semantic → project → rule → engine → rules → app

`app` is everything above the engine: configuration loading, the runner,
the cache, the reporters, the CLI, the LSP server and the doctor.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent

#: Layer of a module: the longest matching prefix wins.
LAYERS: tuple[tuple[str, tuple[str, ...]], ...] = (
    # Values every layer uses: findings, spans, settings, the facts other modules export.
    ("core", (
        "ddplint.model", "ddplint.lazy", "ddplint.paths", "ddplint.sizes", "ddplint.textedit",
        "ddplint.typecheck", "ddplint.measured", "ddplint.solver", "ddplint.reading", "ddplint.result", "ddplint.version",
        "ddplint.config.settings", "ddplint.project.facts", "ddplint.project.summary", "ddplint.project.role", "ddplint.project.imports",
    )),
    # Vocabularies: which APIs are rank sources, collectives, writers, ...
    ("knowledge", ("ddplint.knowledge", "ddplint.analysis.probe", "ddplint.analysis.code_text")),
    # Stateless LibCST helpers.
    ("syntax", (
        "ddplint.analysis.names", "ddplint.analysis.calls", "ddplint.analysis.tree", "ddplint.analysis.blocks",
        "ddplint.analysis.compat", "ddplint.analysis.rewrite",
    )),
    # The per-file semantic model and its analyses.
    ("semantic", ("ddplint.analysis",)),
    # Facts solved across the modules of a project.
    ("project", ("ddplint.project",)),
    # The rule contract and the context rules report into.
    ("rule", ("ddplint.rule",)),
    ("engine", ("ddplint.engine",)),
    # The catalogue of rules (the repository's rules/).
    ("rules", ("ddplint.rules",)),
    ("app", ("ddplint",)),
)  # fmt: skip
ORDER = [name for name, _ in LAYERS]


def layer(module: str) -> str:
    best, length = "app", -1
    for name, prefixes in LAYERS:
        for prefix in prefixes:
            if (module == prefix or module.startswith(prefix + ".")) and len(prefix) > length:
                best, length = name, len(prefix)
    return best


def modules() -> dict[str, Path]:
    """Every module of the installed package, by dotted name (rules/ is ddplint.rules)."""
    found = {}
    for base, package in ((ROOT / "ddplint", "ddplint"), (ROOT / "rules", "ddplint.rules")):
        for path in base.rglob("*.py"):
            parts = [package, *path.relative_to(base).with_suffix("").parts]
            if parts[-1] == "__init__":
                parts.pop()
            found[".".join(parts)] = path
    return found


def imports(module: str, path: Path, known: dict[str, Path]) -> set[str]:
    """The package's modules `module` imports, wherever the import statement is."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    targets: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            targets.update(alias.name for alias in node.names if alias.name in known)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                origin = ".".join(base + ([node.module] if node.module else []))
            else:
                origin = node.module or ""
            for alias in node.names:
                if f"{origin}.{alias.name}" in known:
                    targets.add(f"{origin}.{alias.name}")
                elif origin in known:
                    targets.add(origin)
    targets.discard(module)
    return targets


GRAPH = {name: imports(name, path, modules()) for name, path in modules().items()}


def test_the_scan_sees_the_package() -> None:
    assert "ddplint.rule" in GRAPH and "ddplint.rules.ddp001_collective_in_rank_branch" in GRAPH
    assert "ddplint.analysis.rank" in GRAPH["ddplint.analysis.semantic"]
    assert layer("ddplint.analysis.rank") == "semantic" and layer("ddplint.knowledge") == "knowledge"
    assert layer("ddplint.cli.app") == "app" and layer("ddplint.project.index") == "project"


@pytest.mark.parametrize("module", sorted(GRAPH))
def test_no_upward_import(module: str) -> None:
    own = ORDER.index(layer(module))
    upward = sorted(t for t in GRAPH[module] if ORDER.index(layer(t)) > own)
    assert not upward, f"{module} ({layer(module)}) imports a higher layer: " + ", ".join(
        f"{t} ({layer(t)})" for t in upward
    )


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph.get(v, ())):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return found


def test_circles_are_found() -> None:
    assert circles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert circles({"a": {"b"}, "b": set()}) == []


def test_no_import_circle() -> None:
    assert circles(GRAPH) == []
