"""Compressed entry bodies (#26): every stored body expands to exactly the bytes appended (D2), in both stores,
whichever dictionary its frame names: flower's built-in one (a database's first entries) or the database's own."""

from __future__ import annotations

import sqlite3
import sys
from pathlib import Path
from typing import Any

import orjson
import zstandard

from flower.stores.bodies import BUILTIN, BUILTIN_ID, CLI, CLI_ID, SAMPLES
from flower.stores.postgres import PostgresSessionStore
from flower.stores.sqlite import SqliteSessionStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from store import build  # noqa: E402  (benchmarks/ is not a package): real-CLI-shaped entries

KEY: Any = {"project_key": "-home-dev-project", "session_id": "90ab8268-68e8-48f0-b204-48bad2d7d557"}
ZSTD_MAGIC = b"\x28\xb5\x2f\xfd"


def cli_entries(n: int) -> list[Any]:
    """`n` entries shaped as the bundled CLI writes them, and a few only the stdlib encodes."""
    entries: list[Any] = build(n)
    entries[SAMPLES + 3]["message"]["content"] = "cut mid-emoji \ud83c"  # orjson refuses a lone surrogate
    entries[SAMPLES + 7]["big"] = 1 << 70  # beyond 64 bits
    return entries


def named(frame: bytes) -> int:
    """The id of the dictionary a frame's header names, as zstd reads it."""
    return int(zstandard.get_frame_parameters(frame).dict_id)


def expanded(rows: list[tuple[bytes | str]], dictionary: bytes | None = None) -> list[bytes | str]:
    """Stored bodies, each frame expanded by zstd itself (not the store's code) with the dictionary it names: a
    built-in one (read from the package's files: bodies.zdict, or since v5 bodies-cli.zdict) or the database's
    `dictionary`."""
    dictionaries = [BUILTIN.read_bytes(), CLI.read_bytes(), *([dictionary] if dictionary is not None else [])]
    unpack = {zstandard.ZstdCompressionDict(d).dict_id(): zstandard.ZstdDecompressor(
        dict_data=zstandard.ZstdCompressionDict(d)).decompress for d in dictionaries}
    return [b if isinstance(b, str) or not b.startswith(ZSTD_MAGIC) else unpack[named(b)](b) for (b,) in rows]


def as_appended(entries: list[Any]) -> list[bytes | str]:
    """What append() encodes: orjson's bytes, or the stdlib's text where orjson cannot encode the entry."""
    import json

    out: list[bytes | str] = []
    for e in entries:
        try:
            out.append(orjson.dumps(e))
        except TypeError:
            out.append(json.dumps(e, separators=(",", ":")))
    return out


