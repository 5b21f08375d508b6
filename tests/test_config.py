"""Configuration discovery, validation and rule selection."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import write
from ddplint.config.loader import ConfigError, read_config_file
from ddplint.config.resolver import ConfigResolver, Overrides
from ddplint.config.selection import Selection, resolve
from ddplint.model import Severity
from ddplint.rule import all_rules

ALL = frozenset(r.code for r in all_rules())
DDP01 = frozenset(c for c in ALL if c.startswith("DDP01"))
#: Off unless a selector names them (DDP034 unseeded-script).
OPT_IN = frozenset(r.code for r in all_rules() if not r.default_enabled)
#: Off unless preview is on or their exact code is selected.
PREVIEW = frozenset(r.code for r in all_rules() if r.preview)
DEFAULT = ALL - OPT_IN - PREVIEW


@pytest.mark.parametrize(
    ("layers", "expected"),
    [
        ([], DEFAULT),
        ([Selection(select=("DDP014",))], {"DDP014"}),
        ([Selection(select=("DDP01",))], DDP01 - PREVIEW),
        ([Selection(ignore=("DDP01",))], DEFAULT - DDP01),
        ([Selection(ignore=("DDP01",), extend_select=("DDP012",))], DEFAULT - DDP01 | {"DDP012"}),  # most specific wins
        ([Selection(select=("DDP014",), ignore=("DDP014",))], set()),  # a tie goes to ignore
        ([Selection(select=("ALL",), ignore=("DDP0",))], ALL - PREVIEW - frozenset(c for c in ALL if c.startswith("DDP0"))),
        ([Selection(ignore=("DDP012",)), Selection(select=("DDP012",))], {"DDP012"}),  # CLI select starts afresh
        ([Selection(select=("DDP014",)), Selection(extend_select=("DDP012",))], {"DDP012", "DDP014"}),
        ([Selection(), Selection(ignore=("DDP000",))], DEFAULT - {"DDP000"}),
        ([Selection(extend_select=("DDP034",))], DEFAULT | {"DDP034"}),  # an opt-in rule named
        ([Selection(extend_select=("DDP03",))], DEFAULT | {c for c in OPT_IN if c.startswith("DDP03")}),  # or by a prefix
        ([Selection(select=("ALL",))], ALL - PREVIEW),
    ],
)
def test_selection_layers(layers, expected) -> None:
    assert resolve(layers) == frozenset(expected)


def test_preview_rules_need_preview_or_their_exact_code(monkeypatch) -> None:
    from ddplint.rule import get_rule

    monkeypatch.setattr(get_rule("DDP012"), "preview", True)
    assert "DDP012" not in resolve([])
    assert "DDP012" not in resolve([Selection(select=("DDP01",))])
    assert "DDP012" not in resolve([Selection(select=("ALL",))])
    assert "DDP012" in resolve([Selection(extend_select=("DDP012",))])
    assert "DDP012" in resolve([], preview=True)
    assert "DDP012" in resolve([Selection(select=("DDP01",))], preview=True)


def test_preview_is_a_config_key_and_an_option(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": "[tool.ddplint]\npreview = true\n", "a.py": ""})
    assert ConfigResolver(cwd=tmp_path).settings_for(tmp_path / "a.py").preview
    write(tmp_path, {"pyproject.toml": "[tool.ddplint]\npreview = false\n"})
    assert not ConfigResolver(cwd=tmp_path).settings_for(tmp_path / "a.py").preview
    assert ConfigResolver(Overrides(preview=True), cwd=tmp_path).settings_for(tmp_path / "a.py").preview
    write(tmp_path, {"pyproject.toml": "[tool.ddplint]\npreview = 1\n"})
    with pytest.raises(ConfigError, match="preview: expected true or false"):
        ConfigResolver(cwd=tmp_path).settings_for(tmp_path / "a.py")


def test_nearest_config_wins(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": '[tool.ddplint]\nignore = ["DDP012"]\n',
            "sub/pyproject.toml": "[project]\nname = 'no-ddplint-table'\n",
            "sub/deeper/ddplint.toml": 'select = ["DDP014"]\n',
            "sub/deeper/pyproject.toml": '[tool.ddplint]\nselect = ["DDP012"]\n',
        },
    )
    resolver = ConfigResolver(cwd=tmp_path)
    assert resolver.settings_for(tmp_path / "a.py").rules == DEFAULT - {"DDP012"}
    assert resolver.settings_for(tmp_path / "sub" / "a.py").rules == DEFAULT - {"DDP012"}  # skipped: no table
    assert resolver.settings_for(tmp_path / "sub/deeper/a.py").rules == {"DDP014"}  # ddplint.toml first


def test_explicit_config_replaces_the_search(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[tool.ddplint]\nignore = ["DDP012"]\n', "other.toml": 'select = ["DDP000"]\n'})
    resolver = ConfigResolver(Overrides(config_file=tmp_path / "other.toml"), cwd=tmp_path)
    assert resolver.settings_for(tmp_path / "x.py").rules == {"DDP000"}


def test_per_file_ignores_are_relative_to_the_config(tmp_path: Path) -> None:
    write(tmp_path, {"proj/pyproject.toml": '[tool.ddplint]\nper-file-ignores = { "tests/**" = ["DDP01"], "*_gen.py" = ["DDP014"] }\n'})
    resolver = ConfigResolver(cwd=tmp_path)
    assert resolver.settings_for(tmp_path / "proj/tests/unit/t.py").rules == DEFAULT - DDP01
    assert resolver.settings_for(tmp_path / "proj/src/x_gen.py").rules == DEFAULT - {"DDP014"}
    assert resolver.settings_for(tmp_path / "proj/src/x.py").rules == DEFAULT
    assert resolver.settings_for(tmp_path / "tests/t.py").rules == DEFAULT  # outside the config's project


def test_per_file_ignores_through_a_symlinked_directory(tmp_path: Path) -> None:
    write(tmp_path, {"real/proj/pyproject.toml": '[tool.ddplint]\nper-file-ignores = { "tests/**" = ["DDP01"] }\n'})
    (tmp_path / "link").symlink_to(tmp_path / "real")
    resolver = ConfigResolver(cwd=tmp_path)
    assert resolver.settings_for(tmp_path / "link/proj/tests/t.py").rules == DEFAULT - DDP01
    assert resolver.settings_for(tmp_path / "link/proj/src/x.py").rules == DEFAULT


def test_values_are_parsed(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "pyproject.toml": (
                "[tool.ddplint]\n"
                'severity = { DDP012 = "warning" }\nrank-names = ["my_rank"]\n'
                'max-workers-per-rank = 4\nfail-on = "error"\nextend-exclude = ["gen/"]\n'
            )
        },
    )
    config = read_config_file(tmp_path / "pyproject.toml")
    assert config.severity == {"DDP012": Severity.WARNING}
    assert config.rank_names == ("my_rank",) and config.max_workers_per_rank == 4
    resolver = ConfigResolver(cwd=tmp_path)
    settings = resolver.settings_for(tmp_path / "a.py")
    assert settings.max_workers_per_rank == 4 and settings.rank_names == ("my_rank",)
    assert resolver.fail_on() is Severity.ERROR
    assert resolver.is_excluded(tmp_path / "gen", is_dir=True)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("select = 3", "select: expected a list of rule codes, got int"),
        ('select = ["DDP", 4]', "select: expected a list of rule codes, got list"),
        ('severity = { DDP999 = "note" }', "severity: unknown rule code 'DDP999'"),
        ('severity = { DDP012 = "loud" }', "severity: expected one of note, warning, error, got 'loud'"),
        ("max-workers-per-rank = true", "max-workers-per-rank: expected a positive integer, got bool"),
        ('per-file-ignores = { "a.py" = ["NOPE1"] }', "per-file-ignores: 'a.py': unknown rule code or prefix 'NOPE1'"),
        ('exclude = "build"', "exclude: expected a list of glob patterns, got string"),
        ('fail-on = 1', "fail-on: expected error, warning or note, got int"),
    ],
)
def test_bad_values(tmp_path: Path, body: str, message: str) -> None:
    write(tmp_path, {"pyproject.toml": f"[tool.ddplint]\n{body}\n"})
    with pytest.raises(ConfigError) as error:
        read_config_file(tmp_path / "pyproject.toml")
    assert str(error.value).endswith(f"[tool.ddplint] {message}")


def test_ddplint_toml_errors_name_the_file(tmp_path: Path) -> None:
    write(tmp_path, {"ddplint.toml": "select = 3\n"})
    with pytest.raises(ConfigError, match=r"ddplint.toml: select: expected a list"):
        read_config_file(tmp_path / "ddplint.toml")
