"""`--fix` loses nothing: the output minus the intended edits is the input,
byte for byte (comments, BOM, CRLF, tabs), and a second `--fix` changes
nothing.

Over the fix fixtures, variations of them (BOM, CRLF, tabs, comments
between the arguments; hypothesis), and when the training repositories are
at hand (`/work/cache/training`; CI has none) a sample of their files.

The intended edits are the ones the fixes report (`Fix.edits`): outside them
the text is untouched by construction of `apply_edits`, so what is checked
is that an edit removes no comment but with the line it stands on (a line
whose code is all removed), writes line breaks and indentation the way the
file does, and that the whole fix loop keeps every other comment.
"""

from __future__ import annotations

import io
import random
import re
import tokenize
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from conftest import FIXTURES, run_script, write
from ddplint.engine import check_source
from ddplint.engine.fixer import FixOutcome, applicable, fix_source
from ddplint.engine.source import SourceProblem, python_ast
from ddplint.fixing import fix_file
from ddplint.rule import all_rules_settings
from ddplint.textedit import LineIndex, disjoint

ALL = all_rules_settings()
FIX_FIXTURES = sorted(FIXTURES.glob("DDP*/fix_*.py"))
TRAINING = Path("/work/cache/training")
BOM = b"\xef\xbb\xbf"


def _comments(text: str) -> list[tuple[int, int, str]]:
    """(start offset, end offset, text) of each comment."""
    index = LineIndex(text)
    try:
        return [
            (index.offset(t.start[0], t.start[1] + 1), index.offset(t.end[0], t.end[1] + 1), t.string)
            for t in tokenize.generate_tokens(io.StringIO(text).readline)
            if t.type == tokenize.COMMENT
        ]
    except (tokenize.TokenError, SyntaxError):
        return []


def _first_pass_edits(path: str, text: str) -> list[tuple[int, int, str]]:
    """The edits the first pass of `--fix --unsafe-fixes` makes: (start, end, content)."""
    index = LineIndex(text)
    edits = []
    for finding in check_source(path, text, ALL).findings:
        if applicable(finding, unsafe=True):
            placed = [(*index.range(e.span), e.content) for e in finding.fix.edits]
            if disjoint([(a, b) for a, b, _ in edits + placed]):
                edits += placed
    return edits


def _line_of(text: str, offset: int) -> tuple[int, int]:
    """[start, end) of the line holding `offset`, its line break included."""
    start = text.rfind("\n", 0, offset) + 1
    end = text.find("\n", offset)
    return start, len(text) if end < 0 else end + 1


def _removes_line(text: str, start: int, end: int, line_start: int, line_end: int) -> bool:
    """Whether removing [start, end) removes the whole line [line_start,
    line_end): its text and one line break (its own or the one before it)."""
    body_end = line_end - (2 if text[line_start:line_end].endswith("\r\n") else text[line_start:line_end].endswith("\n"))
    before = 2 if text[max(line_start - 2, 0) : line_start] == "\r\n" else 1
    return (start <= line_start and line_end <= end) or (start <= line_start - before and body_end <= end)


def _same_deletions(text: str, start: int, end: int, content: str) -> list[tuple[int, int]]:
    """The ranges whose removal has the same effect as removing [start, end)
    (a deletion can slide over repeated text: `huffle=True,\n    s` is the
    line `    shuffle=True,\n`); just [start, end) for a replacement."""
    ranges = [(start, end)]
    if content:
        return ranges
    a, b = start, end
    while a > 0 and text[a - 1] == text[b - 1]:
        a, b = a - 1, b - 1
        ranges.append((a, b))
    a, b = start, end
    while b < len(text) and text[a] == text[b]:
        a, b = a + 1, b + 1
        ranges.append((a, b))
    return ranges


def assert_fix_loses_nothing(path: str, text: str) -> FixOutcome:
    """Fix `text` (unsafe fixes too); check the properties; what the fix did."""
    edits = _first_pass_edits(path, text)
    comments = _comments(text)
    gone: set[int] = set()  # comments whose whole line an edit removes
    for start, end, content in edits:
        for c_start, c_end, comment in comments:
            if start <= c_start and c_end <= end and comment not in content:
                line_start, line_end = _line_of(text, c_start)
                ranges = _same_deletions(text, start, end, content)
                assert any(_removes_line(text, a, b, line_start, line_end) for a, b in ranges), (
                    f"{path}: the edit of {text[start:end]!r} into {content!r} drops {comment!r} of a line it keeps"
                )
                gone.add(c_start)
        if "\r\n" in text:
            assert "\n" not in content.replace("\r\n", ""), f"{path}: an edit writes LF into a CRLF file: {content!r}"
        if not re.search(r"^ +\S", text, re.M):  # indented with tabs only
            assert not re.search(r"\n +\S", content), f"{path}: an edit indents with spaces in a tab file: {content!r}"
    outcome = fix_source(path, text, ALL, unsafe=True)
    fixed = outcome.text
    assert not [n for n in outcome.result.notices if "please report" in n.message], outcome.result.notices
    if outcome.applied:
        assert not isinstance(python_ast(fixed, path), SourceProblem)
    left = [comment for c_start, _, comment in comments if c_start not in gone]
    remaining = [comment for _, _, comment in _comments(fixed)]
    for comment in set(left):
        assert remaining.count(comment) >= left.count(comment), f"{path}: {comment!r} lost by --fix"
    again = fix_source(path, fixed, ALL, unsafe=True)
    assert again.text == fixed, f"{path}: a second --fix changed the text"
    return outcome


