"""The language server, end to end over stdio with pytest-lsp (a real client)."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

BAD = (
    "import torch.distributed as dist\n"
    "from torch.utils.data import DataLoader, DistributedSampler\n"
    "loader = DataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"
)
GOOD = "from torch.utils.data import DataLoader\nloader = DataLoader(ds, shuffle=True)\n"


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.ddplint]\nignore = ["DDP012"]\n')
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "ddplint", "server"]))
async def client(lsp_client: LanguageClient, workspace: Path):
    registrations: list[lsp.Registration] = []

    @lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def _register(client: LanguageClient, params: lsp.RegistrationParams) -> None:  # an editor's file watcher
        registrations.extend(params.registrations)

    lsp_client.registrations = registrations
    lsp_client.initialize_result = await lsp_client.initialize_session(
        lsp.InitializeParams(capabilities=client_capabilities("visual-studio-code"), root_uri=workspace.as_uri())
    )
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, path: Path, text: str) -> str:
    path.write_text(text)
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    return uri


async def test_diagnostics_on_open(client: LanguageClient, workspace: Path) -> None:
    uri = await _open(client, workspace / "train.py", BAD)
    (diagnostic,) = client.diagnostics[uri]
    assert diagnostic.code == "DDP014" and diagnostic.source == "ddplint"
    assert diagnostic.severity == lsp.DiagnosticSeverity.Error
    assert diagnostic.range.start == lsp.Position(line=2, character=9)
    assert diagnostic.code_description.href.endswith("#ddp014-sampler-shuffle-conflict")
    assert diagnostic.related_information[0].message == "`shuffle` is truthy here"


async def test_change_save_close(client: LanguageClient, workspace: Path) -> None:
    uri = await _open(client, workspace / "train.py", BAD)
    assert client.diagnostics[uri]
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=GOOD)],
        )
    )
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=3),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text=BAD)],
        )
    )
    client.text_document_did_save(lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert [d.code for d in client.diagnostics[uri]] == ["DDP014"]
    client.text_document_did_close(lsp.DidCloseTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=uri)))
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []


async def test_workspace_config_applies(client: LanguageClient, workspace: Path) -> None:
    uri = await _open(client, workspace / "amp.py", "import torch\ns = torch.cuda.amp.GradScaler()\n")
    assert list(client.diagnostics[uri]) == []  # DDP012 is ignored in the workspace's pyproject.toml


async def test_syntax_error_mid_edit_then_keeps_serving(client: LanguageClient, workspace: Path) -> None:
    uri = await _open(client, workspace / "train.py", "def train(model\n")
    (diagnostic,) = client.diagnostics[uri]
    assert diagnostic.code == "DDP000"
    uri2 = await _open(client, workspace / "other.py", BAD)
    assert [d.code for d in client.diagnostics[uri2]] == ["DDP014"]


async def _code_actions(client: LanguageClient, uri: str, diagnostic: lsp.Diagnostic) -> list:
    return await client.text_document_code_action_async(
        lsp.CodeActionParams(
            text_document=lsp.TextDocumentIdentifier(uri=uri),
            range=diagnostic.range,
            context=lsp.CodeActionContext(diagnostics=[diagnostic]),
        )
    )


async def test_noqa_quick_fix(client: LanguageClient, workspace: Path) -> None:
    uri = await _open(client, workspace / "train.py", BAD)
    (diagnostic,) = client.diagnostics[uri]
    actions = await _code_actions(client, uri, diagnostic)
    fix, action = actions
    assert action.title == "Suppress DDP014 with # noqa"
    assert fix.title == "Remove `shuffle=`; the sampler shuffles" and fix.is_preferred
    (edit,) = action.edit.changes[uri]
    lines = BAD.splitlines()
    line = lines[edit.range.start.line]
    fixed = line[: edit.range.start.character] + edit.new_text + line[edit.range.end.character :]
    lines[edit.range.start.line] = fixed
    assert fixed.endswith("shuffle=True)  # noqa: DDP014")
    # The edited document has no finding left.
    client.text_document_did_change(
        lsp.DidChangeTextDocumentParams(
            text_document=lsp.VersionedTextDocumentIdentifier(uri=uri, version=2),
            content_changes=[lsp.TextDocumentContentChangeWholeDocument(text="\n".join(lines) + "\n")],
        )
    )
    await client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS)
    assert list(client.diagnostics[uri]) == []


async def test_quick_fix_applies_the_same_edit_as_fix(client: LanguageClient, workspace: Path) -> None:
    from ddplint.rule import all_rules_settings
    from ddplint.engine.fixer import fix_source

    uri = await _open(client, workspace / "train.py", BAD)
    (diagnostic,) = client.diagnostics[uri]
    actions = await _code_actions(client, uri, diagnostic)
    (edit,) = actions[0].edit.changes[uri]
    lines = BAD.splitlines(keepends=True)
    assert edit.range.start.line == edit.range.end.line
    line = lines[edit.range.start.line]
    lines[edit.range.start.line] = line[: edit.range.start.character] + edit.new_text + line[edit.range.end.character :]
    assert "".join(lines) == fix_source("train.py", BAD, all_rules_settings()).text


HELPER = "import torch.distributed as dist\n\n\ndef sync():\n    dist.barrier()\n"
USES_HELPER = (
    "import torch.distributed as dist\n"
    "from helpers import sync\n\n"
    "dist.init_process_group('gloo')\n"
    "if dist.get_rank() == 0:\n"
    "    sync()\n"
)


async def test_the_editor_sees_helpers_of_the_project_on_disk(client: LanguageClient, workspace: Path) -> None:
    (workspace / "helpers.py").write_text(HELPER)
    uri = await _open(client, workspace / "train.py", USES_HELPER)
    (diagnostic,) = client.diagnostics[uri]
    assert diagnostic.code == "DDP001" and "from helpers.py:4" in diagnostic.message
    assert diagnostic.range.start.line == 5
    helper = diagnostic.related_information[-1].location
    assert helper.uri == (workspace / "helpers.py").resolve().as_uri() and helper.range.start.line == 3


# ------------------------------------------------------------------ configuration changes

AMP = "import torch\ns = torch.cuda.amp.GradScaler()\n"  # DDP012, ignored by the workspace's pyproject.toml


async def _published(client: LanguageClient) -> None:
    """The next publishDiagnostics, or a failure after 10 s (none came)."""
    await asyncio.wait_for(client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), timeout=10)


async def test_the_server_asks_the_editor_to_watch_config_files(client: LanguageClient) -> None:
    for _ in range(50):  # the request follows `initialized`
        if client.registrations:
            break
        await asyncio.sleep(0.1)
    (registration,) = [r for r in client.registrations if r.method == lsp.WORKSPACE_DID_CHANGE_WATCHED_FILES]
    patterns = {w["globPattern"] for w in registration.register_options["watchers"]}
    assert patterns == {"**/pyproject.toml", "**/ddplint.toml"}


async def test_config_change_on_disk_is_reloaded(client: LanguageClient, workspace: Path) -> None:
    uri = await _open(client, workspace / "amp.py", AMP)
    assert list(client.diagnostics[uri]) == []
    (workspace / "pyproject.toml").write_text("[tool.ddplint]\n")  # DDP012 no longer ignored
    client.workspace_did_change_watched_files(
        lsp.DidChangeWatchedFilesParams(
            changes=[lsp.FileEvent(uri=(workspace / "pyproject.toml").as_uri(), type=lsp.FileChangeType.Changed)]
        )
    )
    await _published(client)
    assert [d.code for d in client.diagnostics[uri]] == ["DDP012"]


async def test_config_saved_in_the_editor_is_reloaded(client: LanguageClient, workspace: Path) -> None:
    uri = await _open(client, workspace / "amp.py", AMP)
    assert list(client.diagnostics[uri]) == []
    config = workspace / "ddplint.toml"  # a new, nearer config file wins over pyproject.toml
    config.write_text('select = ["DDP012"]\n')
    saved = lsp.DidSaveTextDocumentParams(text_document=lsp.TextDocumentIdentifier(uri=config.as_uri()))
    client.text_document_did_save(saved)
    await _published(client)
    assert [d.code for d in client.diagnostics[uri]] == ["DDP012"]


async def test_a_config_file_opened_in_the_editor_is_not_linted_as_python(
    client: LanguageClient, workspace: Path
) -> None:
    config = workspace / "pyproject.toml"
    document = lsp.TextDocumentItem(uri=config.as_uri(), language_id="toml", version=1, text=config.read_text())
    client.text_document_did_open(lsp.DidOpenTextDocumentParams(text_document=document))
    uri = await _open(client, workspace / "train.py", BAD)  # the next diagnostics are train.py's
    assert [d.code for d in client.diagnostics[uri]] == ["DDP014"]
    assert config.as_uri() not in client.diagnostics


async def test_fix_all_source_action_applies_the_safe_fixes(client: LanguageClient, workspace: Path) -> None:
    """Fix on save: `source.fixAll.ddplint` is advertised and returns the
    document as `ddplint check --fix` writes it (safe fixes only)."""
    from ddplint.engine.fixer import fix_source
    from ddplint.rule import all_rules_settings

    kinds = client.initialize_result.capabilities.code_action_provider.code_action_kinds
    assert "source.fixAll.ddplint" in kinds
    uri = await _open(client, workspace / "train.py", BAD)
    for only in (["source.fixAll.ddplint"], ["source.fixAll"], ["source"]):
        actions = await client.text_document_code_action_async(
            lsp.CodeActionParams(
                text_document=lsp.TextDocumentIdentifier(uri=uri),
                range=lsp.Range(start=lsp.Position(0, 0), end=lsp.Position(0, 0)),
                context=lsp.CodeActionContext(diagnostics=[], only=only),
            )
        )
        (action,) = actions  # no quick fixes: the editor asked for the source action only
        assert action.kind == "source.fixAll.ddplint"
        (edit,) = action.edit.changes[uri]
        assert edit.range.start == lsp.Position(0, 0) and edit.range.end == lsp.Position(len(BAD.splitlines()), 0)
        assert edit.new_text == fix_source("train.py", BAD, all_rules_settings()).text != BAD
        assert "shuffle=True" not in edit.new_text
    # A document with nothing to fix gets no action; quick fixes alone exclude it.
    clean = await _open(client, workspace / "clean.py", GOOD)
    only_fix_all = lsp.CodeActionContext(diagnostics=[], only=["source.fixAll"])
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(text_document=lsp.TextDocumentIdentifier(uri=clean), range=lsp.Range(
            start=lsp.Position(0, 0), end=lsp.Position(0, 0)), context=only_fix_all)
    )
    assert not actions
    (diagnostic,) = client.diagnostics[uri]
    quick = await client.text_document_code_action_async(
        lsp.CodeActionParams(text_document=lsp.TextDocumentIdentifier(uri=uri), range=diagnostic.range,
                             context=lsp.CodeActionContext(diagnostics=[diagnostic], only=["quickfix"]))
    )
    assert quick and {a.kind for a in quick} == {"quickfix"}


async def test_fix_all_leaves_unsafe_fixes_alone(client: LanguageClient, workspace: Path) -> None:
    """DDP006's fix (a rank-0 guard) is not safe: fix on save never applies it."""
    text = (
        "import torch\nimport torch.distributed as dist\n\n\ndef save(model):\n"
        "    dist.init_process_group('nccl')\n    torch.save(model.state_dict(), 'c.pt')\n"
    )
    uri = await _open(client, workspace / "save.py", text)
    assert [d.code for d in client.diagnostics[uri]] == ["DDP006"]
    actions = await client.text_document_code_action_async(
        lsp.CodeActionParams(text_document=lsp.TextDocumentIdentifier(uri=uri), range=lsp.Range(
            start=lsp.Position(0, 0), end=lsp.Position(0, 0)),
            context=lsp.CodeActionContext(diagnostics=[], only=["source.fixAll"]))
    )
    assert not actions


