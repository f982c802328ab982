"""A sentence typed at a terminal attached to the engine is accounted for (issues 31, 34): one the engine never
confirmed is said with the sentence itself, and one that found the run ended says it started the next wake.

The terminal's real engine client over a real Unix socket; the other end is a few lines that answer (or hang up)
the way an engine does, so each outcome happens on cue.
"""

from __future__ import annotations

import asyncio
import io
import json
import shutil
import sys
import tempfile
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest

from flower.cli.console import Console
from flower.cli.engine import Sayer
from flower.core.frames import bodies
from flower.engine.client import EngineClient
from flower.engine.stream import frame

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="the engine's socket is a Unix socket (D11)")

Answer = Callable[[dict[str, Any], asyncio.StreamWriter], Awaitable[None]]


async def hang_up(message: dict[str, Any], writer: asyncio.StreamWriter) -> None:
    writer.close()  # the engine died between the typing and its answer


async def started(message: dict[str, Any], writer: asyncio.StreamWriter) -> None:
    result = {"folder": message["params"]["folder"], "action": "started", "status": {}}
    writer.write(frame({"jsonrpc": "2.0", "id": message["id"], "result": result}))


@pytest.fixture
async def engine_that() -> AsyncIterator[Callable[[Answer], Awaitable[EngineClient]]]:
    """An engine-shaped socket answering `flower/say` with `answer`; yields a connector for the real client."""
    root = Path(tempfile.mkdtemp(prefix="fs-", dir="/tmp"))  # short: Unix socket paths are limited to 107 bytes
    servers: list[asyncio.Server] = []
    clients: list[EngineClient] = []

    async def connect(answer: Answer) -> EngineClient:
        async def accept(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            async for body in bodies(reader):
                await answer(json.loads(body), writer)

        sock = root / f"e{len(servers)}.sock"
        servers.append(await asyncio.start_unix_server(accept, path=str(sock)))
        clients.append(await EngineClient.connect(sock))
        return clients[-1]

    yield connect
    for client in clients:
        await client.close()
    for server in servers:
        server.close()
    shutil.rmtree(root, ignore_errors=True)


async def test_a_sentence_the_engine_never_confirmed_is_said_with_the_sentence(engine_that, capsys) -> None:
    client = await engine_that(hang_up)
    out = io.StringIO()
    await asyncio.wait_for(Sayer(client, "file:///w", {}, Console("en", out, live=False))("also handle negatives"), 10)
    err = capsys.readouterr().err
    assert err == ("flower: the flower engine did not confirm this sentence (the engine left); if the run does not show "
                   "it, say it again: also handle negatives\n")


async def test_a_sentence_that_found_the_run_ended_says_it_started_the_next_wake(engine_that, capsys) -> None:
    client = await engine_that(started)
    out = io.StringIO()
    say = Sayer(client, "file:///w", {}, Console("zh", out, live=False))
    await asyncio.wait_for(say("再加上除法"), 10)
    await asyncio.wait_for(say.settled(), 10)
    assert out.getvalue() == "· 这次运行已结束,这句话在 flower 引擎里开始了下一次唤醒: 再加上除法\n"
    assert capsys.readouterr().err == ""
