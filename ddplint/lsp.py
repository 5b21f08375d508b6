"""`ddplint server`: the Language Server Protocol over stdio (pygls).

Diagnostics are published when a document is opened, changed (after a short
pause in typing) and saved, and cleared when it is closed. Each carries the
rule code, a link to the rule's documentation, the guard or sampler as
related information, and `source: "ddplint"`. Code actions offer the
finding's fix when it has one, and "suppress with `# noqa: CODE`" for every
finding; `source.fixAll.ddplint` (fix on save) gives the document with every
safe fix applied, as `ddplint check --fix` writes it. The workspace's own
`pyproject.toml`/`ddplint.toml` apply, as in the CLI, and are read again
when they change: on save in the editor, or when the editor reports them
changed on disk (`workspace/didChangeWatchedFiles`; the server asks the
editor to watch them), after which every open document is linted again.
The server never imports or executes workspace code.

A document whose URI is not a local file (`untitled:`, `http:`,
`file://otherhost/...`) is linted as an untitled buffer: with the
workspace's configuration (the defaults without a workspace), on its own
(no project read from disk). The framing of messages is
`ddplint.lsp_transport`'s: a malformed or oversized message is answered with
an error and skipped. Requests after `shutdown` are refused (InvalidRequest);
`exit` ends the process with status 0 after `shutdown`, 1 without.
"""

from __future__ import annotations

import asyncio
import json
import logging
import re
import sys
from pathlib import Path
from urllib.parse import unquote, urlparse

from lsprotocol import types as lsp
from pygls.exceptions import JsonRpcException
from pygls.io_ import StdoutWriter
from pygls.lsp.server import LanguageServer

from ddplint.version import __version__
from ddplint.config.loader import ConfigError
from ddplint.config.resolver import ConfigResolver
from ddplint.config.selection import resolve
from ddplint.config.settings import Settings
from ddplint.docs import help_uri
from ddplint.engine import check_source
from ddplint.engine.fixer import fix_source
from ddplint.lsp_transport import INVALID_REQUEST, frame, serve
from ddplint.cache import Cache, default_cache_dir
from ddplint.model import Applicability, Finding, Severity, Span
from ddplint.result import FileResult
from ddplint.paths import project_root
from ddplint.project.facts import NO_FACTS, FileFacts
from ddplint.project.index import ProjectIndex
from ddplint.project.role import ProjectRole
from ddplint.reading import buffer_notice
from ddplint.runner import one_collection_per_file, project_index, single_file_facts, tune_gc
from ddplint.rule import get_rule

logger = logging.getLogger(__name__)

DEBOUNCE_SECONDS = 0.3
SOURCE = "ddplint"

_SEVERITY = {
    Severity.ERROR: lsp.DiagnosticSeverity.Error,
    Severity.WARNING: lsp.DiagnosticSeverity.Warning,
    Severity.NOTE: lsp.DiagnosticSeverity.Information,
}
_NOQA = re.compile(r"#\s*noqa(?::\s*(?P<codes>[A-Z]+[0-9]+(?:[\s,]+[A-Z]+[0-9]+)*))?", re.IGNORECASE)
_CONFIG_FILES = ("pyproject.toml", "ddplint.toml")


def is_config(uri: str) -> bool:
    """Whether `uri` names a configuration file ddplint reads."""
    return uri.endswith(tuple("/" + name for name in _CONFIG_FILES))


def is_python(uri: str, language_id: str | None) -> bool:
    """Whether a document is Python (a configuration file opened in the editor is not linted)."""
    return language_id == "python" or uri.endswith((".py", ".pyi"))


def uri_to_path(uri: str) -> Path | None:
    """A `file://` URI of this machine as a local path; None for any other
    URI (`untitled:`, `http:`, `file://otherhost/...`)."""
    parsed = urlparse(uri)
    if parsed.scheme.lower() != "file" or parsed.netloc.lower() not in ("", "localhost") or not parsed.path:
        return None
    return Path(unquote(parsed.path))


def _utf16_column(line: str, column: int) -> int:
    """A 0-based code-point column as LSP's UTF-16 code units."""
    prefix = line[:column]
    return column + sum(1 for ch in prefix if ord(ch) > 0xFFFF)