# ------------------------------------------------------------------ a faulty or hostile client, byte by byte

import json  # noqa: E402
import queue  # noqa: E402
import subprocess  # noqa: E402
import threading  # noqa: E402

from conftest import console_script  # noqa: E402

#: How long a reply may take on a loaded machine (a deaf or dead server never replies).
REPLY_S = 60


class RawClient:
    """The installed `ddplint server` in a subprocess, spoken to in bytes."""

    def __init__(self, cwd: Path) -> None:
        self.stderr = (cwd / "server.err").open("wb")
        self.proc = subprocess.Popen(
            [console_script(), "server"], cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr
        )
        self.messages: queue.Queue = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        out = self.proc.stdout
        while True:
            length = None
            while True:
                line = out.readline()
                if not line:
                    self.messages.put(None)
                    return
                if line == b"\r\n":
                    break
                name, _, value = line.decode("ascii").partition(":")
                if name.lower() == "content-length":
                    length = int(value)
            self.messages.put(json.loads(out.read(length)))

    def send_raw(self, data: bytes) -> None:
        self.proc.stdin.write(data)
        self.proc.stdin.flush()

    def send(self, payload: dict) -> None:
        body = json.dumps(payload).encode()
        self.send_raw(b"Content-Length: %d\r\n\r\n" % len(body) + body)

    def request(self, msg_id: int, method: str, params: dict | None = None) -> None:
        self.send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})

    def notify(self, method: str, params: dict | None = None) -> None:
        self.send({"jsonrpc": "2.0", "method": method, "params": params})

    def until(self, wanted) -> tuple[dict, list[dict]]:
        """The first message `wanted(message)` accepts, and those before it
        (a failure if the server goes deaf or dies first)."""
        before = []
        while True:
            try:
                message = self.messages.get(timeout=REPLY_S)
            except queue.Empty:
                pytest.fail(f"no reply in {REPLY_S} s; before it: {before}")
            if message is None:
                pytest.fail(f"the server closed its output (status {self.proc.wait(REPLY_S)}); before it: {before}")
            if wanted(message):
                return message, before
            before.append(message)

    def response(self, msg_id: int) -> tuple[dict, list[dict]]:
        return self.until(lambda m: m.get("id") == msg_id and "method" not in m)

    def initialize(self, root: Path | None, msg_id: int = 1) -> dict:
        self.request(msg_id, "initialize", {"processId": None, "rootUri": root.as_uri() if root else None, "capabilities": {}})
        reply, _ = self.response(msg_id)
        assert "capabilities" in reply["result"]
        self.notify("initialized", {})
        return reply

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(REPLY_S)
        self.stderr.close()


