"""A long string a transcript repeats is stored once (issue 35): the same file read three times, a Write's content in
the tool call and again in its result. Every read gives back exactly the bytes appended (D2), a v4 file still reads,
and deleting a session takes what it shared with it."""

from __future__ import annotations

import sqlite3
from pathlib import Path
from typing import Any

import orjson
import pytest
import zstandard

from flower.stores.bodies import BUILTIN_ID, CLI_ID
from flower.stores.repeats import MAGIC, MIN_LENGTH, frame_of, spans
from flower.stores.sqlite import MIGRATIONS, SessionStoreError, SqliteSessionStore

PK = "-home-dev-project"
KEY: Any = {"project_key": PK, "session_id": "s-1"}
OTHER: Any = {"project_key": PK, "session_id": "s-2"}
SOURCE = "".join((Path(__file__).resolve().parents[2] / "server" / "flower" / "stores" / name).read_text()
                 for name in ("sqlite.py", "postgres.py", "reconcile.py", "transcript.py"))[:200_000]
TEXT = SOURCE + '\n"quoted" \\ tab\t and 中文 and \u2028 and an emoji \U0001f33c\n'  # escapes, non-ASCII


class Chain:
    """CLI-shaped entries (D1's shapes: a Read's numbered text and its raw copy, a Write's content twice)."""

    def __init__(self, prefix: str = "u") -> None:
        self.n, self.prefix, self.parent = 0, prefix, None

    def _entry(self, kind: str, message: dict[str, Any], **extra: Any) -> dict[str, Any]:
        self.n += 1
        uid = f"{self.prefix}-{self.n:04d}"
        entry = {"parentUuid": self.parent, "type": kind, "uuid": uid, "message": message, "sessionId": "s", **extra}
        self.parent = uid
        return entry

    def say(self, text: str) -> dict[str, Any]:
        return self._entry("assistant", {"role": "assistant", "content": [{"type": "text", "text": text}],
                                         "usage": {"input_tokens": self.n, "output_tokens": 1}, "id": f"m{self.n}"})

    def read(self, path: str, text: str) -> list[dict[str, Any]]:
        numbered = "\n".join(f"{i + 1}\t{line}" for i, line in enumerate(text.split("\n")))
        call = self._entry("assistant", {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{self.n}", "name": "Read", "input": {"file_path": path}}]})
        result = self._entry("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{self.n - 1}", "content": numbered}]},
            toolUseResult={"type": "text", "file": {"filePath": path, "content": text}})
        return [call, result]

    def write(self, path: str, text: str) -> list[dict[str, Any]]:
        call = self._entry("assistant", {"role": "assistant", "content": [
            {"type": "tool_use", "id": f"t{self.n}", "name": "Write", "input": {"file_path": path, "content": text}}]})
        result = self._entry("user", {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": f"t{self.n - 1}", "content": f"File created successfully at: {path}"}]},
            toolUseResult={"type": "create", "filePath": path, "content": text, "structuredPatch": [], "originalFile": None})
        return [call, result]


def rows(path: Path, sql: str = "SELECT seq, body FROM entries ORDER BY seq") -> list[Any]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def stored_bytes(path: Path) -> int:
    return int(rows(path, "SELECT coalesce(sum(length(body)), 0) FROM entries")[0][0])


async def test_a_file_read_three_times_is_stored_once_and_reads_back_byte_for_byte(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    chain = Chain()
    once = [chain.say("reading"), *chain.read("/w/big.py", TEXT)]
    again = [*chain.read("/w/big.py", TEXT), chain.say("again"), *chain.read("/w/big.py", TEXT)]
    async with SqliteSessionStore(db) as store:
        await store.append(KEY, once)
        first = stored_bytes(db)
        await store.append(KEY, again)
        loaded = await store.load(KEY)
    entries = once + again
    assert loaded == entries
    assert [orjson.dumps(e) for e in loaded] == [orjson.dumps(e) for e in entries]  # the same bytes (D2)
    # The numbered text and the raw copy are indexed once each; the second and third reads hold 60 bytes of references
    # each in place of the 440 KB, so the two later reads add under 2% of what the first one took.
    assert len(rows(db, "SELECT * FROM repeats")) == 2
    assert stored_bytes(db) - first < first / 50
    headed = [seq for seq, body in rows(db) if body.startswith(MAGIC)]
    assert len(headed) == 2  # the two later results


async def test_a_write_shares_its_content_between_the_call_and_its_result_within_one_batch(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    chain = Chain()
    entries = chain.write("/w/a.py", TEXT) + chain.write("/w/b.py", TEXT[::-1])
    async with SqliteSessionStore(db) as store:
        await store.append(KEY, entries)
        assert await store.load(KEY) == entries
    bodies = [body for _, body in rows(db)]
    assert [b.startswith(MAGIC) for b in bodies] == [False, True, False, True]
    assert len(bodies[1]) < 200 and len(bodies[3]) < 200


async def test_tail_page_and_later_reads_put_back_strings_held_by_entries_they_do_not_read(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    chain = Chain()
    early = [*chain.read("/w/big.py", TEXT), chain.say("first")]
    late = [*chain.read("/w/big.py", TEXT), chain.say("second")]
    async with SqliteSessionStore(db) as store:
        await store.append(KEY, early)
        seq = await store.latest_seq(PK, KEY["session_id"])
        await store.append(KEY, late)
        assert await store.entries_after(PK, KEY["session_id"], seq) == late
        ((tid, _, count),) = await store.transcripts(PK, [KEY["session_id"]])
        page = await store.page([tid], 1 << 62, 2)  # the newest two: the late result refers to the early one
        assert [e for _, _, e in page] == late[::-1][:2] and count == 6
        assert store.last_context_sync(PK, KEY["session_id"]) is not None
    reader = SqliteSessionStore(db)  # read-only, as a status or the editor's history reads
    assert reader.load_sync(KEY) == early + late
    assert await reader.session(PK, KEY["session_id"]) == early + late


async def test_another_store_on_the_same_file_finds_what_the_first_one_stored(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    chain = Chain()
    first, second = chain.read("/w/big.py", TEXT), chain.read("/w/big.py", TEXT)
    async with SqliteSessionStore(db) as one, SqliteSessionStore(db) as two:
        await one.append(KEY, first)
        await two.append(KEY, second)  # a second process: it knows the strings from the file, not from memory
        assert await one.load(KEY) == first + second
    assert [body.startswith(MAGIC) for _, body in rows(db)] == [False, False, False, True]


async def test_sessions_share_nothing_and_deleting_one_frees_its_strings_and_keeps_the_other(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    a, b = Chain("a"), Chain("b")
    mine = a.read("/w/big.py", TEXT) + a.read("/w/big.py", TEXT)
    theirs = b.read("/w/big.py", TEXT) + b.read("/w/big.py", TEXT)
    async with SqliteSessionStore(db) as store:
        await store.append(KEY, mine)
        await store.append(OTHER, theirs)
        held = rows(db, "SELECT transcript, count(*) FROM repeats GROUP BY transcript ORDER BY transcript")
        assert [n for _, n in held] == [2, 2]  # each holds its own first copy: a reference never leaves its transcript
        await store.delete_sessions(PK, [KEY["session_id"]])
        await store.reclaim()
        assert await store.load(KEY) is None
        assert await store.load(OTHER) == theirs
    assert rows(db, "SELECT transcript FROM repeats GROUP BY transcript") == [(held[1][0],)]
    assert len(rows(db)) == len(theirs)


async def test_a_subagent_transcript_deleted_alone_leaves_the_main_one_whole(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    main, sub = Chain("m"), Chain("s")
    key_sub: Any = {**KEY, "subpath": "subagents/agent-1"}
    entries = main.read("/w/big.py", TEXT) + main.read("/w/big.py", TEXT)
    async with SqliteSessionStore(db) as store:
        await store.append(KEY, entries)
        await store.append(key_sub, sub.read("/w/big.py", TEXT) + sub.read("/w/big.py", TEXT))
        await store.delete(key_sub)
        assert await store.load(KEY) == entries
        assert await store.load(key_sub) is None
    assert len(rows(db, "SELECT * FROM repeats")) == 2


async def test_an_append_that_fails_midway_stores_no_entry_and_no_index_row(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    chain = Chain()
    first = chain.read("/w/big.py", TEXT)
    doomed = chain.write("/w/new.py", SOURCE[::-1]) + chain.read("/w/big.py", TEXT)
    async with SqliteSessionStore(db) as store:
        await store.append(KEY, first)
    conn = sqlite3.connect(db, isolation_level=None)
    # A real SQLite failure inside the append's transaction, after the rows before it were inserted (as a kill
    # between two statements would leave it: never committed).
    conn.execute(f"CREATE TRIGGER boom BEFORE INSERT ON entries WHEN NEW.uuid = '{doomed[-1]['uuid']}'"
                 " BEGIN SELECT RAISE(ABORT, 'boom'); END")
    conn.close()
    async with SqliteSessionStore(db) as store:
        with pytest.raises(sqlite3.Error, match="boom"):
            await store.append(KEY, doomed)
        assert len(rows(db)) == 2 and len(rows(db, "SELECT * FROM repeats")) == 2
        conn = sqlite3.connect(db, isolation_level=None)
        conn.execute("DROP TRIGGER boom")
        conn.close()
        await store.append(KEY, doomed)  # sent again, as the SDK does
        assert await store.load(KEY) == first + doomed
    assert len(rows(db, "SELECT * FROM repeats")) == 3  # big.py's two strings, new.py's content


async def test_a_v4_database_still_reads_and_shares_from_its_next_append_on(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    chain = Chain()
    old = chain.read("/w/big.py", TEXT) + chain.read("/w/big.py", TEXT)
    new = chain.read("/w/big.py", TEXT) + chain.read("/w/big.py", TEXT)
    async with SqliteSessionStore(db, migrations=MIGRATIONS[:4]) as v4:  # as a v4 flower wrote it
        await v4.append(KEY, old)
    before = rows(db)
    assert not any(body.startswith(MAGIC) for _, body in before)
    async with SqliteSessionStore(db) as store:
        assert await store.load(KEY) == old
        await store.append(KEY, new)
        assert await store.load(KEY) == old + new
    after = rows(db)
    assert after[:4] == before  # nothing stored is rewritten (D2)
    # v4's frames name bodies.zdict, the new ones bodies-cli.zdict: one file holds both, read by the id each names.
    assert {zstandard.get_frame_parameters(b).dict_id for _, b in before} == {BUILTIN_ID}
    assert {zstandard.get_frame_parameters(frame_of(b)).dict_id for _, b in after[4:]} == {CLI_ID}
    # The v4 rows are not indexed: the first new read holds its copy, the second refers to it.
    assert [body.startswith(MAGIC) for _, body in after[4:]] == [False, False, False, True]
    with pytest.raises(SessionStoreError, match="newer flower"):  # a v4 flower cannot read a reference
        SqliteSessionStore(db, migrations=MIGRATIONS[:4]).load_sync(KEY)


def test_spans_are_the_long_strings_in_order_and_skip_one_the_redaction_changed() -> None:
    chain = Chain()
    call, result = chain.read("/w/big.py", TEXT)
    body = orjson.dumps(result)
    found = spans(result, body)
    assert len(found) == 2 and found[0][0] < found[1][0]
    for start, length, _ in found:
        assert body[start - 1:start] == b'"' and body[start + length:start + length + 1] == b'"'
        assert len(orjson.loads(body[start - 1:start + length + 1])) >= MIN_LENGTH
    assert spans(call, orjson.dumps(call)) == []  # nothing long
    redacted = body.replace(b"def ", b"[REDACTED] ", 1)  # the numbered text changed after encoding, as by D6's redaction
    assert len(spans(result, redacted)) == 1


async def test_rows_deleted_by_hand_are_never_referred_to_even_when_their_seq_comes_back(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    chain = Chain()
    first = chain.read("/w/big.py", TEXT)
    other = chain.read("/w/other.py", SOURCE[::-1])
    again = chain.read("/w/big.py", TEXT)
    async with SqliteSessionStore(db) as store:
        await store.append(KEY, first)
    conn = sqlite3.connect(db, isolation_level=None)
    conn.execute("DELETE FROM entries")  # as a test of a lagging mirror does; the index still names seqs 1 and 2
    conn.close()
    async with SqliteSessionStore(db) as store:
        await store.append(KEY, other)  # takes seqs 1 and 2 again, other bytes at the indexed offsets
        await store.append(KEY, again)
        assert await store.load(KEY) == other + again
    assert not any(body.startswith(MAGIC) for _, body in rows(db))  # big.py stored again, not referred to
