"""Reconcile before every resume, on the real CLI: what a lagging mirror left out of sessions.db comes back from the
CLI's own transcript, and the resumed model receives it (issue 13; D2).

The race is made deterministic: after a real step, the newest rows of its session are deleted from sessions.db,
which is what a kill between the CLI's own write and the mirror's leaves behind.
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import signal
import sqlite3
import sys
from pathlib import Path

from conftest import kill_group, run_program, start_program, until
from flower import AgentSpec, Runtime
from flower.runtime import project_key
from flower.stores.prune import INTERRUPTED_NOTE
from flower.stores.reconcile import config_dir, is_local_only, leftover_paths, parse_jsonl, transcript_path
from flower.stores.rows import codec_of, decode_bodies, resolved
from flower.testing import Reply, say, text, tool
from flowerscript import GOALS, REQUIREMENTS

FLOWER = Path(sys.executable).parent / "flower"

BRIEF = "write the notes"
DONE = "notes written, step finished"


def args(workspace: Path, run_dir: Path) -> dict:
    return {"workspace": str(workspace), "run_dir": str(run_dir),
            "steps": [{"name": "work", "prompt": BRIEF, "tools": ["Write"], "resume_prompt": "carry on"}]}


def stored_rows(run_dir: Path, workspace: Path, sid: str) -> list[tuple[int, dict]]:
    """(seq, entry) of the session's main transcript in sessions.db, read with plain SQLite (bodies are zstd frames, #26)."""
    with sqlite3.connect(run_dir / "sessions.db") as db:
        rows = db.execute(
            "SELECT e.seq, e.body FROM transcripts t JOIN entries e ON e.transcript = t.id"
            " WHERE t.project_key = ? AND t.session_id = ? AND t.subpath = '' ORDER BY e.seq",
            (project_key(workspace), sid)).fetchall()
        own = codec_of(db)
        # A long string the session repeats is put back from the entry holding it (issue 35).
        bodies = resolved(db, [body for _, body in rows], own, [seq for seq, _ in rows])
    return list(zip([seq for seq, _ in rows], decode_bodies(bodies, own), strict=True))


def drop_from(run_dir: Path, seq: int) -> None:
    """Delete every row from `seq` on, as a mirror that lagged behind the CLI's own file would have left it."""
    db = sqlite3.connect(run_dir / "sessions.db")
    try:
        with db:
            db.execute("DELETE FROM entries WHERE seq >= ?", (seq,))
    finally:
        db.close()


def mirrored(local: Path) -> list[dict]:
    """The lines of the CLI's own transcript that the mirror carries."""
    return [e for e in parse_jsonl(local.read_bytes()) if not is_local_only(e)]


def tool_result_seq(rows: list[tuple[int, dict]]) -> int:
    """The seq of the user row that carries the step's tool result: it and everything after it get dropped."""
    return next(seq for seq, e in rows if e.get("type") == "user" and "toolUseResult" in e)


async def first_step(model, env, workspace: Path, run_dir: Path, *, calls: bool = True) -> tuple[str, Path, list[tuple[int, dict]]]:
    """One real work step (with a tool call); its session, the CLI's own transcript and its sessions.db rows."""
    if calls:
        model.push(tool("Write", {"file_path": str(workspace / "notes.txt"), "content": "n\n"}))
    model.push(text(DONE))
    ctx = await run_program("workflow", args(workspace, run_dir), env, workspace)
    sid = ctx["_sessions"]["work"]
    local = transcript_path(config_dir(env), project_key(workspace), sid)
    rows = stored_rows(run_dir, workspace, sid)
    # What the real CLI does (the facts reconcile.py is built on): its own file is where the SDK's project key
    # and CLAUDE_CONFIG_DIR put it, and the mirror holds its lines but the local-only ones, in order, up to
    # where it stopped (even a clean exit can leave the CLI's last metadata line unmirrored).
    assert [e for _, e in rows] == mirrored(local)[: len(rows)]
    assert any(is_local_only(e) for e in parse_jsonl(local.read_bytes()))
    return sid, local, rows


