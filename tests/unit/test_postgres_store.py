"""PostgresSessionStore on a real PostgreSQL (tests/pg.py): SDK conformance, idempotent batches, one-line failures (D9)."""

from __future__ import annotations

import asyncio
import itertools
import json
import logging
import os
import socket
import uuid

import asyncpg
import pytest
from claude_agent_sdk.testing import run_session_store_conformance

from flower.core.lineage import Lineage
from flower.core.lock import WAKE_FILE, WorkspaceBusy, WorkspaceLock
from flower.core.manifest import Manifest, StepResult
from flower.core.records import clear_wake, interrupted, mark_wake, wake_mark
from flower.stores.postgres import SCHEMA_VERSION, PostgresSessionStore, StoreError, _Batch
from flower.stores.prune import PruningSessionStore
from flower.stores.shared import open_shared
from pg import PASSWORD, PASSWORD_USER, READER, PgServer, free_port
from rounds import assistant, session_ending_in_a_long_tool_run, user

KEY = {"project_key": "-work-proj", "session_id": "s1"}


def e(uuid: str | None = None, **fields: object) -> dict[str, object]:
    entry: dict[str, object] = {"type": "user", **fields}
    if uuid is not None:
        entry["uuid"] = uuid
    return entry


@pytest.fixture
async def store(pg_url: str):
    async with PostgresSessionStore(pg_url) as s:
        yield s


async def test_conformance_with_nothing_skipped(pg_url: str) -> None:
    # A fresh schema per store: the factory must return an empty store each time.
    stores: list[PostgresSessionStore] = []
    n = itertools.count()

    def make() -> PostgresSessionStore:
        stores.append(PostgresSessionStore(pg_url, schema=f"conf{next(n)}"))
        return stores[-1]

    try:
        await asyncio.wait_for(run_session_store_conformance(make, skip_optional=frozenset()), 60)
    finally:
        for s in stores:
            await s.close()


async def test_the_pruning_view_wraps_it_with_every_method(pg_url: str) -> None:
    stores: list[PostgresSessionStore] = []
    n = itertools.count()

    def make() -> PruningSessionStore:
        stores.append(PostgresSessionStore(pg_url, schema=f"prune{next(n)}"))
        return PruningSessionStore(stores[-1], ephemeral=False, keep_denials=10**6)

    try:
        await asyncio.wait_for(run_session_store_conformance(make, skip_optional=frozenset()), 60)
    finally:
        for s in stores:
            await s.close()


async def test_uuid_is_an_idempotency_key(store: PostgresSessionStore) -> None:
    await store.append(KEY, [e("a", n=1), e("b", n=2)])
    (before,) = await store.list_sessions(KEY["project_key"])
    await store.append(KEY, [e("a", n=1), e("b", n=2)])  # the SDK re-sends a failed batch whole
    assert await store.list_sessions(KEY["project_key"]) == [before]
    await store.append(KEY, [e("b", n=99), e("c", n=3), e("c", n=4), e("a", n=98)])
    assert await store.load(KEY) == [e("a", n=1), e("b", n=2), e("c", n=3)]
    other = {**KEY, "subpath": "subagents/agent-1"}
    await store.append(other, [e("a", n=5)])
    assert await store.load(other) == [e("a", n=5)]


async def test_entries_orjson_cannot_encode_round_trip(store: PostgresSessionStore) -> None:
    odd = [e("s", text="cut emoji \ud83d"), e("i", big=2**70), {"type": "custom-title", "customTitle": "nul \x00 ok"}]
    await store.append(KEY, odd)
    assert await store.load(KEY) == odd


