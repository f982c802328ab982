"""Retention's parts (#26): the stores' usage, deletion and VACUUM; which task a session belongs to; the wake's lines."""

from __future__ import annotations

import base64
import json
import os
import random
import time
from pathlib import Path

import pytest

from flower.core.durable import stamp
from flower.core.events import Notice
from flower.core.records import FileRecords
from flower.retention import age_seconds, collect, survey
from flower.runtime import Sessions, project_key
from flower.service import Config, FlowerService
from flower.settings import OPTIONS, SettingsError, load
from flower.stores.sqlite import SqliteSessionStore

PK = "-ws"


def entries(sid: str, n: int, size: int = 2000) -> list[dict[str, object]]:
    # Random base64: stored bodies are zstd frames (#26), and these stay about 3/4 of their length in them.
    noise = random.Random(sid)
    return [{"type": "user", "uuid": f"{sid}-{i}",
             "message": {"role": "user", "content": f"{i} " + base64.b64encode(noise.randbytes(size * 3 // 4)).decode()}}
            for i in range(n)]


def test_an_age_is_whole_days_or_hours() -> None:
    assert (age_seconds("90d"), age_seconds("12h"), age_seconds(" 0d ")) == (90 * 86400, 12 * 3600, 0)
    for bad in ("90", "3w", "-1d", "1.5d", "d", ""):
        with pytest.raises(ValueError):
            age_seconds(bad)


async def test_sqlite_usage_delete_sessions_and_reclaim_give_the_file_back(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    store = SqliteSessionStore(db)
    try:
        for sid in ("a", "b", "c"):
            await store.append({"project_key": PK, "session_id": sid}, entries(sid, 100))
        await store.append({"project_key": PK, "session_id": "a", "subpath": "subagents/agent-1"}, entries("a-sub", 10))
        await store.append({"project_key": "-other", "session_id": "a"}, entries("x", 5))
        usage = {u.session_id: u for u in await store.usage(PK)}
        assert {sid: u.entries for sid, u in usage.items()} == {"a": 110, "b": 100, "c": 100}  # a's subagent counted
        assert all(150_000 < u.bytes < 250_000 for u in (usage["b"], usage["c"]))
        assert usage["a"].mtime > usage["c"].mtime > usage["b"].mtime  # a was written last (its subagent)
        size = store.size_on_disk()
        await store.delete_sessions(PK, ["a", "b"])
        assert [u.session_id for u in await store.usage(PK)] == ["c"]
        assert await store.load({"project_key": PK, "session_id": "a"}) is None
        assert await store.list_subkeys({"project_key": PK, "session_id": "a"}) == []
        assert await store.load({"project_key": "-other", "session_id": "a"}) is not None  # another project's is its own
        assert store.size_on_disk() >= size - 16384  # deleted rows leave free pages: the file keeps its size
        await store.reclaim()
        after = store.size_on_disk()
        assert after < size - 300_000, (size, after)
        assert os.path.getsize(str(db) + "-wal") == 0  # VACUUM's pages are checkpointed, not kept twice
        assert len(await store.load({"project_key": PK, "session_id": "c"}) or []) == 100
        # The store goes on: a deleted session appended again is a new transcript with all its entries.
        await store.append({"project_key": PK, "session_id": "a"}, entries("a", 3))
        assert len(await store.load({"project_key": PK, "session_id": "a"}) or []) == 3
    finally:
        await store.close()


async def archive_of(ws: Path, run_dir: Path, steps: dict[str, str], *, at: float) -> Path:
    """An archive as `flower --new` leaves it, made at `at`."""
    d = ws / "notes" / "archive" / stamp(at)
    d.mkdir(parents=True)
    (d / "lineage.json").write_text(json.dumps({"workspace": str(ws), "woke": 1, "steps": steps}))
    (d / "需求.md").write_text("old\n", encoding="utf-8")
    os.utime(d, (at, at))
    return d


async def test_a_task_owns_the_sessions_its_lineage_and_its_manifest_rows_name(tmp_path: Path) -> None:
    ws, run_dir = tmp_path / "ws", tmp_path / "runs"
    ws.mkdir()
    t0 = time.time() - 3600
    archive = await archive_of(ws, run_dir, {"干活": "old-work"}, at=t0)
    (run_dir / "lineage.json").parent.mkdir(parents=True)
    (run_dir / "lineage.json").write_text(json.dumps({"workspace": str(ws), "woke": 1, "steps": {"干活": "new-work"}}))
    FileRecords(run_dir).save_manifest("r1", [
        {"step": "干活·判定#1", "session_id": "old-judge", "started_at": t0 - 60},
        {"step": "干活", "session_id": "old-work", "started_at": t0 - 120, "retired": ["old-retired"]},
        {"step": "干活·判定#1", "session_id": "new-judge", "started_at": t0 + 60},
        {"step": "干活", "session_id": "new-old", "started_at": t0 + 30, "retired": ["new-retired"]},
    ])
    # A file put into the archive later moves its mtime: the current task's rows stay the current task's.
    (archive / "note.md").write_text("later\n")
    sessions = Sessions.open(run_dir, workspace=ws)
    try:
        for sid in ("old-work", "old-judge", "old-retired", "new-work", "new-judge", "new-old", "new-retired", "stray"):
            await sessions.raw.append({"project_key": project_key(ws), "session_id": sid}, entries(sid, 4, 100))
        found = await survey(ws, run_dir, sessions)
        by = {h.name: set(h.sessions) for h in found.holdings}
        assert by == {"current": {"new-work", "new-judge", "new-old", "new-retired"},
                      archive.name: {"old-work", "old-judge", "old-retired"}, "other": {"stray"}}
        assert [h.name for h in found.collectable()] == [archive.name]
        assert found.collectable(older_than=86400) == []  # written just now
        freed = await collect(ws, run_dir, sessions, found.collectable())
        assert (freed.sessions, freed.entries) == (3, 12)
        left = {u.session_id for u in await sessions.raw.usage(project_key(ws))}
        assert left == {"new-work", "new-judge", "new-old", "new-retired", "stray"}
        assert (archive / "需求.md").read_text(encoding="utf-8") == "old\n"
        with pytest.raises(ValueError):
            await collect(ws, run_dir, sessions, [h for h in found.holdings if h.kind == "current"])
    finally:
        await sessions.close()


async def test_a_wake_says_in_one_line_when_the_store_is_past_its_threshold(tmp_path: Path) -> None:
    ws = tmp_path / "ws"
    ws.mkdir()
    svc = FlowerService(ws, tmp_path / "runs", Config(store_warn=100_000))
    seen: list[object] = []
    svc.subscribe(seen.append)
    try:
        await svc.housekeeping()
        assert seen == []  # no store yet
        await svc.sessions.raw.append({"project_key": project_key(ws), "session_id": "s"}, entries("s", 100))
        await svc.housekeeping()
        assert len(seen) == 1 and isinstance(seen[0], Notice)
        assert "`flower gc` shows what archived tasks hold and frees them" in seen[0].text
    finally:
        await svc.close()


def test_retention_days_is_off_by_default_and_set_by_file_variable_or_option(tmp_path: Path) -> None:
    assert load(tmp_path, env={}).retention_days is None
    (tmp_path / ".flower.toml").write_text("retention_days = 90\n")
    assert load(tmp_path, env={}).retention_days == 90
    s = load(tmp_path, env={"FLOWER_RETENTION_DAYS": "30"})
    assert (s.retention_days, s.sources["retention_days"]) == (30, "$FLOWER_RETENTION_DAYS")
    assert OPTIONS["retentionDays"] == "retention_days"
    with pytest.raises(SettingsError, match="retention_days"):
        load(tmp_path, env={"FLOWER_RETENTION_DAYS": "0"})


def test_an_untrusted_folders_file_cannot_set_retention(tmp_path: Path) -> None:
    # A cloned repository's file must not decide to delete the person's archived transcripts (D10).
    (tmp_path / ".flower.toml").write_text("retention_days = 1\n")
    with pytest.raises(SettingsError, match="retention_days cannot be set by an untrusted folder's file"):
        load(tmp_path, env={}, trusted=False)
    assert load(tmp_path, env={"FLOWER_RETENTION_DAYS": "5"}, trusted=True).retention_days == 5
