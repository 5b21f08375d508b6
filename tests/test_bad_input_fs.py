"""SPEC §5 on a hostile file system and a damaged cache: file names that are
not UTF-8, unreadable directories, over-long paths, bad explicit paths,
tampered cache entries and a disk that is full. Each time the run goes on
for the other files and exits as README's table says."""

from __future__ import annotations

import json
import os
import resource
import subprocess
from pathlib import Path

import pytest

from conftest import assert_valid_sarif, console_script, write

#: A collective only rank 0 reaches: DDP001, with a related location (the guard).
HANG = "import torch.distributed as dist\nif dist.get_rank() == 0:\n    dist.barrier()\n"


def _strings(value):
    """Every string in decoded JSON, keys included."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield key
            yield from _strings(item)
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)


def _assert_valid_text(data) -> None:
    """Strict JSON readers reject lone surrogates: none may reach the output."""
    for text in _strings(data):
        text.encode("utf-8")  # raises on a surrogate


# ------------------------------------------------------- names that are not UTF-8


@pytest.fixture
def undecodable(tmp_path: Path) -> Path:
    """`b<0xff>.py` (a finding) and `d<0xfe>/c.py` (a finding), next to a plain file."""
    root = os.fsencode(tmp_path)
    try:
        with open(root + b"/b\xff.py", "wb") as handle:
            handle.write(HANG.encode())
        os.mkdir(root + b"/d\xfe")
        with open(root + b"/d\xfe/c.py", "wb") as handle:
            handle.write(HANG.encode())
    except (OSError, UnicodeError):  # pragma: no cover - a file system that insists on UTF-8 names
        pytest.skip("this file system does not store names that are not UTF-8")
    write(tmp_path, {"ok.py": HANG})
    return tmp_path


def test_a_name_that_is_not_utf8_is_linted_with_and_without_the_cache(ddplint, undecodable) -> None:
    for _ in range(2):  # a cold and a warm run: both compute cache keys from the names
        run = ddplint(".", cwd=undecodable)
        assert run.status == 1, run.stderr
        lines = run.stdout.splitlines()
        assert [line.split(" ")[:2] for line in lines[:3]] == [
            ["b\\xff.py:3:5:", "DDP001"], ["d\\xfe/c.py:3:5:", "DDP001"], ["ok.py:3:5:", "DDP001"]
        ]
        assert len(run.stdout.splitlines()) == 4 and run.stderr == ""
    assert list((undecodable / ".ddplint_cache").rglob("*.json"))


def test_json_and_gitlab_show_the_bytes_as_backslash_escapes(ddplint, undecodable) -> None:
    run = ddplint(".", "--format", "json", cwd=undecodable)
    assert run.status == 1, run.stderr
    findings = run.json()
    _assert_valid_text(findings)
    assert {f["path"] for f in findings} == {"b\\xff.py", "d\\xfe/c.py", "ok.py"}
    assert {r["path"] for f in findings for r in f["related"]} == {"b\\xff.py", "d\\xfe/c.py", "ok.py"}
    assert len({f["fingerprint"] for f in findings}) == 3

    run = ddplint(".", "--format", "gitlab", cwd=undecodable)
    assert run.status == 1, run.stderr
    _assert_valid_text(run.json())
    assert {i["location"]["path"] for i in run.json()} == {"b\\xff.py", "d\\xfe/c.py", "ok.py"}


def test_sarif_percent_encodes_the_names_bytes(ddplint, undecodable, sarif_validator) -> None:
    run = ddplint(".", "--format", "sarif", cwd=undecodable)
    assert run.status == 1, run.stderr
    log = run.json()
    _assert_valid_text(log)
    assert_valid_sarif(sarif_validator, log)
    uris = {r["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] for r in log["runs"][0]["results"]}
    assert uris == {"b%FF.py", "d%FE/c.py", "ok.py"}


def test_github_annotations_and_notices_show_backslash_escapes(ddplint, undecodable) -> None:
    os.symlink("missing.py", os.fsencode(undecodable) + b"/e\xfd.py")  # a broken link: a notice naming it
    run = ddplint(".", "--format", "github", cwd=undecodable)
    assert run.status == 1
    assert "::error file=b\\xff.py,line=3," in run.stdout
    assert run.stderr.startswith("e\\xfd.py: error: broken symlink")


def test_a_strict_utf8_terminal_gets_the_escapes(undecodable) -> None:
    from conftest import run_script

    run = run_script(".", "--no-cache", cwd=undecodable, env={"PYTHONIOENCODING": "utf-8:strict"})
    assert run.status == 1 and "Traceback" not in run.stderr and run.stderr == ""
    assert "b\\xff.py:3:5: DDP001" in run.stdout


# ------------------------------------------------------------- a damaged cache


def _entries(project: Path, text: str) -> list[Path]:
    return [e for e in (project / ".ddplint_cache").rglob("*.json") if text in e.read_text(encoding="utf-8")]


def test_a_one_byte_edit_in_a_cache_entry_changes_nothing(ddplint, tmp_path) -> None:
    write(tmp_path, {"a.py": HANG})
    cold = ddplint(".", "--format", "json", cwd=tmp_path)
    entries = _entries(tmp_path, "the job hangs")
    assert cold.status == 1 and entries
    originals = {e: e.read_bytes() for e in entries}
    for entry in entries:  # still valid JSON, still a well-typed result: only the checksum tells
        entry.write_bytes(entry.read_bytes().replace(b"the job hangs", b"the job hangz"))
    warm = ddplint(".", "--format", "json", "--debug", cwd=tmp_path)
    assert warm.status == 1 and warm.json() == cold.json()
    debug = [line for line in warm.stderr.splitlines() if line.startswith("ddplint: debug: cache entry ")]
    assert debug and all(line.endswith("checksum mismatch; ignored, linted again and rewritten") for line in debug)
    assert {e: e.read_bytes() for e in entries} == originals  # rewritten
    assert ddplint(".", "--format", "json", cwd=tmp_path).stderr == ""  # and quiet without --debug


def test_a_null_path_in_a_cache_entry_does_not_break_later_runs(ddplint, tmp_path) -> None:
    write(tmp_path, {"a.py": HANG})
    cold = ddplint(".", "--format", "json", cwd=tmp_path)
    for entry in _entries(tmp_path, "the job hangs"):
        payload = json.loads(entry.read_text(encoding="utf-8"))
        for finding in payload["result"]["findings"]:
            finding["related"][0][0] = None
        entry.write_text(json.dumps(payload), encoding="utf-8")
    for fmt in ("json", "sarif", "github", "gitlab", "json"):  # the last: after the entries were rewritten
        run = ddplint(".", "--format", fmt, cwd=tmp_path)
        assert run.status == 1 and run.stderr == "", (fmt, run.stderr)
    assert run.json() == cold.json()


def test_a_cache_entry_of_the_wrong_types_is_refused(tmp_path) -> None:
    """Whatever wrote it (with a right checksum), a `null` path or a string
    line number is not a result: the entry is a miss, and says why."""
    from ddplint.cache import Cache
    from ddplint.model import Finding, Related, Severity, Span
    from ddplint.result import FileResult

    heard: list[str] = []
    cache = Cache(tmp_path / "cache", on_bad_entry=heard.append)
    good = Finding("DDP001", "x", Severity.ERROR, "m", "a.py", Span(3, 5, 3, 19), (Related("a.py", Span(2, 1, 2, 9), "g"),))
    broken = {
        "null-related-path": FileResult((Finding(**{**good.__dict__, "related": (Related(None, Span(2, 1, 2, 9), "g"),)}),)),
        "string-line": FileResult((Finding(**{**good.__dict__, "span": Span("3", 5, 3, 19)}),)),
        "bool-parsed": FileResult((good,), parsed=1),
    }
    cache.put("ok", FileResult((good,), parsed=True))
    for key, result in broken.items():
        cache.put(key, result)
    assert cache.get("ok") == FileResult((good,), parsed=True)
    assert [cache.get(key) for key in broken] == [None, None, None]
    assert len(heard) == 3 and all("not a lint result (TypeError: FileResult." in line for line in heard)
    assert "FileResult.findings[0].related[0].path: expected str, got NoneType" in heard[0]


@pytest.mark.parametrize("damage", ["[" * 100_000 + "]" * 100_000, '{"format": 5, "key": null}', "\udcff"])
def test_an_entry_that_is_no_entry_is_a_miss(ddplint, tmp_path, damage) -> None:
    write(tmp_path, {"a.py": HANG})
    cold = ddplint(".", "--format", "json", cwd=tmp_path)
    for entry in _entries(tmp_path, '"format"'):
        entry.write_bytes(damage.encode("utf-8", "surrogateescape"))
    warm = ddplint(".", "--format", "json", "--debug", cwd=tmp_path)
    assert warm.status == 1 and warm.json() == cold.json()
    assert "ddplint: debug: cache entry " in warm.stderr and "Traceback" not in warm.stderr


def _limited(limit: int):
    """For a subprocess: files it writes cannot grow past `limit` bytes (as on a full disk)."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return apply