def sqlite_rows(path: Path) -> list[tuple[bytes | str]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT body FROM entries ORDER BY seq").fetchall()
    finally:
        conn.close()


async def test_sqlite_bodies_are_frames_that_expand_to_the_appended_bytes(tmp_path: Path) -> None:
    entries = cli_entries(3 * SAMPLES)
    path = tmp_path / "runs" / "sessions.db"
    async with SqliteSessionStore(path) as store:
        for j in range(0, len(entries), 100):
            await store.append(KEY, entries[j : j + 100])
            if j == 0:
                first = sqlite_rows(path)
        assert await store.load(KEY) == entries
        assert store.load_sync(KEY) == entries
        assert await store.entries_after(KEY["project_key"], KEY["session_id"], 0) == entries
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT body FROM entries ORDER BY seq").fetchall()
        ((dictionary, trained, packed),) = conn.execute("SELECT data, trained, packed FROM dictionary").fetchall()
    finally:
        conn.close()
    # Trained once SAMPLES entries were stored: the rows before it are frames against the built-in dictionary, left
    # as they were written (nothing to convert: packed at once), all later ones frames against the database's own.
    assert packed == trained >= SAMPLES
    blobs = [b for (b,) in rows if isinstance(b, bytes)]
    assert len(blobs) == len(entries) - 2 and all(b.startswith(ZSTD_MAGIC) for b in blobs)
    own = zstandard.ZstdCompressionDict(dictionary).dict_id()
    assert own not in (BUILTIN_ID, CLI_ID)
    # Since v5 (issue 35) a sessions.db's built-in dictionary is the one holding the CLI's constant text.
    assert [named(b) for (b,) in rows[:trained]] == [CLI_ID] * trained  # the two TEXT rows come later
    assert {named(b) for (b,) in rows[trained:] if isinstance(b, bytes)} == {own}
    assert rows[: len(first)] == first  # never rewritten (D2)
    assert expanded(rows, dictionary) == as_appended(entries)
    stored, appended = sum(map(len, blobs)), sum(len(b) for b in as_appended(entries) if isinstance(b, bytes))
    assert stored < 0.25 * appended, (stored, appended)
    # A second store (another process) reads and appends with the same dictionary.
    more = cli_entries(3 * SAMPLES + 50)[3 * SAMPLES :]
    async with SqliteSessionStore(path) as store:
        await store.append(KEY, more)
        assert await store.load(KEY) == entries + more


async def test_postgres_bodies_are_frames_that_expand_to_the_appended_bytes(pg_url: str) -> None:
    entries = cli_entries(3 * SAMPLES)
    async with PostgresSessionStore(pg_url, schema="packed") as store:
        for j in range(0, len(entries), 100):
            await store.append(KEY, entries[j : j + 100])
        assert await store.load(KEY) == entries
        assert store.load_sync(KEY) == entries
        assert await store.entries_after(KEY["project_key"], KEY["session_id"], 0) == entries
        pool = await store._ensure_pool()
        async with pool.acquire() as conn:
            rows = await conn.fetch("SELECT plain, body FROM packed.entries ORDER BY seq")
            dictionary, trained, packed = await conn.fetchrow("SELECT data, trained, packed FROM packed.dictionary")
    assert packed == trained >= SAMPLES
    bodies: list[tuple[bytes | str]] = [(r[1].decode() if r[0] else r[1],) for r in rows]
    blobs = [r[1] for r in rows if not r[0]]
    assert len(blobs) == len(entries) - 2 and all(b.startswith(ZSTD_MAGIC) for b in blobs)
    assert expanded(bodies, dictionary) == as_appended(entries)


async def test_sdk_conformance_on_a_database_that_has_its_dictionary(tmp_path: Path) -> None:
    import asyncio
    import shutil

    from claude_agent_sdk.testing import run_session_store_conformance

    seed = tmp_path / "seed" / "sessions.db"
    async with SqliteSessionStore(seed) as store:
        await store.append({"project_key": "-seed", "session_id": "seed"}, build(SAMPLES))
    conn = sqlite3.connect(seed)
    try:
        assert conn.execute("SELECT count(*) FROM dictionary").fetchone() == (1,)
    finally:
        conn.close()
    stores: list[SqliteSessionStore] = []

    def make() -> SqliteSessionStore:
        path = tmp_path / f"run{len(stores)}" / "sessions.db"
        path.parent.mkdir()
        shutil.copyfile(seed, path)  # every entry the SDK's checks append is stored as a frame
        stores.append(SqliteSessionStore(path))
        return stores[-1]

    try:
        await asyncio.wait_for(run_session_store_conformance(make, skip_optional=frozenset()), 60)
    finally:
        for s in stores:
            await s.close()


async def test_the_size_on_disk_is_what_the_files_take_and_grows_with_the_entries(tmp_path: Path, pg_url: str) -> None:
    path = tmp_path / "runs" / "sessions.db"
    store = SqliteSessionStore(path)
    assert store.size_on_disk() == 0 and not path.exists()  # asking never creates the file
    entries = build(200)
    await store.append(KEY, entries[:100])
    first = store.size_on_disk()
    # The file and its WAL while the store is open (not the -shm: SQLite's index of the WAL, no entry in it).
    beside = sum(f.stat().st_size for f in path.parent.iterdir() if f.name in ("sessions.db", "sessions.db-wal"))
    assert first == beside > 0 and (path.parent / "sessions.db-shm").exists()
    await store.append(KEY, entries[100:])
    await store.close()  # the WAL is checkpointed into the file
    assert store.size_on_disk() == path.stat().st_size
    assert store.size_on_disk() > sum(len(b) for (b,) in sqlite_rows(path))  # at least the 200 bodies it holds

    async with PostgresSessionStore(pg_url, schema="sized") as pg:
        empty = pg.size_on_disk()
        await pg.append(KEY, entries)
        grown = pg.size_on_disk()
        assert grown > empty > 0
        pool = await pg._ensure_pool()
        async with pool.acquire() as conn:
            frames = await conn.fetchval("SELECT sum(octet_length(body)) FROM sized.entries")
        # Frames against the built-in dictionary (< SAMPLES entries): the growth holds them, a fraction of the JSON.
        assert sum(len(orjson.dumps(e)) for e in entries) > 2 * frames and grown - empty >= frames
        await pg.close()


async def test_a_database_below_samples_stores_frames_against_the_built_in_dictionary(tmp_path: Path, pg_url: str) -> None:
    entries = build(SAMPLES // 2)
    appended = as_appended(entries)
    path = tmp_path / "runs" / "sessions.db"
    async with SqliteSessionStore(path) as store:
        await store.append(KEY, entries)
        assert await store.load(KEY) == entries
    rows = sqlite_rows(path)
    assert {named(b) for (b,) in rows} == {CLI_ID}  # every body a frame naming flower's dictionary (v5's, issue 35)
    assert expanded(rows) == appended
    assert sum(len(b) for (b,) in rows) < 0.3 * sum(map(len, appended))
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM dictionary").fetchone() == (0,)  # none of its own yet
    finally:
        conn.close()

    async with PostgresSessionStore(pg_url, schema="small") as pg:
        await pg.append(KEY, entries)
        assert await pg.load(KEY) == entries
        pool = await pg._ensure_pool()
        async with pool.acquire() as conn:
            stored = [(r[0],) for r in await conn.fetch("SELECT body FROM small.entries ORDER BY seq")]
    assert {named(b) for (b,) in stored} == {CLI_ID}  # since PostgreSQL's v6 too (issue 35)
    assert expanded(stored) == appended


def test_the_built_in_dictionary_is_the_packages_with_its_fixed_id() -> None:
    from importlib import resources

    from flower.stores.bodies import builtin

    shipped = resources.files("flower.stores").joinpath("bodies.zdict").read_bytes()
    assert shipped == BUILTIN.read_bytes() and zstandard.ZstdCompressionDict(shipped).dict_id() == BUILTIN_ID
    assert builtin().ident == BUILTIN_ID


def test_the_cli_dictionary_is_the_packages_with_its_fixed_id_and_holds_the_clis_tool_definitions() -> None:
    from importlib import resources

    from flower.stores.bodies import builtin_cli

    shipped = resources.files("flower.stores").joinpath("bodies-cli.zdict").read_bytes()
    assert shipped == CLI.read_bytes() and zstandard.ZstdCompressionDict(shipped).dict_id() == CLI_ID
    assert builtin_cli().ident == CLI_ID
    assert b'"type":"prompt_snapshot"' in shipped and b'"name":"Bash"' in shipped  # issue 35: the CLI's constant text


async def test_a_load_expands_frames_of_either_dictionary_and_raw_rows_wherever_they_are(tmp_path: Path) -> None:
    # A load expands frames CHUNK at a time by the dictionary the chunk's first frame names; a chunk mixing the two
    # dictionaries (a database that trained its own midway, or another process still writing with the built-in
    # one) or holding raw JSON (a v3 file's) must come back whole and in order all the same.
    from flower.stores.rows import CHUNK, codec_of, decode_bodies

    entries = build(3 * SAMPLES)
    path = tmp_path / "sessions.db"
    async with SqliteSessionStore(path) as store:
        for j in range(0, len(entries), 250):
            await store.append(KEY, entries[j : j + 250])
    conn = sqlite3.connect(path)
    try:
        bodies = [b for (b,) in conn.execute("SELECT body FROM entries ORDER BY seq")]
        own = codec_of(conn)
    finally:
        conn.close()
    assert own is not None and {named(b) for b in bodies} == {CLI_ID, own.ident}
    assert decode_bodies(bodies, own) == entries
    # Built-in frames after the database's own, a raw row in a chunk of frames, and a chunk of raw rows only.
    order = [*range(SAMPLES, 2 * SAMPLES), *range(SAMPLES), *range(2 * SAMPLES, 3 * SAMPLES)]
    mixed = [bodies[i] for i in order]
    raw_at = {CHUNK // 2, len(order) - 1, *range(len(order) - 10, len(order) - 1)}
    for i in raw_at:
        mixed[i] = orjson.dumps(entries[order[i]])
    assert decode_bodies(mixed, own) == [entries[i] for i in order]
    assert decode_bodies(mixed[-10:], own) == [entries[i] for i in order[-10:]]