def to_range(span: Span, lines: list[str]) -> lsp.Range:
    """A ddplint span (1-based, code points) as an LSP range (0-based, UTF-16)."""

    def position(line: int, column: int) -> lsp.Position:
        text = lines[line - 1] if 0 < line <= len(lines) else ""
        return lsp.Position(line=max(line - 1, 0), character=_utf16_column(text, max(column - 1, 0)))

    return lsp.Range(start=position(span.line, span.column), end=position(span.end_line, span.end_column))


class DdplintServer(LanguageServer):
    """The language server: one config resolver per workspace root."""

    def __init__(self) -> None:
        super().__init__(SOURCE, __version__, text_document_sync_kind=lsp.TextDocumentSyncKind.Full)
        self._resolvers: dict[Path, ConfigResolver] = {}
        self._pending: dict[str, asyncio.TimerHandle] = {}
        #: The whole-project facts of each workspace root, as saved on disk.
        self._indexes: dict[Path, ProjectIndex] = {}
        #: Set by the `shutdown` request: later requests are refused.
        self.shutting_down = False

    def resolver_for(self, path: Path) -> ConfigResolver:
        """The resolver of the workspace folder holding `path` (cached)."""
        root = self._root_of(path)
        resolver = self._resolvers.get(root)
        if resolver is None:
            resolver = self._resolvers[root] = ConfigResolver(cwd=root)
        return resolver

    def _folders(self) -> list[Path]:
        """The workspace folders on this machine."""
        uris = [f.uri for f in (self.workspace.folders or {}).values()]
        if self.workspace.root_uri:
            uris.append(self.workspace.root_uri)
        return [path for path in map(uri_to_path, uris) if path is not None]

    def _root_of(self, path: Path) -> Path:
        inside = [f for f in self._folders() if path.is_relative_to(f)]
        return max(inside, key=lambda f: len(f.parts)) if inside else path.parent

    def forget_configs(self) -> None:
        """A config file changed: resolve afresh."""
        self._resolvers.clear()
        self._indexes.clear()

    def reload_configs(self) -> None:
        """A config file changed: resolve afresh and lint every open document again."""
        self.forget_configs()
        for uri in list(self.workspace.text_documents):
            if is_python(uri, self.workspace.get_text_document(uri).language_id):
                self.publish(uri)

    def forget_project(self, path: Path) -> None:
        """A file was saved: the project's facts on disk may have changed."""
        self._indexes.pop(self._root_of(path), None)

    def project_facts(self, path: Path, text: str, resolver: ConfigResolver) -> FileFacts:
        """What the saved project knows about the helpers `text` imports."""
        root = self._root_of(path)
        if root.parent == root:  # a file at the top of the file system: no project to walk
            return NO_FACTS
        index = self._indexes.get(root)
        if index is None:
            cache = Cache(default_cache_dir(project_root(root)))
            index = self._indexes[root] = project_index(root, resolver, cache)
        return single_file_facts(index, path, text, [root])

    def findings(self, uri: str) -> tuple[list[Finding], list[str]]:
        """Lint the open document: (active findings, its lines)."""
        document = self.workspace.get_text_document(uri)
        path = uri_to_path(uri)
        if path is None:
            return self._untitled(uri, document.source), document.source.splitlines()
        resolver = self.resolver_for(path)
        if resolver.excludes_file(path):
            return [], []
        try:
            shown = str(path.relative_to(resolver.cwd))
        except ValueError:
            shown = str(path)
        too_costly = buffer_notice(shown, document.source, resolver.settings_for(path))
        if too_costly is not None:  # the limits on disk, before any parse: a huge buffer must not block the server
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=f"{shown}: {too_costly.message}"))
            return [], []
        facts = self.project_facts(path, document.source, resolver)
        with one_collection_per_file():
            result = check_source(shown, document.source, resolver.settings_for(path), project=ProjectRole(facts=facts))
        return self._active(result), document.source.splitlines()

    def _untitled(self, uri: str, source: str) -> list[Finding]:
        """Lint a buffer that is no local file, on its own: the settings of
        the (first local) workspace folder, else the defaults."""
        folders = self._folders()
        if folders:
            name = Path(unquote(urlparse(uri).path)).name or "untitled.py"
            settings = self.resolver_for(folders[0]).settings_for(folders[0] / name)
        else:
            settings = Settings(rules=resolve((), preview=False))
        too_costly = buffer_notice(uri, source, settings)
        if too_costly is not None:  # the same limits as for files: a huge buffer must not block the server
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=f"{uri}: {too_costly.message}"))
            return []
        with one_collection_per_file():
            result = check_source(uri, source, settings)
        return self._active(result)

    def _active(self, result: FileResult) -> list[Finding]:
        """The findings to show; the notices go to the editor's log."""
        for notice in result.notices:
            self.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Warning, message=f"{notice.path}: {notice.message}"))
        return [f for f in result.findings if f.suppressed is None]

    def fixed_source(self, uri: str) -> str | None:
        """The open document with every safe fix applied (`--fix`), or None
        when no fix applies (or the file is excluded)."""
        document = self.workspace.get_text_document(uri)
        path = uri_to_path(uri)
        if path is None:  # an untitled or remote buffer: fixed once it is a file
            return None
        resolver = self.resolver_for(path)
        if resolver.excludes_file(path):
            return None
        try:
            shown = str(path.relative_to(resolver.cwd))
        except ValueError:
            shown = str(path)
        if buffer_notice(shown, document.source, resolver.settings_for(path)) is not None:
            return None  # too big to lint within the limits: not fixed either
        role = ProjectRole(facts=self.project_facts(path, document.source, resolver))
        outcome = fix_source(shown, document.source, resolver.settings_for(path), unsafe=False, project=role)
        return outcome.text if outcome.applied and outcome.text != document.source else None

    def publish(self, uri: str) -> None:
        """Lint `uri` and publish its diagnostics (never raises)."""
        try:
            findings, lines = self.findings(uri)
        except ConfigError as exc:
            self.window_show_message(lsp.ShowMessageParams(type=lsp.MessageType.Error, message=f"ddplint: {exc}"))
            return
        path = uri_to_path(uri)
        root = self.resolver_for(path).cwd if path is not None else None
        diagnostics = [self.diagnostic(f, lines, uri, root) for f in findings]
        self.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=diagnostics))

    def publish_later(self, uri: str) -> None:
        """Debounced `publish`, for keystrokes."""
        pending = self._pending.pop(uri, None)
        if pending is not None:
            pending.cancel()
        loop = asyncio.get_running_loop()
        self._pending[uri] = loop.call_later(DEBOUNCE_SECONDS, self.publish, uri)

    @staticmethod
    def diagnostic(finding: Finding, lines: list[str], uri: str, root: Path | None = None) -> lsp.Diagnostic:
        """A finding as an LSP diagnostic; related locations in other files
        (an imported helper) are relative to the workspace `root`."""
        rule = get_rule(finding.rule)
        related = []
        for r in finding.related:
            if r.path == finding.path or root is None:
                location = lsp.Location(uri=uri, range=to_range(r.span, lines))
            else:
                location = lsp.Location(uri=(root / r.path).resolve().as_uri(), range=to_range(r.span, []))
            related.append(lsp.DiagnosticRelatedInformation(location=location, message=r.message))
        return lsp.Diagnostic(
            range=to_range(finding.span, lines),
            message=finding.message,
            severity=_SEVERITY[finding.severity],
            code=finding.rule,
            code_description=lsp.CodeDescription(href=help_uri(rule)) if rule is not None else None,
            source=SOURCE,
            related_information=related or None,
        )