def test_failed_cache_writes_leave_no_temporary_files(tmp_path) -> None:
    write(tmp_path, {f"m{i}.py": HANG for i in range(5)})
    for _ in range(2):
        proc = subprocess.run(
            [console_script(), ".", "--debug"], cwd=tmp_path, capture_output=True, text=True, timeout=120,
            preexec_fn=_limited(100),  # the cache's .gitignore fits; no entry does
        )  # fmt: skip
        assert proc.returncode == 1 and proc.stdout.count(": DDP001 ") == 5, proc.stderr
        assert "cache: cannot write " in proc.stderr and "Traceback" not in proc.stderr
    left = [p.name for p in (tmp_path / ".ddplint_cache").rglob("*") if p.is_file()]
    assert left == [".gitignore"]


# ------------------------------------------- directories the walk cannot enter


def _deep_tree(root: Path, levels: int, name: str = "d" * 200) -> None:
    """`root/d…/d…/…` `levels` deep, past PATH_MAX (4096) when deep enough,
    with a finding in `x.py` at levels 2 and `levels` (built through
    directory descriptors: no path this long can be named)."""
    root.mkdir()
    fd = os.open(root, os.O_RDONLY)
    try:
        for level in range(1, levels + 1):
            os.mkdir(name, dir_fd=fd)
            inner = os.open(name, os.O_RDONLY, dir_fd=fd)
            os.close(fd)
            fd = inner
            if level in (2, levels):
                out = os.open("x.py", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd)
                os.write(out, HANG.encode())
                os.close(out)
    finally:
        os.close(fd)


