"""Which configuration governs which file, and the `Settings` that follow.

Like Ruff, ddplint uses the nearest ``ddplint.toml`` or ``pyproject.toml``
with a ``[tool.ddplint]`` table, searched from each file's directory upward
(``ddplint.toml`` wins within one directory); ``--config FILE`` replaces the
search for every file. Command-line selections are a layer on top.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import pathspec

from ddplint.config.loader import DDPLINT_TOML, PYPROJECT, Config, ConfigError, read_config_file
from ddplint.config.selection import Selection, resolve
from ddplint.config.settings import (
    DEFAULT_MAX_FILE_SIZE, DEFAULT_MAX_LINES, DEFAULT_MAX_TOKENS, DEFAULT_MAX_WORKERS_PER_RANK, Settings,
)  # fmt: skip
from ddplint.model import Severity

DEFAULT_EXCLUDE = (
    ".git", ".hg", ".svn", ".venv", "venv", ".tox", ".nox", ".eggs", "*.egg-info",
    "__pycache__", "__pypackages__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".ddplint_cache", ".ipynb_checkpoints", "build", "dist", "site-packages", "node_modules",
)  # fmt: skip


@dataclass(frozen=True)
class Overrides:
    """What the command line says, on top of any configuration file."""

    select: tuple[str, ...] | None = None
    extend_select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: Severity | None = None
    config_file: Path | None = None
    #: ``--preview``: True; None leaves it to the configuration.
    preview: bool | None = None


class ConfigResolver:
    """Finds configs (cached per directory) and derives per-file settings."""

    def __init__(self, overrides: Overrides | None = None, cwd: Path | None = None) -> None:
        self.overrides = overrides or Overrides()
        self.cwd = (cwd or Path.cwd()).resolve()
        self._by_dir: dict[Path, Config] = {}
        self._fixed: Config | None = None
        self._excludes: dict[tuple[int, Path | None], pathspec.PathSpec] = {}
        self._settings: dict[tuple[int, tuple[str, ...]], Settings] = {}
        self._per_file: dict[int, list[tuple[pathspec.PathSpec, tuple[str, ...]]]] = {}
        self._real_dirs: dict[Path, Path] = {}
        if self.overrides.config_file is not None:
            path = self.overrides.config_file
            if not _is_file(path):
                raise ConfigError(f"{path}: --config file does not exist")
            self._fixed = read_config_file(path) or Config(root=path.resolve().parent, path=path)

    def config_for_dir(self, directory: Path) -> Config:
        """The config that governs files in `directory` (absolute)."""
        if self._fixed is not None:
            return self._fixed
        found = self._by_dir.get(directory)
        if found is not None:
            return found
        config = self._read_dir(directory)
        if config is None:
            parent = directory.parent
            config = self.config_for_dir(parent) if parent != directory else Config(root=self.cwd)
        self._by_dir[directory] = config
        return config

    @staticmethod
    def _read_dir(directory: Path) -> Config | None:
        for name in (DDPLINT_TOML, PYPROJECT):
            candidate = directory / name
            if _is_file(candidate):
                config = read_config_file(candidate)
                if config is not None:
                    return config
        return None

    def config_for(self, path: Path) -> Config:
        """The config that governs the file at `path`."""
        return self.config_for_dir(_absolute(path, self.cwd).parent)

    def is_excluded(self, path: Path, is_dir: bool = False, explicit_root: Path | None = None) -> bool:
        """Whether config ``exclude``/``extend-exclude`` (or the defaults) match.

        Below a directory the user named explicitly (`explicit_root`), the
        patterns that exclude that directory itself are disregarded:
        ``ddplint build/`` lints what is in `build/`.
        """
        absolute = _absolute(path, self.cwd)
        config = self.config_for_dir(absolute if is_dir else absolute.parent)
        spec = self._exclude_spec(config, explicit_root)
        return spec.match_file(self._relative(absolute, config.root) + ("/" if is_dir else ""))

    def _exclude_spec(self, config: Config, explicit_root: Path | None) -> pathspec.PathSpec:
        key = (id(config), explicit_root)
        spec = self._excludes.get(key)
        if spec is None:
            base = config.exclude if config.exclude is not None else DEFAULT_EXCLUDE
            patterns = [*base, *config.extend_exclude]
            if explicit_root is not None:
                root = self._relative(_absolute(explicit_root, self.cwd), config.root) + "/"
                patterns = [p for p in patterns if not pathspec.GitIgnoreSpec.from_lines([p]).match_file(root)]
            spec = pathspec.GitIgnoreSpec.from_lines(patterns)
            self._excludes[key] = spec
        return spec

    def excludes_file(self, path: Path) -> bool:
        """Whether a file, or a directory above it within its project, is excluded."""
        absolute = _absolute(path, self.cwd)
        if self.is_excluded(absolute):
            return True
        for parent in absolute.parents:
            root = self.config_for_dir(parent).root
            if parent == root or not parent.is_relative_to(root):
                return False
            if self.is_excluded(parent, is_dir=True):
                return True
        return False

    def settings_for(self, path: Path) -> Settings:
        """The effective settings for linting the file at `path`."""
        absolute = _absolute(path, self.cwd)
        config = self.config_for_dir(absolute.parent)
        relative = self._relative(absolute, config.root)
        ignored = tuple(
            code for spec, codes in self._per_file_specs(config) if spec.match_file(relative) for code in codes
        )
        key = (id(config), ignored)
        settings = self._settings.get(key)
        if settings is None:
            settings = self._make_settings(config, ignored)
            self._settings[key] = settings
        return settings

    def _per_file_specs(self, config: Config) -> list[tuple[pathspec.PathSpec, tuple[str, ...]]]:
        specs = self._per_file.get(id(config))
        if specs is None:
            specs = [(pathspec.GitIgnoreSpec.from_lines([p]), c) for p, c in config.per_file_ignores]
            self._per_file[id(config)] = specs
        return specs

    def _make_settings(self, config: Config, per_file_ignored: tuple[str, ...]) -> Settings:
        cli = self.overrides
        layers = [
            *(Selection(*inherited) for inherited in config.inherited),
            Selection(config.select, config.extend_select, config.ignore),
            Selection(cli.select, cli.extend_select, cli.ignore),
            Selection(ignore=per_file_ignored),
        ]
        preview = cli.preview if cli.preview is not None else bool(config.preview)
        return Settings(
            rules=resolve(layers, preview),
            preview=preview,
            severity=dict(config.severity),
            rank_names=config.rank_names,
            max_workers_per_rank=config.max_workers_per_rank or DEFAULT_MAX_WORKERS_PER_RANK,
            max_file_size=config.max_file_size or DEFAULT_MAX_FILE_SIZE,
            max_lines=config.max_lines or DEFAULT_MAX_LINES,
            max_tokens=config.max_tokens or DEFAULT_MAX_TOKENS,
        )

    def _relative(self, path: Path, root: Path) -> str:
        """`path` relative to `root` as patterns match it; through symlinks
        (each directory resolved once), else just its name."""
        try:
            return path.relative_to(root).as_posix()
        except ValueError:
            pass
        try:
            return (self._real_dir(path.parent) / path.name).relative_to(self._real_dir(root)).as_posix()
        except ValueError:
            return path.name

    def _real_dir(self, directory: Path) -> Path:
        real = self._real_dirs.get(directory)
        if real is None:
            real = self._real_dirs[directory] = directory.resolve()
        return real

    def source_roots(self) -> list[Path]:
        """The configured ``src`` import roots of the configs read so far (absolute)."""
        configs = [*self._by_dir.values(), self.config_for_dir(self.cwd)]
        unique = {id(c): c for c in configs}.values()
        return [(c.root / entry).resolve() for c in unique for entry in c.src]

    def fail_on(self) -> Severity:
        """``--fail-on``, else the working directory's config, else warning."""
        if self.overrides.fail_on is not None:
            return self.overrides.fail_on
        return self.config_for_dir(self.cwd).fail_on or Severity.WARNING


def _is_file(path: Path) -> bool:
    """Whether `path` is a file; False where it cannot be looked at (a
    directory without search permission, a path longer than PATH_MAX): the
    walk reports that directory in one line, and the run goes on."""
    try:
        return path.is_file()
    except OSError:
        return False


def _absolute(path: Path, cwd: Path) -> Path:
    """`path` made absolute without resolving symlinks (a link keeps its name)."""
    return path if path.is_absolute() else cwd / path