async def test_two_machines_share_one_task_through_the_key_map(pg_url: str) -> None:
    # Each machine's CLI keys the session by its own path; both are stored under the workspace identity (D9).
    async with PostgresSessionStore(pg_url, keys={"-home-a-proj": "git:example.org/team/proj"}) as a, \
               PostgresSessionStore(pg_url, keys={"-srv-b-checkout": "git:example.org/team/proj"}) as b:
        await a.append({"project_key": "-home-a-proj", "session_id": "s"}, [e("1"), e("2")])
        await b.append({"project_key": "-srv-b-checkout", "session_id": "s"}, [e("2"), e("3")])
        assert await b.load({"project_key": "-srv-b-checkout", "session_id": "s"}) == [e("1"), e("2"), e("3")]
        assert [s["session_id"] for s in await a.list_sessions("-home-a-proj")] == ["s"]
        assert b.has_session_sync("-srv-b-checkout", "s") and not b.has_session_sync("-srv-b-checkout", "t")
        assert b.load_sync({"project_key": "-srv-b-checkout", "session_id": "s"}) == [e("1"), e("2"), e("3")]


async def test_a_batch_whose_commit_was_lost_is_not_stored_twice(store: PostgresSessionStore) -> None:
    # Entries without uuid are kept by position; only the batch token tells a re-sent batch from a new one.
    title = {"type": "custom-title", "customTitle": "t"}
    await store.append(KEY, [title])
    # The same batch (same token) queued twice, as a retry after a commit whose answer was lost queues it.
    token_batch = _Batch(store._key3(KEY), [None], [False], [b'{"type":"x"}'], uuid.uuid4())
    for _ in range(2):
        store._pending.append(token_batch)
        await store._drain(5)
    assert await store.load(KEY) == [title, {"type": "x"}]


@pytest.mark.parametrize("tail", [0, 16, 5000])
async def test_last_context_is_the_last_real_round_read_from_the_end(pg_url: str, tail: int) -> None:
    # Stored under the identity (D9): asked by the local key, as the runtime asks.
    async with PostgresSessionStore(pg_url, keys={"-work-proj": "git:example.org/team/proj"}) as store:
        other = {**KEY, "session_id": "s2"}
        entries = session_ending_in_a_long_tool_run(tail)
        for i in range(0, len(entries), 7):  # another session's rounds in between: only s1's count
            await store.append(KEY, entries[i:i + 7])
            await store.append(other, [assistant(f"o{i}", (50_000, 0, 0))])
        await store.append({**KEY, "subpath": "subagents/agent-1"}, [assistant("sub", (70_000, 0, 0))])
        assert await store.last_context("-work-proj", "s1") == 15
        assert store.last_context_sync("-work-proj", "s1") == 15
        assert await store.last_context("-work-proj", "s2") == 50_000
        assert await store.last_context("-work-proj", "nope") is None
        assert await store.last_context("git:example.org/other", "s1") is None
        await store.append({**KEY, "session_id": "s3"}, [user("u"), assistant("syn", (5, 0, 0), model="<synthetic>")])
        assert await store.last_context("-work-proj", "s3") is None


async def test_last_context_never_reads_the_whole_session(store: PostgresSessionStore) -> None:
    await store.append(KEY, [user(f"old{i}") for i in range(200)])
    await store.append(KEY, [assistant("a", (3, 4, 5)), user("last")])
    # Spoil the oldest rows (bad JSON): a read of the whole session fails on them, one from the end never reaches them.
    conn = await asyncpg.connect(store.url)  # the store has no raw-SQL door: a connection of the test's own
    try:
        await conn.execute(store.sql("UPDATE {s}.entries SET body = '{not json'::bytea WHERE seq IN"
                                     " (SELECT seq FROM {s}.entries ORDER BY seq LIMIT 100)"))
    finally:
        await conn.close()
    with pytest.raises(ValueError):
        await store.load(KEY)
    assert await store.last_context(KEY["project_key"], KEY["session_id"]) == 12
    assert store.last_context_sync(KEY["project_key"], KEY["session_id"]) == 12


