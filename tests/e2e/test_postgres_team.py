"""A task shared through PostgreSQL (D9, issue #14): two "machines" (two clones at different paths, each with its own
CLAUDE_CONFIG_DIR and runs/), one database; the real CLI and SDK against the scripted model; a real PostgreSQL (tests/pg.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
import os
import signal
import socket
import subprocess
from pathlib import Path

import pytest
from test_cli import flower, seed_frozen, start

from conftest import until
from flower.runtime import project_key
from flower.testing import Reply, say, text, tool
from flower.workflow.flower import WORK_PROMPT, WORK_RESUME
from flowerscript import judge, work
from pg import READER, PgServer, free_port

REMOTE = "https://git.example.org/team/calc.git"
IDENTITY = "git.example.org/team/calc"


def clone(path: Path) -> Path:
    """A checkout of the team's repository at `path`: same remote, and 需求.md / 目标.md as committed (S17)."""
    path.mkdir(parents=True)
    for args in (["init", "-q"], ["remote", "add", "origin", REMOTE]):
        subprocess.run(["git", "-C", str(path), *args], check=True, capture_output=True, timeout=30)
    seed_frozen(path)
    return path


def machine(model, tmp_path: Path, name: str, url: str) -> tuple[Path, dict[str, str]]:
    """A workspace and the env of one machine: its own path, its own CLAUDE_CONFIG_DIR, the shared store."""
    config = tmp_path / name / "claude-config"
    config.mkdir(parents=True)
    ws = clone(tmp_path / name / f"checkout-{name}")
    return ws, {**model.env(config), "CLAUDE_CODE_MAX_RETRIES": "0", "FLOWER_STORE": url}


def sql(pg: PgServer, url: str, statement: str) -> str:
    return pg.sql(statement, url.split("@/", 1)[1].split("?", 1)[0]).strip()


def work_session(pg: PgServer, url: str) -> str:
    """The shared lineage's work session ('' until recorded)."""
    return sql(pg, url, f"SELECT coalesce(data->'steps'->>'干活', '') FROM flower.lineages WHERE project = '{IDENTITY}'")


async def test_a_task_killed_on_one_machine_continues_on_another(model, pg: PgServer, pg_url: str, tmp_path: Path) -> None:
    a, env_a = machine(model, tmp_path, "a", pg_url)
    b, env_b = machine(model, tmp_path, "b", pg_url)
    assert project_key(a) != project_key(b)  # the CLI keys each by its own path; the store maps both to IDENTITY
    status = await flower("status", env=env_b, cwd=b)
    assert status.code == 0 and f"identity  {IDENTITY}" in status.out, status.err

    model.push(Reply(blocks=[say("half way")], hold=True), *work(b), *judge())
    proc = await start(env=env_a, cwd=a)
    try:
        await model.wait_for_requests(1, timeout=60)
        await until(lambda: work_session(pg, pg_url) != "", what="the lineage in Postgres (S11)")
        sid = work_session(pg, pg_url)
        await until(lambda: sql(pg, pg_url, f"SELECT count(*) FROM flower.transcripts WHERE session_id = '{sid}'") == "1",
                    what="the session in Postgres")
        # D5 across machines: B is told who holds the task, with A's host and pid.
        busy = await flower(env=env_b, cwd=b)
        assert busy.code == 3, busy.err
        assert f"pid {proc.pid} on {socket.gethostname()}" in busy.err and "Traceback" not in busy.err
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        await asyncio.wait_for(proc.wait(), 30)
    # A died with its connection, and its advisory lock with it: B takes over at once, no wait, no cleanup.
    again = await flower(env=env_b, cwd=b)
    assert again.code == 0, again.err
    assert "wake #2" in again.out and "<- resumed · wake #2" in again.out
    woken = model.conversation[1]
    assert woken.session_id == sid  # the same work session, resumed on B through the store
    assert WORK_PROMPT in woken.text  # A's history on the model's wire
    assert woken.last_user_text.endswith(WORK_RESUME)
    assert (b / "calc.py").exists() and not (a / "calc.py").exists()
    assert work_session(pg, pg_url) == sid
    assert json.loads(sql(pg, pg_url, f"SELECT data FROM flower.lineages WHERE project = '{IDENTITY}'"))["woke"] == 2
    # Neither machine wrote a lineage.json or a sessions.db: the task lives in the database.
    for ws in (a, b):
        assert not (ws / "runs" / "lineage.json").exists() and not (ws / "runs" / "sessions.db").exists()
    # The manifest rows are there too (S6), B's work round on A's session among them.
    rows = json.loads(sql(pg, pg_url, f"SELECT json_agg(r) FROM flower.manifest, jsonb_array_elements(rows) r WHERE project = '{IDENTITY}'"))
    assert any(r["step"] == "干活" and r["session_id"] == sid and r["ok"] for r in rows)
    assert not (b / "runs" / "manifest.json").exists()


