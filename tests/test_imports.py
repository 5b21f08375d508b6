"""The import scan finds what one multi-line regular expression over the
whole text finds (it only tries the lines that contain ``import``)."""

from __future__ import annotations

import re

from hypothesis import given
from hypothesis import strategies as st

from ddplint.project.imports import import_statements, imported_names

PIECES = st.sampled_from(
    ["import ", "from ", "import", "from", ".", "..", "a", "b2", "x.y", " as ", ",", "(", ")", "\n", ";", "#", " ",
     "\t", "importlib", "reimport ", "é", "'import x'", "*"]
)  # fmt: skip
TEXTS = st.lists(PIECES, max_size=24).map("".join)
ORACLE = re.compile(
    rb"^[ \t]*(?:from[ \t]+(\.*[\w.]*)[ \t]+import[ \t]+(\([^)]*\)|[^\n#;]*)|import[ \t]+([^\n#;]+))", re.MULTILINE
)


def oracle_statements(data: bytes) -> list[tuple]:
    return [m.groups() for m in ORACLE.finditer(data)]


@given(TEXTS)
def test_scan_matches_the_whole_text_expression(text: str) -> None:
    data = text.encode()
    assert [m.groups() for m in import_statements(data)] == oracle_statements(data)


def test_names_of_each_form() -> None:
    data = b"import a.b as c, d\nfrom .e import (f,\n  g as h)\nx = 1; import nope\nfrom ..i import *\n"
    assert list(imported_names(data)) == ["a", "a.b", "d", ".e", ".e.f", ".e.g", "..i"]
