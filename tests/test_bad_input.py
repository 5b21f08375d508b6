"""SPEC §5: no input crashes the linter or hides the other files' findings."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import run_script, write

BAD = "from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"


@pytest.fixture
def mess(tmp_path: Path) -> Path:
    """A directory holding every kind of bad input next to one real finding."""
    write(
        tmp_path,
        {
            "real.py": BAD,
            "syntax.py": "def train(model\n    pass\n",
            "latin1.py": b"name = 'caf\xe9'\n",
            "nul.py": b"x = 1\x00\n",
            "empty.py": "",
            "bad_cookie.py": b"# -*- coding: klingon -*-\nx = 1\n",
            "deep.py": "x = " + "(" * 250 + "1" + ")" * 250 + "\n",
            "unreadable.py": BAD,
        },
    )
    (tmp_path / "dangling.py").symlink_to(tmp_path / "missing-target.py")
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "loop").symlink_to(tmp_path / "pkg")
    (tmp_path / "self.py").symlink_to(tmp_path / "self.py")
    os.chmod(tmp_path / "unreadable.py", 0)
    return tmp_path


def test_every_bad_input_is_reported_and_the_rest_is_linted(ddplint, mess, monkeypatch) -> None:
    write(mess, {"huge.py": "".join(f"value_{i} = {i}\n" for i in range(50_000)) + BAD})
    if os.geteuid() == 0:  # root reads mode-000 files: make the open fail as it would for a user
        real_open = os.open

        def open_(path, flags, *args, **kwargs):
            if os.fspath(path).endswith("unreadable.py"):
                raise PermissionError(13, "Permission denied")
            return real_open(path, flags, *args, **kwargs)

        monkeypatch.setattr(os, "open", open_)
    run = ddplint(".", "--format", "json", cwd=mess)
    findings = {(f["path"], f["rule"], f["line"]) for f in run.json() if "rule" in f}
    notified = [(n["path"], n["level"]) for n in run.json() if n.get("kind") == "notification"]
    assert ("unreadable.py", "error") in notified  # in the JSON too, as SARIF notifications
    assert ("real.py", "DDP014", 2) in findings
    assert ("huge.py", "DDP014", 50_002) in findings
    for name in ("syntax.py", "latin1.py", "nul.py", "bad_cookie.py", "deep.py"):
        assert (name, "DDP000", 1) in findings  # deep.py: CPython's "too many nested parentheses"
    assert not any(path == "empty.py" for path, _, _ in findings)
    latin1 = next(f for f in run.json() if f["path"] == "latin1.py")
    assert "not valid utf-8" in latin1["message"] and latin1["column"] == 12
    errors = run.stderr.splitlines()
    assert "unreadable.py: error: cannot read file: Permission denied" in errors
    assert any(line.startswith("dangling.py: error: broken symlink") for line in errors)
    assert any(line.startswith("self.py: error: broken symlink") for line in errors)
    assert [line for line in errors if "symlink loop" in line] == [
        f"pkg/loop: warning: symlink loop (points to {mess / 'pkg'}); not followed"
    ]
    assert len(errors) == 4 and "Traceback" not in run.stderr
    assert run.status == 1


def test_bad_input_through_the_console_script(mess) -> None:
    run = run_script(".", cwd=mess)
    assert run.status == 1 and "Traceback" not in run.stderr
    assert "real.py:2:1: DDP014" in run.stdout
    assert "syntax.py:1:10: DDP000" in run.stdout


def test_deep_nesting_does_not_crash(ddplint, tmp_path) -> None:
    # Valid for CPython (below its limit of 200 brackets) and deep for LibCST and the walker.
    nested = "x = " + "[" * 190 + "]" * 190 + "\n"
    chain = "y = " + " + ".join(["1"] * 900) + "\n"
    write(tmp_path, {"deep.py": nested + chain + BAD, "real.py": BAD})
    run = ddplint(".", cwd=tmp_path)
    assert "Traceback" not in run.stderr
    assert "real.py:2:1: DDP014" in run.stdout
    assert "deep.py:4:1: DDP014" in run.stdout


def test_explicit_unreadable_symlink_argument(ddplint, tmp_path) -> None:
    """README: a broken symlink gets a one-line error, exit 1, and every other
    file is still linted (pre-commit passes staged files explicitly)."""
    (tmp_path / "link.py").symlink_to(tmp_path / "missing.py")
    write(tmp_path, {"real.py": BAD})
    run = ddplint("link.py", "real.py", cwd=tmp_path)
    assert run.status == 1
    assert run.stderr == f"link.py: error: broken symlink (points to {tmp_path / 'missing.py'}: No such file or directory); not linted\n"
    assert "real.py:2:1: DDP014" in run.stdout


def test_warnings_about_the_users_code_stay_off_stderr(tmp_path: Path) -> None:
    """Invalid escapes are the user's Python's business, not lines in our output."""
    write(tmp_path, {"escapes.py": 'import re\nPATTERN = re.compile("\\d+")\n' + BAD})
    run = run_script(".", cwd=tmp_path, env={"PYTHONWARNINGS": "always"})
    assert run.status == 1 and "DDP" in run.stdout
    assert run.stderr == ""


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ('"""doc"""\nimport os\nfrom __future__ import annotations\n', "from __future__ imports must occur at the beginning of the file"),
        ('"""doc"""\n"not a docstring"\nfrom __future__ import annotations\n', "from __future__ imports must occur at the beginning of the file"),
        ("from __future__ import rested_snopes\n", "future feature rested_snopes is not defined"),
        ("from __future__ import braces\n", "not a chance"),
    ],
)
def test_future_statements_rejected_by_the_compiler_are_ddp000(source: str, message: str) -> None:
    """CPython rejects these after parsing (in its compiler); `python file.py` fails, so DDP000 says so."""
    from ddplint.rule import all_rules_settings
    from ddplint.engine import check_source

    with pytest.raises(SyntaxError, match=message):
        compile(source, "f.py", "exec", dont_inherit=True)
    (finding,) = check_source("f.py", source, all_rules_settings()).findings
    assert finding.rule == "DDP000" and finding.message.startswith(message)


def test_valid_future_statements_are_fine() -> None:
    from ddplint.rule import all_rules_settings
    from ddplint.engine import check_source

    source = '"""doc"""\n# comment\nfrom __future__ import annotations\nfrom __future__ import division, print_function\nx = "__future__"\n'
    assert not check_source("f.py", source, all_rules_settings()).findings


def _linted(run) -> set[tuple[str, str, int]]:
    return {(f["path"], f["rule"], f["line"]) for f in run.json()}


@pytest.mark.parametrize("codec", ["hex", "rot13", "base64", "zlib", "bz2", "uu", "quopri", "punycode", "undefined"])
def test_a_cookie_naming_a_non_text_codec_is_ddp000(ddplint, tmp_path, codec) -> None:
    """`python a.py` says "SyntaxError: encoding problem: hex": a finding, not an internal error."""
    write(tmp_path, {"a.py": f"# coding: {codec}\nx = 1\n", "real.py": BAD})
    with pytest.raises(SyntaxError):
        compile((tmp_path / "a.py").read_bytes(), "a.py", "exec", dont_inherit=True)
    run = ddplint(".", "--format", "json", "--no-cache", cwd=tmp_path)
    assert _linted(run) == {("a.py", "DDP000", 1), ("real.py", "DDP014", 2)}
    (finding,) = [f for f in run.json() if f["path"] == "a.py"]
    assert finding["message"].startswith(f"encoding problem: {codec}")
    assert run.status == 1 and run.stderr == ""


COMPILE_TIME_ERRORS = [
    ("def f(a, a): pass\n", 1),
    ("x = 1\nreturn x\n", 2),
    ("yield 1\n", 1),
    ("class C:\n    yield 1\n", 2),
    ("await x\n", 1),
    ("break\n", 1),
    ("if x:\n    continue\n", 2),
    ("def f():\n    for x in y:\n        pass\n    break\n", 4),
    ("nonlocal x\n", 1),
    ("def f():\n    x = 1\n    global x\n", 3),
    ("def f():\n    print(x)\n    global x\n", 3),
    ("def f():\n    from os import *\n", 2),
    ("[x := 1 for x in range(3)]\n", 1),
    ("def f():\n    return [(y := 0) for y in z]\n", 2),
    ("def f():\n    x = 1\n    def g():\n        nonlocal y\n", 4),
    ("def f(a):\n    global a\n", 2),
    ("async def f():\n    yield 1\n    return 2\n", 3),
    ("*a = 1\n", 1),
    ("match x:\n    case a:\n        pass\n    case 1:\n        pass\n", 2),
    ('"""doc"""\nimport os\nfrom __future__ import annotations\n', 3),
]


@pytest.mark.parametrize(("source", "line"), COMPILE_TIME_ERRORS)
def test_errors_cpython_raises_at_compile_time_are_ddp000(source: str, line: int) -> None:
    """CPython parses these and rejects them in its compiler: `python file.py`
    fails, so DDP000 says so (with CPython's message, on its line)."""
    from ddplint.rule import all_rules_settings
    from ddplint.engine import check_source

    with pytest.raises(SyntaxError) as raised:
        compile(source, "f.py", "exec", dont_inherit=True)
    findings = check_source("f.py", source, all_rules_settings()).findings
    assert [(f.rule, f.span.line) for f in findings] == [("DDP000", line)]
    assert findings[0].message.startswith(raised.value.msg)


def test_compile_time_error_through_the_command_line(ddplint, tmp_path) -> None:
    write(tmp_path, {"dup.py": "import torch.distributed as dist\ndef f(a, a):\n    dist.barrier()\n", "real.py": BAD})
    run = ddplint(".", cwd=tmp_path)
    assert "dup.py:2:10: DDP000 duplicate argument 'a' in function definition" in run.stdout
    assert "real.py:2:1: DDP014" in run.stdout and run.status == 1


def test_file_libcst_cannot_parse_fails_the_run_and_the_rest_is_linted(ddplint, tmp_path) -> None:
    """Over 3,000 adjacent string literals: valid Python, beyond LibCST's parser.
    Its findings are lost, so the run must not pass: a one-line error, status 1."""
    strings = "x = (" + " ".join(['"a"'] * 3001) + ")\n"
    write(tmp_path, {"strings.py": BAD + strings, "real.py": BAD})
    compile(strings, "strings.py", "exec", dont_inherit=True)  # CPython accepts it
    run = ddplint(".", "--no-cache", cwd=tmp_path)
    assert "real.py:2:1: DDP014" in run.stdout
    (error,) = run.stderr.splitlines()
    assert error.startswith("strings.py: error: LibCST cannot parse this file, which CPython accepts; not linted (")
    assert run.status == 1
    alone = ddplint("strings.py", "--no-cache", cwd=tmp_path)
    assert alone.status == 1 and "DDP" not in alone.stdout


def _short_lines(count: int) -> str:
    """`count` short lines, then the rule token that makes the file parsed."""
    return "x=1\n" * (count - 2) + BAD


def test_a_file_above_max_lines_is_not_given_to_libcst(ddplint, tmp_path) -> None:
    """The default limit bounds LibCST's time and memory (250,000 short lines
    took 45 s and 2.6 GB): a note naming the file, the count and the key."""
    write(tmp_path, {"long.py": _short_lines(100_003), "real.py": BAD})
    run = ddplint(".", "--no-cache", cwd=tmp_path)
    assert run.stderr == "long.py: warning: 100,003 lines is above max-lines (100,000); not linted\n"
    assert "real.py:2:1: DDP014" in run.stdout and "long.py" not in run.stdout
    assert run.status == 1  # real.py's finding


def test_max_lines_is_configurable(ddplint, tmp_path) -> None:
    write(tmp_path, {"long.py": _short_lines(1_001), "ddplint.toml": "max-lines = 1000\n"})
    run = ddplint(".", "--no-cache", cwd=tmp_path)
    assert run.stderr == "long.py: warning: 1,001 lines is above max-lines (1,000); not linted\n"
    assert run.status == 0  # as for a file above max-file-size: a note, and the run passes (README)
    write(tmp_path, {"ddplint.toml": "max-lines = 1001\n"})
    run = ddplint(".", "--no-cache", cwd=tmp_path)
    assert "long.py:1001:1: DDP014" in run.stdout and run.stderr == "" and run.status == 1
    write(tmp_path, {"ddplint.toml": "max-lines = 0\n"})
    run = ddplint(".", "--no-cache", cwd=tmp_path)
    assert run.status == 2 and "max-lines" in run.stderr and "Traceback" not in run.stderr


def test_max_lines_skips_the_file_before_any_parse(ddplint, tmp_path) -> None:
    """Like max-file-size: CPython's tree of a million lines costs gigabytes too."""
    write(tmp_path, {"data.py": "x=1\n" * 1_500 + "return\n", "ddplint.toml": "max-lines = 1000\n"})
    run = ddplint(".", "--no-cache", cwd=tmp_path)
    assert run.stderr == "data.py: warning: 1,501 lines is above max-lines (1,000); not linted\n"
    assert "DDP000" not in run.stdout and run.status == 0


def test_a_named_pipe_is_refused_not_read(tmp_path) -> None:
    """`mkfifo y.py && ddplint y.py` blocked forever: only regular files are read."""
    write(tmp_path, {"real.py": BAD, **{f"ok{i}.py": "x = 1\n" for i in range(8)}})  # enough files for a pool
    os.mkfifo(tmp_path / "y.py")
    for args in (["y.py", "real.py", "-j", "1"], [".", "-j", "2"]):  # given, and found in a directory
        run = run_script(*args, "--no-cache", cwd=tmp_path, timeout=60)
        assert run.stderr == "y.py: error: not a regular file (a named pipe); not linted\n"
        assert "real.py:2:1: DDP014" in run.stdout
        assert run.status == 1


def test_a_link_to_a_device_is_refused_not_read(tmp_path) -> None:
    """`ln -s /dev/zero z.py && ddplint z.py` read until memory ran out."""
    import resource

    def cap_memory() -> None:  # before the fix, a quick MemoryError instead of the machine's memory
        resource.setrlimit(resource.RLIMIT_AS, (2 * 2**30, 2 * 2**30))

    write(tmp_path, {"real.py": BAD})
    (tmp_path / "z.py").symlink_to("/dev/zero")
    run = run_script("z.py", "real.py", "--no-cache", cwd=tmp_path, timeout=60, preexec_fn=cap_memory)
    assert run.stderr == "z.py: error: not a regular file (a character device); not linted\n"
    assert "real.py:2:1: DDP014" in run.stdout and run.status == 1


def test_reading_stops_at_max_file_size(tmp_path) -> None:
    from ddplint.reading import FileTooLarge, read_source

    write(tmp_path, {"a.py": "x = 1\n" * 100})
    assert read_source(tmp_path / "a.py", 600) == b"x = 1\n" * 100
    with pytest.raises(FileTooLarge) as raised:
        read_source(tmp_path / "a.py", 599)
    assert (raised.value.size, raised.value.limit) == (600, 599)