@pytest.mark.parametrize("path", FIX_FIXTURES, ids=lambda p: str(p.relative_to(FIXTURES)))
def test_fix_fixtures_lose_nothing(path: Path) -> None:
    assert_fix_loses_nothing(str(path), path.read_text(encoding="utf-8"))


# ------------------------------------------------------------------ variations of the fix fixtures


def _tabs(text: str) -> str:
    """Indentation by four spaces as tabs (continuation lines keep the rest)."""
    return re.sub(r"^((?:    )+)", lambda m: "\t" * (len(m.group(1)) // 4), text, flags=re.M)


def _with_comments(text: str, seed: int) -> str:
    """Comments between the arguments: after lines that end inside brackets
    (with `,` or `(`), a trailing comment or a comment line of their own."""
    rng = random.Random(seed)
    out = []
    for number, line in enumerate(text.splitlines(keepends=True)):
        body = line.rstrip("\r\n")
        ending = line[len(body):]
        if body.rstrip().endswith((",", "(")) and "#" not in body and rng.random() < 0.6:
            if rng.random() < 0.5:
                body += f"  # note {number}"
            else:
                indent = re.match(r"[ \t]*", body).group()
                body += ending + f"{indent}    # note {number} of its own"
        out.append(body + ending)
    return "".join(out)


def _written(path: str, data: bytes, outcome: FixOutcome) -> bytes:
    """What `--fix` writes back for a file of these bytes, fixed as `outcome`
    says (`ddplint.fixing`: decoded and re-encoded as read)."""
    _, fixed = fix_file(path, None, data, outcome.result, lambda text, result: outcome)
    return data if fixed is None else fixed.after.encode(fixed.encoding)


@settings(max_examples=10, deadline=None)
@given(
    index=st.integers(0, len(FIX_FIXTURES) - 1),
    bom=st.booleans(),
    crlf=st.booleans(),
    tabs=st.booleans(),
    comments=st.one_of(st.none(), st.integers(0, 2**16)),
)
def test_variations_of_the_fix_fixtures_lose_nothing(index: int, bom: bool, crlf: bool, tabs: bool, comments) -> None:
    """BOM, CRLF and tabs are kept (the fixed variation is the variation of
    the fixed fixture), and comments inserted between arguments survive."""
    path = FIX_FIXTURES[index]
    text, expected = path.read_text(encoding="utf-8"), path.with_name(path.name + ".fixed").read_text(encoding="utf-8")

    def vary(source: str) -> str:
        source = _tabs(source) if tabs else source
        return source.replace("\n", "\r\n") if crlf else source

    varied = vary(_with_comments(text, comments) if comments is not None else text)
    outcome = assert_fix_loses_nothing(str(path), varied)
    fixed = outcome.text
    data = (BOM if bom else b"") + varied.encode("utf-8")
    written = _written(str(path), data, outcome)
    assert written.startswith(BOM) == bom and written == (BOM if bom else b"") + fixed.encode("utf-8")
    if comments is None:
        assert fixed == vary(expected)


# ------------------------------------------------------------------ the CLI: stdin and files


def test_a_bom_survives_fix_from_stdin_and_from_a_file(tmp_path: Path) -> None:
    path = FIXTURES / "DDP014" / "fix_comments.py"
    source = BOM + path.read_bytes().replace(b"\n", b"\r\n")
    expected = BOM + path.with_name(path.name + ".fixed").read_bytes().replace(b"\n", b"\r\n")
    run = run_script("--fix", "--no-cache", "--stdin-filename", "train.py", "-", cwd=tmp_path, stdin=source)
    assert run.stdout.encode() == expected or run.stdout.encode("utf-8") == expected, run.stderr
    write(tmp_path, {"train.py": source})
    run_script("--fix", "--no-cache", "train.py", cwd=tmp_path)
    assert (tmp_path / "train.py").read_bytes() == expected


# ------------------------------------------------------------------ the training repositories


def _training_sample(count: int = 5) -> list[Path]:
    if not TRAINING.is_dir():
        return []
    wanted = re.compile(rb"shuffle=True|torch\.cuda\.amp|torch\.load\(|manual_seed\(|clip_grad_norm_|\.state_dict\(\)")
    rng = random.Random(33)
    repositories = sorted(p for p in TRAINING.iterdir() if p.is_dir())
    chosen = []
    for repository in rng.sample(repositories, min(len(repositories), 3 * count)):
        files = sorted(p for p in repository.rglob("*.py") if p.is_file() and p.stat().st_size < 12_000)
        for path in rng.sample(files, min(len(files), 30)):
            if wanted.search(path.read_bytes()):
                chosen.append(path)
                break
        if len(chosen) == count:
            break
    return chosen


@pytest.mark.skipif(not TRAINING.is_dir(), reason="the training repositories are not here (CI)")
@pytest.mark.parametrize("path", _training_sample(), ids=lambda p: str(p.relative_to(TRAINING)))
def test_training_files_lose_nothing(path: Path) -> None:
    try:
        text = path.read_bytes().decode("utf-8-sig")
    except UnicodeDecodeError:
        pytest.skip("not UTF-8")
    if isinstance(python_ast(text, str(path)), SourceProblem):
        pytest.skip("not Python this interpreter parses")
    assert_fix_loses_nothing(str(path), text)
