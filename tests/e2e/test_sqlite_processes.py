"""sqlite store: the tests that run separate processes (moved from tests/unit/test_sqlite_store.py)."""

from __future__ import annotations

import asyncio
import sys
import time
from pathlib import Path

from flower.stores.sqlite import SqliteSessionStore

WRITER = """
import asyncio, sys, time
from flower.stores.sqlite import SqliteSessionStore

path, proc, batches, size, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), float(sys.argv[5])
key = {"project_key": "-work-proj", "session_id": "shared"}

async def main():
    async with SqliteSessionStore(path) as store:
        while time.time() < go:
            await asyncio.sleep(0.001)
        for b in range(batches):
            batch = [{"type": "user", "uuid": f"p{proc}-{b}-{i}", "proc": proc, "n": b * size + i,
                      "timestamp": "2026-01-01T00:00:00.000Z", "message": {"role": "user", "content": "x" * 500}}
                     for i in range(size)]
            batch.append({"type": "cost-state", "proc": proc, "n": -1})  # no uuid
            await store.append(key, batch)

asyncio.run(main())
"""


async def test_processes_appending_at_once_lose_nothing(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "sessions.db"
    procs, batches, size = 4, 100, 10
    go = time.time() + 1.5  # all start together, after their imports
    children = [
        await asyncio.create_subprocess_exec(
            sys.executable, "-c", WRITER, str(path), str(p), str(batches), str(size), str(go),
            stderr=asyncio.subprocess.PIPE,
        )
        for p in range(procs)
    ]
    try:
        for child in children:
            _, err = await asyncio.wait_for(child.communicate(), 90)
            assert child.returncode == 0, err.decode()
    finally:
        for child in children:
            if child.returncode is None:
                child.kill()
                await child.wait()

    async with SqliteSessionStore(path) as store:
        key = {"project_key": "-work-proj", "session_id": "shared"}
        loaded = await store.load(key)
        assert loaded is not None
        assert len(loaded) == procs * batches * (size + 1)
        for p in range(procs):
            mine = [x["n"] for x in loaded if x["proc"] == p and x["type"] == "user"]
            assert mine == list(range(batches * size))  # each process in its own order
            assert sum(1 for x in loaded if x["proc"] == p and x["type"] == "cost-state") == batches
        # Every batch's fold landed: the summary is as fresh as the session.
        (summary,) = await store.list_session_summaries("-work-proj")
        (listed,) = await store.list_sessions("-work-proj")
        assert summary["mtime"] == listed["mtime"]