async def test_rows_a_lagging_mirror_lost_are_restored_and_the_resumed_model_receives_them(model, env, workspace, run_dir):
    sid, local, rows = await first_step(model, env, workspace, run_dir)
    before = local.read_bytes()
    drop_from(run_dir, tool_result_seq(rows))
    lost = [e for seq, e in rows if seq >= tool_result_seq(rows)]
    assert any(e.get("type") == "assistant" for e in lost) and any(e.get("uuid") is None for e in lost)

    model.push(text("carried on"))
    ctx = await run_program("workflow", args(workspace, run_dir), env, workspace)
    assert ctx["_ok"] and ctx["_sessions"]["work"] == sid

    seen = model.last  # the resumed turn's request
    assert seen.session_id == sid and seen.last_user_text.endswith("carry on")
    assert DONE in seen.texts("assistant")
    assert [r["tool_use_id"] for r in seen.tool_results()] == [u["id"] for u in seen.tool_uses()] != []
    # sessions.db holds the first step again, whole, in the file's order, once: then the resumed turn.
    after = [e for _, e in stored_rows(run_dir, workspace, sid)]
    assert after[: len(mirrored(local))] == mirrored(local)
    uuids = [e["uuid"] for e in after if "uuid" in e]
    assert len(uuids) == len(set(uuids))
    assert local.read_bytes() == before  # the CLI's own file is only read


async def resume(model, env, workspace: Path, run_dir: Path, sid: str):
    """One resumed turn in this process; the request the model received for it."""
    model.push(text("carried on"))
    async with Runtime(workspace, run_dir, env=env) as rt:
        result = await rt.run(AgentSpec("work", allowed_tools=["Write"]), "carry on", resume=sid)
    assert result.ok and result.session_id == sid
    return model.last


async def test_a_file_cut_mid_line_gives_what_parses_and_no_file_resumes_from_the_store(model, env, workspace, run_dir, caplog):
    sid, local, rows = await first_step(model, env, workspace, run_dir)
    drop_from(run_dir, tool_result_seq(rows))
    # A kill during the CLI's write of the final answer: the file ends inside that line.
    data = local.read_bytes()
    local.write_bytes(data[: data.index(DONE.encode())])
    before = local.read_bytes()
    with caplog.at_level(logging.INFO, logger="flower"):
        seen = await resume(model, env, workspace, run_dir, sid)
    # The real tool result came back (not the note pruning puts where a result is missing); the cut answer did not.
    assert "notes.txt" in json.dumps(seen.tool_results()) and INTERRUPTED_NOTE not in seen.text
    assert DONE not in seen.text
    imported = [r.getMessage() for r in caplog.records if r.getMessage().startswith("reconcile:")]
    assert len(imported) == 1 and f"of session {sid}" in imported[0]
    assert local.read_bytes() == before

    # The same loss again, and now no file at all (e.g. the CLI's config dir was cleaned): the store as it is.
    drop_from(run_dir, tool_result_seq(rows))
    local.unlink()
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="flower"):
        seen = await resume(model, env, workspace, run_dir, sid)
    assert BRIEF in seen.text and seen.tool_uses() and INTERRUPTED_NOTE in seen.text
    assert not [r for r in caplog.records if r.getMessage().startswith("reconcile:")]
    kept = [e for seq, e in rows if seq < tool_result_seq(rows)]
    assert [e for _, e in stored_rows(run_dir, workspace, sid)][: len(kept)] == kept


async def test_a_killed_resume_is_restored_from_the_dir_the_sdk_left_behind(model, env, workspace, run_dir, tmp_path):
    # A resumed CLI runs on a config dir the SDK materialises in the temp dir: a kill leaves it, and only it
    # holds the resumed round's entries.
    env = {**env, "TMPDIR": str(tmp_path / "tmp")}
    (tmp_path / "tmp").mkdir()
    sid, local, rows = await first_step(model, env, workspace, run_dir, calls=False)
    model.push(tool("Write", {"file_path": str(workspace / "second.txt"), "content": "s\n"}), Reply(blocks=[say("never")], hold=True))
    proc = await start_program("workflow", args(workspace, run_dir), env, workspace)
    try:
        await model.wait_for_requests(3, timeout=60)  # the resumed round's tool ran; its result went to the model
        await until(lambda: any(b"second.txt" in p.read_bytes() and b"toolUseResult" in p.read_bytes()
                                for p in leftover_paths(project_key(workspace), sid, tmp_path / "tmp")), what="the temp transcript")
    finally:
        await kill_group(proc)
    [left] = leftover_paths(project_key(workspace), sid, tmp_path / "tmp")
    before, config_before = left.read_bytes(), local.read_bytes()
    # The resumed round from its tool call on, whatever of it the mirror got before the kill (often not the result).
    drop_from(run_dir, next(seq for seq, e in stored_rows(run_dir, workspace, sid) if seq > rows[-1][0] and e.get("type") == "assistant"))

    model.push(text("carried on"))
    ctx = await run_program("workflow", args(workspace, run_dir), env, workspace)
    assert ctx["_ok"] and ctx["_sessions"]["work"] == sid
    seen = model.last
    assert "second.txt" in json.dumps(seen.tool_uses()) and "second.txt" in json.dumps(seen.tool_results())
    assert INTERRUPTED_NOTE not in seen.text
    assert left.read_bytes() == before and local.read_bytes() == config_before


