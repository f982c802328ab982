"""The task's records object (core/records.py): passed down, it is where lineage, manifest, lock and wake mark go;
its change stamp moves with every write and only then (what a status re-reads by)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flower.core.lineage import Lineage
from flower.core.lock import WorkspaceBusy, WorkspaceLock
from flower.core.manifest import Manifest, StepResult
from flower.core.records import FileRecords, interrupted, mark_wake, wake_mark
from flower.status import at_rest, recorded


def test_the_records_given_are_where_everything_goes_and_run_dir_is_only_a_name(tmp_path: Path) -> None:
    ws, run_dir, elsewhere = tmp_path / "ws", tmp_path / "ws" / "runs", tmp_path / "kept"
    records = FileRecords(elsewhere)
    lineage = Lineage.load(run_dir, ws, records=records)
    lineage.wake()
    lineage.record("干活", "sid-1")
    Manifest(run_dir, run="r1", records=records).add(StepResult("干活", session_id="sid-1", ok=True, cost_usd=0.5))
    with WorkspaceLock(run_dir, records):
        mark_wake(records)
        assert wake_mark(records) == (True, True) and not interrupted(records)
        with pytest.raises(WorkspaceBusy):
            WorkspaceLock(elsewhere).acquire()  # the same lock, however it is reached
    assert interrupted(records)  # the mark outlived the lock: a wake cut off
    assert not run_dir.exists() and {p.name for p in elsewhere.iterdir()} >= {"lineage.json", "manifest.json", "wake.json"}
    st = at_rest(ws, run_dir, records=records)
    assert (st.woke, st.steps, st.interrupted, st.cost.task) == (1, {"干活": "sid-1"}, True, 0.5)
    assert at_rest(ws, run_dir).woke == 0  # run_dir's own files: nothing there


def test_the_change_stamp_moves_with_each_write_and_only_then(tmp_path: Path) -> None:
    ws, run_dir = tmp_path / "ws", tmp_path / "runs"
    records = FileRecords(run_dir)
    seen = [records.stamp()]
    assert records.stamp() == seen[-1]
    Lineage.load(run_dir, ws, records=records).wake()
    seen.append(records.stamp())
    manifest = Manifest(run_dir, run="r1", records=records)
    manifest.add(StepResult("干活", ok=True, cost_usd=0.25, model="m-1"))
    seen.append(records.stamp())
    mark_wake(records)
    seen.append(records.stamp())
    assert len(set(seen)) == len(seen) and records.stamp() == seen[-1]
    # status reads the manifest again because the stamp moved: the same-sized rewrite of a row is seen too.
    assert recorded(ws, run_dir, records).model == "m-1"
    manifest.add(StepResult("干活", ok=True, cost_usd=0.75, model="m-2"))
    found = recorded(ws, run_dir, records)
    assert (found.task, found.model) == (1.0, "m-2")


def test_a_pending_sentence_is_on_disk_until_all_three_places_have_it_and_delivery_is_read_from_the_journal(tmp_path: Path) -> None:
    # Issue 31: sentences.json is the record; place 1 is what the work session's journal says it was given.
    import json

    from flower.core.journal import Journal
    from flower.core.sentences import Pending

    run_dir = tmp_path / "runs"
    records, journal = FileRecords(run_dir), Journal(run_dir)
    journal.prompt("work-1", "One more thing: also divide")  # an earlier wake gave the same words once already
    said = Pending.load(records)
    said.add("also divide", journal, "work-1")
    said.add("also multiply", journal, None)
    rows = json.loads((run_dir / "sentences.json").read_text(encoding="utf-8"))
    assert [(r["text"], r["requirements"], r["goals"], r["work"]) for r in rows] == [
        ("also divide", False, False, False), ("also multiply", False, False, False)]
    said.mark(said.lacking("requirements"), "requirements")
    said.mark(said.lacking("goals"), "goals")
    said.settle(journal, "work-1", "One more thing: {sentence}")
    assert [s.text for s in Pending.load(records).lacking("work")] == ["also divide", "also multiply"]  # offset: not that one
    journal.prompt("work-1", "Continue.\n\nOne more thing: also divide")
    said.settle(journal, "work-1", "One more thing: {sentence}")
    assert [s.text for s in Pending.load(records).sentences] == ["also multiply"]
    journal.prompt("work-2", "One more thing: also multiply")  # a session that began after it was said: read whole
    said.settle(journal, "work-2", "One more thing: {sentence}")
    assert Pending.load(records).sentences == [] and not (run_dir / "sentences.json").exists()
    journal.close()