async def test_latest_seq_and_entries_after_read_one_session_from_a_point(pg_url: str) -> None:
    async with PostgresSessionStore(pg_url, keys={"-work-proj": "git:example.org/team/proj"}) as store:
        pk, sid = KEY["project_key"], KEY["session_id"]
        assert await store.latest_seq(pk, sid) == 0 and await store.entries_after(pk, sid, 0) == []
        await store.append(KEY, [e("a"), e("b")])
        await store.append({**KEY, "session_id": "s2"}, [e("x")])
        first = await store.latest_seq(pk, sid)
        await store.append(KEY, [e("c"), e(), e("s", text="cut emoji \ud83d")])
        assert await store.latest_seq(pk, sid) > first
        assert await store.entries_after(pk, sid, 0) == [e("a"), e("b"), e("c"), e(), e("s", text="cut emoji \ud83d")]
        assert await store.entries_after(pk, sid, first) == [e("c"), e(), e("s", text="cut emoji \ud83d")]
        assert await store.latest_seq("git:example.org/other", sid) == 0
        assert await store.entries_after(pk, sid, await store.latest_seq(pk, sid, skip=2)) == [e(), e("s", text="cut emoji \ud83d")]
        assert await store.latest_seq(pk, sid, skip=4) > 0 and await store.latest_seq(pk, sid, skip=5) == 0


def one_line(exc: StoreError) -> str:
    line = exc.text("en")
    assert "\n" not in line
    return line


async def test_bad_url_refused_wrong_password_no_permission_each_one_line(pg: PgServer, pg_url: str) -> None:
    database = pg_url.split("@/", 1)[1].split("?", 1)[0]
    with pytest.raises(StoreError) as bad:
        PostgresSessionStore("mysql://somewhere/db")
    assert "postgresql://" in one_line(bad.value)
    cases = {
        "store_unreachable": f"postgresql://postgres@127.0.0.1:{free_port()}/x",
        "store_auth": pg.url(database, PASSWORD_USER, "wrong-" + PASSWORD),
        "store_no_database": pg.url("no_such_db"),
        "store_no_permission": pg.url(database, READER),
    }
    for key, url in cases.items():
        with pytest.raises(StoreError) as failed:
            await asyncio.wait_for(PostgresSessionStore(url).open(), 30)
        assert failed.value.key == key, (key, failed.value)
        line = one_line(failed.value)
        assert PASSWORD not in line and "Nothing was written" in line
    assert pg.sql("SELECT count(*) FROM pg_namespace WHERE nspname = 'flower'", database).strip() == "0"
    # The right password, with the permission granted, opens it and creates the tables.
    pg.sql(f"GRANT CREATE ON DATABASE {database} TO {PASSWORD_USER}")
    async with PostgresSessionStore(pg.url(database, PASSWORD_USER, PASSWORD)) as ok:
        await ok.append(KEY, [e("a")])
        assert await ok.load(KEY) == [e("a")]


async def test_a_newer_flowers_database_is_left_as_it_is(pg: PgServer, pg_url: str) -> None:
    database = pg_url.split("@/", 1)[1].split("?", 1)[0]
    async with PostgresSessionStore(pg_url) as s:
        await s.append(KEY, [e("a")])
    pg.sql(f"UPDATE flower.meta SET value = '{SCHEMA_VERSION + 1}' WHERE key = 'schema_version'", database)
    before = pg.sql("SELECT count(*) FROM flower.entries", database)
    with pytest.raises(StoreError) as failed:
        await PostgresSessionStore(pg_url).open()
    assert failed.value.key == "store_too_new" and f"schema version {SCHEMA_VERSION + 1}" in one_line(failed.value)
    assert pg.sql("SELECT count(*) FROM flower.entries", database) == before
    assert pg.sql("SELECT value FROM flower.meta", database).strip() == str(SCHEMA_VERSION + 1)


async def test_appends_wait_out_a_restart_and_nothing_is_lost_or_doubled() -> None:
    server = PgServer()  # its own server: this one is stopped mid-append
    try:
        server.init().start()
        url = server.url(server.new_database())
        async with PostgresSessionStore(url, outage_wait=30) as s:
            await s.append(KEY, [e("a"), {"type": "title"}])
            server.stop()
            appending = asyncio.create_task(s.append(KEY, [e("b"), {"type": "title"}]))
            await asyncio.sleep(0.3)
            assert not appending.done()  # it waits for the database
            await asyncio.to_thread(server.start)
            await asyncio.wait_for(appending, 30)
            await s.append(KEY, [e("b"), e("c")])
            assert await s.load(KEY) == [e("a"), {"type": "title"}, e("b"), {"type": "title"}, e("c")]
        # Stored once each, in order, with nothing left queued.
        conn = await asyncpg.connect(url)
        try:
            assert await conn.fetchval("SELECT count(*) FROM flower.entries") == 5
        finally:
            await conn.close()
    finally:
        server.remove()


