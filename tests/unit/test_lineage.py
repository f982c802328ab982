"""The lineage file (S5), written at once (S11), silently absent on any mismatch (S12), archived on /new (S28)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flower.core.lineage import Lineage

SID = "47395075-bec7-466e-80cd-f4d60b360235"


@pytest.fixture
def ws(tmp_path: Path) -> Path:
    w = tmp_path / "proj"
    w.mkdir()
    return w


@pytest.fixture
def run_dir(ws: Path) -> Path:
    return ws / "runs"


def read(path: Path) -> dict:
    return json.loads(path.read_text(encoding="utf-8"))


def test_round_trip_keeps_workspace_woke_and_steps(run_dir, ws):
    lin = Lineage.load(run_dir, ws)
    assert (lin.woke, lin.steps) == (0, {})
    assert lin.wake() == 1
    lin.record("干活", SID)
    again = Lineage.load(run_dir, ws)
    assert again.as_dict() == {"workspace": str(ws), "woke": 1, "steps": {"干活": SID}}
    assert again.path == run_dir / "lineage.json"
    assert again.wake() == 2


def test_file_has_the_s5_shape(run_dir, ws):
    Lineage.load(run_dir, ws).record("干活", SID)
    assert read(run_dir / "lineage.json") == {"workspace": str(ws), "woke": 0, "steps": {"干活": SID}}


def test_record_is_on_disk_before_it_returns(run_dir, ws):
    lin = Lineage.load(run_dir, ws)
    lin.record("澄清需求", "s-1")
    assert read(lin.path)["steps"] == {"澄清需求": "s-1"}
    lin.record("干活", "s-2")
    assert read(lin.path)["steps"] == {"澄清需求": "s-1", "干活": "s-2"}


def test_relative_workspace_is_stored_absolute(run_dir, ws, monkeypatch):
    monkeypatch.chdir(ws)
    Lineage.load("runs", ".").record("干活", SID)
    assert read(run_dir / "lineage.json")["workspace"] == str(ws)
    assert Lineage.load(run_dir, ws).steps == {"干活": SID}


@pytest.mark.parametrize("garbage", [
    b"", b"{", b"\xff\xfe not utf8", b"[1, 2]", b'"text"', b"null",
    b'{"workspace": "relative/path", "woke": 1, "steps": {}}',
    b'{"workspace": "/abs", "woke": "1", "steps": {}}',
    b'{"workspace": "/abs", "woke": -1, "steps": {}}',
    b'{"workspace": "/abs", "woke": 1, "steps": []}',
    b'{"workspace": "/abs", "woke": 1, "steps": {"a": 5}}',
    b'{"woke": 1, "steps": {}}',
])
def test_corrupt_file_loads_fresh_and_is_kept_aside_with_its_bytes(run_dir, ws, garbage, caplog):
    run_dir.mkdir()
    # A corrupt file that names this workspace must still be set aside.
    garbage = garbage.replace(b"/abs", str(ws).encode())
    (run_dir / "lineage.json").write_bytes(garbage)
    lin = Lineage.load(run_dir, ws)
    assert (lin.woke, lin.steps) == (0, {})  # no manifest: nothing to rebuild from
    assert (run_dir / "lineage.json").read_bytes() == garbage  # loading is reading: nothing moved (issue 31)
    # The first write keeps it aside, then makes a new, valid file and leaves the kept copy alone.
    lin.record("干活", SID)
    assert read(run_dir / "lineage.json")["steps"] == {"干活": SID}
    aside = list(run_dir.glob("lineage.json.corrupt-*"))
    assert len(aside) == 1 and aside[0].read_bytes() == garbage
    assert any("lineage" in r.getMessage() for r in caplog.records)
    lin.record("澄清", SID)
    assert list(run_dir.glob("lineage.json.corrupt-*")) == aside and aside[0].read_bytes() == garbage


def test_second_corruption_never_overwrites_the_first_kept_copy(run_dir, ws):
    run_dir.mkdir()
    for garbage in (b"first", b"second", b"third"):
        (run_dir / "lineage.json").write_bytes(garbage)
        Lineage.load(run_dir, ws).wake()
    kept = sorted(p.read_bytes() for p in run_dir.glob("lineage.json.corrupt-*"))
    assert kept == [b"first", b"second", b"third"]


def rows(*specs: tuple[str, str, float, str], retired: dict[str, list[str]] | None = None) -> list[dict]:
    """Manifest rows (step, session, started_at, run), with `retired` sessions per step name."""
    return [{"step": step, "session_id": sid, "started_at": at, "ended_at": at + 1, "run": run, "ok": True,
             "retired": (retired or {}).get(step, [])} for step, sid, at, run in specs]


def test_corrupt_file_is_rebuilt_from_the_manifest_newest_live_session_of_each_step(run_dir, ws):
    from flower.core.records import FileRecords

    run_dir.mkdir()
    FileRecords(run_dir).save_manifest("r1", rows(("澄清", "c1", 1.0, "r1"), ("目标", "g1", 2.0, "r1"), ("干活", "w1", 3.0, "r1"),
                                                  ("干活·判定#1", "judge1", 4.0, "r1")))
    FileRecords(run_dir).save_manifest("r2", rows(
        ("目标", "g1", 10.0, "r2"), ("干活", "w1", 11.0, "r2"), ("干活·判定#1", "judge2", 12.0, "r2"),
        ("干活·交接#2", "w1", 13.0, "r2"), ("干活#round2", "w2", 14.0, "r2"), ("干活·判定#2", "judge3", 15.0, "r2"),
        ("干活#round3#retry1", "w3-gone", 16.0, "r2"), retired={"干活#round2": ["w1"]}))
    (run_dir / "lineage.json").write_bytes(b"\x00garbage")
    live = {"c1", "g1", "w1", "w2", "judge1", "judge2", "judge3"}
    lin = Lineage.load(run_dir, ws, has_session=live.__contains__)
    # Judges never (S14); the handed-off w1 never again (S26); w3 is gone from the store (S10): its step keeps w2.
    assert lin.steps == {"澄清": "c1", "目标": "g1", "干活": "w2"} and lin.woke == 2 and lin.lost == {}
    assert (run_dir / "lineage.json").read_bytes() == b"\x00garbage"
    assert lin.wake() == 3
    assert read(run_dir / "lineage.json") == {"workspace": str(ws), "woke": 3, "steps": {"澄清": "c1", "目标": "g1", "干活": "w2"}}
    assert [p.read_bytes() for p in run_dir.glob("lineage.json.corrupt-*")] == [b"\x00garbage"]
    # Every session of a step gone from the store: absent, and the newest named is `lost` (its journal is told, #22).
    (run_dir / "lineage.json").write_bytes(b"{")
    gone = Lineage.load(run_dir, ws, has_session=lambda sid: sid != "c1")
    assert "澄清" not in gone.steps and gone.lost == {"澄清": "c1"}


def test_rebuild_takes_only_the_rows_of_the_current_task(run_dir, ws):
    from flower.core.records import FileRecords

    run_dir.mkdir()
    FileRecords(run_dir).save_manifest("old", rows(("干活", "old-work", 1.0, "old")))
    archive = ws / "notes" / "archive" / "20260101-000000"
    archive.mkdir(parents=True)
    os.utime(archive, (100.0, 100.0))  # `flower --new` archived the old task at t=100 (S28)
    FileRecords(run_dir).save_manifest("new", rows(("澄清", "new-clarify", 200.0, "new")))
    (run_dir / "lineage.json").write_bytes(b"not json")
    lin = Lineage.load(run_dir, ws, has_session=lambda sid: True)
    assert lin.steps == {"澄清": "new-clarify"} and lin.woke == 1


def test_lineage_of_another_workspace_path_is_absent_and_left_untouched(run_dir, ws, tmp_path):
    run_dir.mkdir()
    original = json.dumps({"workspace": str(tmp_path / "elsewhere"), "woke": 4, "steps": {"干活": SID}}).encode()
    (run_dir / "lineage.json").write_bytes(original)
    lin = Lineage.load(run_dir, ws)
    assert (lin.woke, lin.steps) == (0, {})
    assert (run_dir / "lineage.json").read_bytes() == original
    assert list(run_dir.glob("*.corrupt-*")) == []


def test_copied_directory_does_not_resume(tmp_path):
    """S12/S13: a copied workspace (with its runs/) carries a lineage keyed to the old path."""
    a = tmp_path / "a"
    Lineage.load(a / "runs", a).record("干活", SID)
    b = tmp_path / "b"
    os.rename(a, b)
    assert Lineage.load(b / "runs", b).steps == {}


def test_has_session_keeps_only_live_sessions(run_dir, ws):
    lin = Lineage.load(run_dir, ws)
    lin.record("澄清需求", "alive")
    lin.record("干活", "gone")
    loaded = Lineage.load(run_dir, ws, has_session=lambda sid: sid == "alive")
    assert loaded.steps == {"澄清需求": "alive"}


def test_failing_has_session_counts_as_gone_without_raising(run_dir, ws):
    Lineage.load(run_dir, ws).record("干活", SID)

    def broken(sid):
        raise RuntimeError("database is locked")

    assert Lineage.load(run_dir, ws, has_session=broken).steps == {}


@pytest.fixture
def unwritable_run_dir(tmp_path: Path) -> Path:
    """A run_dir below a regular file: every write fails, even for root (chmod does not stop root)."""
    blocker = tmp_path / "afile"
    blocker.write_text("not a directory")
    return blocker / "runs"


def test_unwritable_run_dir_never_raises(unwritable_run_dir, ws, caplog):
    lin = Lineage.load(unwritable_run_dir, ws)
    lin.record("干活", SID)
    assert lin.wake() == 1
    assert lin.save() is False
    assert lin.steps == {"干活": SID}
    assert any("could not write" in r.getMessage() for r in caplog.records)


def test_failed_replace_keeps_the_old_file_whole_and_leaves_no_temp_file(run_dir, ws, monkeypatch):
    import flower.core.durable as durable

    lin = Lineage.load(run_dir, ws)
    lin.record("干活", SID)
    before = (run_dir / "lineage.json").read_bytes()

    def no_space(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(durable.os, "replace", no_space)
    lin.record("干活", "other")  # must not raise
    assert (run_dir / "lineage.json").read_bytes() == before
    assert [p.name for p in run_dir.iterdir()] == ["lineage.json"]


def test_recording_the_same_session_again_does_not_rewrite(run_dir, ws):
    lin = Lineage.load(run_dir, ws)
    lin.record("干活", SID)
    mtime = (run_dir / "lineage.json").stat().st_mtime_ns
    os.utime(run_dir / "lineage.json", ns=(mtime - 10**9, mtime - 10**9))
    lin.record("干活", SID)
    assert (run_dir / "lineage.json").stat().st_mtime_ns == mtime - 10**9


def test_unchanged_record_after_a_failed_write_retries(tmp_path, ws):
    blocker = tmp_path / "afile"
    blocker.write_text("x")
    lin = Lineage(blocker / "runs", ws)
    lin.record("干活", SID)  # fails: run_dir under a file
    blocker.unlink()
    lin.record("干活", SID)  # same value, but not on disk yet: must write now
    assert read(blocker / "runs" / "lineage.json")["steps"] == {"干活": SID}


def test_archive_moves_lineage_and_notes_together_and_resets(run_dir, ws, tmp_path):
    run_dir.mkdir()
    db = run_dir / "sessions.db"
    db.write_bytes(b"SQLite format 3\x00 pretend")
    db_before = (db.read_bytes(), db.stat().st_mtime_ns)
    req, goals = ws / "需求.md", ws / "目标.md"
    req.write_text("# 需求\n", encoding="utf-8")
    goals.write_text("- [ ] 一\n", encoding="utf-8")
    lin = Lineage.load(run_dir, ws)
    lin.wake()
    lin.record("干活", SID)
    lineage_bytes = lin.path.read_bytes()

    into = ws / "notes" / "archive"
    dest = lin.archive(into, extra=[req, goals, ws / "missing.md"])

    assert dest.parent == into and len(dest.name) == len("20260907-120300")
    assert sorted(p.name for p in dest.iterdir()) == ["lineage.json", "目标.md", "需求.md"]
    assert (dest / "lineage.json").read_bytes() == lineage_bytes
    assert (dest / "需求.md").read_text(encoding="utf-8") == "# 需求\n"
    assert not req.exists() and not goals.exists() and not lin.path.exists()
    assert (lin.woke, lin.steps) == (0, {})
    assert (db.read_bytes(), db.stat().st_mtime_ns) == db_before
    fresh = Lineage.load(run_dir, ws)
    assert (fresh.woke, fresh.steps) == (0, {})
    # The same object keeps working after the archive.
    assert lin.wake() == 1
    assert read(lin.path) == {"workspace": str(ws), "woke": 1, "steps": {}}


def test_two_archives_in_the_same_second_get_separate_directories(run_dir, ws):
    lin = Lineage.load(run_dir, ws)
    lin.record("干活", "first")
    d1 = lin.archive(ws / "notes" / "archive")
    lin.record("干活", "second")
    d2 = lin.archive(ws / "notes" / "archive")
    assert d1 != d2
    assert read(d1 / "lineage.json")["steps"] == {"干活": "first"}
    assert read(d2 / "lineage.json")["steps"] == {"干活": "second"}


def test_archive_that_cannot_move_everything_puts_back_and_raises(run_dir, ws, tmp_path, monkeypatch):
    import flower.core.lineage as mod

    lin = Lineage.load(run_dir, ws)
    lin.record("干活", SID)
    req = ws / "需求.md"
    req.write_text("需求", encoding="utf-8")
    real_move = mod.shutil.move

    def failing_move(src, dst):
        if src.endswith("需求.md"):
            raise PermissionError("read-only")
        return real_move(src, dst)

    monkeypatch.setattr(mod.shutil, "move", failing_move)
    with pytest.raises(OSError):
        lin.archive(ws / "notes" / "archive", extra=[req])
    assert lin.path.exists() and req.exists()
    assert lin.steps == {"干活": SID}
    assert Lineage.load(run_dir, ws).steps == {"干活": SID}
