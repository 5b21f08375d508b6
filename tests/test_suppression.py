"""Parsing of `# noqa` and `# ddplint: noqa` comments."""

from __future__ import annotations

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from ddplint.engine import suppression
from ddplint.engine.suppression import Suppressions


@pytest.mark.parametrize(
    ("comment", "code", "suppressed"),
    [
        ("# noqa", "DDP014", True),
        ("# NOQA", "DDP014", True),
        ("#noqa:DDP014", "DDP014", True),
        ("# noqa: DDP014", "DDP012", False),
        ("# noqa: DDP012, DDP014", "DDP014", True),
        ("# noqa: DDP012 DDP014", "DDP014", True),
        ("# noqa: DDP0", "DDP014", True),
        ("# noqa: DDP01", "DDP001", False),
        ("# noqa: E501", "DDP014", False),
        ("# type: ignore  # noqa: DDP014 because the sampler is built elsewhere", "DDP014", True),
        ("# this is not a noqa directive", "DDP014", False),
    ],
)
def test_line_directives(comment: str, code: str, suppressed: bool) -> None:
    sup = Suppressions.from_comments([(3, comment)])
    assert (sup.match(code, [3]) is not None) is suppressed
    assert sup.match(code, [4]) is None


@pytest.mark.parametrize(
    ("comment", "code", "suppressed"),
    [
        ("# ddplint: noqa", "DDP014", True),
        ("# ddplint: noqa: DDP012", "DDP012", True),
        ("# ddplint: noqa: DDP012", "DDP014", False),
        ("#ddplint:noqa:DDP0", "DDP014", True),
    ],
)
def test_file_directives(comment: str, code: str, suppressed: bool) -> None:
    sup = Suppressions.from_comments([(1, comment)])
    assert (sup.match(code, [40]) is not None) is suppressed


def test_a_line_inside_a_multiline_string_is_stood_for_by_its_end() -> None:
    text = 'x = f("""\n# noqa: DDP014 is text here\n""")  # noqa: DDP014\ny = 1 + \\\n    2  # noqa: DDP012\n'
    sup = Suppressions.from_source(text)
    assert sorted(sup.by_line) == [3, 5]  # the string's text holds no directive
    assert sup.match("DDP014", [1]) is not None and (3, "DDP014") in sup.used
    assert sup.match("DDP012", [4]) is not None  # a backslash-continued line: the next one
    assert sup.match("DDP014", [5]) is None


def test_add_noqa_merges_and_is_idempotent() -> None:
    from ddplint.engine.suppression import add_noqa

    text = 'a = 1\nb = 2  # noqa: E501\nc = f("""\ntext\n""")\nd = 4  # noqa\n'
    once, count = add_noqa(text, {1: {"DDP014"}, 2: {"DDP014", "DDP003"}, 3: {"DDP012"}, 6: {"DDP001"}})
    assert count == 3
    assert once.splitlines() == [
        "a = 1  # noqa: DDP014", "b = 2  # noqa: E501, DDP003, DDP014", 'c = f("""', "text", '""")  # noqa: DDP012',
        "d = 4  # noqa",
    ]  # fmt: skip
    assert add_noqa(once, {1: {"DDP014"}, 2: {"DDP003"}, 3: {"DDP012"}}) == (once, 0)


def test_comments_are_read_by_the_tokenizer_not_from_strings() -> None:
    source = "x = '# noqa'  # noqa: DDP001\ny = '''\n# not a comment\n'''\n# last\n"
    assert [(c.line, c.text) for c in suppression.source_comments(source)] == [(1, "# noqa: DDP001"), (5, "# last")]


# Pieces of source around directives: comments and strings holding them, codes of ddplint and of
# other tools, line breaks inside and between them.
_PIECES = st.sampled_from([
    "x = 1", "  ", "\n", "\r\n", ",", ":", " ", "'", '"', '"""', "'''", "\\\n", "#", "# ", "noqa", "NOQA", "# noqa",
    "#noqa:", "# noqa: ", "E501", "F401", "D", "DDP0", "DDP001", "ddp014", "DDP100", "B", "x1", "# ddplint: noqa",
    "ddplint", "f'", "rb'", "\f", "\t",
])  # fmt: skip


@settings(max_examples=400, deadline=None)
@given(st.lists(_PIECES, max_size=14).map("".join))
@example("# ddplint: noqa:DDP0")  # file-wide: it silences, and DDP100 does not judge it
def test_the_raw_text_holds_every_directive_its_comments_do(text: str) -> None:
    """The cheap checks that skip tokenizing may say yes where no comment holds a directive
    (a string does), never no where one does: any directive that may silence a finding, and
    any line directive naming a ddplint code (the ones DDP100 judges unused)."""
    from ddplint.engine.noqa import _names_ddplint_codes

    found = Suppressions.from_source(text)
    if any(d.covers("DDP001") or d.covers("DDP100") or d.covers("DDP014") for d in [*found.by_line.values(), *found.file_wide]):
        assert suppression.may_suppress(text)
    if any(d.codes and any(c.startswith("DDP") for c in d.codes) for d in found.by_line.values()):
        assert _names_ddplint_codes(text)


@pytest.mark.parametrize(
    ("text", "may"),
    [
        ("import os  # noqa: F401\nx = 1  # noqa: E501\n", False),  # other tools' codes only: no tokenizing
        ("x = '# noqa'\n", True),  # a string: the raw text cannot tell, the tokenizer will
        ("x = 1  # noqa\n", True),
        ("x = 1  # noqa: E501, DDP014\n", True),
        ("x = 1  # NOQA:ddp0\n", True),  # a prefix of every DDP0xx code
        ("# ddplint: noqa\n", True),
        ("x = 1\n", False),
        ("x = 1  # noqa:\nE501 = 2\n", True),  # a blanket directive (its codes do not go on past the line)
    ],
)
def test_may_suppress(text: str, may: bool) -> None:
    assert suppression.may_suppress(text) is may
