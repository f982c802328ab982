"""sessions.db schema versions: old files are migrated in order, newer ones refused untouched (D2)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sqlite3
import sys
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


# -- v3: bodies as zstd frames (#26), converted in place a committed batch at a time -------------------------------

KILLED_SQLITE = """
import os, signal, sqlite3, sys
from flower.stores import sqlite as s

conn = sqlite3.connect(sys.argv[1], isolation_level=None)
s.SqliteSessionStore(sys.argv[1])._migrate(conn, len(s.MIGRATIONS))  # the schema step, as an open runs it
s._pack(conn, batches=int(sys.argv[2]))  # then this many committed batches of the conversion
os.kill(os.getpid(), signal.SIGKILL)  # killed with its connection open, mid-conversion
"""

ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def cli_entries(n: int) -> list[Any]:
    """`n` entries shaped as the bundled CLI writes them (benchmarks/store.py's builder)."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
    from store import build

    return build(n)


def expand(bodies: list[bytes], dictionary: bytes | None) -> list[bytes]:
    """Stored bodies with their frames expanded by zstd itself (not the store's code), each with the dictionary its
    header names: flower's built-in ones (v4's, and PostgreSQL's v6's of the CLI's text) or the database's `dictionary`."""
    import zstandard

    from flower.stores.bodies import BUILTIN, CLI

    unpack = {}
    for data in (BUILTIN.read_bytes(), CLI.read_bytes(), dictionary):
        if data is not None:
            made = zstandard.ZstdCompressionDict(data)
            unpack[made.dict_id()] = zstandard.ZstdDecompressor(dict_data=made).decompress
    return [unpack[named(b)](b) if b.startswith(ZSTD_MAGIC) else b for b in bodies]


def named(frame: bytes) -> int:
    """The id of the dictionary a frame's header names, as zstd reads it."""
    import zstandard

    return int(zstandard.get_frame_parameters(frame).dict_id)


async def write_raw(path: Path, entries: list[Any], steps: int) -> None:
    """A sessions.db at schema version `steps` holding `entries` as flowers before v4 wrote them: raw JSON BLOBs."""
    import orjson

    async with SqliteSessionStore(path, migrations=MIGRATIONS[:steps]):
        pass  # the tables of that version (this flower's store would write frames: the rows are written below)
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute("BEGIN")
        conn.execute("INSERT INTO transcripts VALUES (1, ?, ?, '', 1000)", (KEY["project_key"], KEY["session_id"]))
        conn.executemany("INSERT INTO entries (transcript, uuid, body) VALUES (1, ?, ?)",
                         [(e.get("uuid"), orjson.dumps(e)) for e in entries])
        conn.execute("COMMIT")
    finally:
        conn.close()


def stored(path: Path) -> tuple[list[bytes], tuple[bytes, int, int] | None]:
    """The bodies of sessions.db in order, and its dictionary (content, trained, packed) if it has one."""
    conn = sqlite3.connect(path)
    try:
        bodies = [b for (b,) in conn.execute("SELECT body FROM entries ORDER BY seq")]
        try:
            dictionary = conn.execute("SELECT data, trained, packed FROM dictionary").fetchone()
        except sqlite3.OperationalError:
            dictionary = None
        return bodies, dictionary
    finally:
        conn.close()


async def test_a_v2_database_killed_midway_through_v3_resumes_and_every_body_is_the_same(tmp_path: Path) -> None:
    from flower.stores.bodies import PACK_BATCH

    path = tmp_path / "runs" / "sessions.db"
    entries = cli_entries(3000)
    await write_raw(path, entries, 2)  # as flower wrote it before #26
    before, none = stored(path)
    assert none is None and all(b.startswith(b"{") for b in before)
    size_before = path.stat().st_size

    child = await asyncio.create_subprocess_exec(sys.executable, "-c", KILLED_SQLITE, str(path), "2")
    assert await asyncio.wait_for(child.wait(), 60) == -signal.SIGKILL
    half, dictionary = stored(path)
    assert dictionary is not None
    data, trained, packed = dictionary
    assert packed == 2 * PACK_BATCH < trained == len(entries)  # two batches committed, the rest still raw
    assert all(b.startswith(ZSTD_MAGIC) for b in half[:packed]) and all(b.startswith(b"{") for b in half[packed:])
    assert expand(half, data) == before
    # Readable meanwhile by this flower, and refused by the one before (the existing "newer flower" error).
    assert SqliteSessionStore(path).load_sync(KEY) == entries
    with pytest.raises(SessionStoreError, match="newer flower"):
        SqliteSessionStore(path, migrations=MIGRATIONS[:2]).load_sync(KEY)

    async with SqliteSessionStore(path) as store:  # the next open resumes the conversion
        assert await store.load(KEY) == entries
    after, dictionary = stored(path)
    assert dictionary is not None and dictionary[0] == data and dictionary[1] == dictionary[2] == trained
    assert all(b.startswith(ZSTD_MAGIC) for b in after)
    assert expand(after, data) == before
    # The pages the raw rows held are given back to the disk at the end of the conversion.
    assert path.stat().st_size < 0.25 * size_before, (path.stat().st_size, size_before)


KILLED_PG = """
import asyncio, os, signal, sys
import asyncpg
from flower.stores.postgres import PostgresSessionStore, prepare_schema

async def main():
    conn = await asyncpg.connect(sys.argv[1])
    await prepare_schema(conn, sys.argv[1], '"mig"')  # the schema step, as an open runs it
    await PostgresSessionStore(sys.argv[1], schema="mig")._pack(conn, batches=int(sys.argv[2]))
    os.kill(os.getpid(), signal.SIGKILL)  # killed with its connection open, mid-conversion

asyncio.run(main())
"""


async def test_a_v2_postgres_database_killed_midway_through_v3_resumes_and_every_body_is_the_same(pg_url: str) -> None:
    import asyncpg
    import orjson

    from flower.stores.bodies import PACK_BATCH
    from flower.stores.postgres import _SCHEMA, SCHEMA_VERSION, PostgresSessionStore

    entries = cli_entries(3000)
    raw = [orjson.dumps(e) for e in entries]
    conn = await asyncpg.connect(pg_url)
    try:
        # The tables as a v2 flower left them (no dictionary), its rows raw JSON.
        await conn.execute(_SCHEMA.replace("{s}", '"mig"') + 'DROP TABLE "mig".dictionary;'
                           "INSERT INTO mig.meta VALUES ('schema_version', '2');"
                           "INSERT INTO mig.transcripts VALUES (1, '-work-proj', 's1', '', 1000)")
        await conn.execute("INSERT INTO mig.entries (transcript, uuid, plain, body)"
                           " SELECT 1, u, false, b FROM unnest($1::text[], $2::bytea[]) WITH ORDINALITY AS x(u, b, o) ORDER BY o",
                           [e.get("uuid") for e in entries], raw)

        async def bodies() -> tuple[list[bytes], Any]:
            rows = [r[0] for r in await conn.fetch("SELECT body FROM mig.entries ORDER BY seq")]
            return rows, await conn.fetchrow("SELECT data, trained, packed FROM mig.dictionary")

        child = await asyncio.create_subprocess_exec(sys.executable, "-c", KILLED_PG, pg_url, "2")
        assert await asyncio.wait_for(child.wait(), 60) == -signal.SIGKILL
        half, (data, trained, packed) = await bodies()
        assert packed == 2 * PACK_BATCH < trained == len(entries)
        assert all(b.startswith(ZSTD_MAGIC) for b in half[:packed]) and all(b.startswith(b"{") for b in half[packed:])
        assert expand(half, data) == raw
        # Marked current (v4): a v2 flower refuses it with "newer flower" (store_too_new: version > the one it knows).
        assert await conn.fetchval("SELECT value FROM mig.meta WHERE key = 'schema_version'") == str(SCHEMA_VERSION) == "6"

        async with PostgresSessionStore(pg_url, schema="mig") as store:  # the next open resumes
            assert await store.load(KEY) == entries
        after, (data2, trained2, packed2) = await bodies()
        assert (data2, trained2, packed2) == (data, trained, trained)
        assert all(b.startswith(ZSTD_MAGIC) for b in after)
        assert expand(after, data) == raw
    finally:
        await conn.close()


# -- v4: new bodies are frames against flower's built-in dictionary until the database trains its own (#26) --------


async def test_a_v3_database_becomes_v4_with_nothing_rewritten_and_a_v3_flower_refuses_it(tmp_path: Path) -> None:
    import orjson

    from flower.stores.bodies import BUILTIN_ID, SAMPLES

    path = tmp_path / "runs" / "sessions.db"
    entries = cli_entries(SAMPLES + 400)
    old, new = entries[:400], entries[400:]
    await write_raw(path, old, 3)  # a v3 file below SAMPLES: raw JSON, no dictionary yet
    assert user_version(path) == 3
    before, _ = stored(path)
    # The v4 step as a v4 flower ran it (v5, issue 35's shared strings, has its own tests).
    async with SqliteSessionStore(path, migrations=MIGRATIONS[:4]) as store:
        assert await store.load(KEY) == old
        assert user_version(path) == len(MIGRATIONS[:4]) == 4
        assert stored(path) == (before, None)  # the step converts nothing
        with pytest.raises(SessionStoreError, match="newer flower"):  # a v3 flower reads no built-in frame
            SqliteSessionStore(path, migrations=MIGRATIONS[:3]).load_sync(KEY)
        await store.append(KEY, new[:100])
        rows, none = stored(path)
        assert none is None and rows[:400] == before and {named(b) for b in rows[400:]} == {BUILTIN_ID}
        assert await store.load(KEY) == entries[:500]  # raw rows and frames alike
        for j in range(100, len(new), 100):
            await store.append(KEY, new[j : j + 100])
        assert await store.load(KEY) == entries
    # Trained at SAMPLES: the v3 raw rows converted to frames against the database's own dictionary, the built-in
    # frames left as they were written, every later body a frame against its own.
    after, dictionary = stored(path)
    assert dictionary is not None
    data, trained, packed = dictionary
    assert packed == trained >= SAMPLES
    own = {named(b) for b in after[:400]}
    assert len(own) == 1 and BUILTIN_ID not in own
    assert after[400:500] == rows[400:500] and {named(b) for b in after[trained:]} == own
    assert expand(after, data) == [orjson.dumps(e) for e in entries]


async def test_a_v3_postgres_database_becomes_v4_with_nothing_rewritten(pg_url: str) -> None:
    import asyncpg
    import orjson

    from flower.stores.bodies import CLI_ID
    from flower.stores.postgres import _SCHEMA, SCHEMA_VERSION, PostgresSessionStore

    entries = cli_entries(500)
    raw = [orjson.dumps(e) for e in entries[:400]]
    conn = await asyncpg.connect(pg_url)
    try:
        # The tables as a v3 flower left them below SAMPLES entries: no dictionary yet, the rows raw JSON.
        await conn.execute(_SCHEMA.replace("{s}", '"v3"') + "INSERT INTO v3.meta VALUES ('schema_version', '3');"
                           "INSERT INTO v3.transcripts VALUES (1, '-work-proj', 's1', '', 1000)")
        await conn.execute("INSERT INTO v3.entries (transcript, uuid, plain, body)"
                           " SELECT 1, u, false, b FROM unnest($1::text[], $2::bytea[]) WITH ORDINALITY AS x(u, b, o) ORDER BY o",
                           [e.get("uuid") for e in entries[:400]], raw)
        async with PostgresSessionStore(pg_url, schema="v3") as store:
            assert await store.load(KEY) == entries[:400]
            # Marked v4: a v3 flower refuses it with "newer flower" (store_too_new, test_postgres_store.py).
            assert await conn.fetchval("SELECT value FROM v3.meta WHERE key = 'schema_version'") == str(SCHEMA_VERSION) == "6"
            await store.append(KEY, entries[400:])
            assert await store.load(KEY) == entries
        rows = [r[0] for r in await conn.fetch("SELECT body FROM v3.entries ORDER BY seq")]
        # Since v6 the built-in frames name the dictionary of the CLI's constant text (issue 35).
        assert rows[:400] == raw and {named(b) for b in rows[400:]} == {CLI_ID}
        assert expand(rows, None) == [orjson.dumps(e) for e in entries]
        assert await conn.fetchval("SELECT count(*) FROM v3.dictionary") == 0
    finally:
        await conn.close()
