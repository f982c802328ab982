"""`flower gc` and `retention_days` (#26) on real CLI sessions: what each task holds, deleting archived ones only.

The archived task is made as a person makes one: a whole first run, then `flower --new`. What belongs to which task
is known independently of flower's bookkeeping: the sessions the store held before `--new` are the archived task's.
"""

from __future__ import annotations

import base64
import json
import random
import sqlite3
from pathlib import Path

from test_cli import Terminal, flower, lineage

from flower.runtime import project_key
from flower.stores.sqlite import SqliteSessionStore
from flowerscript import clarify, first_run, goals, judge, work

# Random bytes as base64: about 450 KB even as a stored zstd frame (entry bodies are compressed, #26).
BIG = "# a large file the work step wrote\nx = '" + base64.b64encode(random.Random(7).randbytes(450_000)).decode() + "'\n"
"""400 KB in the work session's Write call: the archived task takes room worth giving back."""
DAY_MS = 86_400_000


def stored(run_dir: Path) -> dict[str, int]:
    """Session id → entries the store holds (subagent transcripts included), read with sqlite3 itself."""
    with sqlite3.connect(f"file:{run_dir / 'sessions.db'}?mode=ro", uri=True) as conn:
        rows = conn.execute("SELECT t.session_id, count(e.seq) FROM transcripts t LEFT JOIN entries e"
                            " ON e.transcript = t.id GROUP BY t.session_id").fetchall()
    return {sid: n for sid, n in rows}


def on_disk(run_dir: Path) -> int:
    return sum(p.stat().st_size for p in run_dir.glob("sessions.db*"))


