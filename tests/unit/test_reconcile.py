"""Reconcile's pure parts: parsing the CLI's own transcript and diffing it against sessions.db (issue 13)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import sqlite3
import tempfile
import threading
import uuid
from pathlib import Path

from flower.stores import reconcile as reconcile_module
from flower.stores.prune import PruningSessionStore
from flower.stores.reconcile import (
    ANCHOR,
    SWEPT_FILE,
    config_dir,
    content_key,
    is_local_only,
    leftover_paths,
    missing,
    parse_jsonl,
    reconcile,
    sweep,
    transcript_path,
)
from flower.stores.sqlite import SqliteSessionStore

SID = "0b1c2d3e-0000-4000-8000-000000000001"
KEY = {"project_key": "-ws", "session_id": SID}


def chat(n: int) -> list[dict]:
    """A CLI-like transcript of `n` user/assistant rows on one parentUuid chain, with the CLI's uuid-less metadata lines."""
    rows: list[dict] = [{"type": "queue-operation", "operation": "enqueue", "sessionId": SID}]
    parent = None
    for i in range(n):
        uid = f"00000000-0000-4000-8000-{i:012d}"
        role = "user" if i % 2 == 0 else "assistant"
        rows.append({"type": role, "uuid": uid, "parentUuid": parent, "sessionId": SID, "timestamp": f"2026-01-01T00:00:{i:02d}.000Z",
                     "message": {"role": role, "content": [{"type": "text", "text": f"row {i}"}]}})
        rows.append({"type": "atis-latch", "atis": True, "sessionId": SID})  # identical lines, repeated
        parent = uid
    return rows


def jsonl(entries: list[dict]) -> bytes:
    return b"".join(json.dumps(e).encode() + b"\n" for e in entries)


def test_parse_skips_a_line_cut_mid_write_and_junk():
    rows = chat(3)
    data = jsonl(rows) + b'{"type":"assistant","uuid":"cut-he'
    assert parse_jsonl(data) == rows
    assert parse_jsonl(b'\n[1]\n"x"\n\xff\xfe{\n' + jsonl(rows[:1]) + b"\n\n") == rows[:1]
    assert parse_jsonl(b"") == []


def test_nothing_missing_when_the_store_mirrors_the_file():
    rows = chat(4)
    assert missing(rows, rows) == []


def test_the_trailing_rows_are_missing_in_order_uuid_less_by_content():
    rows = chat(4)
    todo = missing(rows, rows[:4])
    assert todo == rows[4:]
    # the stored atis-latch copy stands for one local line only: the other three are imported
    assert sum(1 for e in todo if e["type"] == "atis-latch") == 3


def test_import_is_idempotent():
    rows = chat(5)
    stored = rows[:3]
    stored = stored + missing(rows, stored)
    assert sorted(map(content_key, stored)) == sorted(map(content_key, rows))
    assert missing(rows, stored) == []


def test_local_only_lines_are_never_imported():
    rows = chat(2)
    local = [*rows, {"type": "api-request-shape", "shapeHash": "h"}, {"type": "api-request", "id": 1},
             {"type": "api-request-blob", "hash": "h"}, {"type": "cost-state", "totalCostUSD": 0.1}]
    assert [is_local_only(e) for e in local[-4:]] == [True] * 4 and not any(map(is_local_only, rows))
    assert missing(local, rows) == []


def test_a_uuid_repeated_in_the_file_is_imported_once():
    rows = chat(2)
    assert missing([*rows, rows[-2]], rows[:1]) == rows[1:]


def test_a_store_that_went_on_without_the_file_gets_no_stale_branch():
    rows = chat(4)
    later = {"type": "user", "uuid": "99999999-0000-4000-8000-000000000000", "parentUuid": rows[3]["uuid"],
             "sessionId": SID, "timestamp": "2026-01-01T00:01:00.000Z"}
    # The file's last rows never reached the store, and a later resume appended past them.
    assert missing(rows, [*rows[:4], later]) == []
    # Without timestamps: the store's newest uuid must be in the file.
    bare = [{k: v for k, v in e.items() if k != "timestamp"} for e in rows]
    assert missing(bare, [*bare[:4], later]) == [] and missing(bare, bare[:4]) == bare[4:]
    # A store holding only uuid-less lines cannot tell: the file wins.
    assert missing(rows, rows[:1]) == rows[1:]