server = DdplintServer()


#: What the server asks the editor to watch on disk.
CONFIG_WATCHERS = [lsp.FileSystemWatcher(glob_pattern=f"**/{name}") for name in _CONFIG_FILES]


@server.feature(lsp.INITIALIZED)
async def initialized(ls: DdplintServer, params: lsp.InitializedParams) -> None:
    """Ask the editor to report changes of configuration files made outside
    it (git checkout, another editor), where it can register watchers."""
    workspace = ls.client_capabilities.workspace
    watched = workspace.did_change_watched_files if workspace is not None else None
    if watched is None or not watched.dynamic_registration:
        return
    options = lsp.DidChangeWatchedFilesRegistrationOptions(watchers=CONFIG_WATCHERS)
    registration = lsp.Registration(
        id="ddplint-config", method=lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES, register_options=options
    )
    try:
        await ls.client_register_capability_async(lsp.RegistrationParams(registrations=[registration]))
    except Exception as exc:  # noqa: BLE001 - an editor that refuses: config changes apply on save only
        message = f"ddplint: no file watcher: {exc}"
        ls.window_log_message(lsp.LogMessageParams(type=lsp.MessageType.Info, message=message))


@server.feature(lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES)
def did_change_watched_files(ls: DdplintServer, params: lsp.DidChangeWatchedFilesParams) -> None:
    if any(is_config(change.uri) for change in params.changes):
        ls.reload_configs()


