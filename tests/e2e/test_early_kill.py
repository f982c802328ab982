"""The early-kill race, made deterministic: killed the moment the second model request of a run arrives (issue #22).

The model answered once with a tool call and the tool ran; the CLI (2.1.332) has written no transcript yet and the
store mirror nothing. flower's journal saw the call and its result as they streamed by, so the next wake's first
request to that step carries them (as the transcript, or as the note before the prompt): the model knows what it did.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from test_cli import TASK, flower, lineage, seed_frozen, start

from flower import Runtime
from flower.core.journal import NOTE_END, WHY_LOST, WHY_SHORT
from flower.runtime import Sessions, project_key
from flower.testing import Reply, say, text, tool
from flower.workflow.flower import CLARIFY_PROMPT, WORK_PROMPT, WORK_RESUME
from flowerscript import REQUIREMENTS, first_run, goals, judge, work

DRAFT = "# draft\n\nOnly the person's words so far; asked nothing yet.\n"


def cli_transcripts(config: Path, sid: str) -> list[Path]:
    """The CLI's own transcript files of a session under CLAUDE_CONFIG_DIR."""
    return list((config / "projects").glob(f"*/{sid}.jsonl")) if (config / "projects").exists() else []


def leave_as_the_race_does(config: Path, run_dir: Path) -> None:
    """The state the race leaves, made certain: no CLI transcript file, a sessions.db with no tables yet.

    Whether this machine's kill lands before the CLI's first transcript write is timing; what the race leaves is a
    fact seen from outside (CLI 2.1.332), so it is set up here exactly, after a real kill at the same moment.
    """
    for path in (config / "projects").glob("*/*.jsonl"):
        path.unlink()
    for name in ("sessions.db", "sessions.db-wal", "sessions.db-shm"):
        (run_dir / name).unlink(missing_ok=True)


@pytest.mark.parametrize("race", [False, True], ids=["as-killed", "race-state"])
@pytest.mark.parametrize("step", ["clarify", "work"])
async def test_killed_as_the_second_request_arrives_the_next_request_carries_the_first_answer(
        model, env, workspace, run_dir, step, race):
    if step == "work":
        seed_frozen(workspace)
        target, content, args, prompt, key = workspace / "calc.py", "print(1 + 2)\n", (), WORK_PROMPT, "干活"
    else:
        target, content, args, prompt, key = workspace / "draft.md", DRAFT, (TASK,), CLARIFY_PROMPT.split("\n")[0], "澄清"
    first = tool("Write", {"file_path": str(target), "content": content})
    model.push(first, Reply(blocks=[say("never sent")], hold=True))
    proc = await start(*args, "-r", str(run_dir), env=env, cwd=workspace)
    try:
        await model.wait_for_requests(2, timeout=90)  # the Write ran: its result is in the second request
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # at once: the moment the second request arrives
        await asyncio.wait_for(proc.wait(), 30)
    model.release()
    sid = lineage(run_dir)["steps"][key]
    assert target.read_text() == content  # the tool's effect is on disk
    call = first.blocks[0]
    answered = model.conversation[1].tool_results()[0]
    assert answered["tool_use_id"] == call["id"]
    config = Path(env["CLAUDE_CONFIG_DIR"])
    if race:
        leave_as_the_race_does(config, run_dir)
    stored = Runtime(workspace, run_dir).has_session(sid) or bool(cli_transcripts(config, sid))
    assert not (race and stored)

    before = len(model.conversation)
    if step == "work":
        model.push(text("calc.py is already written"), *judge())
    else:
        model.push(tool("Write", {"file_path": str(workspace / "需求.md"), "content": REQUIREMENTS}),
                   text("requirements written"), text("goals skipped"))
    done = await flower("-r", str(run_dir), env=env, cwd=workspace, timeout=120)
    assert "Traceback" not in done.err + done.out
    woken = model.conversation[before]
    if stored:  # the CLI or the mirror got there first: the transcript carries it
        assert woken.session_id == sid and call["id"] in [u["id"] for u in woken.tool_uses()]
        return
    # The race as seen from outside: neither the store nor (so) the sweep had the session; a new one starts.
    assert woken.session_id != sid
    assert prompt in woken.text
    told = woken.text
    assert WHY_LOST in told and NOTE_END in told
    assert f"You called Write with {json.dumps(call['input'], ensure_ascii=False)}" in told
    result_head = answered["content"] if isinstance(answered["content"], str) else answered["content"][0]["text"]
    assert json.dumps(result_head, ensure_ascii=False)[1:40] in told  # the head of its result, as the CLI gave it
    assert lineage(run_dir)["steps"][key] == woken.session_id  # the new session replaced the lost one (S11)


