"""Parsing of `# noqa` and `# ddplint: noqa` comments."""

from __future__ import annotations

import pytest

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
