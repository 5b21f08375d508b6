"""Reading and validating ``[tool.ddplint]`` / ``ddplint.toml``.

Every problem is a `ConfigError` whose text is one line naming the file, the
key and the reason, e.g. ``pyproject.toml: [tool.ddplint] select: expected a
list of rule codes, got int``; the CLI prints it and exits 2.
"""

from __future__ import annotations

import dataclasses
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib

from ddplint.config.selection import is_known_selector
from ddplint.model import Severity
from ddplint.sizes import parse_size

PYPROJECT = "pyproject.toml"
DDPLINT_TOML = "ddplint.toml"


class ConfigError(Exception):
    """A configuration file is unreadable, not TOML, or has a bad value."""


@dataclass(frozen=True, eq=False)
class Config:
    """One configuration file's validated contents (None: key not set).

    `root` is the directory that relative patterns (``exclude``,
    ``per-file-ignores``) are resolved against: the file's own directory.
    """

    root: Path
    path: Path | None = None
    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    severity: dict[str, Severity] = field(default_factory=dict)
    exclude: tuple[str, ...] | None = None
    extend_exclude: tuple[str, ...] = ()
    rank_names: tuple[str, ...] = ()
    max_workers_per_rank: int | None = None
    max_file_size: int | None = None
    max_lines: int | None = None
    max_tokens: int | None = None
    fail_on: Severity | None = None
    #: Import roots for the whole-project analysis, relative to `root`.
    src: tuple[str, ...] = ()
    #: Run the preview rules and rule variants too.
    preview: bool | None = None
    #: ``extend``: the file this one inherits from, as written (relative to this file).
    extend: str | None = None
    #: The rule selections of the files extended (outermost first): each
    #: (select, extend-select, ignore) is a layer below this file's.
    inherited: tuple[tuple[tuple[str, ...] | None, tuple[str, ...], tuple[str, ...]], ...] = ()
    #: The files extended, nearest first (for `--show-settings`).
    extends: tuple[Path, ...] = ()


def read_config_file(path: Path, _chain: tuple[Path, ...] = ()) -> Config | None:
    """The config in `path`, or None for a pyproject.toml without [tool.ddplint];
    with ``extend``, merged over the file it names (`_chain`: the files
    extending this one, to refuse a cycle)."""
    shown = _shown(path)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ConfigError(f"{shown}: cannot read: {exc.strerror or exc}") from None
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"{shown}: invalid TOML: {exc}") from None
    except RecursionError:  # tomllib recurses once per nested array or inline table
        raise ConfigError(f"{shown}: invalid TOML: arrays or tables nested too deeply") from None
    tool = data.get("tool", {})
    if isinstance(tool, dict) and "ddplint" in tool:
        table, where = tool["ddplint"], "[tool.ddplint] "
    elif path.name == PYPROJECT:
        return None
    else:  # ddplint.toml, or any file given with --config: top-level keys
        table, where = data, ""
    if not isinstance(table, dict):
        raise ConfigError(f"{shown}: {where.strip() or 'ddplint'}: expected a table")
    config = parse_table(table, root=path.parent, path=path, where=f"{shown}: {where}")
    if config.extend is None:
        return config
    return _extended(config, path, f"{shown}: {where}extend", _chain)


def _extended(config: Config, path: Path, where: str, chain: tuple[Path, ...]) -> Config:
    """`config` over the config file its ``extend`` names (relative to `path`'s directory)."""
    assert config.extend is not None
    base_path = path.parent / Path(config.extend).expanduser()
    chain = (*chain, path.resolve())
    if base_path.resolve() in chain:
        cycle = " -> ".join(_shown(p) for p in (*chain, base_path.resolve()))
        raise ConfigError(f"{where}: the files extend each other in a cycle: {cycle}")
    try:
        found = base_path.is_file()
    except OSError:
        found = False
    if not found:
        raise ConfigError(f"{where}: no config file at {config.extend!r} (relative to {_shown(path.parent) or '.'})")
    base = read_config_file(base_path, chain)
    if base is None:
        raise ConfigError(f"{where}: {config.extend!r} has no [tool.ddplint] table")
    return merge(base, config)


def merge(base: Config, config: Config) -> Config:
    """`config` inheriting from `base`: the keys it sets win, the lists that
    extend (extend-exclude, per-file-ignores, severity) add up, and the rule
    selections are layers (the base's first), as Ruff's ``extend`` does.
    The result governs `config`'s directory; the base's ``src`` entries stay
    relative to the base's own directory."""
    inherited = (*base.inherited, (base.select, base.extend_select, base.ignore))
    return dataclasses.replace(
        config,
        inherited=inherited,
        per_file_ignores=(*base.per_file_ignores, *config.per_file_ignores),
        severity={**base.severity, **config.severity},
        exclude=config.exclude if config.exclude is not None else base.exclude,
        extend_exclude=(*base.extend_exclude, *config.extend_exclude),
        rank_names=config.rank_names or base.rank_names,
        max_workers_per_rank=config.max_workers_per_rank or base.max_workers_per_rank,
        max_file_size=config.max_file_size or base.max_file_size,
        max_lines=config.max_lines or base.max_lines,
        fail_on=config.fail_on if config.fail_on is not None else base.fail_on,
        src=(*(str((base.root / entry).resolve()) for entry in base.src), *config.src),
        preview=config.preview if config.preview is not None else base.preview,
        extends=(base.path, *base.extends) if base.path is not None else base.extends,
    )