async def test_a_wake_after_nothing_was_lost_tells_the_model_nothing_more(model, env, workspace, run_dir):
    # The journal and the store agree after a run that ended (or a kill after everything was written): no note.
    model.push(*first_run(workspace))
    assert (await flower(TASK, "-r", str(run_dir), env=env, cwd=workspace)).code == 0
    before = len(model.conversation)
    model.push(*goals(workspace), *work(workspace), *judge())
    done = await flower("also subtract", "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    woken = model.conversation[before:]
    assert woken[0].session_id == lineage(run_dir)["steps"]["目标"]  # resumed sessions, compared with their journals
    assert not any(NOTE_END in r.text or "[flower: " in r.text for r in model.conversation), [r.last_user_text for r in woken]


async def test_a_resumed_session_that_ends_before_the_journal_resumes_with_the_missing_turn_told(
        model, env, workspace, run_dir, tmp_path):
    # Wake 2 resumes the work session; killed as its second request arrives, in the race state its stored transcript
    # ends where wake 1 left it: the journal saw the Write of wake 2 and its result, the store did not.
    seed_frozen(workspace)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**env, "TMPDIR": str(tmp)}  # the SDK's resume copies go here: the race leaves none behind either
    model.push(*work(workspace), *judge())
    assert (await flower("-r", str(run_dir), env=env, cwd=workspace)).code == 0
    sid = lineage(run_dir)["steps"]["干活"]
    sessions = Sessions.open(run_dir)
    key = {"project_key": project_key(workspace), "session_id": sid}
    kept = await sessions.raw.load(key)
    assert kept

    second = tool("Write", {"file_path": str(workspace / "sub.py"), "content": "print(3 - 1)\n"})
    model.push(second, Reply(blocks=[say("never sent")], hold=True))
    before = len(model.conversation)
    proc = await start("-r", str(run_dir), env=env, cwd=workspace)
    try:
        await model.wait_for_requests(before + 2, timeout=90)
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        await asyncio.wait_for(proc.wait(), 30)
    model.release()
    assert model.conversation[before].session_id == sid  # it was a resume
    # The race state: the store ends where wake 1 left it; no CLI file, no resume copy holds wake 2.
    await sessions.raw.delete(key)
    await sessions.raw.append(key, kept)
    await sessions.close()
    for path in [*(Path(env["CLAUDE_CONFIG_DIR"]) / "projects").glob(f"*/{sid}.jsonl"), *tmp.glob("claude-resume-*")]:
        shutil.rmtree(path) if path.is_dir() else path.unlink()

    at = len(model.conversation)
    model.push(text("sub.py is already there"), *judge())
    done = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    woken = model.conversation[at]
    assert woken.session_id == sid  # resumed, with wake 1 in its transcript ...
    assert second.blocks[0]["id"] not in [u["id"] for u in woken.tool_uses()]
    told = woken.last_user_text  # ... and wake 2's turn told before the prompt
    assert WHY_SHORT in told and NOTE_END in told and told.endswith(WORK_RESUME)
    assert f"You called Write with {json.dumps(second.blocks[0]['input'], ensure_ascii=False)}" in told
    assert "It returned: \"File created successfully" in told
