"""The result cache: one JSON entry per linted file, in `.ddplint_cache/`.

An entry's name is a hash of everything its findings depend on: the file's
bytes, the path it is shown as, ddplint's version and the effective
settings. A changed file, config or ddplint therefore misses the cache and is
linted again. Entries are written atomically (temporary file, then rename),
so concurrent runs never see half an entry, and a write that fails (a full
disk) removes its temporary file. Each entry carries a checksum of its
content, and a result read back must hold values of the declared types: an
entry that does not decode, fails either check, or that another version
wrote, is ignored (``--debug`` says so), linted again and rewritten. The
directory holds a `.gitignore` of `*` so it never gets committed.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any, Callable, Iterable

from ddplint.version import __version__
from ddplint.config.settings import Settings
from ddplint.result import FileResult
from ddplint.model import Applicability, Edit, Finding, Fix, Notice, NoticeLevel, Related, Severity, Span
from ddplint.project.summary import ModuleSummary
from ddplint.typecheck import check_types

CACHE_DIR_NAME = ".ddplint_cache"
ENV_CACHE_DIR = "DDPLINT_CACHE_DIR"
_FORMAT = 8  # 6: entries carry a checksum; 7: summaries name their functions, per-rank calls and entry points by body; 8: and the methods of their classes (`Class.method`)


def default_cache_dir(project_root: Path) -> Path:
    """`DDPLINT_CACHE_DIR`, else `.ddplint_cache/` in the project root."""
    configured = os.environ.get(ENV_CACHE_DIR)
    return Path(configured) if configured else project_root / CACHE_DIR_NAME


def entry_key(content: bytes, display: str, settings: Settings, extra: str = "") -> str:
    """The cache key of linting a file whose bytes have the SHA-256 digest
    `content`, shown as `display` with `settings`; `extra` names what else
    the result depends on (the facts of the file's imports, whether a
    summary is wanted)."""
    hashed = hashlib.sha256()
    _update(hashed, *map(_bytes, (__version__, str(_FORMAT), display, settings.key(), extra)), content)
    return hashed.hexdigest()


def run_key(files: Iterable[tuple[bytes, str, Settings]], extra: str = "") -> str:
    """The key of a whole run over `files` (content digest, display,
    settings), in order: any file added, removed or changed gives another key."""
    hashed = hashlib.sha256()
    _update(hashed, b"run", *map(_bytes, (__version__, str(_FORMAT), extra)))
    for content, display, settings in files:
        _update(hashed, _bytes(display), _bytes(settings.key()), content)
    return hashed.hexdigest()


def _bytes(text: str) -> bytes:
    """`text` as UTF-8; a file name that is not UTF-8 (its bytes held as
    surrogate escapes, as `os.fsdecode` makes them) as those bytes."""
    return text.encode("utf-8", "surrogateescape")


def _update(digest: Any, *parts: bytes) -> None:
    for part in parts:
        digest.update(len(part).to_bytes(8, "little"))
        digest.update(part)


class Cache:
    """A directory of cached `FileResult`s.

    `on_bad_entry`, when given, hears about every entry that was there but
    could not be used (``--debug`` prints them), and about writes that failed.
    """

    def __init__(self, directory: Path, on_bad_entry: Callable[[str], None] | None = None) -> None:
        self.directory = directory
        self._prepared = False
        self._on_bad_entry = on_bad_entry
        #: Set by the first failed write (a full disk): no more are tried this run.
        self._unwritable = False

    def _path(self, key: str) -> Path:
        return self.directory / __version__ / key[:2] / f"{key}.json"

    def get(self, key: str) -> FileResult | None:
        """The cached result, or None (missing, damaged or foreign entries alike)."""
        content = self._read(key, "result")
        if content is None:
            return None
        try:
            result = _decode(content)
            check_types(result)
        except Exception as exc:  # noqa: BLE001 - whatever the entry holds, it is only a cache miss
            self._bad(key, f"not a lint result ({type(exc).__name__}: {exc})")
            return None
        return result

    def put(self, key: str, result: FileResult) -> None:
        """Store a result; failures to write are ignored (the cache is an optimisation)."""
        if any(n.internal for n in result.notices):
            return  # never cache a ddplint bug
        self._write(key, "result", _encode(result))

    def get_keys(self, key: str) -> list[str] | None:
        """A list of entry keys stored under `key` (a whole run's), or None."""
        keys = self._read(key, "keys")
        if keys is None:
            return None
        if isinstance(keys, list) and all(isinstance(k, str) for k in keys):
            return keys
        self._bad(key, "not a list of entry keys")
        return None

    def put_keys(self, key: str, keys: list[str]) -> None:
        self._write(key, "keys", keys)

    def _read(self, key: str, kind: str) -> Any:
        """The `kind` content of the entry `key`: None when there is none, or
        when it is damaged (reported), of another format, or for another key."""
        try:
            payload = json.loads(self._path(key).read_bytes())
        except FileNotFoundError:
            return None  # a plain miss
        except (OSError, ValueError, RecursionError) as exc:  # not JSON, not UTF-8, nested past the parser
            self._bad(key, f"unreadable ({getattr(exc, 'strerror', None) or exc})")
            return None
        if not isinstance(payload, dict) or payload.get("format") != _FORMAT or payload.get("key") != key:
            self._bad(key, "of another format or key")
            return None
        if kind not in payload or payload.get("sha256") != _checksum(key, kind, payload[kind]):
            self._bad(key, "checksum mismatch")
            return None
        return payload[kind]

    def _bad(self, key: str, reason: str) -> None:
        if self._on_bad_entry is not None:
            self._on_bad_entry(f"cache entry {self._path(key)}: {reason}; ignored, linted again and rewritten")

    def _write(self, key: str, kind: str, content: Any) -> None:
        """Write an entry atomically (readers never see half of one); a
        write that fails leaves nothing behind, and stops the writes of this
        run (on a full disk every one would fail, each costing a file)."""
        if self._unwritable:
            return
        path = self._path(key)
        payload = json.dumps({"format": _FORMAT, "key": key, "sha256": _checksum(key, kind, content), kind: content})
        temporary = None
        try:
            self._prepare()
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
            os.replace(temporary, path)
        except OSError as exc:
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
            self._unwritable = True
            if self._on_bad_entry is not None:
                self._on_bad_entry(f"cache: cannot write {path}: {exc.strerror or exc}; no more entries written this run")

    def _prepare(self) -> None:
        if self._prepared:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            ignore.write_text("# Created by ddplint: the lint cache.\n*\n", encoding="utf-8")
        self._prepared = True

    def clear(self) -> bool:
        """Remove the whole cache directory; whether there was one."""
        if not self.directory.exists():
            return False
        shutil.rmtree(self.directory)
        return True


def _checksum(key: str, kind: str, content: Any) -> str:
    """The SHA-256 of an entry's content in one canonical JSON spelling (so a
    changed byte anywhere in it, even one that still decodes, is noticed)."""
    canonical = json.dumps([key, kind, content], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("ascii")).hexdigest()


def _span(span: Span) -> list[int]:
    return [span.line, span.column, span.end_line, span.end_column]


def _encode(result: FileResult) -> dict[str, Any]:
    return {
        "parsed": result.parsed,
        "findings": [
            {
                "rule": f.rule, "name": f.name, "severity": f.severity.value, "message": f.message,
                "path": f.path, "span": _span(f.span), "snippet": f.snippet, "suppressed": f.suppressed,
                "related": [[r.path, _span(r.span), r.message] for r in f.related],
                "fix": None if f.fix is None else [
                    f.fix.title, f.fix.applicability.value, [[_span(e.span), e.content] for e in f.fix.edits]
                ],
            }
            for f in result.findings
        ],
        "notices": [[n.path, n.message, n.level.value] for n in result.notices],
        "summary": None if result.summary is None else result.summary.to_json(),
    }  # fmt: skip


def _decode(data: dict[str, Any]) -> FileResult:
    findings = tuple(
        Finding(
            rule=f["rule"], name=f["name"], severity=Severity(f["severity"]), message=f["message"],
            path=f["path"], span=Span(*f["span"]), snippet=f["snippet"], suppressed=f["suppressed"],
            related=tuple(Related(p, Span(*s), m) for p, s, m in f["related"]),
            fix=None if f["fix"] is None else Fix(
                f["fix"][0], tuple(Edit(Span(*s), c) for s, c in f["fix"][2]), Applicability(f["fix"][1])
            ),
        )
        for f in data["findings"]
    )  # fmt: skip
    notices = tuple(Notice(p, m, NoticeLevel(level)) for p, m, level in data["notices"])
    summary = data.get("summary")
    return FileResult(findings, notices, data["parsed"], None if summary is None else ModuleSummary.from_json(summary))