def files(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root`: (size, mtime ns), to show it untouched."""
    return {str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns) for p in root.rglob("*") if p.is_file()}


def row(out: str, name: str) -> list[str]:
    """The cells of the gc table's row `name` (sessions, entries, MB, 'MB', date, time)."""
    found = [line[len(name):].split() for line in out.splitlines() if line.startswith(name + " ")]
    assert len(found) == 1, out
    return found[0]


async def archived_task(model, env, workspace: Path, run_dir: Path) -> tuple[dict[str, int], dict[str, int], Path]:
    """A first run whose work wrote BIG, then `flower --new`: (the archived task's sessions, the current one's, the archive)."""
    model.push(*clarify(workspace), *goals(workspace), *work(workspace, BIG), *judge())
    done = await flower("build a calculator", "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    old = stored(run_dir)
    model.push(*first_run(workspace))
    done = await flower("--new", "write the docs", "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    now = stored(run_dir)
    assert set(old) <= set(now)
    archive = next((workspace / "notes" / "archive").iterdir())
    # Counted now: the second process may still have added an entry to an archived session (its sweep, D2).
    return {sid: now[sid] for sid in old}, {sid: n for sid, n in now.items() if sid not in old}, archive


async def test_gc_lists_each_task_deletes_nothing_unasked_and_yes_collects_the_archive(model, env, workspace, run_dir, tmp_path):
    old, current, archive = await archived_task(model, env, workspace, run_dir)
    assert len(old) >= 4 and len(current) >= 4  # clarify, goals, work, judge: each its own session
    kept_files = {name: (archive / name).read_bytes() for name in ("需求.md", "目标.md", "lineage.json")}
    cli_files = files(tmp_path / "claude-config")
    assert any(name.endswith(".jsonl") for name in cli_files)  # the CLI's own transcripts, which gc never touches
    size = on_disk(run_dir)

    listed = await flower("gc", "-r", str(run_dir), env=env, cwd=workspace)
    assert listed.code == 0, listed.err
    cells = row(listed.out, archive.name)
    assert (int(cells[0]), int(cells[1])) == (len(old), sum(old.values())), listed.out
    assert float(cells[2]) >= 0.4  # BIG is in it
    cells = row(listed.out, "current (kept)")
    assert (int(cells[0]), int(cells[1])) == (len(current), sum(current.values())), listed.out
    assert "other" not in listed.out  # every stored session belongs to a task
    assert f"flower gc --yes would free 1 archived task: {len(old)} sessions, {sum(old.values())} entries" in listed.out
    assert "Not on a terminal: nothing deleted. Add --yes to delete them." in listed.out
    assert stored(run_dir) == {**old, **current} and on_disk(run_dir) == size

    fresh = await flower("gc", "--older-than", "90d", "-r", str(run_dir), env=env, cwd=workspace)
    assert fresh.code == 0 and "nothing to collect: no archived task last used more than 90d ago" in fresh.out, fresh.out
    bad = await flower("gc", "--older-than", "3 weeks", "-r", str(run_dir), env=env, cwd=workspace)
    assert bad.code == 2 and bad.out == "" and len(bad.err.strip().splitlines()) == 1, bad
    assert "is not an age: give days or hours, e.g. --older-than 90d or 12h" in bad.err
    assert stored(run_dir) == {**old, **current}

    done = await flower("gc", "--yes", "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    assert stored(run_dir) == current  # the archived task's sessions are gone, the current task's all there
    after = on_disk(run_dir)
    assert after < size - 300_000, (size, after)  # VACUUM gave BIG's room back to the disk
    line = next(line for line in done.out.splitlines() if line.startswith("deleted "))
    assert line.startswith(f"deleted {len(old)} sessions ({sum(old.values())} entries) of 1 archived task"), line
    print(f"\nflower gc --yes: {line}; sessions.db and its -wal/-shm {size} -> {after} bytes")
    assert {name: (archive / name).read_bytes() for name in kept_files} == kept_files  # S28: the archive's files stay
    assert files(tmp_path / "claude-config") == cli_files  # never the CLI's own files under ~/.claude
    assert not any((run_dir / "journal" / f"{sid}.jsonl").exists() for sid in old)
    assert all((run_dir / "journal" / f"{sid}.jsonl").exists() for sid in lineage(run_dir)["steps"].values())

    # The current task goes on from its own session: nothing it needs was collected.
    sid = lineage(run_dir)["steps"]["干活"]
    model.push(*goals(workspace), *work(workspace), *judge())
    before = len(model.conversation)
    again = await flower("add subtraction too", "-r", str(run_dir), env=env, cwd=workspace)
    assert again.code == 0, again.err
    resumed = [r for r in model.conversation[before:] if r.session_id == sid]
    assert resumed and "calc.py written" in resumed[0].texts("assistant")  # its earlier turn, as the model saw it


async def seeded(workspace: Path, run_dir: Path) -> tuple[list[str], list[str]]:
    """An archive and a current task whose sessions are written through the store itself (no agent needed to ask)."""
    archive = workspace / "notes" / "archive" / "20240101-120000"
    archive.mkdir(parents=True)
    (archive / "需求.md").write_text("# 需求\nthe old task\n", encoding="utf-8")
    (archive / "lineage.json").write_text(json.dumps({"workspace": str(workspace), "woke": 3,
                                                      "steps": {"澄清": "old-clarify", "干活": "old-work"}}))
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "lineage.json").write_text(json.dumps({"workspace": str(workspace), "woke": 1, "steps": {"干活": "new-work"}}))
    store = SqliteSessionStore(run_dir / "sessions.db")
    try:
        for sid in ("old-clarify", "old-work", "new-work"):
            await store.append({"project_key": project_key(workspace), "session_id": sid},
                               [{"type": "user", "uuid": f"{sid}-{i}", "message": {"role": "user", "content": f"line {i}"}}
                                for i in range(20)])
    finally:
        await store.close()
    return ["old-clarify", "old-work"], ["new-work"]


async def answered(run_dir: Path, env: dict[str, str], workspace: Path, answer: str, then: str) -> str:
    """`flower gc` at a terminal: wait for its question, type `answer`, wait for `then`; what the terminal showed."""
    term = await Terminal.open("gc", "-r", str(run_dir), env=env, cwd=workspace)
    try:
        await term.expect("would free 1 archived task: 2 sessions, 40 entries", timeout=30)
        await term.expect("Their 需求.md, 目标.md and notes stay. [y/N]", timeout=30)
        term.type(answer)
        await term.expect(then, timeout=30)
        assert await term.wait(timeout=30) == 0
    finally:
        term.close()
    return term.screen


async def test_gc_at_a_terminal_asks_and_enter_is_no(env, workspace, run_dir):
    old, current = await seeded(workspace, run_dir)
    await answered(run_dir, env, workspace, "", "nothing deleted")
    assert set(stored(run_dir)) == {*old, *current}
    screen = await answered(run_dir, env, workspace, "y", "deleted 2 sessions (40 entries) of 1 archived task")
    assert set(stored(run_dir)) == set(current)
    assert "Traceback" not in screen


async def test_gc_never_collects_a_session_the_current_task_names_even_when_an_archive_names_it(env, workspace, run_dir):
    old, current = await seeded(workspace, run_dir)
    # The current task's lineage also names an archived session (a hand-edited file, a resumed step): it is the current task's.
    (run_dir / "lineage.json").write_text(json.dumps({"workspace": str(workspace), "woke": 1,
                                                      "steps": {"澄清": "old-clarify", "干活": "new-work"}}))
    done = await flower("gc", "--yes", "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    assert set(stored(run_dir)) == {"old-clarify", *current}
    assert "deleted 1 session (20 entries)" in done.out


async def test_retention_days_at_wake_collects_old_archives_and_says_what_it_freed(model, env, workspace, run_dir):
    old, current, archive = await archived_task(model, env, workspace, run_dir)
    # A hundred days pass for the archived task: its sessions were last written then (the store's own mtimes).
    with sqlite3.connect(run_dir / "sessions.db") as conn:
        conn.executemany("UPDATE transcripts SET mtime = mtime - ? WHERE session_id = ?", [(100 * DAY_MS, sid) for sid in old])
    kept = (archive / "需求.md").read_bytes()
    sid = lineage(run_dir)["steps"]["干活"]
    model.push(*goals(workspace), *work(workspace), *judge())
    before = len(model.conversation)
    done = await flower("add subtraction too", "-r", str(run_dir), env={**env, "FLOWER_RETENTION_DAYS": "30"}, cwd=workspace)
    assert done.code == 0, done.err
    freed = [line for line in done.out.splitlines() if line.startswith("· retention (30 days):")]  # a Notice line
    assert len(freed) == 1 and f"deleted {len(old)} sessions of 1 archived task from the store" in freed[0], done.out
    now = stored(run_dir)
    assert not set(old) & set(now) and set(current) <= set(now)  # this wake's new goals session comes on top
    assert all(now[sid] >= n for sid, n in current.items())
    assert (archive / "需求.md").read_bytes() == kept
    assert any(r.session_id == sid for r in model.conversation[before:])  # the current task resumed as ever
    # Nothing that old is left to collect.
    left = await flower("gc", "--older-than", "30d", "-r", str(run_dir), env=env, cwd=workspace)
    assert left.code == 0 and "nothing to collect" in left.out, left.out
