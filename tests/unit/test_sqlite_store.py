"""SqliteSessionStore: SDK conformance, multi-process appends, bad files (D2)."""

from __future__ import annotations

import asyncio
import os
import sqlite3
from pathlib import Path

import pytest
from claude_agent_sdk.testing import run_session_store_conformance

from conftest import descriptors
from flower.stores.sqlite import SessionStoreError, SqliteSessionStore
from rounds import assistant, session_ending_in_a_long_tool_run, user

KEY = {"project_key": "-work-proj", "session_id": "s1"}


def e(uuid: str | None = None, **fields: object) -> dict[str, object]:
    entry: dict[str, object] = {"type": "user", **fields}
    if uuid is not None:
        entry["uuid"] = uuid
    return entry


@pytest.fixture
async def store(tmp_path: Path):
    async with SqliteSessionStore(tmp_path / "runs" / "sessions.db") as s:
        yield s


async def test_conformance_with_nothing_skipped(tmp_path: Path) -> None:
    stores: list[SqliteSessionStore] = []

    def make() -> SqliteSessionStore:
        stores.append(SqliteSessionStore(tmp_path / f"run{len(stores)}" / "sessions.db"))
        return stores[-1]

    try:
        await asyncio.wait_for(
            run_session_store_conformance(make, skip_optional=frozenset()), 60
        )
    finally:
        for s in stores:
            await s.close()


async def test_uuid_is_an_idempotency_key(store: SqliteSessionStore) -> None:
    await store.append(KEY, [e("a", n=1), e("b", n=2)])
    (before,) = await store.list_sessions(KEY["project_key"])
    # The SDK retries a failed batch whole: nothing stored twice, nothing touched.
    await store.append(KEY, [e("a", n=1), e("b", n=2)])
    assert await store.list_sessions(KEY["project_key"]) == [before]
    await store.append(KEY, [e("b", n=99), e("c", n=3), e("c", n=4), e("a", n=98)])
    assert await store.load(KEY) == [e("a", n=1), e("b", n=2), e("c", n=3)]
    # The same uuid under another key is another entry.
    other = {**KEY, "subpath": "subagents/agent-1"}
    await store.append(other, [e("a", n=5)])
    assert await store.load(other) == [e("a", n=5)]


async def test_entries_without_uuid_are_all_kept(store: SqliteSessionStore) -> None:
    title = {"type": "custom-title", "customTitle": "t"}
    await store.append(KEY, [title, title, e("a")])
    await store.append(KEY, [title])
    assert await store.load(KEY) == [title, title, e("a"), title]


