"""Shared test helpers: running the CLI in-process and as a console script,
and validating SARIF against the official schema committed in tests/schemas."""

from __future__ import annotations

import io
import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
from hypothesis import HealthCheck
from hypothesis import settings as hypothesis_settings

# The suite's profile draws the same examples every run (a test that passes once passes again:
# CI never fails on a newly drawn example); the long profile explores afresh each time.
hypothesis_settings.register_profile(
    "ci", max_examples=250, deadline=None, derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)  # fmt: skip
hypothesis_settings.register_profile("long", max_examples=30_000, deadline=None, suppress_health_check=list(HealthCheck))


def pytest_configure(config) -> None:
    """The bounded fuzz profile unless --hypothesis-profile chose another."""
    if not config.getoption("hypothesis_profile", None):
        hypothesis_settings.load_profile("ci")

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "fixtures"
SARIF_SCHEMA = Path(__file__).resolve().parent / "schemas" / "sarif-schema-2.1.0.json"


def fixture_settings(path: Path):
    """What a fixture is linted with: the rules on by default, preview rules
    and variants included, and the rule its directory is named after (so a
    rule that is off by default is tested in its own fixtures only)."""
    from ddplint.config import Settings
    from ddplint.config.selection import resolve

    own = {part for part in path.relative_to(FIXTURES).parts if part.startswith("DDP")}
    return Settings(rules=resolve((), preview=True) | own, preview=True)


@dataclass
class Run:
    """The outcome of one ddplint invocation."""

    status: int
    stdout: str
    stderr: str

    def json(self):
        return json.loads(self.stdout)


@pytest.fixture
def ddplint(monkeypatch, capsys):
    """Run `ddplint ARGS` in-process: ddplint(*args, cwd=..., stdin=bytes)."""
    from ddplint.cli import main

    def run(*args: str, cwd: Path | None = None, stdin: bytes | None = None) -> Run:
        if cwd is not None:
            monkeypatch.chdir(cwd)
        if stdin is not None:
            monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        capsys.readouterr()
        status = main([str(a) for a in args])
        out, err = capsys.readouterr()
        return Run(status, out, err)

    return run


def console_script() -> str:
    """The installed `ddplint` executable (the test must fail if it is missing)."""
    found = shutil.which("ddplint", path=os.path.dirname(sys.executable)) or shutil.which("ddplint")
    assert found, "the ddplint console script is not installed (pip install -e '.[test]')"
    return found


def run_script(
    *args: str,
    cwd: Path,
    stdin: bytes | None = None,
    env: dict | None = None,
    user: int | None = None,
    timeout: float = 120,
    preexec_fn=None,
) -> Run:
    """Run the installed console script in a subprocess (optionally as another
    user; `preexec_fn` runs in the child first, e.g. to cap its memory)."""
    proc = subprocess.run(
        [console_script(), *map(str, args)],
        cwd=cwd,
        input=stdin,
        capture_output=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
        user=user,
        preexec_fn=preexec_fn,
    )
    return Run(proc.returncode, proc.stdout.decode(), proc.stderr.decode())


@pytest.fixture(scope="session")
def sarif_validator():
    """A jsonschema validator for the official SARIF 2.1.0 schema."""
    schema = json.loads(SARIF_SCHEMA.read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def assert_valid_sarif(validator, log: dict) -> None:
    """Fail with every schema error of `log`."""
    errors = sorted(validator.iter_errors(log), key=lambda e: list(e.absolute_path))
    assert not errors, "\n".join(f"{list(e.absolute_path)}: {e.message}" for e in errors[:20])


#: Who commits in the repositories tests create (no global git config needed).
GIT_IDENTITY = {"GIT_AUTHOR_NAME": "ddplint tests", "GIT_AUTHOR_EMAIL": "tests@ddplint.invalid",
                "GIT_COMMITTER_NAME": "ddplint tests", "GIT_COMMITTER_EMAIL": "tests@ddplint.invalid"}  # fmt: skip


def git_repository(root: Path, commit: bool = False) -> Path:
    """Make `root` a git repository of its own (and commit what it holds).

    Tests that need git create one: the suite also runs from a release
    tarball or a `git archive` export, where the source is no repository."""
    root.mkdir(parents=True, exist_ok=True)
    env = {**os.environ, **GIT_IDENTITY}
    subprocess.run(["git", "init", "-q", str(root)], check=True, capture_output=True, env=env)
    if commit:
        subprocess.run(["git", "add", "-A"], cwd=root, check=True, capture_output=True, env=env)
        commit_all = ["git", "commit", "-q", "--no-verify", "-m", "snapshot"]
        subprocess.run(commit_all, cwd=root, check=True, capture_output=True, env=env)
    return root


def write(root: Path, files: dict[str, str | bytes]) -> Path:
    """Create `files` (relative path -> text or bytes) under `root`."""
    for name, content in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            path.write_bytes(content)
        else:
            path.write_text(content, encoding="utf-8")
    return root
