"""The language server applies the limits of files on disk to open buffers
(max-file-size, max-lines, max-tokens), before any parse: a huge buffer gets
a warning in the log, no diagnostics, and the server keeps serving."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
import pytest_lsp
from lsprotocol import types as lsp
from pytest_lsp import ClientServerConfig, LanguageClient, client_capabilities

BAD = "from torch.utils.data import DataLoader, DistributedSampler\nDataLoader(ds, sampler=DistributedSampler(ds), shuffle=True)\n"
#: Seconds one lint may take on a loaded machine (each here takes well under one).
BOUND = 60


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.ddplint]\nmax-file-size = "20KB"\nmax-tokens = 1000\n')
    return tmp_path


@pytest_lsp.fixture(config=ClientServerConfig(server_command=[sys.executable, "-m", "ddplint", "server"]))
async def client(lsp_client: LanguageClient, workspace: Path):
    @lsp_client.feature(lsp.CLIENT_REGISTER_CAPABILITY)
    def _register(client: LanguageClient, params: lsp.RegistrationParams) -> None:  # an editor's file watcher
        pass

    await lsp_client.initialize_session(
        lsp.InitializeParams(capabilities=client_capabilities("visual-studio-code"), root_uri=workspace.as_uri())
    )
    yield
    await lsp_client.shutdown_session()


async def _open(client: LanguageClient, path: Path, text: str) -> str:
    uri = path.as_uri()
    client.text_document_did_open(
        lsp.DidOpenTextDocumentParams(text_document=lsp.TextDocumentItem(uri=uri, language_id="python", version=1, text=text))
    )
    await asyncio.wait_for(client.wait_for_notification(lsp.TEXT_DOCUMENT_PUBLISH_DIAGNOSTICS), BOUND)
    return uri


async def test_buffers_above_the_limits_are_not_linted(client: LanguageClient, workspace: Path) -> None:
    big = await _open(client, workspace / "big.py", BAD + "# " + "x" * 30_000 + "\n")  # never saved: only the buffer
    assert list(client.diagnostics[big]) == []
    dense = await _open(client, workspace / "dense.py", BAD + "t = [" + ",".join(f"f({i})" for i in range(400)) + "]\n")
    assert list(client.diagnostics[dense]) == []
    warnings = [m.message for m in client.log_messages if m.type == lsp.MessageType.Warning]
    assert warnings == [
        "big.py: 30.1 kB is above max-file-size (20.0 kB); not linted",
        "dense.py: above max-tokens (1,000 tokens); not linted",
    ]
    fine = await _open(client, workspace / "train.py", BAD)  # still serving, with the same workspace config
    assert [d.code for d in client.diagnostics[fine]] == ["DDP014"]
