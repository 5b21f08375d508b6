"""File discovery: suffixes, default excludes, config excludes, .gitignore, symlinks."""

from __future__ import annotations

from pathlib import Path

from conftest import write
from ddplint.config.resolver import ConfigResolver
from ddplint.discovery import discover


def found(root: Path, *paths: str, force_exclude: bool = False) -> list[str]:
    resolver = ConfigResolver(cwd=root)
    result = discover([Path(p) for p in paths or ["."]], resolver, force_exclude=force_exclude)
    return [f.display for f in result.files]


def test_suffixes_and_default_excludes(tmp_path: Path) -> None:
    write(
        tmp_path,
        {
            "a.py": "", "b.pyi": "", "c.txt": "", "pkg/d.py": "",
            ".venv/lib/e.py": "", "venv/f.py": "", "build/g.py": "", "dist/h.py": "",
            "node_modules/x/i.py": "", "__pycache__/j.py": "", "x/site-packages/k.py": "", ".git/l.py": "",
        },
    )  # fmt: skip
    assert found(tmp_path) == ["a.py", "b.pyi", "pkg/d.py"]


def test_display_paths_keep_the_argument(tmp_path: Path) -> None:
    write(tmp_path, {"src/pkg/a.py": ""})
    assert found(tmp_path, "src") == ["src/pkg/a.py"]
    assert found(tmp_path, "./src/") == ["src/pkg/a.py"]
    assert found(tmp_path / "src", "..") == ["../src/pkg/a.py"]


def test_config_exclude_and_extend_exclude(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[tool.ddplint]\nextend-exclude = ["gen/", "*_pb2.py"]\n', "gen/a.py": "", "m_pb2.py": "", "ok.py": "", "build/b.py": ""})
    assert found(tmp_path) == ["ok.py"]
    write(tmp_path, {"pyproject.toml": '[tool.ddplint]\nexclude = ["gen/"]\n'})
    assert found(tmp_path) == ["build/b.py", "m_pb2.py", "ok.py"]


def test_explicit_files_are_linted_unless_force_exclude(tmp_path: Path) -> None:
    write(tmp_path, {"pyproject.toml": '[tool.ddplint]\nextend-exclude = ["gen/"]\n', "gen/a.py": "", ".gitignore": "ignored.py\n", "ignored.py": ""})
    (tmp_path / ".git").mkdir()
    assert found(tmp_path, "gen/a.py", "ignored.py") == ["gen/a.py", "ignored.py"]
    assert found(tmp_path, "gen/a.py", "ignored.py", force_exclude=True) == []


def test_explicit_excluded_directory_is_linted(tmp_path: Path) -> None:
    write(tmp_path, {"build/a.py": "", "build/sub/b.py": "", "build/.venv/c.py": ""})
    assert found(tmp_path, "build") == ["build/a.py", "build/sub/b.py"]


def test_gitignore(tmp_path: Path) -> None:
    (tmp_path / ".git" / "info").mkdir(parents=True)
    write(
        tmp_path,
        {
            ".git/info/exclude": "local_only.py\n",
            ".gitignore": "*.gen.py\noutputs/\n!keep.gen.py\n",
            "src/.gitignore": "scratch/\n",
            "a.py": "", "x.gen.py": "", "keep.gen.py": "", "local_only.py": "",
            "outputs/run.py": "", "src/b.py": "", "src/scratch/c.py": "", "src/scratch2/d.py": "",
        },
    )  # fmt: skip
    assert found(tmp_path) == ["a.py", "keep.gen.py", "src/b.py", "src/scratch2/d.py"]
    # Starting below the root still applies the root's .gitignore.
    write(tmp_path, {"src/x.gen.py": ""})
    assert found(tmp_path, "src") == ["src/b.py", "src/scratch2/d.py"]


def test_symlinks(tmp_path: Path) -> None:
    write(tmp_path, {"real/a.py": "", "other.py": ""})
    (tmp_path / "real" / "back").symlink_to(tmp_path)  # a loop through the root
    (tmp_path / "alias.py").symlink_to(tmp_path / "other.py")
    (tmp_path / "dangling.py").symlink_to(tmp_path / "nowhere.py")
    resolver = ConfigResolver(cwd=tmp_path)
    result = discover([Path(".")], resolver)
    assert [f.display for f in result.files] == ["alias.py", "other.py", "real/a.py"]
    messages = sorted((n.path, n.message.split(" (")[0]) for n in result.notices)
    assert messages == [("dangling.py", "broken symlink"), ("real/back", "symlink loop")]