def _shown(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def parse_table(table: dict[str, Any], root: Path, path: Path | None, where: str) -> Config:
    """Validate a ``[tool.ddplint]`` table; `where` prefixes every error."""
    values: dict[str, Any] = {}
    for key, raw in table.items():
        spec = _KEYS.get(key)
        if spec is None:
            known = ", ".join(sorted(_KEYS))
            raise ConfigError(f"{where}{key}: unknown key (known keys: {known})")
        attr, parse = spec
        try:
            values[attr] = parse(raw)
        except (TypeError, ValueError) as exc:
            raise ConfigError(f"{where}{key}: {exc}") from None
    return Config(root=root, path=path, **values)


def _type_name(value: object) -> str:
    return {bool: "bool", int: "int", float: "float", str: "string", list: "list", dict: "table"}.get(
        type(value), type(value).__name__
    )


def _string_list(what: str) -> Callable[[object], tuple[str, ...]]:
    def parse(value: object) -> tuple[str, ...]:
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise TypeError(f"expected a list of {what}, got {_type_name(value)}")
        return tuple(value)

    return parse


def _selectors(value: object) -> tuple[str, ...]:
    codes = _string_list("rule codes")(value)
    for code in codes:
        if not code.strip():  # "" would select every rule (every code starts with it)
            raise ValueError("empty rule code or prefix")
        if not is_known_selector(code):
            raise ValueError(f"unknown rule code or prefix {code!r}")
    return tuple(c.upper() for c in codes)


def _per_file_ignores(value: object) -> tuple[tuple[str, tuple[str, ...]], ...]:
    if not isinstance(value, dict):
        raise TypeError(f"expected a table of glob = [rule codes], got {_type_name(value)}")
    result = []
    for pattern, codes in value.items():
        _check_glob(pattern)  # its message names the pattern
        try:
            result.append((pattern, _selectors(codes)))
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"{pattern!r}: {exc}") from None
    return tuple(result)


def _globs(value: object) -> tuple[str, ...]:
    patterns = _string_list("glob patterns")(value)
    for pattern in patterns:
        _check_glob(pattern)
    return patterns


def _check_glob(pattern: str) -> None:
    """Raise `ValueError` for a pattern the gitignore-style matcher rejects
    (``!``, a lone backslash, ``[z-a]``), naming it."""
    import pathspec  # here: only a config with patterns needs it

    try:
        pathspec.GitIgnoreSpec.from_lines([pattern])
    except ValueError:
        raise ValueError(f"invalid glob pattern {pattern!r}: not a gitignore-style pattern") from None
    except re.error as exc:  # a bracket expression that is no character class
        raise ValueError(f"invalid glob pattern {pattern!r}: {exc.msg}") from None


def _severity(value: object) -> dict[str, Severity]:
    if not isinstance(value, dict):
        raise TypeError(f"expected a table of CODE = level, got {_type_name(value)}")
    from ddplint.rule import get_rule

    result = {}
    for code, level in value.items():
        if get_rule(code) is None:
            raise ValueError(f"unknown rule code {code!r}")
        if not isinstance(level, str):
            raise TypeError(f"{code}: expected error, warning or note, got {_type_name(level)}")
        result[code.upper()] = Severity.parse(level)
    return result


def _positive_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"expected a positive integer, got {_type_name(value)}")
    if value < 1:
        raise ValueError(f"expected a positive integer, got {value}")
    return value


def _size(value: object) -> int:
    """Bytes from an int or a string such as ``"5MB"``/``"512KiB"``."""
    if isinstance(value, bool) or not isinstance(value, (int, str)):
        raise TypeError(f"expected a size such as 5MB, got {_type_name(value)}")
    if isinstance(value, int):
        if value < 1:
            raise ValueError(f"expected a positive size, got {value}")
        return value
    return parse_size(value)


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {_type_name(value)}")
    return value


def _path(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise TypeError(f"expected the path of a config file, got {_type_name(value)}")
    return value


def _level(value: object) -> Severity:
    if not isinstance(value, str):
        raise TypeError(f"expected error, warning or note, got {_type_name(value)}")
    return Severity.parse(value)


_KEYS: dict[str, tuple[str, Callable[[Any], Any]]] = {
    "select": ("select", _selectors),
    "extend-select": ("extend_select", _selectors),
    "ignore": ("ignore", _selectors),
    "per-file-ignores": ("per_file_ignores", _per_file_ignores),
    "severity": ("severity", _severity),
    "exclude": ("exclude", _globs),
    "extend-exclude": ("extend_exclude", _globs),
    "rank-names": ("rank_names", _string_list("names")),
    "max-workers-per-rank": ("max_workers_per_rank", _positive_int),
    "max-file-size": ("max_file_size", _size),
    "max-lines": ("max_lines", _positive_int),
    "max-tokens": ("max_tokens", _positive_int),
    "fail-on": ("fail_on", _level),
    "src": ("src", _string_list("directories")),
    "preview": ("preview", _boolean),
    "extend": ("extend", _path),
}