# -- the shared task records: lineage, manifest, lock (D9) -------------------------------------------------


@pytest.fixture
def two_machines(pg_url: str, tmp_path):
    """Two run_dirs (two machines' runs/) with their records of one identity in one database."""
    made = []
    for name in ("a", "b"):
        run_dir = tmp_path / name / "runs"
        store, records = open_shared(pg_url, run_dir, f"-{name}-checkout", "example.org/team/calc")
        made.append((run_dir, store, records))
    yield made
    for _, store, _ in made:
        if store._sync is not None:  # noqa: SLF001 - the background link of the sync calls
            store._sync.close()


def test_lineage_and_manifest_are_the_identitys_whichever_machine_writes(two_machines, tmp_path, caplog) -> None:
    (run_a, _, rec_a), (run_b, _, rec_b) = two_machines
    on_a = Lineage.load(run_a, tmp_path / "a" / "checkout", records=rec_a)
    on_a.wake()
    on_a.record("干活", "sid-1")  # S11: in the database when record() returns
    assert not (run_a / "lineage.json").exists()
    # B reads it at once, from another path; B's own older lineage.json is named and not followed.
    run_b.mkdir(parents=True)
    (run_b / "lineage.json").write_text(json.dumps({"workspace": str(tmp_path / "b" / "checkout"), "woke": 7, "steps": {}}))
    with caplog.at_level(logging.WARNING):
        on_b = Lineage.load(run_b, tmp_path / "b" / "checkout", has_session=lambda sid: sid == "sid-1", records=rec_b)
    assert (on_b.woke, on_b.steps) == (1, {"干活": "sid-1"})
    assert "following the lineage of example.org/team/calc" in caplog.text and "wake 7" in caplog.text
    # Each writer's rows are its own (S8); both are read from either machine, in the order written.
    before = rec_b.stamp()
    Manifest(run_a, run="run-a", records=rec_a).add(StepResult(step="干活", session_id="sid-1", ok=False))
    Manifest(run_b, run="run-b", records=rec_b).add(StepResult(step="干活", session_id="sid-1", ok=True))
    rows = Manifest(run_a, records=rec_a).rows()
    assert [(r["run"], r["ok"]) for r in rows] == [("run-a", False), ("run-b", True)]
    assert not (run_a / "manifest.json").exists()
    # The change stamp a status re-reads by moved with the other machine's write, and only with a write.
    assert rec_b.stamp() != before and rec_a.stamp() == rec_b.stamp()
    # The files of run_dir were never consulted: without the records, it is run_dir's own (empty) files.
    assert Manifest(run_a).rows() == [] and Lineage.load(run_a, tmp_path / "a" / "checkout").woke == 0


def test_one_writer_across_machines_and_a_released_lock_is_free_at_once(two_machines) -> None:
    (run_a, _, rec_a), (run_b, _, rec_b) = two_machines
    with WorkspaceLock(run_a, rec_a):
        with pytest.raises(WorkspaceBusy) as busy:
            WorkspaceLock(run_b, rec_b).acquire()
        assert busy.value.pid == os.getpid() and busy.value.host == socket.gethostname()
        line = busy.value.text("en")
        assert f"pid {os.getpid()} on {socket.gethostname()}" in line and f"kill {os.getpid()} on" in line
    with WorkspaceLock(run_b, rec_b) as taken:  # the lock went with A's connection
        assert taken.held


