"""manifest.json as appended lines (issue 35): a write appends only its rows, a kill at any byte loses only the row it
cut, a reader reads only what was appended since, and an older manifest (one JSON list) is still read and turned into
lines by the next write."""

from __future__ import annotations

import json
import random

from flower.core.durable import write_atomic
from flower.core.manifest import Manifest, StepResult
from flower.core.manifest_file import ManifestFile
from flower.core.records import FileRecords


def result(step: str, **kw) -> StepResult:
    return StepResult(step=step, session_id="sid-" + step, ok=True, started_at=100.0, ended_at=102.5, **kw)


def steps(run_dir) -> list[str]:
    """The steps a fresh reader finds (another process's view)."""
    return [r["step"] for r in FileRecords(run_dir).manifest_rows()]


def test_a_write_appends_only_its_own_row_and_leaves_every_earlier_byte_as_it_was(tmp_path):
    run_dir = tmp_path / "runs"
    m = Manifest(run_dir, run="20260101-000000-aaaaaa")
    for i in range(30):
        m.add(result(f"s{i}"))
    path = run_dir / "manifest.json"
    before = path.read_bytes()
    m.add(result("s30"))
    after = path.read_bytes()
    assert after.startswith(before)  # nothing rewritten: a write costs its own row, not the task's
    [line] = after[len(before):].splitlines()
    assert (json.loads(line)["step"], json.loads(line)["slot"]) == ("s30", 30)
    assert steps(run_dir) == [f"s{i}" for i in range(31)]


def test_a_row_written_again_is_a_new_line_and_every_reader_sees_it_once_in_its_place(tmp_path):
    run_dir = tmp_path / "runs"
    m = Manifest(run_dir, run="20260101-000000-aaaaaa")
    work, judge = StepResult(step="干活", started_at=1.0), StepResult(step="干活·判定#1", started_at=2.0)
    m.add(work)
    m.add(judge)
    work.retired = ["old-session"]  # a handoff's round is written again with retired[] (S26)
    m.add(work)
    assert len((run_dir / "manifest.json").read_bytes().splitlines()) == 3
    rows = FileRecords(run_dir).manifest_rows()
    assert [(r["step"], r["retired"]) for r in rows] == [("干活", ["old-session"]), ("干活·判定#1", [])]
    assert all("slot" not in r for r in rows) and rows == m.rows()


def test_a_kill_at_any_byte_of_a_write_loses_only_its_row_and_the_next_write_cuts_the_rest_off(tmp_path):
    run_dir = tmp_path / "runs"
    Manifest(run_dir, run="20260101-000000-aaaaaa").add(result("kept"))
    path = run_dir / "manifest.json"
    whole = path.read_bytes()
    Manifest(run_dir, run="20260101-000000-bbbbbb").add(result("cut"))
    line = path.read_bytes()[len(whole):]
    reader = FileRecords(run_dir)  # one that read before the cut, too
    for n in range(1, len(line) - 1):  # every length a kill can leave of one write (its newline at least missing)
        path.write_bytes(whole + line[:n])
        assert steps(run_dir) == ["kept"] and [r["step"] for r in reader.manifest_rows()] == ["kept"], n
        assert Manifest(run_dir, run="20260101-000000-cccccc").add(result("next")) is True
        written = path.read_bytes()
        assert written.startswith(whole) and json.loads(written[len(whole):])["step"] == "next", n  # the cut part is gone
        assert steps(run_dir) == ["kept", "next"] and [r["step"] for r in reader.manifest_rows()] == ["kept", "next"], n
    assert sorted(p.name for p in run_dir.iterdir()) == ["manifest.json", "manifest.json.lock"]  # nothing kept aside


def test_a_reader_counts_a_row_only_once_its_line_is_whole(tmp_path):
    run_dir = tmp_path / "runs"
    Manifest(run_dir, run="20260101-000000-aaaaaa").add(result("first"))
    path = run_dir / "manifest.json"
    reader = FileRecords(run_dir)
    assert [r["step"] for r in reader.manifest_rows()] == ["first"]
    line = json.dumps({**result("second").row("20260101-000000-bbbbbb"), "slot": 0}).encode() + b"\n"
    with path.open("ab") as f:  # another process's write, seen half done
        f.write(line[:20])
        f.flush()
        assert [r["step"] for r in reader.manifest_rows()] == ["first"]
        f.write(line[20:])
    assert [r["step"] for r in reader.manifest_rows()] == ["first", "second"]


