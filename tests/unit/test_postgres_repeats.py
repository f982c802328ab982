"""PostgreSQL stores a long string a transcript repeats once (issue 35), as sessions.db does: every read gives back the
bytes appended (D2), two machines appending to one transcript at once store each entry once and in order (D9), and a
v5 database's rows read as they are."""

from __future__ import annotations

import asyncio
import uuid
from typing import Any

import asyncpg
import orjson
import zstandard
from test_store_repeats import SOURCE, TEXT, Chain

from flower.stores.bodies import BUILTIN_ID, CLI_ID, builtin
from flower.stores.postgres import _SCHEMA, SCHEMA_VERSION, PostgresSessionStore
from flower.stores.repeats import MAGIC, frame_of

PK = "-home-dev-project"
KEY: Any = {"project_key": PK, "session_id": "s-1"}


async def rows(url: str, schema: str, sql: str = "SELECT seq, plain, body FROM {s}.entries ORDER BY seq") -> list[Any]:
    conn = await asyncpg.connect(url)  # the test's own connection: the store has no raw-SQL door
    try:
        return list(await conn.fetch(sql.replace("{s}", schema)))
    finally:
        await conn.close()


def same_bytes(loaded: list[Any] | None, entries: list[Any]) -> bool:
    return loaded is not None and [orjson.dumps(e) for e in loaded] == [orjson.dumps(e) for e in entries]


async def test_a_repeating_session_is_stored_once_and_every_read_gives_back_its_bytes(pg_url: str) -> None:
    chain = Chain()
    first = [chain.say("reading"), *chain.read("/w/big.py", TEXT)]
    later = [*chain.read("/w/big.py", TEXT), *chain.write("/w/a.py", TEXT[::-1]), chain.say("again"),
             *chain.read("/w/big.py", TEXT), chain.say("done")]
    async with PostgresSessionStore(pg_url, schema="rep") as store:
        await store.append(KEY, first)
        (once,) = await rows(pg_url, "rep", "SELECT sum(octet_length(body)) FROM {s}.entries")
        seq = await store.latest_seq(PK, KEY["session_id"])
        await store.append(KEY, later)
        entries = first + later
        assert same_bytes(await store.load(KEY), entries)
        assert same_bytes(store.load_sync(KEY), entries)
        assert same_bytes(await store.entries_after(PK, KEY["session_id"], seq), later)
        ((tid, _, count),) = await store.transcripts(PK, [KEY["session_id"]])
        page = await store.page([tid], 1 << 62, 3)  # the newest three: the last read refers to entries it does not hold
        assert count == len(entries) and [e for _, _, e in page] == entries[::-1][:3]
        assert await store.last_context(PK, KEY["session_id"]) == entries[-1]["message"]["usage"]["input_tokens"]
        (summary,) = await store.list_session_summaries(PK)
        assert summary["session_id"] == KEY["session_id"]
        stored = await rows(pg_url, "rep")
        # The two later reads and the Write's result hold references, not the 440 KB (and the 200 KB) again.
        assert [bytes(r[2]).startswith(MAGIC) for r in stored].count(True) == 3
        (total,) = await rows(pg_url, "rep", "SELECT sum(octet_length(body)) FROM {s}.entries")
        assert total[0] - once[0] < once[0]  # the Write's new 200 KB once, the repeated reads next to nothing
        # New bodies name the dictionary of the CLI's constant text until the database trains its own (v6).
        assert {zstandard.get_frame_parameters(frame_of(bytes(r[2]))).dict_id for r in stored} == {CLI_ID}
        # Deleting the session takes the index of its strings with it (a reference never leaves its transcript).
        assert len(await rows(pg_url, "rep", "SELECT * FROM {s}.repeats")) == 3
        await store.delete_sessions(PK, [KEY["session_id"]])
        assert await store.load(KEY) is None
        assert await rows(pg_url, "rep", "SELECT * FROM {s}.repeats") == []