def test_the_lock_is_taken_again_after_a_database_restart(tmp_path) -> None:
    server = PgServer()  # its own server: restarted while a lock is held
    try:
        server.init().start()
        url = server.url(server.new_database())
        runs = [tmp_path / name / "runs" for name in ("a", "b")]
        opened = [open_shared(url, run_dir, f"-{i}", "calc") for i, run_dir in enumerate(runs)]
        with WorkspaceLock(runs[0], opened[0][1]):
            server.restart()  # the holder's connection, and the advisory lock with it, are gone
            Lineage.load(runs[0], tmp_path / "a", records=opened[0][1]).wake()  # the next write takes it back first
            with pytest.raises(WorkspaceBusy):
                WorkspaceLock(runs[1], opened[1][1]).acquire()
        for store, _ in opened:
            if store._sync is not None:  # noqa: SLF001
                store._sync.close()
    finally:
        server.remove()


def test_a_lock_lost_in_an_outage_to_another_flower_stops_this_one_before_it_writes(pg_url: str, two_machines, tmp_path) -> None:
    (run_a, store, rec_a), (run_b, _, rec_b) = two_machines
    with WorkspaceLock(run_a, rec_a):
        Lineage.load(run_a, tmp_path / "a", records=rec_a).record("干活", "sid-a")
        # A's lock connection ends as in a database restart (the server ends it); B starts meanwhile and drives.
        assert asyncio.run(_end_lock_connection(pg_url, store.sql("{s}"), "example.org/team/calc"))
        with WorkspaceLock(run_b, rec_b):
            Lineage.load(run_b, tmp_path / "b", records=rec_b).record("干活", "sid-b")
            with pytest.raises(WorkspaceBusy) as busy:  # A's next write finds B holding the lock, and stops
                Lineage.load(run_a, tmp_path / "a", records=rec_a).record("干活", "sid-a2")
            assert busy.value.pid == os.getpid() and busy.value.host == socket.gethostname()
            assert Lineage.load(run_b, tmp_path / "b", records=rec_b).steps == {"干活": "sid-b"}  # A wrote nothing more


async def _end_lock_connection(url: str, schema: str, identity: str) -> bool:
    conn = await asyncpg.connect(url)
    try:
        ended = await conn.fetchval(f"SELECT pg_terminate_backend(backend_pid) FROM {schema}.holders WHERE project = $1", identity)
        return bool(ended)
    finally:
        await conn.close()


def test_a_wake_cut_off_on_one_machine_is_seen_from_the_other(two_machines) -> None:
    (run_a, _, rec_a), (run_b, _, rec_b) = two_machines
    assert not interrupted(rec_b)
    with WorkspaceLock(run_a, rec_a):
        mark_wake(rec_a)
        assert not interrupted(rec_b) and wake_mark(rec_b) == (True, True)  # under way on A: B waits
    # A's lock went (as with kill -9) and its mark stayed: B sees the wake was cut off, with no file of its own.
    assert interrupted(rec_b) and wake_mark(rec_b) == (True, False) and not (run_a / WAKE_FILE).exists()
    with WorkspaceLock(run_b, rec_b):
        mark_wake(rec_b)
        assert not interrupted(rec_a)
        clear_wake(rec_b)  # B's wake continued and ended
    assert not interrupted(rec_a) and not interrupted(rec_b)


def test_a_sentence_pending_on_one_machine_is_pending_on_the_other_until_all_three_places_have_it(two_machines) -> None:
    # Issue 31: the pending record lives with the task, so a wake on another machine finishes what one cut off left.
    from flower.core.journal import Journal
    from flower.core.sentences import Pending

    (run_a, _, rec_a), (run_b, _, rec_b) = two_machines
    said = Pending.load(rec_a)
    said.add("also divide", Journal(run_a), None)
    said.mark(said.lacking("requirements"), "requirements")
    on_b = Pending.load(rec_b)
    assert [(s.text, s.requirements, s.goals, s.work) for s in on_b.sentences] == [("also divide", True, False, False)]
    on_b.mark(on_b.lacking("goals"), "goals")
    on_b.mark(on_b.lacking("work"), "work")
    assert on_b.sentences == [] and Pending.load(rec_a).sentences == [] and not (run_a / "sentences.json").exists()