@pytest.fixture
def raw(tmp_path: Path):
    client = RawClient(tmp_path)
    yield client
    client.close()


_INIT = json.dumps({"jsonrpc": "2.0", "id": 9, "method": "shutdown"}).encode()

MALFORMED = {
    "no Content-Length": b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + _INIT,
    "Content-Length not a number": b"Content-Length: twelve\r\n\r\n" + _INIT,
    "negative Content-Length": b"Content-Length: -5\r\n\r\n" + _INIT,
    "header not UTF-8": b"Content-L\xe9ngth: %d\r\n\r\n" % len(_INIT) + _INIT,
    "truncated body": b"Content-Length: %d\r\n\r\n" % (len(_INIT) + 400) + _INIT[:20],
    "body not UTF-8": b'Content-Length: 45\r\n\r\n{"jsonrpc": "2.0", "id": 9, "method": "\xff\xfe"}',
    "body not JSON": b"Content-Length: 9\r\n\r\n{not json",
    "huge Content-Length": b"Content-Length: 99999999999\r\n\r\n" + _INIT,
    "header line of garbage": b"\x00\x01garbage\r\n",
}


@pytest.mark.parametrize("data", MALFORMED.values(), ids=MALFORMED.keys())
def test_a_malformed_message_is_answered_or_skipped_and_the_server_keeps_answering(
    raw: RawClient, tmp_path: Path, data: bytes
) -> None:
    """Each broken message gets at most an error (id null) and no other reply
    (its request is never run: no `shutdown` happens); the next well-formed
    message is answered, and so is the one after."""
    raw.send_raw(data)
    _, before = raw.until(lambda m: True) if data.startswith(b"Content-Length: 99") else (None, [])
    raw.initialize(tmp_path)  # answered: the broken message's own `shutdown` (id 9) never ran
    diagnostics, others = _open_raw(raw, (tmp_path / "train.py").as_uri(), BAD)
    assert [d["code"] for d in diagnostics] == ["DDP014"]
    for message in [*before, *others]:
        assert message.get("id") is None and message["error"]["code"] in (-32700, -32600), message
    raw.request(3, "shutdown")
    assert raw.response(3)[0]["result"] is None
    raw.notify("exit")
    assert raw.proc.wait(REPLY_S) == 0