async def test_two_machines_appending_to_one_transcript_at_once_store_each_entry_once_in_order(pg_url: str) -> None:
    # Both send the whole transcript (as the SDK re-sends a batch, or a second writer mirrors the CLI's JSONL), in
    # batches of different sizes, at the same time over their own pools: the transcript's row lock makes them take
    # turns, each checks the uuids and the index of long strings the other committed, and draws its seqs after them.
    chain = Chain()
    entries: list[Any] = []
    for i in range(6):
        entries += [chain.say(f"round {i}"), *chain.read("/w/big.py", TEXT), *chain.write(f"/w/{i}.py", SOURCE[i:] + TEXT[:i])]
    entries.append({"type": "custom-title", "customTitle": "no uuid"})

    async def send(store: PostgresSessionStore, size: int) -> None:
        for j in range(0, len(entries) - 1, size):
            await store.append(KEY, entries[j : j + size])

    async with PostgresSessionStore(pg_url, schema="two", keys={"-a": PK}) as a, \
               PostgresSessionStore(pg_url, schema="two", keys={"-b": PK}) as b:
        await asyncio.wait_for(asyncio.gather(send(a, 2), send(b, 3), send(a, 5)), 120)
        await a.append(KEY, entries[-1:])
        assert same_bytes(await a.load({**KEY, "project_key": "-a"}), entries)
        assert same_bytes(await b.load({**KEY, "project_key": "-b"}), entries)
    stored = await rows(pg_url, "two", "SELECT coalesce(uid::text, uuid), body FROM {s}.entries ORDER BY seq")
    assert [r[0] for r in stored] == [e.get("uuid") for e in entries]
    # big.py is held inline once (its numbered text and raw copy); every later read refers to it, whoever wrote it.
    assert [bytes(r[1]).startswith(MAGIC) for r in stored].count(True) >= 5 + 6


async def test_a_v5_database_reads_as_it_is_and_shares_from_its_next_append_on(pg_url: str) -> None:
    chain = Chain()
    old = chain.read("/w/big.py", TEXT) + chain.read("/w/big.py", TEXT)
    new = chain.read("/w/big.py", TEXT) + chain.read("/w/big.py", TEXT)
    conn = await asyncpg.connect(pg_url)
    try:
        # The tables as a v5 flower left them: no repeats, seq the primary key, a unique index on (transcript, uuid), and
        # uuids as text, each body a frame
        # against bodies.zdict (the database below SAMPLES entries), every repeated string stored again.
        await conn.execute(_SCHEMA.replace("{s}", '"v5"') + 'DROP TABLE "v5".repeats;'
                           "ALTER TABLE v5.entries DROP COLUMN uid; ALTER TABLE v5.entries ADD PRIMARY KEY (seq);"
                           "CREATE UNIQUE INDEX entries_uuid ON v5.entries (transcript, uuid) WHERE uuid IS NOT NULL;"
                           "INSERT INTO v5.meta VALUES ('schema_version', '5');"
                           "INSERT INTO v5.transcripts VALUES (1, '-home-dev-project', 's-1', '', 1000)")
        v5 = [builtin().pack(orjson.dumps(e)) for e in old]
        await conn.execute("INSERT INTO v5.entries (transcript, uuid, plain, body)"
                           " SELECT 1, u, false, b FROM unnest($1::text[], $2::bytea[]) WITH ORDINALITY AS x(u, b, o) ORDER BY o",
                           [e["uuid"] for e in old], v5)
        async with PostgresSessionStore(pg_url, schema="v5") as store:
            assert same_bytes(await store.load(KEY), old)
            assert await conn.fetchval("SELECT value FROM v5.meta WHERE key = 'schema_version'") == str(SCHEMA_VERSION) == "6"
            assert await conn.fetchval("SELECT to_regclass('v5.entries_uuid')") is None  # v6 keeps uuids unique itself
            assert await conn.fetchval("SELECT to_regclass('v5.entries_pkey')") is None
            await store.append(KEY, old)  # sent again: its uuids are the v5 rows', nothing is stored twice
            await store.append(KEY, new)
            assert same_bytes(await store.load(KEY), old + new)
        after = [bytes(r[0]) for r in await conn.fetch("SELECT body FROM v5.entries ORDER BY seq")]
        assert after[:4] == v5  # nothing stored is rewritten (D2)
        assert {zstandard.get_frame_parameters(b).dict_id for b in after[:4]} == {BUILTIN_ID}
        assert {zstandard.get_frame_parameters(frame_of(b)).dict_id for b in after[4:]} == {CLI_ID}
        # The v5 rows are not indexed: the first new read holds its copy, the second refers to it.
        assert [b.startswith(MAGIC) for b in after[4:]] == [False, False, False, True]
    finally:
        await conn.close()


async def test_a_canonical_uuid_takes_16_bytes_any_other_stays_text_and_none_is_stored_twice(pg_url: str) -> None:
    canonical, upper = str(uuid.uuid4()), str(uuid.uuid4()).upper()
    entries = [{"type": "user", "uuid": canonical}, {"type": "user", "uuid": upper}, {"type": "user", "uuid": "u-1"}]
    async with PostgresSessionStore(pg_url, schema="uids") as one, PostgresSessionStore(pg_url, schema="uids") as two:
        await one.append(KEY, entries)
        await one.append(KEY, entries[::-1])  # known to this store
        await two.append(KEY, entries)  # another machine: it reads the uuids stored, in either column
        assert await two.load(KEY) == entries
    stored = await rows(pg_url, "uids", "SELECT uuid, uid FROM {s}.entries ORDER BY seq")
    assert [tuple(r) for r in stored] == [(None, uuid.UUID(canonical)), (upper, None), ("u-1", None)]