async def test_uuids_stored_by_another_store_count(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "sessions.db"
    async with SqliteSessionStore(path) as first, SqliteSessionStore(path) as second:
        await first.append(KEY, [e("a", by=1), e("b", by=1)])
        await second.append(KEY, [e("b", by=2), e("c", by=2)])
        await first.append(KEY, [e("c", by=1), e("d", by=1)])
        assert await first.load(KEY) == [e("a", by=1), e("b", by=1), e("c", by=2), e("d", by=1)]
        # Deleted and written again elsewhere (the transcript's id may come back): what
        # `first` saw before is no longer stored, and "a" is stored again.
        (before,) = await second.list_sessions(KEY["project_key"])
        await second.delete(KEY)
        await second.append(KEY, [e("a", by=2)])
        (after,) = await second.list_sessions(KEY["project_key"])
        assert after["mtime"] > before["mtime"]  # mtimes never repeat, not even after a delete
        await first.append(KEY, [e("a", by=1), e("b", by=1)])
        assert await second.load(KEY) == [e("a", by=2), e("b", by=1)]


async def test_mtime_moves_at_every_append_even_when_the_clock_steps_back(
    store: SqliteSessionStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await store.append(KEY, [e("a")])
    (first,) = await store.list_sessions(KEY["project_key"])
    monkeypatch.setattr("flower.stores.sqlite.time.time", lambda: 1.0)  # 1970: far behind the stored mtime
    await store.append(KEY, [e("b")])
    (second,) = await store.list_sessions(KEY["project_key"])
    await store.append(KEY, [e("b")])  # nothing new is stored: the mtime stays
    (third,) = await store.list_sessions(KEY["project_key"])
    assert first["mtime"] < second["mtime"] == third["mtime"]


async def test_load_unknown_key_is_none(store: SqliteSessionStore) -> None:
    assert await store.load(KEY) is None
    await store.append(KEY, [e("a")])
    assert await store.load({**KEY, "session_id": "other"}) is None
    assert await store.load({**KEY, "subpath": "subagents/agent-1"}) is None


async def test_entries_round_trip_and_survive_reopen(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "sessions.db"
    entries = [
        e("a", message={"role": "user", "content": "héllo 你好 🌸"}, n=1.5, x=None),
        # The CLI can cut a string mid-emoji, leaving a lone surrogate.
        e("b", message={"role": "assistant", "content": [{"type": "text", "text": "cut \ud83c"}]}),
        {"type": "last-prompt", "lastPrompt": "say hi", "nested": {"deep": [[], {}]}},
    ]
    store = SqliteSessionStore(path)
    assert not path.exists()  # constructing opens nothing
    await store.append(KEY, entries)
    await store.close()
    await store.close()  # closing twice is harmless
    async with SqliteSessionStore(path) as again:
        assert await again.load(KEY) == entries
    assert await store.load(KEY) == entries  # a closed store reopens on use
    await store.close()


async def test_concurrent_appends_in_one_process(store: SqliteSessionStore) -> None:
    async def writer(w: int) -> None:
        for i in range(20):
            await store.append(KEY, [e(f"{w}-{i}", w=w, i=i)])

    await asyncio.wait_for(asyncio.gather(*(writer(w) for w in range(4))), 30)
    loaded = await store.load(KEY)
    assert loaded is not None and len(loaded) == 80
    for w in range(4):
        assert [x["i"] for x in loaded if x["w"] == w] == list(range(20))


async def test_not_a_database_is_refused_and_left_untouched(tmp_path: Path) -> None:
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    path = run_dir / "sessions.db"
    content = b"my notes, not a database\n" * 200
    path.write_bytes(content)

    store = SqliteSessionStore(path)
    with pytest.raises(SessionStoreError) as info:
        await asyncio.wait_for(store.load(KEY), 10)
    message = str(info.value)
    assert str(path) in message and "not a usable SQLite database" in message
    assert "move that file aside" in message and "run_dir" in message
    assert isinstance(info.value, ValueError)

    with pytest.raises(SessionStoreError):
        await asyncio.wait_for(store.append(KEY, [e("a")]), 10)
    with pytest.raises(SessionStoreError):
        async with SqliteSessionStore(path):
            pass
    with pytest.raises(SessionStoreError, match="move that file aside"):
        store.has_session_sync(KEY["project_key"], KEY["session_id"])
    await store.close()

    assert path.read_bytes() == content
    assert sorted(os.listdir(run_dir)) == ["sessions.db"]  # no -wal, -shm, -journal


async def test_has_session_sync(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "sessions.db"
    store = SqliteSessionStore(path)
    assert store.has_session_sync("-work-proj", "s1") is False
    assert not path.parent.exists()  # the probe creates nothing

    await store.append({"project_key": "-work-proj", "session_id": "s1"}, [e("a")])
    await store.append(
        {"project_key": "-work-proj", "session_id": "s2", "subpath": "subagents/agent-1"},
        [e("b")],
    )
    assert store.has_session_sync("-work-proj", "s1") is True
    assert SqliteSessionStore(path).has_session_sync("-work-proj", "s1") is True
    assert store.has_session_sync("-work-proj", "nope") is False
    assert store.has_session_sync("-other", "s1") is False
    assert store.has_session_sync("-work-proj", "s2") is False  # only a subagent transcript

    await store.delete({"project_key": "-work-proj", "session_id": "s1"})
    assert store.has_session_sync("-work-proj", "s1") is False
    await store.close()

    empty = tmp_path / "empty.db"
    empty.touch()
    assert SqliteSessionStore(empty).has_session_sync("-work-proj", "s1") is False


async def test_load_sync_reads_what_load_reads(tmp_path: Path) -> None:
    path = tmp_path / "runs" / "sessions.db"
    store = SqliteSessionStore(path)
    assert store.load_sync(KEY) is None
    assert not path.parent.exists()  # the read creates nothing
    # Rows orjson cannot encode (a lone surrogate, an int beyond 64 bits) are stored by the
    # stdlib and still come back exact, in order among the others.
    entries = [e("a", text="héllo"), {"type": "last-prompt", "lastPrompt": "cut \ud83c"}, e("b", n=2**70 + 1)]
    await store.append(KEY, entries)
    assert store.load_sync(KEY) == entries == await store.load(KEY)
    assert store.load_sync({**KEY, "session_id": "other"}) is None
    await store.close()


@pytest.mark.parametrize("tail", [0, 15, 16, 100, 5000])
async def test_last_context_is_the_last_real_round_read_from_the_end(tmp_path: Path, tail: int) -> None:
    path = tmp_path / "runs" / "sessions.db"
    store = SqliteSessionStore(path)
    assert store.last_context_sync("-work-proj", "s1") is None
    assert not path.parent.exists()  # the sync read creates nothing
    other = {**KEY, "session_id": "s2"}
    entries = session_ending_in_a_long_tool_run(tail)
    # Another session's rounds appended in between: the pages of seqs interleave, only s1's count.
    for i in range(0, len(entries), 7):
        await store.append(KEY, entries[i:i + 7])
        await store.append(other, [assistant(f"o{i}", (50_000, 0, 0))])
    await store.append({**KEY, "subpath": "subagents/agent-1"}, [assistant("sub", (70_000, 0, 0))])
    assert await store.last_context("-work-proj", "s1") == 15
    assert store.last_context_sync("-work-proj", "s1") == 15
    assert await store.last_context("-work-proj", "s2") == 50_000
    assert await store.last_context("-work-proj", "nope") is None
    assert await store.last_context("-other", "s1") is None
    await store.close()


async def test_last_context_none_without_a_real_round(store: SqliteSessionStore) -> None:
    await store.append(KEY, [user("u"), assistant("syn", (5, 0, 0), model="<synthetic>"), *(user(f"t{i}") for i in range(40))])
    assert await store.last_context(KEY["project_key"], KEY["session_id"]) is None


async def test_last_context_never_reads_the_whole_session(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    async with SqliteSessionStore(path) as store:
        await store.append(KEY, [user(f"old{i}") for i in range(200)])
        await store.append(KEY, [assistant("a", (3, 4, 5)), user("last")])
    # Spoil the oldest rows: a read of the whole session fails on them, one from the end never reaches them.
    conn = sqlite3.connect(path)
    conn.execute("UPDATE entries SET body = X'7B6E6F74206A736F6E' WHERE seq <= 100")
    conn.commit()
    conn.close()
    async with SqliteSessionStore(path) as store:
        with pytest.raises(ValueError):
            await store.load(KEY)
        assert await store.last_context(KEY["project_key"], KEY["session_id"]) == 12
        assert store.last_context_sync(KEY["project_key"], KEY["session_id"]) == 12


async def test_latest_seq_and_entries_after_read_one_session_from_a_point(store: SqliteSessionStore) -> None:
    pk, sid = KEY["project_key"], KEY["session_id"]
    assert await store.latest_seq(pk, sid) == 0 and await store.entries_after(pk, sid, 0) == []
    await store.append(KEY, [e("a"), e("b")])
    await store.append({**KEY, "session_id": "s2"}, [e("x")])
    first = await store.latest_seq(pk, sid)
    await store.append(KEY, [e("c"), e()])
    assert await store.latest_seq(pk, sid) > first
    assert await store.entries_after(pk, sid, 0) == [e("a"), e("b"), e("c"), e()]
    assert await store.entries_after(pk, sid, first) == [e("c"), e()]
    assert await store.entries_after(pk, sid, await store.latest_seq(pk, sid)) == []
    assert await store.latest_seq("-other", sid) == 0
    # `skip`: the seq that many entries before the newest (the session's, not the store's), 0 past its first
    assert await store.entries_after(pk, sid, await store.latest_seq(pk, sid, skip=2)) == [e("c"), e()]
    assert await store.latest_seq(pk, sid, skip=3) > 0 and await store.latest_seq(pk, sid, skip=4) == 0


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="descriptors are read from Linux's /proc")
async def test_rest_closes_the_write_connection_and_what_sqlite_kept_open_of_the_reads(tmp_path: Path) -> None:
    """Issue 35: SQLite keeps a closed read connection's descriptor while the write connection holds its lock, so a
    folder's engine held as many as it ever ran reads at once; `rest` (a wake's end) lets go of all of them."""
    db = tmp_path / "runs" / "sessions.db"
    store = SqliteSessionStore(db)
    await store.append(KEY, [e("a"), e("b")])
    for _ in range(3):  # reads in worker threads at once, as a status, a history page and a wake make them
        counts = await asyncio.gather(*(store.count(KEY["project_key"], KEY["session_id"]) for _ in range(6)))
        assert counts == [2] * 6
    assert str(db) in descriptors(db)  # the write connection's at least
    await store.rest()
    assert descriptors(db) == []
    assert await store.count(KEY["project_key"], KEY["session_id"]) == 2
    assert descriptors(db) == []  # a read between wakes leaves none either
    await store.append(KEY, [e("c")])  # the next wake's first write opens it again
    assert [x["uuid"] for x in await store.load(KEY) or []] == ["a", "b", "c"]
    await store.close()
    assert descriptors(db) == []