@server.feature(lsp.TEXT_DOCUMENT_DID_OPEN)
def did_open(ls: DdplintServer, params: lsp.DidOpenTextDocumentParams) -> None:
    if is_python(params.text_document.uri, params.text_document.language_id):
        ls.publish(params.text_document.uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CHANGE)
def did_change(ls: DdplintServer, params: lsp.DidChangeTextDocumentParams) -> None:
    uri = params.text_document.uri
    if is_python(uri, ls.workspace.get_text_document(uri).language_id):
        ls.publish_later(uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_SAVE)
def did_save(ls: DdplintServer, params: lsp.DidSaveTextDocumentParams) -> None:
    uri = params.text_document.uri
    if is_config(uri):
        ls.reload_configs()
        return
    path = uri_to_path(uri)
    if path is not None:
        ls.forget_project(path)
    if is_python(uri, ls.workspace.get_text_document(uri).language_id):
        ls.publish(uri)


@server.feature(lsp.TEXT_DOCUMENT_DID_CLOSE)
def did_close(ls: DdplintServer, params: lsp.DidCloseTextDocumentParams) -> None:
    uri = params.text_document.uri
    pending = ls._pending.pop(uri, None)
    if pending is not None:
        pending.cancel()
    ls.text_document_publish_diagnostics(lsp.PublishDiagnosticsParams(uri=uri, diagnostics=[]))


#: The kind of the "fix all" source action (fix on save: `"source.fixAll.ddplint": "explicit"`).
FIX_ALL = f"{lsp.CodeActionKind.SourceFixAll.value}.{SOURCE}"


def _wanted(kind: str, only: list[str] | None) -> bool:
    """Whether the editor asked for actions of `kind` (`only` lists kinds and their parents)."""
    return only is None or any(kind == k or kind.startswith(k + ".") for k in only)


@server.feature(
    lsp.TEXT_DOCUMENT_CODE_ACTION,
    lsp.CodeActionOptions(code_action_kinds=[lsp.CodeActionKind.QuickFix, lsp.CodeActionKind.SourceFixAll, FIX_ALL]),
)
def code_action(ls: DdplintServer, params: lsp.CodeActionParams) -> list[lsp.CodeAction]:
    uri = params.text_document.uri
    document = ls.workspace.get_text_document(uri)
    lines = document.source.splitlines()
    only = params.context.only
    actions = _quick_fixes(ls, params, lines) if _wanted(lsp.CodeActionKind.QuickFix.value, only) else []
    # Only on request (on save, or the editor's "Source Action..." menu): not for every light bulb.
    if only is not None and _wanted(FIX_ALL, only) and is_python(uri, document.language_id):
        fixed = ls.fixed_source(uri)
        if fixed is not None:
            actions.append(
                lsp.CodeAction(
                    title="ddplint: Fix all auto-fixable problems",
                    kind=FIX_ALL,
                    edit=lsp.WorkspaceEdit(changes={uri: [lsp.TextEdit(range=whole_range(document.source), new_text=fixed)]}),
                )
            )
    return actions


def whole_range(text: str) -> lsp.Range:
    """The range of all of `text` (its end in UTF-16 code units)."""
    last = text.rsplit("\n", 1)[-1]
    return lsp.Range(start=lsp.Position(0, 0), end=lsp.Position(text.count("\n"), _utf16_column(last, len(last))))


