"""`ddplint check --add-noqa`: silence every current finding in place, as
Ruff's ``--add-noqa`` does, so that a large repository can adopt ddplint
and fail only on new findings. Running it twice changes nothing."""

from __future__ import annotations

import io
import tokenize
from pathlib import Path

from ddplint.engine.source import SourceError, decode_source
from ddplint.engine.suppression import add_noqa
from ddplint.fixing import FixedFile, write_fixed
from ddplint.model import Notice, NoticeLevel
from ddplint.report import Report

#: A syntax error cannot be silenced by a comment; an unused noqa directive is not silenced by another.
_NOT_SILENCED = ("DDP000", "DDP100")


def add_noqa_directives(report: Report, cwd: Path) -> tuple[int, int]:
    """Add the directives for `report`'s active findings to their files;
    (directives added or extended, files changed). Failures join the
    report's notices."""
    by_file: dict[str, dict[int, set[str]]] = {}
    for finding in report.active:
        if finding.located and finding.rule not in _NOT_SILENCED:
            by_file.setdefault(finding.path, {}).setdefault(finding.span.line, set()).add(finding.rule)
    added = files = 0
    for display, codes in sorted(by_file.items()):
        if display.endswith(".ipynb"):
            report.notices.append(Notice(display, "--add-noqa does not edit notebooks yet; add the comments in the cells", NoticeLevel.WARNING))
            continue
        path = Path(display) if Path(display).is_absolute() else cwd / display
        try:
            data = path.read_bytes()
            text = decode_source(data)
        except (OSError, SourceError) as exc:
            report.notices.append(Notice(display, f"cannot read the file to add noqa: {exc}"))
            continue
        new, count = add_noqa(text, codes)
        if not count:
            continue
        encoding = tokenize.detect_encoding(io.BytesIO(data).readline)[0]  # as it was read (a BOM stays)
        failure = write_fixed(FixedFile(display, path, text, new, count, encoding))
        if failure is not None:
            report.notices.append(failure)
            continue
        added += count
        files += 1
    return added, files
