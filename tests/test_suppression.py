"""Parsing of `# noqa` and `# ddplint: noqa` comments."""

from __future__ import annotations

import pytest

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
