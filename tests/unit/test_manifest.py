"""The manifest (S6–S8): every StepResult field plus duration_s and run; parallel processes never lose rows."""

from __future__ import annotations

import dataclasses
import json
import re

import pytest

from flower.core.manifest import (
    Manifest,
    StepResult,
    judge_name,
    parse_name,
    retry_name,
    round_name,
)

MARK = re.compile(r"^\d{8}-\d{6}-[0-9a-f]{6}$")


def result(step: str, **kw) -> StepResult:
    return StepResult(step=step, session_id="sid-" + step, ok=True, started_at=100.0, ended_at=102.5, **kw)


def test_every_manifest_writer_has_its_own_mark_of_the_seed_shape():
    first, second = Manifest("runs"), Manifest("runs")
    assert MARK.match(first.run) and MARK.match(second.run)
    assert first.run != second.run  # two wakes in one long-lived process keep each other's rows


def test_step_names_of_s7():
    assert retry_name("干活", 2) == "干活#retry2"
    assert round_name("干活", 3) == "干活#round3"
    assert judge_name("干活", 1) == "干活·判定#1"
    assert parse_name("干活") == ("干活", "first", 0)
    assert parse_name("干活#retry2") == ("干活", "retry", 2)
    assert parse_name("干活#round3") == ("干活", "round", 3)
    assert parse_name("干活·判定#1") == ("干活", "judge", 1)
    assert parse_name(retry_name(round_name("干活", 1), 2)) == ("干活#round1", "retry", 2)


def test_rows_carry_every_field_plus_duration_and_run(tmp_path):
    m = Manifest(tmp_path / "runs", run="20260907-015240-abcdef")
    m.add(result("干活", attempts=2, resumed=True, errors=["API Error: Can't reach the API server"], context=80200))
    [row] = m.rows()
    fields = {f.name for f in dataclasses.fields(StepResult)}
    assert fields | {"duration_s", "run"} == set(row)
    assert row["duration_s"] == 2.5
    assert row["run"] == "20260907-015240-abcdef"
    assert (row["attempts"], row["resumed"], row["ok"]) == (2, True, True)
    # Written as readable UTF-8 JSON, not \\u escapes.
    assert "干活" in (tmp_path / "runs" / "manifest.json").read_text(encoding="utf-8")


def test_a_process_rewrites_only_its_own_rows(tmp_path):
    run_dir = tmp_path / "runs"
    a = Manifest(run_dir, run="20260101-000000-aaaaaa")
    b = Manifest(run_dir, run="20260101-000000-bbbbbb")
    a.add(result("a1"))
    b.add(result("b1"))
    a.add(result("a2"))
    b.add(result("b2"))
    rows = [(r["run"][-6:], r["step"]) for r in a.rows()]
    assert rows == [("aaaaaa", "a1"), ("aaaaaa", "a2"), ("bbbbbb", "b1"), ("bbbbbb", "b2")]


def test_a_new_process_mark_never_replaces_an_older_runs_rows(tmp_path):
    run_dir = tmp_path / "runs"
    Manifest(run_dir, run="20260101-000000-aaaaaa").add(result("干活"))
    later = Manifest(run_dir, run="20260102-000000-cccccc")
    later.add(result("干活"))
    assert [r["run"] for r in later.rows()] == ["20260101-000000-aaaaaa", "20260102-000000-cccccc"]


def test_adding_the_same_result_again_replaces_its_row(tmp_path):
    m = Manifest(tmp_path / "runs", run="20260101-000000-aaaaaa")
    r = StepResult(step="干活", started_at=1.0)
    m.add(r)
    r.ok, r.ended_at = True, 4.0
    m.add(r)
    rows = m.rows()
    assert len(rows) == 1 and rows[0]["ok"] is True and rows[0]["duration_s"] == 3.0


def test_lines_others_appended_are_kept_in_their_place_and_a_line_that_is_no_row_is_skipped(tmp_path):
    run_dir = tmp_path / "runs"
    m = Manifest(run_dir, run="20260101-000000-aaaaaa")
    m.add(result("a1"))
    path = run_dir / "manifest.json"
    with path.open("a", encoding="utf-8") as f:  # issue 35: the file is one row a line, appended
        f.write(json.dumps({"step": "x", "run": "someone-else"}) + "\n")
        f.write(json.dumps("not a dict, kept as is") + "\n")
    m.add(result("a2"))
    on_disk = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert [r["step"] if isinstance(r, dict) else r for r in on_disk] == ["a1", "x", "not a dict, kept as is", "a2"]
    assert [r["step"] for r in m.rows()] == ["a1", "a2", "x"]  # a writer's rows where its first row stood (S8)


@pytest.mark.parametrize("garbage", [b"{not json", b'[{"a": 1}', b"\xff", b'{"step": "a"}\nnot json\n{"step": "b"}\n'])
def test_corrupt_manifest_is_kept_aside_never_overwritten(tmp_path, garbage):
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    (run_dir / "manifest.json").write_bytes(garbage)
    m = Manifest(run_dir, run="20260101-000000-aaaaaa")
    assert m.rows() == []
    assert m.add(result("干活")) is True
    [aside] = run_dir.glob("manifest.json.corrupt-*")
    assert aside.read_bytes() == garbage
    assert [r["step"] for r in m.rows()] == ["干活"]


def test_unwritable_run_dir_never_raises_and_catches_up_later(tmp_path, caplog):
    blocker = tmp_path / "afile"
    blocker.write_text("not a directory")
    m = Manifest(blocker / "runs", run="20260101-000000-aaaaaa")
    assert m.add(result("a1")) is False
    assert any("could not write" in r.getMessage() for r in caplog.records)
    blocker.unlink()
    assert m.add(result("a2")) is True
    assert [r["step"] for r in m.rows()] == ["a1", "a2"]


def test_a_held_manifest_lock_fails_the_write_softly_and_the_next_one_catches_up(tmp_path, monkeypatch, caplog):
    import flower.core.records as records_module
    from flower.core.lock import exclusive

    monkeypatch.setattr(records_module, "LOCK_TIMEOUT_S", 0.05)
    m = Manifest(tmp_path)
    with exclusive(m.lock_path, 1):  # another process in the middle of its write
        assert m.add(StepResult("干活", ok=True)) is False
    assert "could not write" in caplog.text
    assert m.flush() and [r["step"] for r in m.rows()] == ["干活"]
