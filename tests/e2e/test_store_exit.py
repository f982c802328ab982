"""An unclosed store never keeps the process alive, and loses nothing appended (D2)."""

from __future__ import annotations

import asyncio
import os
import sys
from pathlib import Path

from claude_agent_sdk.types import SessionKey

from flower import Runtime
from flower.stores.sqlite import SqliteSessionStore

KEY: SessionKey = {"project_key": "-work-proj", "session_id": "s1"}
EXIT_WITHIN_S = 20.0

# The SDK's SessionStore protocol has no close(): a script that never closes its store is normal.
UNCLOSED_STORE = """
import asyncio, sys
from flower.stores.sqlite import SqliteSessionStore

async def main():
    store = SqliteSessionStore(sys.argv[1])
    key = {"project_key": "-work-proj", "session_id": "s1"}
    for b in range(5):
        await store.append(key, [{"type": "user", "uuid": f"u{b}-{i}", "n": b * 10 + i} for i in range(10)])
    assert len(await store.load(key)) == 50

asyncio.run(main())
print("returned")
"""

UNCLOSED_RUNTIME = """
import asyncio, sys
from flower import Runtime

async def main():
    rt = Runtime(sys.argv[2], sys.argv[1])
    key = {"project_key": rt.project_key, "session_id": "s1"}
    for b in range(5):
        await rt.store.append(key, [{"type": "user", "uuid": f"u{b}-{i}", "n": b * 10 + i} for i in range(10)])
    assert len(await rt.entries("s1")) == 50
    assert rt.has_session("s1")

asyncio.run(main())
print("returned")
"""


async def run_to_exit(code: str, *args: str) -> None:
    """Run `code` in a fresh interpreter; it must exit on its own, promptly, with code 0."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", code, *args,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONWARNINGS": "error::ResourceWarning"},
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), EXIT_WITHIN_S)
    except TimeoutError:
        proc.kill()
        out, err = await proc.communicate()
        raise AssertionError(
            f"the process did not exit within {EXIT_WITHIN_S} s after asyncio.run returned "
            f"(printed {out.decode()!r})"
        ) from None
    assert proc.returncode == 0, err.decode()[-3000:]
    assert out.decode().strip() == "returned"
    assert "ResourceWarning" not in err.decode()


async def test_unclosed_store_lets_the_process_exit_and_keeps_every_entry(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "sessions.db"
    await run_to_exit(UNCLOSED_STORE, str(path))
    async with SqliteSessionStore(path) as store:
        loaded = await store.load(KEY)
    assert loaded is not None and [dict(x)["n"] for x in loaded] == list(range(50))


async def test_unclosed_runtime_lets_the_process_exit_and_keeps_every_entry(tmp_path: Path) -> None:
    workspace, run_dir = tmp_path / "ws", tmp_path / "runs"
    workspace.mkdir()
    await run_to_exit(UNCLOSED_RUNTIME, str(run_dir), str(workspace))
    async with Runtime(workspace, run_dir) as rt:
        loaded = await rt.entries("s1")
    assert loaded is not None and [dict(x)["n"] for x in loaded] == list(range(50))