async def test_a_judge_round_the_mirror_never_got_lands_in_sessions_db_at_the_next_wake(model, env, workspace, run_dir):
    # chaos --seed 1: a killed judge round is never resumed (S14), so no resume reconciles it; nor a session killed
    # before flower learned its id, nor one never resumed after an interruption. The wake's sweep brings them in.
    (workspace / "需求.md").write_text(REQUIREMENTS, encoding="utf-8")  # frozen: straight to work (S17)
    (workspace / "目标.md").write_text(GOALS, encoding="utf-8")
    cli_env = {**{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}, **env, "LANG": "C.UTF-8"}

    async def wake() -> int:
        proc = await asyncio.create_subprocess_exec(
            str(FLOWER), "--rounds", "1", "-r", str(run_dir), cwd=workspace, env=cli_env,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
        return await asyncio.wait_for(proc.wait(), 90)

    model.push(text("half way"), text("VERDICT: FAIL not yet"))
    assert await wake() == 1
    judge = next(r.session_id for r in model.conversation if "You are the judge" in r.system)
    local = transcript_path(config_dir(env), project_key(workspace), judge)
    before = local.read_bytes()
    db = sqlite3.connect(run_dir / "sessions.db")  # as a kill before the mirror's first write leaves it
    try:
        with db:
            db.execute("DELETE FROM entries WHERE transcript IN (SELECT id FROM transcripts WHERE session_id = ?)", (judge,))
    finally:
        db.close()
    assert stored_rows(run_dir, workspace, judge) == []

    model.push(text("done"), text("VERDICT: PASS"))
    assert await wake() == 0
    assert [e for _, e in stored_rows(run_dir, workspace, judge)] == mirrored(local)  # every entry, in the file's order
    assert judge not in {r.session_id for r in model.conversation[2:]}  # still never resumed (S14)
    assert local.read_bytes() == before


async def test_a_session_interrupted_and_never_resumed_lands_in_sessions_db_at_the_next_wake(model, env, workspace, run_dir):
    # chaos --seed 1 lap 1: SIGINT while the goals step's last request was in flight, after its Write. The CLI writes
    # its `[Request interrupted by user]` entry as it exits, after the mirror's last flush; 目标.md exists, so the
    # goals session is never resumed and no resume reconciles it. The next wake's sweep brings the entry in.
    (workspace / "需求.md").write_text(REQUIREMENTS, encoding="utf-8")  # frozen: clarify is skipped (S17)
    cli_env = {**{k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}, **env, "LANG": "C.UTF-8"}
    slow = text("goals written")
    slow.delay = 3.0  # the kill comes while this request is in flight
    model.push(tool("Write", {"file_path": str(workspace / "目标.md"), "content": GOALS}), slow)
    proc = await asyncio.create_subprocess_exec(
        str(FLOWER), "--rounds", "1", "-r", str(run_dir), cwd=workspace, env=cli_env, start_new_session=True,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    try:
        await until(lambda: len(model.conversation) >= 2, timeout=60, what="the goals step's second request")
    finally:
        await kill_group(proc, signal.SIGINT)
    goals = model.conversation[0].session_id
    local = transcript_path(config_dir(env), project_key(workspace), goals)
    before = local.read_bytes()
    interrupted = [e for e in parse_jsonl(before) if "[Request interrupted by user]" in json.dumps(e.get("message"))]
    assert interrupted  # what the CLI does on SIGINT mid-request

    model.push(text("done"), text("VERDICT: PASS"))
    again = await asyncio.create_subprocess_exec(
        str(FLOWER), "--rounds", "1", "-r", str(run_dir), cwd=workspace, env=cli_env,
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    assert await asyncio.wait_for(again.wait(), 90) == 0
    assert goals not in {r.session_id for r in model.conversation[2:]}  # 目标.md exists: the goals step is not resumed
    stored, kept = [e for _, e in stored_rows(run_dir, workspace, goals)], mirrored(local)
    assert [e for e in stored if e in kept] == kept  # every entry, in the file's order
    # flower interrupts its CLI itself when cut off (issue #31, D5): the CLI may then end before its file gets the
    # cost-state line it already sent the mirror. The store holds more than the file then, never less.
    assert all(e["type"] == "cost-state" for e in stored if e not in kept)
    assert all("[Request interrupted" not in r.text for r in model.conversation)  # the filler never reached the model
    assert local.read_bytes() == before
