"""The task's files travel with the task (D9, issue #22): two "machines" share nothing but the PostgreSQL database.

Machine B's clone never had `需求.md` nor `目标.md` (they were never committed); the real CLI and SDK against the
scripted model; a real PostgreSQL (tests/pg.py).
"""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
from pathlib import Path

from test_cli import flower, start
from test_postgres_team import IDENTITY, REMOTE, sql, work_session

from conftest import until
from flower.testing import Reply, say
from flower.workflow.flower import WORK_PROMPT, WORK_RESUME
from flowerscript import GOALS, REQUIREMENTS, clarify, goals, judge, work
from pg import PgServer


def bare_clone(path: Path) -> Path:
    """A checkout of the team's repository with no 需求.md and no 目标.md."""
    path.mkdir(parents=True)
    for args in (["init", "-q"], ["remote", "add", "origin", REMOTE]):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, timeout=30)
    return path


def machine(model, tmp_path: Path, name: str, url: str) -> tuple[Path, dict[str, str]]:
    config = tmp_path / name / "claude-config"
    config.mkdir(parents=True)
    return bare_clone(tmp_path / name / f"checkout-{name}"), {**model.env(config), "CLAUDE_CODE_MAX_RETRIES": "0",
                                                              "FLOWER_STORE": url}


async def a_killed_mid_work(model, pg: PgServer, pg_url: str, a: Path, env_a: dict[str, str]) -> str:
    """A's task (its own 需求.md, 目标.md and a handoff note) killed mid-work; returns the work session."""
    (a / "需求.md").write_text(REQUIREMENTS, encoding="utf-8")
    (a / "目标.md").write_text(GOALS, encoding="utf-8")
    (a / "notes").mkdir()
    (a / "notes" / "handoff-20261201-100000.md").write_text("# Handoff\nsubtract() is half written.\n", encoding="utf-8")
    model.push(Reply(blocks=[say("half way")], hold=True))
    proc = await start(env=env_a, cwd=a)
    try:
        await model.wait_for_requests(1, timeout=60)
        await until(lambda: work_session(pg, pg_url) != "", what="the lineage in Postgres (S11)")
        sid = work_session(pg, pg_url)
        await until(lambda: sql(pg, pg_url, f"SELECT count(*) FROM flower.transcripts WHERE session_id = '{sid}'") == "1",
                    what="the session in Postgres")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        await asyncio.wait_for(proc.wait(), 30)
    model.release()
    return work_session(pg, pg_url)


async def test_b_without_the_task_files_gets_them_restored_and_continues_a_s_session(model, pg, pg_url, tmp_path):
    a, env_a = machine(model, tmp_path, "a", pg_url)
    b, env_b = machine(model, tmp_path, "b", pg_url)
    sid = await a_killed_mid_work(model, pg, pg_url, a, env_a)
    assert sql(pg, pg_url, f"SELECT count(*) FROM flower.task_files WHERE project = '{IDENTITY}'") == "3"

    before = len(model.conversation)
    model.push(*work(b), *judge())
    done = await flower(env=env_b, cwd=b)
    assert done.code == 0, done.err
    assert "Traceback" not in done.err + done.out
    shown = done.out + done.err
    for name in ("需求.md", "目标.md", "notes/handoff-20261201-100000.md"):
        assert f"restored {name} from the shared store" in shown, shown
    assert (b / "需求.md").read_text(encoding="utf-8") == REQUIREMENTS
    assert (b / "目标.md").read_text(encoding="utf-8") == GOALS
    assert (b / "notes" / "handoff-20261201-100000.md").read_text(encoding="utf-8").startswith("# Handoff")
    # Wake #2 on B: A's session, with A's history on the wire; clarify and goals stay frozen (S17).
    woken = model.conversation[before]
    assert "wake #2" in done.out
    assert woken.session_id == sid and WORK_PROMPT in woken.text and woken.last_user_text.endswith(WORK_RESUME)

    # Deleted on B: the next wake restores it again, one line, no traceback.
    (b / "需求.md").unlink()
    model.push(*work(b), *judge())
    again = await flower(env=env_b, cwd=b)
    assert again.code == 0 and "Traceback" not in again.err + again.out, again.err
    assert "restored 需求.md from the shared store" in again.out + again.err
    assert (b / "需求.md").read_text(encoding="utf-8") == REQUIREMENTS


async def test_both_machines_edited_the_requirements_the_newer_wins_and_the_other_is_kept(model, pg, pg_url, tmp_path):
    a, env_a = machine(model, tmp_path, "a", pg_url)
    b, env_b = machine(model, tmp_path, "b", pg_url)
    await a_killed_mid_work(model, pg, pg_url, a, env_a)
    model.push(*work(b), *judge())
    assert (await flower(env=env_b, cwd=b)).code == 0  # B has A's files now
    mine = REQUIREMENTS + "\n- A's own note: keep it in pure Python.\n"
    theirs = REQUIREMENTS + "\n- B's own note: add multiplication too.\n"
    (a / "需求.md").write_text(mine, encoding="utf-8")
    (b / "需求.md").write_text(theirs, encoding="utf-8")  # edited after A's: the newer one
    model.push(*work(b), *judge())
    on_b = await flower(env=env_b, cwd=b)
    assert on_b.code == 0, on_b.err  # only B's copy changed since B last saw the store's: it goes up, no conflict
    model.push(*work(a), *judge())
    on_a = await flower(env=env_a, cwd=a)
    assert on_a.code == 0 and "Traceback" not in on_a.err + on_a.out, on_a.err
    # A's copy and the store's both changed since A last saw it: B's, written later, wins; A's is kept beside it.
    assert (a / "需求.md").read_text(encoding="utf-8") == theirs
    assert (a / "需求.md.theirs").read_text(encoding="utf-8") == mine
    line = "需求.md was changed here and on"
    assert line in on_a.out + on_a.err and "the copy that was here is kept as 需求.md.theirs" in on_a.out + on_a.err
    stored = sql(pg, pg_url, f"SELECT convert_from(body, 'UTF8') FROM flower.task_files WHERE project = '{IDENTITY}'"
                              " AND name = '需求.md'")
    assert "B's own note" in stored


async def test_new_archives_the_stored_files_too(model, pg, pg_url, tmp_path):
    a, env_a = machine(model, tmp_path, "a", pg_url)
    b, env_b = machine(model, tmp_path, "b", pg_url)
    await a_killed_mid_work(model, pg, pg_url, a, env_a)
    model.push(*clarify(a), *goals(a), *work(a), *judge())
    done = await flower("--new", "write the docs", env=env_a, cwd=a)
    assert done.code == 0, done.err
    archived = sql(pg, pg_url, f"SELECT string_agg(name, ',' ORDER BY name) FROM flower.task_files"
                                f" WHERE project = '{IDENTITY}' AND name LIKE 'notes/archive/%'")
    assert "/需求.md" in archived and "/目标.md" in archived, archived
    # B gets the new task's files, not the archived ones back.
    model.push(*work(b), *judge())
    on_b = await flower(env=env_b, cwd=b)
    assert on_b.code == 0, on_b.err
    assert (b / "需求.md").read_text(encoding="utf-8") == (a / "需求.md").read_text(encoding="utf-8")
    assert not (b / "notes" / "archive").exists()
