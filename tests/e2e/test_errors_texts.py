"""D4 for failures: every FlowerError and step error a person reads is a catalog sentence in their language.

The real `flower` CLI under LANG=zh_CN.UTF-8 runs into no key, a workspace held by another
process, nothing to continue and a refused key; the language server does the same with the
editor's locale `zh-cn`. The technical detail (a pid, a path, the API's own text) stays as it came.
"""

from __future__ import annotations

import asyncio
import os
import re
import sys
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import client_capabilities
from test_cli import flower
from test_lsp import Client, stop, uri
from test_lsp import servers as servers  # noqa: F401 - the language-server fixture
from test_texts_cli import chinese_words, english

from conftest import ROOT
from flower.core.errors import FlowerError, MissingCredentials
from flower.core.lock import WorkspaceBusy, WorkspaceLock
from flower.core.texts import CATALOG, say, text
from flower.lsp import protocol as p
from flower.testing import unauthorized

TASK = "build a calculator"


def no_english(output: str) -> None:
    """No line is an English catalog sentence, and no English piece of one (≥ 8 chars) appears anywhere."""
    sentences = [(key, english(e["en"])) for key, e in CATALOG.items() if e["en"] != e["zh"]]
    for line in output.splitlines():
        bare = line.strip().removeprefix("flower: ").strip()
        spoken = [key for key, pattern in sentences if pattern.fullmatch(bare)]
        assert not spoken, f"{line!r} is the English of {spoken}"
    zh = chinese_words()
    pieces = {part.strip() for e in CATALOG.values() for part in re.split(r"\{[^}]*\}", e["en"]) if len(part.strip()) >= 8}
    assert not [part for part in pieces if part not in zh and part in output]


def test_an_error_is_english_for_logs_and_the_readers_language_for_a_person():
    err = FlowerError("nothing_here")
    assert str(err) == text("nothing_here", "en") and err.text("zh_CN.UTF-8") == text("nothing_here", "zh")
    assert err.key == "nothing_here" and MissingCredentials().key == "missing_credentials"
    busy = WorkspaceBusy(Path("/w/runs/flower.lock"), 4242, None)
    assert "pid 4242" in str(busy) and "kill 4242" in str(busy) and "/w/runs/flower.lock" in str(busy)
    assert busy.text("zh").startswith("另一个 flower(pid 4242)") and "停掉它(kill 4242)" in busy.text("zh")
    # A nested sentence is rendered in the same language; a plain field (the API's text) is shown as it is.
    said = say("step_failed", step="澄清", error=say("not_retried", detail="API Error: 401", advice=say("fix_auth")))
    assert said.text("zh") == "澄清: API Error: 401\n不再重试: API key 被拒绝: 检查 ANTHROPIC_API_KEY(或用 `claude login` 重新登录)"
    assert str(said).endswith("not retried: the API key was refused: check ANTHROPIC_API_KEY (or log in again with `claude login`)")