def test_a_path_longer_than_path_max_is_one_notice(ddplint, tmp_path) -> None:
    write(tmp_path, {"ok.py": HANG})
    _deep_tree(tmp_path / "deep", 25)
    run = ddplint(".", "--format", "json", cwd=tmp_path)
    assert run.status == 1 and "Traceback" not in run.stderr
    paths = sorted(f["path"] for f in run.json() if "rule" in f)
    (note,) = [n for n in run.json() if n.get("kind") == "notification"]
    assert note["message"] == "cannot read directory: File name too long"
    assert paths[-1] == "ok.py" and paths[0] == "deep/" + "/".join(["d" * 200] * 2) + "/x.py"
    assert len(paths) == 2
    (notice,) = run.stderr.splitlines()
    assert notice.endswith(": error: cannot read directory: File name too long")


def test_an_unreadable_directory_is_one_notice(ddplint, tmp_path, monkeypatch) -> None:
    write(tmp_path, {"ok.py": HANG, "locked/inner.py": HANG, "z/after.py": HANG})
    locked = tmp_path / "locked"
    os.chmod(locked, 0)
    if os.geteuid() == 0:  # root enters mode-000 directories: fail as the kernel would for a user
        inside = str(locked) + os.sep

        def refusing(real, listing: bool):
            def call(path, *args, **kwargs):
                if os.fspath(path).startswith(inside) or (listing and os.fspath(path) == str(locked)):
                    raise PermissionError(13, "Permission denied", os.fspath(path))
                return real(path, *args, **kwargs)

            return call

        monkeypatch.setattr(os, "stat", refusing(os.stat, listing=False))
        monkeypatch.setattr(os, "scandir", refusing(os.scandir, listing=True))
    try:
        run = ddplint(".", "--format", "json", cwd=tmp_path)
    finally:
        monkeypatch.undo()
        os.chmod(locked, 0o755)
    assert run.status == 1 and "Traceback" not in run.stderr
    assert sorted(f["path"] for f in run.json() if "rule" in f) == ["ok.py", "z/after.py"]
    assert [n["path"] for n in run.json() if n.get("kind") == "notification"] == ["locked"]
    assert run.stderr == "locked: error: cannot read directory: Permission denied\n"