def test_a_whole_last_row_without_its_newline_counts_and_the_next_write_adds_the_newline(tmp_path):
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    path = run_dir / "manifest.json"
    path.write_text(json.dumps({"step": "by hand", "run": "someone"}), encoding="utf-8")  # a person's edit
    assert steps(run_dir) == ["by hand"]
    Manifest(run_dir, run="20260101-000000-aaaaaa").add(result("next"))
    assert [json.loads(line)["step"] for line in path.read_text(encoding="utf-8").splitlines()] == ["by hand", "next"]
    assert steps(run_dir) == ["by hand", "next"]


def test_an_older_manifest_a_json_list_is_read_as_it_is_and_the_next_write_turns_it_into_lines(tmp_path):
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    path = run_dir / "manifest.json"
    older = [{"step": "澄清", "run": "r1", "session_id": "c1"}, {"step": "干活", "run": "r1", "session_id": "w1"},
             "not a row", {"step": "干活#round2", "run": "r2", "session_id": "w1"}]
    path.write_text(json.dumps(older, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")  # as flower wrote it before
    reader = FileRecords(run_dir)
    assert reader.manifest_rows() == [older[0], older[1], older[3]]
    stamp = reader.stamp()
    m = Manifest(run_dir, run="20260101-000000-aaaaaa", records=reader)
    assert m.add(result("干活#round3")) is True
    lines = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    assert lines[:4] == older and lines[4]["step"] == "干活#round3"  # every element kept, in its order
    assert reader.stamp() != stamp
    assert reader.manifest_rows() == FileRecords(run_dir).manifest_rows() == [*(older[i] for i in (0, 1, 3)), m.rows()[-1]]
    assert sorted(p.name for p in run_dir.iterdir()) == ["manifest.json", "manifest.json.lock"]
    m.add(result("干活#round4"))  # from now on appended
    assert path.read_text(encoding="utf-8").count("\n") == 6 and steps(run_dir)[-2:] == ["干活#round3", "干活#round4"]


def test_a_reader_starts_over_when_the_file_is_replaced_or_rewritten(tmp_path):
    run_dir = tmp_path / "runs"
    m = Manifest(run_dir, run="20260101-000000-aaaaaa")
    m.add(result("a"))
    m.add(result("b"))
    reader = FileRecords(run_dir)
    assert [r["step"] for r in reader.manifest_rows()] == ["a", "b"]
    path = run_dir / "manifest.json"
    lines = path.read_bytes().splitlines(keepends=True)
    write_atomic(path, lines[1] + lines[0] + b'{"step": "c", "run": "x"}\n')  # another file, longer
    assert [r["step"] for r in reader.manifest_rows()] == ["b", "a", "c"]
    with path.open("r+b") as f:  # the same file rewritten in place (an editor), its last row changed
        f.write(path.read_bytes().replace(b'"step": "c"', b'"step": "C"'))
    assert [r["step"] for r in reader.manifest_rows()] == ["b", "a", "C"]
    path.write_bytes(lines[0])  # and shorter
    assert [r["step"] for r in reader.manifest_rows()] == ["a"]


def test_a_reader_that_keeps_reading_sees_what_a_fresh_reader_sees_through_appends_rewrites_and_earlier_writers(tmp_path):
    # A reader keeps its flattened rows and follows each change (issue 35: a change costs its own rows); every
    # way a change can land (a new row of the newest writer, a row written again, a new row of an earlier writer,
    # a new writer) must leave it where a reader starting afresh is.
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    path = run_dir / "manifest.json"
    keeper = ManifestFile(path)
    rng = random.Random(7)
    runs: list[str] = []
    slots: dict[str, int] = {}
    for i in range(400):
        choice = rng.random()
        if not runs or choice < 0.05:
            runs.append(f"2026010{len(runs) % 10}-000000-{len(runs):06x}")
            run = runs[-1]
        elif choice < 0.15:
            run = rng.choice(runs)  # an earlier writer (or the newest) adds or rewrites a row
        else:
            run = runs[-1]
        slot = rng.randrange(slots.get(run, 0) + 1) if rng.random() < 0.2 else slots.get(run, 0)
        slots[run] = max(slots.get(run, 0), slot + 1)
        keeper.append(run, [(slot, {"step": f"s{i}", "run": run})])
        if rng.random() < 0.3:  # the keeper reads now and then, so changes pile up between its reads
            assert keeper.rows() == ManifestFile(path).rows()
    assert keeper.rows() == ManifestFile(path).rows()
    assert len(keeper.rows()) == sum(slots.values())