async def test_the_database_restarted_mid_run_loses_and_doubles_nothing(model, tmp_path: Path) -> None:
    server = PgServer()  # its own server: this one is restarted mid-run
    try:
        server.init().start()
        url = server.url(server.new_database())
        a, env_a = machine(model, tmp_path, "a", url)
        model.push(dataclasses.replace(tool("Write", {"file_path": str(a / "calc.py"), "content": "print(3)\n"}), hold=True),
                   *work(a)[1:], *judge())
        proc = await start(env=env_a, cwd=a)
        try:
            await model.wait_for_requests(1, timeout=60)
            await until(lambda: work_session(server, url) != "", what="the lineage in Postgres")
            sid = work_session(server, url)
            await until(lambda: sql(server, url, "SELECT count(*) FROM flower.entries") != "0", what="first entries")
            await asyncio.to_thread(server.stop)
            model.release()  # the agent works on while the database is down: its entries wait for it
            await model.wait_for_requests(2, timeout=60)
            await asyncio.to_thread(server.start)
            out, err = await asyncio.wait_for(proc.communicate(), 120)
        finally:
            if proc.returncode is None:
                os.killpg(proc.pid, signal.SIGKILL)
                await proc.wait()
        assert proc.returncode == 0, err.decode()
        assert (a / "calc.py").read_text() == "print(3)\n"
        # Every entry the CLI wrote to its own JSONL is in the database once, in the CLI's order.
        jsonl = Path(env_a["CLAUDE_CONFIG_DIR"]) / "projects" / project_key(a) / f"{sid}.jsonl"
        written = [u for line in jsonl.read_text().splitlines() if (u := json.loads(line).get("uuid"))]
        # (Since v6 a canonical uuid is stored in the 16-byte `uid` column, any other in `uuid`: issue 35.)
        stored = sql(server, url, "SELECT coalesce(e.uid::text, e.uuid) FROM flower.entries e JOIN flower.transcripts t"
                                  f" ON t.id = e.transcript WHERE t.session_id = '{sid}' AND t.subpath = ''"
                                  " AND coalesce(e.uid::text, e.uuid) IS NOT NULL ORDER BY e.seq").split()
        assert stored == written
    finally:
        server.remove()


@pytest.mark.parametrize("case", ["bad_url", "refused", "no_permission"])
async def test_a_store_that_cannot_be_used_is_one_line_and_exit_2(model, pg: PgServer, pg_url: str, tmp_path: Path,
                                                                   case: str) -> None:

    database = pg_url.split("@/", 1)[1].split("?", 1)[0]
    url = {"bad_url": "mysql://x/y", "refused": f"postgresql://postgres@127.0.0.1:{free_port()}/x",
           "no_permission": pg.url(database, READER)}[case]
    a, env_a = machine(model, tmp_path, "a", url)
    done = await flower("build a calculator", env=env_a, cwd=a)
    assert done.code == 2, done.err
    lines = [ln for ln in done.err.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("flower: ") and "Traceback" not in done.err
    assert not model.conversation  # nothing ran
    assert not (a / "runs" / "lineage.json").exists()


async def test_once_resumes_on_another_machine_through_the_store(model, pg_url: str, tmp_path: Path) -> None:
    a, env_a = machine(model, tmp_path, "a", pg_url)
    b, env_b = machine(model, tmp_path, "b", pg_url)
    model.push(text("first answer"), text("second answer"))
    first = await flower("once", "remember the number 41", env=env_a, cwd=a)
    assert first.code == 0, first.err
    sid = first.out.split("session: ", 1)[1].split()[0].strip()
    second = await flower("once", "--resume", sid, "what was the number?", env=env_b, cwd=b)
    assert second.code == 0, second.err
    assert model.conversation[1].session_id == sid
    assert "remember the number 41" in model.conversation[1].text and "first answer" in model.conversation[1].text
    assert not (a / "runs" / "sessions.db").exists() and not (b / "runs" / "sessions.db").exists()
