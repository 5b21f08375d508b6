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

A repository can ship a `.ddplint_cache/`: the cache never follows a
symbolic link in it (the directory itself, its subdirectories, its entries
and its `.gitignore`), so it never reads or creates a file outside it. A
link anywhere there is refused once (`on_refused`, a one-line notice) and the
run goes on without the cache. Entries are opened with `O_NOFOLLOW` (and
must be regular files), directories are checked with `lstat`, and the files
the cache creates are created with `O_EXCL`. `clear` (``ddplint clean``)
removes only the files the cache creates, and nothing through a link.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import stat
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
_GITIGNORE = "# Created by ddplint: the lint cache.\n*\n"
#: The names of the files the cache creates below its version directories.
_ENTRY = re.compile(r"[0-9a-f]{64}\.json|\.tmp-[^/]*\.json")
_SHARD = re.compile(r"[0-9a-f]{2}")
#: POSIX flags (absent elsewhere: there the `lstat` checks alone guard).
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_NONBLOCK = getattr(os, "O_NONBLOCK", 0)
_FORMAT = 12  # 6: entries carry a checksum; 7: summaries name their functions, per-rank calls and entry points by body; 8: and the methods of their classes (`Class.method`); 9: per-rank calls by entry; 10: and the lines of their definitions; 11: the requirements rules left out for want of facts missed (`unrun`), with what the rest consulted and which facts quieting output they asked (`quieted`); 12: what a function runs the functions handed to it on (`handed`)


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

    def __init__(
        self,
        directory: Path,
        on_bad_entry: Callable[[str], None] | None = None,
        on_refused: Callable[[str], None] | None = None,
    ) -> None:
        self.directory = directory
        self._prepared = False
        self._on_bad_entry = on_bad_entry
        self._on_refused = on_refused
        #: Set by the first failed write (a full disk): no more are tried this run.
        self._unwritable = False
        #: Set by the first symbolic link met in the cache: it is not used at all.
        self._refused = False
        self._checked: set[Path] = set()

    def _path(self, key: str) -> Path:
        return self.directory / __version__ / key[:2] / f"{key}.json"

    def _refuse(self, path: Path, what: str) -> None:
        """Stop using the cache, saying so once."""
        if not self._refused and self._on_refused is not None:
            self._on_refused(f"cache: {path} is {what}; the cache is not used (a cache never follows links)")
        self._refused = True

    def _real_dir(self, path: Path) -> bool:
        """Whether `path` is missing or a directory that is no link (else refuse)."""
        if path in self._checked:
            return True
        try:
            mode = os.lstat(path).st_mode
        except FileNotFoundError:
            return True
        except OSError:
            return True  # not to be looked at: reads and writes fail on their own and are misses
        if stat.S_ISLNK(mode):
            self._refuse(path, "a symbolic link")
            return False
        if not stat.S_ISDIR(mode):
            self._refuse(path, "not a directory")
            return False
        self._checked.add(path)
        return True

    def _safe(self, key: str) -> bool:
        """Whether the directories of entry `key` hold no link (and the cache is not refused)."""
        if self._refused:
            return False
        shard = self._path(key).parent
        return all(self._real_dir(d) for d in (self.directory, shard.parent, shard))

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
        if not self._safe(key):
            return None
        path = self._path(key)
        try:
            # O_NONBLOCK: a FIFO planted as an entry does not block the open; it is no regular file.
            fd = os.open(path, os.O_RDONLY | _NOFOLLOW | _NONBLOCK)
        except FileNotFoundError:
            return None  # a plain miss
        except OSError as exc:
            if os.path.islink(path):
                self._refuse(path, "a symbolic link")
                return None
            self._bad(key, f"unreadable ({exc.strerror or exc})")
            return None
        try:
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    self._refuse(path, "not a regular file")
                    return None
                payload = json.loads(handle.read())
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
        if self._unwritable or not self._safe(key):
            return
        path = self._path(key)
        payload = json.dumps({"format": _FORMAT, "key": key, "sha256": _checksum(key, kind, content), kind: content})
        temporary = None
        try:
            if not self._prepare():
                return
            for directory in (path.parent.parent, path.parent):
                with contextlib.suppress(FileExistsError):
                    directory.mkdir()
                self._checked.discard(directory)
                if not self._real_dir(directory):  # a link made since it was looked at
                    return
            fd, temporary = tempfile.mkstemp(dir=path.parent, prefix=".tmp-", suffix=".json")
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(payload)
            os.replace(temporary, path)
        except BaseException as exc:  # Ctrl-C too: no temporary file left behind
            if temporary is not None:
                with contextlib.suppress(OSError):
                    os.unlink(temporary)
            if not isinstance(exc, OSError):
                raise
            self._unwritable = True
            if self._on_bad_entry is not None:
                self._on_bad_entry(f"cache: cannot write {path}: {exc.strerror or exc}; no more entries written this run")

    def _prepare(self) -> bool:
        """Make the directory and its `.gitignore`; whether the cache may be written."""
        if self._prepared:
            return True
        if not self._real_dir(self.directory):
            return False
        self.directory.mkdir(parents=True, exist_ok=True)
        self._checked.discard(self.directory)
        if not self._real_dir(self.directory):
            return False
        ignore = self.directory / ".gitignore"
        try:
            fd = os.open(ignore, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o644)
        except FileExistsError:  # there already (ours, or a link the repository ships: never written through)
            if os.path.islink(ignore):
                self._refuse(ignore, "a symbolic link")
                return False
        else:
            with os.fdopen(fd, "w", encoding="utf-8") as handle:
                handle.write(_GITIGNORE)
        self._prepared = True
        return True

    def clear(self) -> tuple[int, list[str]]:
        """Remove what the cache created: (files removed, what was left and
        why). A link is never followed: a cache directory that is one is left
        as it is, and so is every file the cache does not create."""
        try:
            mode = os.lstat(self.directory).st_mode
        except FileNotFoundError:
            return 0, []
        if stat.S_ISLNK(mode) or not stat.S_ISDIR(mode):
            return 0, [f"{self.directory} is {'a symbolic link' if stat.S_ISLNK(mode) else 'not a directory'}; left as it is"]
        removed, left = 0, []

        def remove(path: Path, ours: bool) -> None:
            nonlocal removed
            if not ours:
                left.append(f"{path} was not created by ddplint; left as it is")
                return
            try:
                path.unlink()
                removed += 1
            except OSError as exc:
                left.append(f"{path}: {exc.strerror or exc}")

        for top in _entries(self.directory):
            if top.name == ".gitignore":
                remove(Path(top.path), top.is_file(follow_symlinks=False) and _holds(Path(top.path), _GITIGNORE))
            elif not top.is_dir(follow_symlinks=False):
                remove(Path(top.path), False)
            else:
                for shard in _entries(Path(top.path)):
                    if not (_SHARD.fullmatch(shard.name) and shard.is_dir(follow_symlinks=False)):
                        remove(Path(shard.path), False)
                        continue
                    for entry in _entries(Path(shard.path)):
                        ours = _ENTRY.fullmatch(entry.name) is not None and entry.is_file(follow_symlinks=False)
                        remove(Path(entry.path), ours)
                    _rmdir(Path(shard.path))
                _rmdir(Path(top.path))
        _rmdir(self.directory)
        return removed, left


def _entries(directory: Path) -> list[os.DirEntry]:
    try:
        with os.scandir(directory) as entries:
            return list(entries)
    except OSError:
        return []


def _holds(path: Path, text: str) -> bool:
    try:
        return path.read_text(encoding="utf-8") == text
    except (OSError, ValueError):
        return False


def _rmdir(directory: Path) -> None:
    """Remove `directory` if it is empty now."""
    with contextlib.suppress(OSError):
        os.rmdir(directory)


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
                "properties": [list(p) for p in f.properties],
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
            properties=tuple((k, v) for k, v in f.get("properties", ())),
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