# ---------------------------------------------- explicit paths that cannot be read


def test_explicit_broken_links_are_notices_and_the_rest_is_linted(ddplint, tmp_path) -> None:
    write(tmp_path, {"a.py": HANG, "z.py": HANG})
    (tmp_path / "gone.py").symlink_to("missing.py")
    (tmp_path / "self.py").symlink_to("self.py")
    run = ddplint("gone.py", "a.py", "self.py", "z.py", "--format", "json", cwd=tmp_path)
    assert run.status == 1
    assert sorted(f["path"] for f in run.json() if "rule" in f) == ["a.py", "z.py"]
    assert [n["path"] for n in run.json() if n.get("kind") == "notification"] == ["gone.py", "self.py"]
    assert run.stderr.splitlines() == [
        "gone.py: error: broken symlink (points to missing.py: No such file or directory); not linted",
        "self.py: error: broken symlink (points to self.py: Too many levels of symbolic links); not linted",
    ]


def test_an_explicit_unreadable_file_is_a_notice_not_a_usage_error(ddplint, tmp_path, monkeypatch) -> None:
    write(tmp_path, {"a.py": HANG, "secret.py": HANG, "z.py": HANG})
    secret = tmp_path / "secret.py"
    os.chmod(secret, 0)
    if os.geteuid() == 0:  # root may read mode-000 files: refuse as the kernel would for a user
        real_access, real_open = os.access, os.open
        monkeypatch.setattr(os, "access", lambda p, mode, **kw: Path(p).name != "secret.py" and real_access(p, mode, **kw))

        def open_(path, flags, *args, **kwargs):
            if Path(path).name == "secret.py":
                raise PermissionError(13, "Permission denied")
            return real_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", open_)
    run = ddplint("a.py", "secret.py", "z.py", "--format", "json", cwd=tmp_path)
    assert run.status == 1, run.stderr
    assert sorted(f["path"] for f in run.json() if "rule" in f) == ["a.py", "z.py"]
    assert [n["path"] for n in run.json() if n.get("kind") == "notification"] == ["secret.py"]
    assert run.stderr == "secret.py: error: cannot read file: Permission denied\n"


def test_a_missing_explicit_path_is_still_a_usage_error(ddplint, tmp_path) -> None:
    write(tmp_path, {"a.py": HANG})
    run = ddplint("a.py", "nothere.py", cwd=tmp_path)
    assert run.status == 2 and run.stderr == "ddplint: error: path does not exist: nothere.py\n"


# ------------------------------------------------------------ bad configuration


