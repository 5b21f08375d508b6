"""A real wheel: `rules/` installs as `ddplint.rules`, never as a top-level
`rules`; the base install does not pull torch."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from conftest import REPO


@pytest.fixture(scope="module")
def wheel(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("wheel")
    source = tmp_path_factory.mktemp("source") / "ddplint"  # no stale build/ of a developer's checkout
    shutil.copytree(REPO, source, ignore=shutil.ignore_patterns(
        ".git", "build", "dist", "*.egg-info", "__pycache__", ".venv", ".ddplint_cache", ".hypothesis", ".pytest_cache"
    ))  # fmt: skip
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "--quiet", "-w", str(out), str(source)],
        check=True,
        timeout=600,
    )
    (found,) = out.glob("ddplint-*.whl")
    return found


def test_wheel_layout(wheel: Path) -> None:
    names = zipfile.ZipFile(wheel).namelist()
    assert "ddplint/rules/__init__.py" in names
    assert "ddplint/rules/ddp014_sampler_shuffle_conflict.py" in names
    assert not any(n.startswith("rules/") for n in names)
    assert not any(n.startswith(("tests/", "fixtures/", "examples/")) for n in names)
    sources = {p.relative_to(REPO).as_posix() for p in (REPO / "ddplint").rglob("*.py") if "__pycache__" not in p.parts}
    assert sources <= set(names), f"modules missing from the wheel: {sorted(sources - set(names))}"
    assert any(n.endswith(".dist-info/licenses/LICENSE") for n in names), "the wheel carries no LICENSE"


def test_license_is_the_declared_mit_license() -> None:
    from ddplint.config.loader import tomllib

    declared = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))["project"]["license"]
    text = (REPO / "LICENSE").read_text(encoding="utf-8")
    assert declared == "MIT" and text.startswith("MIT License\n")
    assert re.search(r"^Copyright \(c\) \d{4} The ddplint authors$", text, re.M)
    assert "THE SOFTWARE IS PROVIDED \"AS IS\"" in text


def test_changelog_has_an_unreleased_section() -> None:
    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    assert text.startswith("# Changelog\n") and "\n## [Unreleased]\n" in text


#: Install forms that need a release: PyPI (not a git+ URL), a version tag.
_RELEASED_ONLY = re.compile(r"pip install ['\"]?ddplint(\[\w+\])?['\"]?(?!\S*\s*@)|rev:\s*v\d|ddplint@v\d")


def test_install_docs_work_before_a_release() -> None:
    """Every install line that needs a release (PyPI, a tag) says "once released"."""
    docs = [REPO / "README.md", REPO / "CHANGELOG.md", *(REPO / "docs").glob("*.md"), *(REPO / "docs").glob("*.yml")]
    unmarked = [
        f"{path.name}:{number}: {line.strip()}"
        for path in docs
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), start=1)
        if _RELEASED_ONLY.search(line) and "once released" not in line.lower()
    ]
    assert not unmarked, "\n".join(unmarked)


def test_wheel_metadata_keeps_torch_optional(wheel: Path) -> None:
    with zipfile.ZipFile(wheel) as archive:
        metadata = next(archive.read(n).decode() for n in archive.namelist() if n.endswith("METADATA"))
    requires = [line for line in metadata.splitlines() if line.startswith("Requires-Dist:")]
    base = [r for r in requires if "extra ==" not in r]
    assert base and not any("torch" in r for r in base)
    assert any("torch" in r and 'extra == "runtime"' in r for r in requires)
    assert "Provides-Extra: runtime" in metadata and "Provides-Extra: test" in metadata


def test_installed_package_imports_rules_as_subpackage(tmp_path: Path) -> None:
    code = (
        "import importlib.util, sys; import ddplint.rules; "
        "sys.exit(0 if importlib.util.find_spec('rules') is None else 1)"
    )
    proc = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr or "a top-level `rules` module is importable"


@pytest.mark.slow
def test_base_install_lints_without_torch_and_doctor_says_how_to_get_it(wheel: Path, tmp_path: Path) -> None:
    """A fresh venv with the wheel and its base dependencies only, as pre-commit builds it."""
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    bin_dir = venv / ("Scripts" if sys.platform == "win32" else "bin")
    subprocess.run([str(bin_dir / "pip"), "install", "--quiet", str(wheel)], check=True, timeout=600)
    has_torch = subprocess.run([str(bin_dir / "python"), "-c", "import torch"], capture_output=True)
    assert has_torch.returncode != 0, "the base install pulled torch"
    (tmp_path / "train.py").write_text(
        "import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n", encoding="utf-8"
    )
    lint = subprocess.run([str(bin_dir / "ddplint"), "train.py"], cwd=tmp_path, capture_output=True, text=True)
    assert lint.returncode == 1 and "DDP001" in lint.stdout, lint.stderr
    doctor = subprocess.run([str(bin_dir / "ddplint"), "doctor"], cwd=tmp_path, capture_output=True, text=True)
    assert doctor.returncode == 2
    assert doctor.stderr.strip() == "ddplint: error: ddplint doctor needs torch: pip install 'ddplint[runtime]'"
