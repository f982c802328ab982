"""sessions.db schema versions: old files are migrated in order, newer ones refused untouched (D2)."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk import fold_session_summary
from claude_agent_sdk.types import SessionKey

from flower.stores.sqlite import MIGRATIONS, SessionStoreError, SqliteSessionStore

KEY: SessionKey = {"project_key": "-work-proj", "session_id": "s1"}
ENTRIES: list[Any] = [  # entries carry more keys than the TypedDict names
    {"type": "user", "uuid": "a", "timestamp": "2026-11-29T09:00:00.000Z", "cwd": "/work/proj",
     "message": {"role": "user", "content": "héllo 你好, cut \ud83c"}},
    {"type": "assistant", "uuid": "b", "message": {"role": "assistant", "content": [{"type": "text", "text": "hi"}]}},
    {"type": "last-prompt", "lastPrompt": "héllo"},
]


def user_version(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return int(conn.execute("PRAGMA user_version").fetchone()[0])
    finally:
        conn.close()


def write_v1(path: Path, entries: list[Any]) -> None:
    """A sessions.db as flower wrote it before schema v2: TEXT bodies, the summary folded at append."""
    path.parent.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("PRAGMA page_size = 16384")
        conn.execute("PRAGMA journal_mode = WAL")
        conn.execute("BEGIN")
        MIGRATIONS[0](conn)
        conn.execute("PRAGMA user_version = 1")
        conn.execute("INSERT INTO transcripts VALUES (1, ?, ?, '', 1000)", (KEY["project_key"], KEY["session_id"]))
        conn.executemany(
            "INSERT INTO entries (transcript, uuid, body) VALUES (1, ?, ?)",
            [(e.get("uuid"), json.dumps(e, separators=(",", ":"))) for e in entries],
        )
        data = fold_session_summary(None, KEY, entries)["data"]
        conn.execute("INSERT INTO summaries VALUES (?, ?, 1000, ?)", (KEY["project_key"], KEY["session_id"], json.dumps(data)))
        conn.execute("COMMIT")
    finally:
        conn.close()


async def test_a_v1_database_is_migrated_and_keeps_everything(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "sessions.db"
    write_v1(path, ENTRIES)
    async with SqliteSessionStore(path) as store:
        assert user_version(path) == len(MIGRATIONS)
        assert await store.load(KEY) == ENTRIES
        (summary,) = await store.list_session_summaries(KEY["project_key"])
        assert summary == {"session_id": "s1", "mtime": 1000, "data": fold_session_summary(None, KEY, ENTRIES)["data"]}
        # New rows (orjson BLOBs) after the old ones (stdlib TEXT): one transcript, in order.
        more: list[Any] = [{"type": "custom-title", "customTitle": "renamed"}, {"type": "user", "uuid": "c"}]
        await store.append(KEY, [ENTRIES[0], *more])  # "a" is stored already
        assert await store.load(KEY) == ENTRIES + more
        (summary,) = await store.list_session_summaries(KEY["project_key"])
        (listed,) = await store.list_sessions(KEY["project_key"])
        assert summary["mtime"] == listed["mtime"] > 1000
        assert summary["data"] == fold_session_summary(None, KEY, ENTRIES + more)["data"]
        assert summary["data"]["custom_title"] == "renamed"


def note_step(conn: sqlite3.Connection) -> None:
    """A test-only schema step after the known ones: it records how many entries it saw."""
    conn.execute("CREATE TABLE notes (text TEXT NOT NULL)")
    conn.execute("INSERT INTO notes SELECT 'saw ' || count(*) || ' entries' FROM entries")


def failing_step(conn: sqlite3.Connection) -> None:
    """A test-only step that breaks halfway."""
    conn.execute("CREATE TABLE half_done (x)")
    raise RuntimeError("step failed")


async def test_a_newer_step_runs_once_in_order_and_the_data_survives(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "sessions.db"
    async with SqliteSessionStore(path) as store:
        await store.append(KEY, ENTRIES)
    newer = (*MIGRATIONS, note_step)
    for _ in range(2):  # the second open finds the step applied and does not run it again
        async with SqliteSessionStore(path, migrations=newer) as store:
            assert await store.load(KEY) == ENTRIES
        conn = sqlite3.connect(path)
        try:
            assert conn.execute("SELECT text FROM notes").fetchall() == [("saw 3 entries",)]
        finally:
            conn.close()
        assert user_version(path) == len(MIGRATIONS) + 1


async def test_a_failed_step_changes_nothing(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "sessions.db"
    async with SqliteSessionStore(path) as store:
        await store.append(KEY, ENTRIES)
    store = SqliteSessionStore(path, migrations=(*MIGRATIONS, failing_step))
    with pytest.raises(RuntimeError, match="step failed"):
        await asyncio.wait_for(store.load(KEY), 10)
    assert user_version(path) == len(MIGRATIONS)
    async with SqliteSessionStore(path) as store:
        assert await store.load(KEY) == ENTRIES
        assert await store._call(lambda conn: conn.execute("SELECT name FROM sqlite_master WHERE name = 'half_done'").fetchall()) == []


async def test_a_database_from_a_newer_flower_is_refused_and_left_untouched(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    path = run_dir / "sessions.db"
    async with SqliteSessionStore(path, migrations=(*MIGRATIONS, note_step)) as newer:
        await newer.append(KEY, ENTRIES)
    content = path.read_bytes()
    assert sorted(os.listdir(run_dir)) == ["sessions.db"]

    store = SqliteSessionStore(path)
    for attempt in (store.load(KEY), store.append(KEY, [{"type": "user", "uuid": "z"}])):
        with pytest.raises(SessionStoreError) as info:
            await asyncio.wait_for(attempt, 10)
        message = str(info.value)
        assert str(path) in message and "newer flower" in message and "Upgrade flower" in message
        assert f"schema version {len(MIGRATIONS) + 1}" in message
    await store.close()
    assert path.read_bytes() == content
    assert sorted(os.listdir(run_dir)) == ["sessions.db"]  # no -wal or -shm left beside it
    for read in (lambda: store.load_sync(KEY), lambda: store.has_session_sync(KEY["project_key"], KEY["session_id"])):
        with pytest.raises(SessionStoreError, match="Upgrade flower"):
            read()
    assert path.read_bytes() == content

    async with SqliteSessionStore(path, migrations=(*MIGRATIONS, note_step)) as newer:
        loaded: Any = await newer.load(KEY)
        assert loaded == ENTRIES