def _quick_fixes(ls: DdplintServer, params: lsp.CodeActionParams, lines: list[str]) -> list[lsp.CodeAction]:
    """The finding's fix and "suppress with # noqa" for each diagnostic of ours in the request."""
    uri = params.text_document.uri
    ours = [d for d in params.context.diagnostics if d.source == SOURCE and isinstance(d.code, str)]
    findings = ls.findings(uri)[0] if ours else []
    actions = []
    for diagnostic in ours:
        fix_action = _fix_action(diagnostic, findings, lines, uri)
        if fix_action is not None:
            actions.append(fix_action)
        line = diagnostic.range.start.line
        edit = noqa_edit(lines[line] if line < len(lines) else "", line, diagnostic.code)
        actions.append(
            lsp.CodeAction(
                title=f"Suppress {diagnostic.code} with # noqa",
                kind=lsp.CodeActionKind.QuickFix,
                diagnostics=[diagnostic],
                edit=lsp.WorkspaceEdit(changes={uri: [edit]}),
            )
        )
    return actions


def _fix_action(diagnostic: lsp.Diagnostic, findings: list[Finding], lines: list[str], uri: str) -> lsp.CodeAction | None:
    """The finding's own fix (the same edits as `--fix`), for the finding the diagnostic shows."""
    for finding in findings:
        fix = finding.fix
        if finding.rule != diagnostic.code or to_range(finding.span, lines) != diagnostic.range:
            continue
        if fix is None or not fix.edits or fix.applicability is Applicability.DISPLAY_ONLY:
            return None
        unsafe = fix.applicability is Applicability.UNSAFE
        edits = [lsp.TextEdit(range=to_range(e.span, lines), new_text=e.content) for e in fix.edits]
        return lsp.CodeAction(
            title=f"{fix.title} (unsafe: review the change)" if unsafe else fix.title,
            kind=lsp.CodeActionKind.QuickFix,
            diagnostics=[diagnostic],
            is_preferred=not unsafe,
            edit=lsp.WorkspaceEdit(changes={uri: edits}),
        )
    return None


def noqa_edit(text: str, line: int, code: str) -> lsp.TextEdit:
    """The edit that adds `code` to the line's `# noqa` comment (or a new one)."""
    match = _NOQA.search(text)
    end = _utf16_column(text, len(text))
    if match is None:
        start = _utf16_column(text, len(text.rstrip()))
        return lsp.TextEdit(
            range=lsp.Range(start=lsp.Position(line, start), end=lsp.Position(line, end)),
            new_text=f"  # noqa: {code}",
        )
    codes = match.group("codes")
    replacement = f"# noqa: {codes}, {code}" if codes else f"# noqa: {code}"
    start = _utf16_column(text, match.start())
    stop = _utf16_column(text, match.end())
    return lsp.TextEdit(range=lsp.Range(start=lsp.Position(line, start), end=lsp.Position(line, stop)), new_text=replacement)


@server.feature(lsp.SHUTDOWN)
def shutdown(ls: DdplintServer, params: None) -> None:
    ls.shutting_down = True


def serve_stdio(stdin, stdout) -> int:
    """Serve `server` over the binary streams until `exit` or the end of
    `stdin`; the exit status: `exit`'s (0 after `shutdown`, else 1), or 0."""
    writer = StdoutWriter(stdout)
    protocol = server.protocol
    protocol.set_writer(writer)

    def handle(message) -> None:
        method = getattr(message, "method", None)
        msg_id = getattr(message, "id", None)
        if server.shutting_down and method is not None and msg_id is not None and method != lsp.EXIT:
            error = {"code": INVALID_REQUEST, "message": f"ddplint: {method} after shutdown"}
            writer.write(frame({"jsonrpc": "2.0", "id": msg_id, "error": error}))
            return
        try:
            protocol.handle_message(message)
        except Exception as exc:  # noqa: BLE001 - one message's failure never stops the server
            logger.exception("unable to handle a message")
            server.report_server_error(exc, JsonRpcException)

    def parse(text: str):
        return json.loads(text, object_hook=protocol.structure_message)

    try:
        asyncio.run(serve(stdin, writer.write, handle, parse))
    except SystemExit as exc:  # `exit`
        return exc.code if isinstance(exc.code, int) else 1
    except BrokenPipeError:
        logger.error("the connection to the client is lost")
    finally:
        server.shutdown()
    return 0


def main() -> None:
    """Serve over stdio until `exit` or the client disconnects."""
    tune_gc()
    sys.exit(serve_stdio(sys.stdin.buffer, sys.stdout.buffer))