def _config_error(ddplint, project: Path, toml: str, *args: str) -> str:
    """The one line a bad config gives (exit 2, no traceback); nothing is linted."""
    write(project, {"pyproject.toml": toml, "a.py": HANG})
    run = ddplint(".", *args, cwd=project)
    assert run.status == 2 and run.stdout == "" and run.stderr.count("\n") == 1, run.stderr
    assert run.stderr.startswith("ddplint: error: ")
    return run.stderr[len("ddplint: error: ") : -1]


@pytest.mark.parametrize("depth", [1_000, 100_000])
def test_deeply_nested_toml_is_a_config_error_naming_the_file(ddplint, tmp_path, depth) -> None:
    toml = "[tool.ddplint]\nselect = " + "[" * depth + "]" * depth + "\n"
    message = _config_error(ddplint, tmp_path, toml)
    assert message == "pyproject.toml: invalid TOML: arrays or tables nested too deeply"
    # and as --config, from anywhere
    (tmp_path / "cfg").mkdir()
    write(tmp_path / "cfg", {"deep.toml": "x = " + "{a = " * depth + "1" + "}" * depth + "\n"})
    (tmp_path / "pyproject.toml").unlink()
    run = ddplint(".", "--config", "cfg/deep.toml", cwd=tmp_path)
    assert run.status == 2 and run.stderr == "ddplint: error: cfg/deep.toml: invalid TOML: arrays or tables nested too deeply\n"


@pytest.mark.parametrize(
    ("pattern", "reason"),
    [
        ('"!"', "not a gitignore-style pattern"),
        ('"\\\\"', "not a gitignore-style pattern"),  # one backslash
        ('"[z-a]"', "bad character range z-a"),
    ],
)
@pytest.mark.parametrize("key", ["exclude", "extend-exclude", "per-file-ignores"])
def test_a_glob_pattern_the_matcher_rejects_is_a_config_error(ddplint, tmp_path, pattern, reason, key) -> None:
    value = f"{{ {pattern} = [\"DDP001\"] }}" if key == "per-file-ignores" else f"[{pattern}]"
    message = _config_error(ddplint, tmp_path, f"[tool.ddplint]\n{key} = {value}\n")
    shown = {'"!"': "'!'", '"\\\\"': "'\\\\'", '"[z-a]"': "'[z-a]'"}[pattern]
    assert message == f"pyproject.toml: [tool.ddplint] {key}: invalid glob pattern {shown}: {reason}"


@pytest.mark.parametrize("key", ["select", "extend-select", "ignore"])
@pytest.mark.parametrize("value", ['[""]', '["  "]', '["DDP001", ""]'])
def test_an_empty_selector_in_the_config_is_refused(ddplint, tmp_path, key, value) -> None:
    message = _config_error(ddplint, tmp_path, f"[tool.ddplint]\n{key} = {value}\n")
    assert message == f"pyproject.toml: [tool.ddplint] {key}: empty rule code or prefix"


def test_an_empty_selector_in_per_file_ignores_is_refused(ddplint, tmp_path) -> None:
    message = _config_error(ddplint, tmp_path, '[tool.ddplint]\nper-file-ignores = { "a.py" = [""] }\n')
    assert message == "pyproject.toml: [tool.ddplint] per-file-ignores: 'a.py': empty rule code or prefix"


@pytest.mark.parametrize("option", ["--select", "--extend-select", "--ignore"])
@pytest.mark.parametrize("value", ["", " ", "DDP001,", ",DDP001"])
def test_an_empty_selector_on_the_command_line_is_a_usage_error(ddplint, tmp_path, option, value) -> None:
    """`--select "$UNSET_VAR"` ran no rule and passed."""
    write(tmp_path, {"a.py": HANG})
    run = ddplint(".", option, value, cwd=tmp_path)
    assert run.status == 2 and run.stdout == ""
    assert run.stderr == f"ddplint: error: {option}: empty rule code or prefix (an unset variable?)\n"