def test_a_huge_content_length_is_refused_without_allocating_it(raw: RawClient, tmp_path: Path) -> None:
    raw.send_raw(b"Content-Length: 99999999999\r\n\r\n{}")
    error, _ = raw.until(lambda m: True)
    assert error["id"] is None and error["error"]["code"] == -32600
    assert "99999999999 bytes refused" in error["error"]["message"]
    raw.initialize(tmp_path)


def test_a_message_split_into_single_bytes_is_read(raw: RawClient, tmp_path: Path) -> None:
    body = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"capabilities": {}}}).encode()
    for byte in b"Content-Length: %d\r\n\r\n" % len(body) + body:
        raw.send_raw(bytes([byte]))
    assert "capabilities" in raw.response(1)[0]["result"]


def test_requests_after_shutdown_get_invalid_request(raw: RawClient, tmp_path: Path) -> None:
    raw.initialize(tmp_path)
    raw.request(2, "shutdown")
    assert raw.response(2)[0]["result"] is None
    raw.request(3, "textDocument/codeAction", {
        "textDocument": {"uri": (tmp_path / "t.py").as_uri()},
        "range": {"start": {"line": 0, "character": 0}, "end": {"line": 0, "character": 0}},
        "context": {"diagnostics": []},
    })  # fmt: skip
    reply, _ = raw.response(3)
    assert reply["error"]["code"] == -32600
    raw.notify("exit")
    assert raw.proc.wait(REPLY_S) == 0


