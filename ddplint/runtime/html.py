"""The doctor's report as one self-contained HTML page (`ddplint doctor --html`).

Everything is inline: the style, the charts (SVG), no script, no font and
no link that would fetch anything, so the page opens the same from a CI
artifact, an e-mail or an air-gapped cluster. It holds the check table, the
rank table and, for the probes (RT006, RT007), the memory curves with their
fitted trend.
"""

from __future__ import annotations

from html import escape

from ddplint.version import __version__
from ddplint.runtime.charts import Picture, curve_line, svg_chart
from ddplint.runtime.check import CheckResult, Status
from ddplint.runtime.report import DoctorReport, compact_ranks

_STYLE = """
body { font: 14px/1.45 system-ui, sans-serif; margin: 2rem; color: #1f2328; max-width: 1100px; }
h1 { font-size: 1.35rem; margin: 0 0 .25rem; }
h2 { font-size: 1.1rem; margin: 1.75rem 0 .5rem; }
p.verdict { font-weight: 600; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; vertical-align: top; padding: .3rem .6rem; border-bottom: 1px solid #d0d7de; }
th { background: #f6f8fa; }
td.name { white-space: nowrap; }
td.status { font-weight: 700; white-space: nowrap; }
tr.pass td.status { color: #1a7f37; } tr.fail td.status, tr.error td.status { color: #cf222e; }
tr.note td.status { color: #0969da; } tr.skip td.status { color: #6e7781; }
code, .spark { font-family: ui-monospace, monospace; }
figure { margin: 1rem 0 1.5rem; } figcaption { margin-bottom: .4rem; }
svg.chart { width: 100%; max-width: 760px; height: auto; background: #fff; border: 1px solid #d0d7de; }
svg .grid { stroke: #eaeef2; } svg .axis { stroke: #57606a; }
svg .curve { fill: none; stroke: #0969da; stroke-width: 2; }
svg .trend { stroke: #cf222e; stroke-width: 2; stroke-dasharray: 6 4; }
svg .warmup { fill: #f6f8fa; } svg .tick, svg .label { font-size: 11px; fill: #57606a; }
svg .label { fill: #cf222e; }
"""


def render_html(report: DoctorReport) -> str:
    """The whole page."""
    hosts = ", ".join(sorted({row.hostname for row in report.rows if row.reported})) or "?"
    noun = "rank" if report.world_size == 1 else "ranks"
    title = f"ddplint doctor: {report.world_size} {noun} on {hosts} ({report.backend})"
    body = [
        f"<h1>{escape(title)}</h1>",
        f'<p class="verdict">{escape(_verdict(report))}</p>',
        "<h2>Checks</h2>",
        _checks(report),
        "<h2>Ranks</h2>",
        _ranks(report),
    ]
    charts = _charts(report)
    if charts:
        body += ["<h2>Memory curves</h2>", *charts]
    body.append(f"<p><small>ddplint {escape(__version__)}</small></p>")
    return "\n".join([
        "<!DOCTYPE html>", '<html lang="en">', "<head>", '<meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width, initial-scale=1">',
        # No request may leave the page, whatever a summary contains.
        "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\">",
        f"<title>{escape(title)}</title>", f"<style>{_STYLE}</style>", "</head>", "<body>", *body, "</body>", "</html>", "",
    ])  # fmt: skip


def _verdict(report: DoctorReport) -> str:
    errors = report.errors()
    problems = [f for f in report.findings() if f.severity.value != "note"]
    if errors:
        return f"{len(errors)} check{'s' if len(errors) > 1 else ''} could not run."
    if problems:
        return f"{len(problems)} problem{'s' if len(problems) != 1 else ''} found."
    return "No problems found."


def _checks(report: DoctorReport) -> str:
    rows = ["<table class=\"checks\">", "<tr><th>Status</th><th>Check</th><th>Name</th><th>Result</th></tr>"]
    for outcome in report.outcomes:
        for result, ranks in outcome.groups:
            who = "" if outcome.uniform else f"<em>{escape(_ranks_label(ranks))}:</em> "
            rows.append(
                f'<tr class="{result.status.value}"><td class="status">{result.status.value}</td>'
                f"<td><code>{outcome.check.code}</code></td><td class='name'>{escape(outcome.check.name)}</td>"
                f"<td>{who}{escape(result.summary)}{_spark(result)}</td></tr>"
            )  # fmt: skip
    rows.append("</table>")
    return "\n".join(rows)


def _spark(result: CheckResult) -> str:
    picture = Picture.of(result.measured)
    return "" if picture is None else f'<br><span class="spark">{escape(curve_line(picture))}</span>'


def _ranks(report: DoctorReport) -> str:
    rows = ['<table class="ranks">', "<tr><th>Rank</th><th>Local</th><th>Host</th><th>Device</th></tr>"]
    for row in report.rows:
        local = "-" if row.local_rank is None else str(row.local_rank)
        device = row.device if row.reported else "did not report"
        rows.append(f"<tr><td>{row.rank}</td><td>{local}</td><td>{escape(row.hostname)}</td><td>{escape(device)}</td></tr>")
    rows.append("</table>")
    return "\n".join(rows)


def _charts(report: DoctorReport) -> list[str]:
    """One figure per probe result that measured a curve."""
    figures = []
    for outcome in report.outcomes:
        for result, ranks in outcome.groups:
            picture = Picture.of(result.measured)
            if picture is None:
                continue
            measure = result.measured.get("measure", "workers' private memory (USS)")
            title = f"{outcome.check.code} {outcome.check.name}: {measure}"
            if not outcome.uniform:
                title += f" ({_ranks_label(ranks)})"
            status = Status(result.status).value
            figures.append(
                f'<figure class="curve {status}"><figcaption><strong>{escape(title)}</strong> — {status}; '
                f"shaded: warm-up, not fitted; dashed: fitted trend</figcaption>\n{svg_chart(picture, title)}</figure>"
            )  # fmt: skip
    return figures


def _ranks_label(ranks: list[int]) -> str:
    return f"{'rank' if len(ranks) == 1 else 'ranks'} {compact_ranks(ranks)}"