def test_older_stored_rows_the_file_lacks_do_not_block_the_import():
    # A materialised resume starts from the pruned view: rows it hid are stored but not in its file.
    rows = chat(6)
    hidden = rows[3]
    local = [e for e in rows if e is not hidden]
    assert missing(local, rows[:5]) == rows[5:]


def test_results_pruning_added_are_never_imported():
    rows = chat(2)
    added = {"type": "user", "uuid": str(uuid.uuid5(uuid.NAMESPACE_OID, "x")), "parentUuid": rows[1]["uuid"], "sessionId": SID}
    assert missing([*rows, added], rows) == []


def test_leftover_resume_dirs_are_found_oldest_first(tmp_path: Path):
    paths = []
    for i, name in enumerate(["claude-resume-b", "claude-resume-a", "other-c"]):
        path = transcript_path(tmp_path / name, "-ws", SID)
        path.parent.mkdir(parents=True)
        path.write_text("{}\n")
        os.utime(path, ns=(i * 10**9, i * 10**9))
        paths.append(path)
    transcript_path(tmp_path / "claude-resume-d", "-other", SID).parent.mkdir(parents=True)
    assert leftover_paths("-ws", SID, tmp_path) == paths[:2]


def test_content_match_sees_the_store_redaction(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-api03-abcdefghijklmnop")
    line = {"type": "summary", "summary": "the key was sk-ant-api03-abcdefghijklmnop"}
    stored = {"type": "summary", "summary": "the key was [redacted]"}
    assert missing([line], [stored]) == []


def test_paths_follow_the_cli(tmp_path: Path):
    assert config_dir({"CLAUDE_CONFIG_DIR": str(tmp_path)}) == tmp_path
    assert config_dir({}) == Path.home() / ".claude"
    assert transcript_path(tmp_path, "-a-b", SID) == tmp_path / "projects" / "-a-b" / f"{SID}.jsonl"


async def test_reconcile_imports_through_the_raw_store_and_the_pruned_view_reads_it(tmp_path: Path, caplog):
    rows = chat(6)
    path = transcript_path(tmp_path / "cfg", KEY["project_key"], SID)
    path.parent.mkdir(parents=True)
    path.write_bytes(jsonl(rows) + b'{"type":"user","uuid":"half')
    before = path.read_bytes()
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        await raw.append(KEY, rows[:5])
        with caplog.at_level(logging.INFO, logger="flower"):
            n = await asyncio.wait_for(reconcile(raw, KEY["project_key"], SID, {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}), 10)
        assert n == len(rows) - 5
        assert await raw.load(KEY) == rows
        assert [r.getMessage() for r in caplog.records] == [f"reconcile: imported {n} entries of session {SID} from the CLI's own transcript"]
        assert await reconcile(raw, KEY["project_key"], SID, {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}) == 0
        pruned = await PruningSessionStore(raw).load(KEY)
        assert pruned is not None and [e.get("uuid") for e in pruned if "uuid" in e] == [e["uuid"] for e in rows if "uuid" in e]
    finally:
        await raw.close()
    assert path.read_bytes() == before


async def test_reconcile_without_the_file_changes_nothing(tmp_path: Path):
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        await raw.append(KEY, chat(2))
        assert await reconcile(raw, KEY["project_key"], SID, {"CLAUDE_CONFIG_DIR": str(tmp_path / "none")}) == 0
        assert await raw.load(KEY) == chat(2)
    finally:
        await raw.close()


async def test_an_unreadable_file_is_logged_and_left_alone(tmp_path: Path, caplog):
    path = transcript_path(tmp_path, KEY["project_key"], SID)
    path.mkdir(parents=True)  # a directory where the file should be: reading fails with an OSError
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        with caplog.at_level(logging.WARNING, logger="flower"):
            assert await reconcile(raw, KEY["project_key"], SID, {"CLAUDE_CONFIG_DIR": str(tmp_path)}) == 0
        assert "cannot read" in caplog.text and path.is_dir()
    finally:
        await raw.close()


def test_a_line_with_a_lone_surrogate_parses_and_keys():
    # The CLI can cut text mid-emoji: orjson refuses the lone surrogate, the stdlib reads it.
    line = b'{"type":"summary","summary":"cut \\ud83d"}\n'
    [entry] = parse_jsonl(line)
    assert entry["summary"] == "cut \ud83d"
    assert missing([entry], [dict(entry)]) == [] and missing([entry], []) == [entry]


SID2 = "0b1c2d3e-0000-4000-8000-000000000002"


async def test_sweep_imports_every_session_of_the_key_and_rereads_only_changed_files(tmp_path: Path, monkeypatch, caplog):
    # Sessions no resume reconciles (a killed judge round, one never named in the lineage) come in at the sweep;
    # a file whose size and mtime are unchanged is not read again, one that changed is.
    cfg, tmp, run_dir = tmp_path / "cfg", tmp_path / "tmp", tmp_path / "runs"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    env = {"CLAUDE_CONFIG_DIR": str(cfg)}
    own = transcript_path(cfg, KEY["project_key"], SID)
    left = tmp / "claude-resume-x" / "projects" / KEY["project_key"] / f"{SID2}.jsonl"
    other = transcript_path(cfg, "-other", SID2)  # another workspace's: not swept
    stray = transcript_path(cfg, KEY["project_key"], "agent-1")  # not a session id: not a session of its own
    helper = left.parent / SID2 / "subagents" / "agent-a1.jsonl"  # a subagent's transcript: keeps the leftover dir
    for path, rows in ((own, chat(4)), (left, chat(2)), (other, chat(2)), (stray, chat(2)), (helper, chat(1))):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(jsonl(rows))
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    key2 = {**KEY, "session_id": SID2}
    try:
        with caplog.at_level(logging.INFO, logger="flower"):
            assert await sweep(raw, KEY["project_key"], run_dir, env) == len(chat(4)) + len(chat(2))
        assert await raw.load(KEY) == chat(4) and await raw.load(key2) == chat(2)
        assert await raw.load({"project_key": "-other", "session_id": SID2}) is None
        assert await raw.load({**KEY, "session_id": "agent-1"}) is None
        remembered = json.loads((run_dir / SWEPT_FILE).read_bytes())[KEY["project_key"]]
        assert sorted(remembered) == sorted([str(own), str(left)])

        await raw.delete(KEY)  # unchanged files are not read again (the store is trusted to keep what it got)
        assert await sweep(raw, KEY["project_key"], run_dir, env) == 0
        assert await raw.load(KEY) is None

        more = chat(6)
        own.write_bytes(jsonl(more))  # the file grew: only what it gained is read, against what was stored since
        assert await sweep(raw, KEY["project_key"], run_dir, env) == len(more) - len(chat(4))
        assert await raw.load(KEY) == more[len(chat(4)):]
        await raw.delete(KEY)
        await raw.append(KEY, more)

        (run_dir / SWEPT_FILE).write_bytes(b"{cut")  # an unreadable memory: every file is read again, nothing lost
        await raw.delete(key2)
        with caplog.at_level(logging.WARNING, logger="flower"):
            assert await sweep(raw, KEY["project_key"], run_dir, env) == len(chat(2))
        assert "every CLI transcript is read again" in caplog.text
        assert await raw.load(key2) == chat(2) and await raw.load(KEY) == more
    finally:
        await raw.close()


async def test_sweep_removes_a_killed_resumes_dir_once_imported_unless_in_use(tmp_path: Path, monkeypatch):
    # The SDK copies credentials into each claude-resume-* dir and removes it when the CLI ends; after a kill the
    # sweep removes it, but only once its transcript is in the store and no process runs with it as config dir.
    tmp, run_dir = tmp_path / "tmp", tmp_path / "runs"
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
    dirs = {name: tmp / f"claude-resume-{name}" for name in ("spent", "busy")}
    for name, top in dirs.items():
        sid = SID if name == "spent" else SID2
        (top / "projects" / KEY["project_key"]).mkdir(parents=True)
        (top / "projects" / KEY["project_key"] / f"{sid}.jsonl").write_bytes(jsonl(chat(3)))
        (top / ".credentials.json").write_text("{}")
    user = await asyncio.create_subprocess_exec("sleep", "60", env={**os.environ, "CLAUDE_CONFIG_DIR": str(dirs["busy"])})
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        assert await sweep(raw, KEY["project_key"], run_dir, env) == 2 * len(chat(3))
        assert await raw.load(KEY) == chat(3) and await raw.load({**KEY, "session_id": SID2}) == chat(3)
        assert not dirs["spent"].exists()  # imported, nobody's: gone with its credentials copy
        assert (dirs["busy"] / ".credentials.json").exists()  # a live CLI runs on it
        remembered = json.loads((run_dir / SWEPT_FILE).read_bytes())[KEY["project_key"]]
        assert list(remembered) == [str(dirs["busy"] / "projects" / KEY["project_key"] / f"{SID2}.jsonl")]
        user.kill()
        await asyncio.wait_for(user.wait(), 10)
        assert await sweep(raw, KEY["project_key"], run_dir, env) == 0  # unchanged: not read, but now removable
        assert not dirs["busy"].exists()
    finally:
        if user.returncode is None:
            user.kill()
            await user.wait()
        await raw.close()


def four_rows_transcribed(tmp_path: Path, monkeypatch) -> tuple[dict[str, str], Path, Path]:
    """A CLI config dir holding one transcript of four rows (the temp dir under `tmp_path`): its env, file, run_dir."""
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    cfg = tmp_path / "cfg"
    own = transcript_path(cfg, KEY["project_key"], SID)
    own.parent.mkdir(parents=True)
    own.write_bytes(jsonl(chat(4)))
    return {"CLAUDE_CONFIG_DIR": str(cfg)}, own, tmp_path / "runs"


async def test_a_resume_after_the_sweep_reads_no_file_twice(tmp_path: Path, monkeypatch):
    # The sweep and the resumes of one wake share the memory: a file read as it is now is not read (nor the
    # session loaded) again; once it changes, it is.
    env, own, run_dir = four_rows_transcribed(tmp_path, monkeypatch)
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        assert await sweep(raw, KEY["project_key"], run_dir, env) == len(chat(4))
        await raw.delete(KEY)  # were the file read again, the rows would come back
        assert await reconcile(raw, KEY["project_key"], SID, env, run_dir) == 0
        assert await raw.load(KEY) is None
        assert await reconcile(raw, KEY["project_key"], SID, env) == len(chat(4))  # without the memory: read
        own.write_bytes(jsonl(chat(6)))
        assert await reconcile(raw, KEY["project_key"], SID, env, run_dir) == len(chat(6)) - len(chat(4))
        remembered = json.loads((run_dir / SWEPT_FILE).read_bytes())[KEY["project_key"]]
        assert remembered[str(own)][0] == own.stat().st_size
    finally:
        await raw.close()


async def test_the_memory_of_every_transcript_is_read_and_written_off_the_event_loop(tmp_path: Path, monkeypatch):
    # reconciled.json remembers every transcript the task ever had (a judge's session a round: 1,020 entries, 281 KB
    # after the 1,000-round soak), and a sweep stats every one of them: on the event loop that was ~5 ms a resume,
    # once a round, while status answers waited (issue 35). Where each part runs is what is checked.
    env, own, run_dir = four_rows_transcribed(tmp_path, monkeypatch)
    loop_thread = threading.get_ident()
    ran: dict[str, set[bool]] = {}
    def watching(name: str):
        real = getattr(reconcile_module, name)

        def watched(*args, **kwargs):
            ran.setdefault(name, set()).add(threading.get_ident() == loop_thread)
            return real(*args, **kwargs)
        return watched
    for name in ("_load_memory", "_save_swept", "_changed"):  # `_changed`: the listing and a stat of every transcript
        monkeypatch.setattr(reconcile_module, name, watching(name))
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        assert await sweep(raw, KEY["project_key"], run_dir, env) == len(chat(4))
        own.write_bytes(jsonl(chat(6)))
        assert await reconcile(raw, KEY["project_key"], SID, env, run_dir) == len(chat(6)) - len(chat(4))
    finally:
        await raw.close()
    assert set(ran) == {"_load_memory", "_save_swept", "_changed"}
    assert {name: on_loop for name, on_loop in ran.items() if True in on_loop} == {}, ran


async def test_a_grown_file_is_read_from_where_the_last_read_stopped_against_what_was_stored_since(tmp_path: Path, monkeypatch):
    # After a kill the CLI's file holds a few lines more than the store: only those are read, and compared with the
    # entries stored since the last read, never the whole file against the whole session. A file that shrank or was
    # rewritten is read whole.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    cfg, run_dir, db = tmp_path / "cfg", tmp_path / "runs", tmp_path / "sessions.db"
    env = {"CLAUDE_CONFIG_DIR": str(cfg)}
    own = transcript_path(cfg, KEY["project_key"], SID)
    own.parent.mkdir(parents=True)
    rows = chat(40)
    own.write_bytes(jsonl(rows))
    raw = SqliteSessionStore(db)
    try:
        assert await sweep(raw, KEY["project_key"], run_dir, env) == len(rows)
        # Spoil every stored row: reading the whole session to compare would fail on them.
        await raw.close()
        with sqlite3.connect(db) as conn:
            conn.execute("UPDATE entries SET body = X'7B'")
        grown = chat(44)
        own.write_bytes(jsonl(grown) + b'{"type":"user","uuid":"cut mid-wri')
        assert await sweep(raw, KEY["project_key"], run_dir, env) == len(grown) - len(rows)
        assert await raw.entries_after(KEY["project_key"], SID, len(rows)) == grown[len(rows):]
        # The cut line, completed, and what came after it: read from the end of the last whole line.
        more = chat(46)
        own.write_bytes(jsonl(more))
        assert await reconcile(raw, KEY["project_key"], SID, env, run_dir) == len(more) - len(grown)
        assert await raw.entries_after(KEY["project_key"], SID, len(rows)) == more[len(rows):]
        read = json.loads((run_dir / SWEPT_FILE).read_bytes())[KEY["project_key"]][str(own)]
        assert read[:3] == [own.stat().st_size, own.stat().st_mtime_ns, own.stat().st_size]
        assert read[4] == jsonl(more)[-64:].hex()

        await raw.delete(KEY)
        await raw.append(KEY, more)  # a readable store again
        title = {"type": "custom-title", "customTitle": "renamed", "sessionId": SID}
        own.write_bytes(jsonl([title, *more]))  # rewritten, longer: the bytes before the offset differ
        assert await sweep(raw, KEY["project_key"], run_dir, env) == 1
        assert await raw.load(KEY) == [*more, title]
        own.write_bytes(jsonl(chat(2)))  # truncated: read whole, nothing missing
        assert await sweep(raw, KEY["project_key"], run_dir, env) == 0
        read = json.loads((run_dir / SWEPT_FILE).read_bytes())[KEY["project_key"]][str(own)]
        assert read[2] == len(jsonl(chat(2)))
        own.write_bytes(jsonl(chat(3)))  # and from there on, read by offset again
        await raw.delete(KEY)
        assert await sweep(raw, KEY["project_key"], run_dir, env) == len(chat(3)) - len(chat(2))
    finally:
        await raw.close()


async def test_an_older_flowers_memory_means_a_whole_read(tmp_path: Path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    cfg, run_dir = tmp_path / "cfg", tmp_path / "runs"
    own = transcript_path(cfg, KEY["project_key"], SID)
    own.parent.mkdir(parents=True)
    own.write_bytes(jsonl(chat(3)))
    run_dir.mkdir()
    st = own.stat()
    # [size, mtime_ns] was the whole memory of a file: taken as unknown, the file is read whole once.
    (run_dir / SWEPT_FILE).write_text(json.dumps({KEY["project_key"]: {str(own): [st.st_size + 1, st.st_mtime_ns]}}))
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        assert await sweep(raw, KEY["project_key"], run_dir, {"CLAUDE_CONFIG_DIR": str(cfg)}) == len(chat(3))
        assert len(json.loads((run_dir / SWEPT_FILE).read_bytes())[KEY["project_key"]][str(own)]) == 5
    finally:
        await raw.close()


def long_chat(n: int) -> list[dict]:
    """`chat` with distinct uuids and increasing timestamps past 60 rows (a long session's shape)."""
    rows = chat(n)
    for i, row in enumerate(r for r in rows if "uuid" in r):
        row["timestamp"] = f"2026-01-01T{i // 3600:02d}:{i // 60 % 60:02d}:{i % 60:02d}.000Z"
    return rows


async def test_a_long_file_never_read_is_compared_from_its_end_back_to_the_newest_line_stored(tmp_path: Path):
    # Issue 35: a wake after a kill of a long run read the whole file against the whole session (480 MB for 62 MB).
    # Now only the file's end after the newest line the store holds is compared; the witness: an old line the store
    # lacks, far before that, is not read (the mirror stores the file in order, so it cannot be missing there).
    rows = long_chat(ANCHOR * 2)
    stray = {"type": "user", "uuid": str(uuid.uuid4()), "parentUuid": None, "sessionId": SID,
             "timestamp": "2025-12-31T00:00:00.000Z", "message": {"role": "user", "content": "stray"}}
    path = transcript_path(tmp_path / "cfg", KEY["project_key"], SID)
    path.parent.mkdir(parents=True)
    stored, killed = rows[:-50], rows[-50:]
    path.write_bytes(jsonl([stray, *stored, *killed]) + b'{"type":"user","uuid":"half')
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        await raw.append(KEY, stored)
        env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
        assert await asyncio.wait_for(sweep(raw, KEY["project_key"], tmp_path, env), 10) == len(killed)
        assert await raw.load(KEY) == rows
        read = json.loads((tmp_path / SWEPT_FILE).read_bytes())[KEY["project_key"]][str(path)]
        assert read[2] == path.read_bytes().rindex(b"\n") + 1  # the cut last line is read again once it is whole
        with path.open("ab") as f:
            f.write(b'-1"}\n')
        assert await sweep(raw, KEY["project_key"], tmp_path, env) == 1  # the line cut mid-write, once whole
        assert (await raw.load(KEY) or [])[-1] == {"type": "user", "uuid": "half-1"}
    finally:
        await raw.close()


async def test_a_long_file_without_a_stored_line_near_its_end_is_read_whole(tmp_path: Path):
    # The store's newest entries are not in the file (another branch went on): the read from the end finds no line it
    # holds, and the whole read decides as before (no stale branch is grafted on).
    rows = long_chat(ANCHOR * 2)
    other = [{**r, "uuid": str(uuid.uuid4()), "timestamp": "2026-02-01T00:00:00.000Z"} for r in rows[-ANCHOR * 2:] if "uuid" in r]
    path = transcript_path(tmp_path / "cfg", KEY["project_key"], SID)
    path.parent.mkdir(parents=True)
    path.write_bytes(jsonl(rows))
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        await raw.append(KEY, rows[:ANCHOR] + other)
        env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "cfg")}
        assert await asyncio.wait_for(sweep(raw, KEY["project_key"], tmp_path, env), 10) == 0
        assert await raw.load(KEY) == rows[:ANCHOR] + other
    finally:
        await raw.close()
