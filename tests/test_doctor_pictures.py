"""The probes' memory curves as pictures: sparklines in the text report, and
`ddplint doctor --html`'s self-contained page, rendered in headless Chromium
(skipped where Chromium is not installed: `apt-get install chromium`)."""

from __future__ import annotations

import sys
from html.parser import HTMLParser
from pathlib import Path

import pytest
from conftest import REPO
from test_doctor import doctor

sys.path.insert(0, str(REPO / "bench"))
import doctor_page  # bench/ holds the browser helpers, shared with the bench script

from ddplint.runtime.charts import BLOCKS, sparkline


@pytest.fixture(scope="module")
def pictured(tmp_path_factory: pytest.TempPathFactory) -> tuple[str, Path]:
    """One doctor run with both probes failing: its text report and its page."""
    page = tmp_path_factory.mktemp("page") / "report.html"
    run = doctor(*doctor_page.PROBE_ARGS, "--html", page, cwd=doctor_page.PROBES)
    assert run.status == 1, run.stderr
    return run.stdout, page


class _Page(HTMLParser):
    """The page's elements: (tag, attributes) in document order, and the text."""

    def __init__(self) -> None:
        super().__init__()
        self.elements: list[tuple[str, dict[str, str | None]]] = []
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.elements.append((tag, dict(attrs)))

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def parse(page: Path) -> _Page:
    parsed = _Page()
    parsed.feed(page.read_text(encoding="utf-8"))
    return parsed


def test_sparkline_rises_left_to_right_and_a_flat_curve_is_flat() -> None:
    assert sparkline([1, 2, 3, 4, 5, 6, 7, 8]) == BLOCKS
    assert sparkline([5.0] * 10) == "▁" * 10
    spark = sparkline([float(i) for i in range(1000)], width=32)
    assert len(spark) == 32 and spark[0] == "▁" and spark[-1] == "█" and list(spark) == sorted(spark)
    assert sparkline([1, 9, 1], blocks="_.-:=+*#") == "_#_"


def test_text_report_draws_each_curve_as_a_sparkline(pictured: tuple[str, Path]) -> None:
    text, _ = pictured
    lines = text.splitlines()
    for code, unit in (("RT006", "samples"), ("RT007", "steps")):
        at = next(i for i, line in enumerate(lines) if f" {code} " in line)
        spark, _, rest = lines[at + 1].strip().partition(" ")
        assert set(spark) <= set(BLOCKS) and len(spark) >= 8, lines[at + 1]
        assert spark[0] == "▁" and spark[-1] == "█"  # both curves grow
        assert rest.endswith(f" {unit}") and " MiB over " in rest


def test_html_page_is_self_contained_with_both_tables_and_charts(pictured: tuple[str, Path]) -> None:
    _, page = pictured
    parsed = parse(page)
    tags = [tag for tag, _ in parsed.elements]
    # Nothing that loads anything: no script, stylesheet link, image, frame, font or url().
    assert not {"script", "link", "img", "iframe", "object", "embed", "base"} & set(tags)
    for tag, attributes in parsed.elements:
        for name in ("src", "href", "srcset", "action"):
            assert name not in attributes, (tag, attributes)
    source = page.read_text(encoding="utf-8")
    assert "url(" not in source and "@import" not in source and "@font-face" not in source
    assert any(tag == "meta" and "default-src 'none'" in (a.get("content") or "") for tag, a in parsed.elements)
    tables = [a.get("class") for tag, a in parsed.elements if tag == "table"]
    assert tables == ["checks", "ranks"]
    text = "".join(parsed.text)
    assert "RT006" in text and "RT007" in text and "MiB per 1k steps" in text and "MiB per 1k samples" in text
    charts = [a for tag, a in parsed.elements if tag == "svg"]
    assert len(charts) == 2 and all(a.get("class") == "chart" for a in charts)
    assert [a.get("class") for tag, a in parsed.elements if tag in ("polyline", "rect") or a.get("class") == "trend"] == [
        "warmup", "curve", "trend"] * 2  # fmt: skip


@pytest.mark.skipif(doctor_page.chromium() is None, reason="chromium is not installed (apt-get install chromium)")
def test_html_page_renders_in_chromium_with_its_charts(pictured: tuple[str, Path], tmp_path: Path) -> None:
    _, page = pictured
    rendered = doctor_page.render(page, tmp_path / "report.png")
    assert doctor_page.console_problems(rendered.log) == []  # no error, no refused or failed load
    assert rendered.dom.count('class="chart"') == 2 and rendered.dom.count('class="curve"') == 2
    census = doctor_page.pixel_census(rendered.screenshot)
    assert (census["width"], census["height"]) == (1100, 1500)
    assert census["ink"] > 0.01  # text and tables, not a blank page
    assert census["blue"] > 0.0005 and census["red"] > 0.0005  # the curves and the dashed trends were drawn


def test_html_needs_an_existing_directory(tmp_path: Path) -> None:
    run = doctor("--html", tmp_path / "missing" / "report.html", "--only", "RT008")
    assert run.status == 2 and run.stdout == ""
    assert run.stderr.strip().splitlines() == [
        f"ddplint: error: --html: no directory {str(tmp_path / 'missing')!r} to write 'report.html' in"
    ]
