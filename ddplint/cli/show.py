"""`ddplint check --show-settings` and `--show-files`, as Ruff's: what
configuration governs a file, and which files a run would lint."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from ddplint.config.resolver import DEFAULT_EXCLUDE, ConfigResolver
from ddplint.discovery import discover
from ddplint.paths import printable
from ddplint.rule import get_rule
from ddplint.sizes import describe_size


def show_settings(path: Path, resolver: ConfigResolver) -> int:
    """Print the settings resolved for the file (or the directory's files) at `path`."""
    absolute = path if path.is_absolute() else resolver.cwd / path
    probe = absolute / "__init__.py" if absolute.is_dir() else absolute  # a file in the directory stands for it
    config = resolver.config_for(probe)
    settings = resolver.settings_for(probe)
    lines = [
        f"Resolved settings for: {absolute}",
        f"Config file: {config.path.resolve() if config.path is not None else 'none (the defaults)'}",
    ]
    lines += [f"Extends: {base.resolve()}" for base in config.extends]
    rules = sorted(settings.rules)
    lines += [
        "",
        f"preview = {_toml(settings.preview)}",
        f"fail-on = {_toml(resolver.fail_on().value)}",
        f"enabled-rules = [  # {len(rules)}",
        *(f"    {_toml(code)},  # {_name(code)}" for code in rules),
        "]",
        f"severity = {{{', '.join(f'{c} = {_toml(s.value)}' for c, s in sorted(settings.severity.items()))}}}",
        f"rank-names = {_toml(list(settings.rank_names))}",
        f"max-workers-per-rank = {settings.max_workers_per_rank}",
        f"max-file-size = {_toml(describe_size(settings.max_file_size))}  # {settings.max_file_size} bytes",
        f"max-lines = {settings.max_lines}",
        f"exclude = {_toml(list(config.exclude if config.exclude is not None else DEFAULT_EXCLUDE))}",
        f"extend-exclude = {_toml(list(config.extend_exclude))}",
        f"per-file-ignores = {{{', '.join(f'{_toml(p)} = {_toml(list(c))}' for p, c in config.per_file_ignores)}}}",
        f"src = {_toml(list(config.src))}",
        f"root = {_toml(str(config.root))}  # excludes and per-file-ignores are relative to it",
    ]
    sys.stdout.write(printable("\n".join(lines)) + "\n")
    return 0


def show_files(paths: list[Path], resolver: ConfigResolver, force_exclude: bool) -> int:
    """Print the files a run on `paths` would lint (absolute, sorted), the
    problems met on the way on stderr; 1 if there were any."""
    found = discover(paths, resolver, force_exclude=force_exclude)
    for file in sorted({f.path for f in found.files}):
        sys.stdout.write(printable(str(file)) + "\n")
    for notice in found.notices:
        print(printable(f"{notice.path}: {notice.level.value}: {notice.message}"), file=sys.stderr)
    return 1 if found.notices else 0


def _name(code: str) -> str:
    rule = get_rule(code)
    return rule.name if rule is not None else "?"


def _toml(value: object) -> str:
    """A value as TOML writes it (JSON agrees for strings, lists and booleans)."""
    return json.dumps(value, ensure_ascii=False)