def test_exit_without_shutdown_exits_with_status_1(raw: RawClient, tmp_path: Path) -> None:
    raw.initialize(tmp_path)
    raw.notify("exit")  # the editor keeps its end of stdin open: the server still stops
    assert raw.proc.wait(REPLY_S) == 1


def _open_raw(raw: RawClient, uri: str, text: str) -> tuple[list[dict], list[dict]]:
    document = {"uri": uri, "languageId": "python", "version": 1, "text": text}
    raw.notify("textDocument/didOpen", {"textDocument": document})
    published, before = raw.until(
        lambda m: m.get("method") == "textDocument/publishDiagnostics" and m["params"]["uri"] == uri
    )
    return published["params"]["diagnostics"], before


@pytest.mark.parametrize("template", ["http://example.com{path}", "file://otherhost{path}", "untitled:{path}"])
def test_a_document_that_is_no_local_file_is_linted_as_an_untitled_buffer(
    raw: RawClient, tmp_path: Path, template: str
) -> None:
    """Linted on its own: the project on disk at the URI's path (here the
    workspace, with the helper that makes DDP001) is not read, and a URI with
    no directory of this machine in it (`http://host/train.py`) walks nothing."""
    raw.initialize(tmp_path)
    (tmp_path / "helpers.py").write_text(HELPER)
    (tmp_path / "train.py").write_text(USES_HELPER)
    diagnostics, _ = _open_raw(raw, template.format(path=(tmp_path / "train.py").as_posix()), USES_HELPER + BAD)
    assert [d["code"] for d in diagnostics] == ["DDP014"]
    diagnostics, _ = _open_raw(raw, template.format(path="/train.py"), BAD)
    assert [d["code"] for d in diagnostics] == ["DDP014"]
