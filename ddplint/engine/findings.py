"""Building a `Finding`: a rule's verdict with its severity and source line."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ddplint.model import Finding, Fix, Related, Severity, Span

if TYPE_CHECKING:
    from ddplint.config.settings import Settings
    from ddplint.rule import Rule


def make_finding(
    rule: type[Rule],
    settings: Settings,
    message: str,
    path: str,
    span: Span,
    lines: list[str],
    related: tuple[Related, ...] = (),
    fix: Fix | None = None,
    suppressed: str | None = None,
    severity: Severity | None = None,
) -> Finding:
    """A finding of `rule` at `span`, with the configured severity and the
    stripped source line (`lines` are the file's)."""
    return Finding(
        rule=rule.code,
        name=rule.name,
        severity=settings.severity.get(rule.code, severity or rule.severity),
        message=message,
        path=path,
        span=span,
        related=related,
        fix=fix,
        snippet=lines[span.line - 1].strip() if 0 < span.line <= len(lines) else "",
        suppressed=suppressed,
    )