HOLD = """
import sys
from flower.core.lock import WorkspaceLock
with WorkspaceLock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


async def test_the_cli_says_its_failures_in_chinese(model, env, workspace, run_dir, tmp_path):
    shown: list[str] = []

    async def run(*args: str, code: int, env: dict[str, str] = env, cwd: Path = workspace) -> str:
        done = await flower(*args, env=env, cwd=cwd, lang="zh")
        assert done.code == code, done.out + done.err
        shown.append(done.out + done.err)
        return done.err

    # No key in the environment and no `claude login`: said before anything is written.
    empty = tmp_path / "no-login"
    empty.mkdir()
    err = await run(TASK, "-r", str(run_dir), code=2, env={"CLAUDE_CONFIG_DIR": str(empty)})  # bad input (issue 34)
    assert err.strip() == f"flower: {text('missing_credentials', 'zh')}"
    assert not (run_dir / "lineage.json").exists() and list(workspace.iterdir()) == []

    # Another process holds the workspace (D5): its pid, in Chinese.
    holder = await asyncio.create_subprocess_exec(sys.executable, "-c", HOLD, str(run_dir), stdin=asyncio.subprocess.PIPE,
                                                  stdout=asyncio.subprocess.PIPE)
    try:
        assert await asyncio.wait_for(holder.stdout.readline(), 30) == b"held\n"
        err = await run(TASK, "-r", str(run_dir), code=3)
    finally:
        holder.stdin.close()
        await asyncio.wait_for(holder.wait(), 30)
    assert f"另一个 flower(pid {holder.pid}," in err and f"停掉它(kill {holder.pid})" in err
    assert str(run_dir / "flower.lock") in err and not model.conversation

    # Nothing to continue in a folder that never ran.
    err = await run("-r", str(run_dir), code=2)
    assert text("nothing_here", "zh") in err

    # The model API refuses the key mid-wake: the API's text as it came, the advice in Chinese (S21).
    model.push(unauthorized())
    err = await run(TASK, "-r", str(run_dir), code=1)
    assert "不再重试: " + text("fix_auth", "zh") in err and "401" in err

    no_english("\n".join(shown))


@pytest.fixture
async def bare_server(tmp_path):
    """Start a server whose environment has no key and whose CLAUDE_CONFIG_DIR is empty (no `claude login`)."""
    empty = tmp_path / "no-login"
    empty.mkdir(exist_ok=True)
    bare = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    started: list[Client] = []

    async def start(*folders: Path, locale: str) -> Client:
        client = Client()
        await client.start_io(sys.executable, "-m", "flower.lsp", env={**bare, "CLAUDE_CONFIG_DIR": str(empty)},
                              start_new_session=True)
        started.append(client)
        await asyncio.wait_for(client.initialize_session(types.InitializeParams(
            capabilities=client_capabilities("visual-studio-code"), locale=locale,
            workspace_folders=[types.WorkspaceFolder(uri(f), f.name) for f in folders])), 30)
        return client

    yield start
    for client in started:
        await stop(client)


@pytest.mark.parametrize("locale, language", [("zh-cn", "zh"), ("en-US", "en")])
async def test_no_key_is_its_own_error_code_in_the_editors_language(bare_server, workspace, locale, language):
    client = await bare_server(workspace, locale=locale)
    with pytest.raises(JsonRpcException) as raised:
        await client.request(p.WAKE, {"folder": uri(workspace), "text": TASK})
    assert raised.value.code == p.MISSING_CREDENTIALS == -32013
    assert raised.value.message == text("missing_credentials", language)
    assert raised.value.data == {"key": "missing_credentials"}
    assert not (workspace / "runs" / "lineage.json").exists()


async def test_the_editor_gets_busy_and_nothing_to_continue_in_chinese(servers, workspace):
    client = await servers(workspace, locale="zh-cn")
    folder = uri(workspace)
    with WorkspaceLock(workspace / "runs"):
        with pytest.raises(JsonRpcException) as raised:
            await client.request(p.WAKE, {"folder": folder, "text": TASK})
    assert raised.value.code == p.WORKSPACE_BUSY and raised.value.data["key"] == "workspace_busy"
    assert raised.value.message.startswith(f"另一个 flower(pid {os.getpid()}")
    with pytest.raises(JsonRpcException) as raised:
        await client.request(p.WAKE, {"folder": folder})
    assert raised.value.code == p.FLOWER_ERROR and raised.value.message == text("nothing_here", "zh")
    no_english(raised.value.message)


def test_protocol_md_documents_the_missing_credentials_code_and_interrupted():
    doc = (ROOT / "protocol.md").read_text(encoding="utf-8")
    assert f"| {p.MISSING_CREDENTIALS} | MissingCredentials |" in doc
    assert f'"code": {p.MISSING_CREDENTIALS}' in doc and text("missing_credentials", "zh") in doc
    assert "| `interrupted` | boolean |" in doc


async def test_a_refused_key_mid_wake_ends_in_the_editors_language(servers, model, workspace):
    model.push(unauthorized())
    client = await servers(workspace, locale="zh-cn")
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": TASK})
    end = await client.ended(folder)
    advice = "不再重试: " + text("fix_auth", "zh")
    assert end["ok"] is False and end["error"].startswith("澄清: ") and advice in end["error"] and "401" in end["error"]
    [step_end] = client.seen(p.STEP_END, folder)
    assert advice in step_end["error"]
    no_english(end["error"] + "\n" + step_end["error"])
