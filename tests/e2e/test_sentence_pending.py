"""A sentence said at wake is durable until all three places have it (S15; issue 31, item 3).

`flower "also X"` in a used folder, cut off in the goals re-derivation (kill -9 of the flower process alone, or Ctrl-C
during an outage there): the next `flower`, with no text, re-derives the goals with it and gives it to the work
session, once. Cut off after the work session got it: it is not sent again. The witness is the scripted model.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import psutil
from test_cli import first_run_done, flower, lineage, start

from flower.core.records import SENTENCES_FILE
from flower.runtime import AgentSpec
from flower.testing import Reply, overloaded, say
from flower.workflow.flower import GOAL_SETTER, WAKE_SENTENCE, WORK_RESUME, WORKER
from flower.workflow.goal import JUDGE
from flowerscript import GOALS, goals, judge, work

MORE = "also handle division by zero"
LINE = WAKE_SENTENCE.format(sentence=MORE)
MORE_GOALS = GOALS + "- [ ] calc.py divides, refusing division by zero\n"


async def kill_flower_alone(proc: asyncio.subprocess.Process) -> list[psutil.Process]:
    """kill -9 the flower process only, as a crashed terminal or the OOM killer does; returns its children then alive.

    Its CLI may outlive it (issue 31, item 1, is built elsewhere): the test ends those itself at the end, by the
    process objects taken here (psutil checks pid + start time), so nothing leaks.
    """
    children = psutil.Process(proc.pid).children(recursive=True)
    os.kill(proc.pid, signal.SIGKILL)
    await asyncio.wait_for(proc.wait(), 30)
    return children


def end(children: list[psutil.Process]) -> None:
    for child in children:
        try:
            child.kill()
        except psutil.NoSuchProcess:
            pass


def by(agent: AgentSpec, replies: list[Reply]) -> list[Reply]:
    """`replies` for `agent`'s requests only (told apart by the start of its instructions in the system prompt)."""
    for r in replies:
        r.match = lambda body, marker=agent.instructions[:40]: marker in json.dumps(body.get("system", ""), ensure_ascii=False)
    return replies


def pending(run_dir: Path) -> bool:
    return (run_dir / SENTENCES_FILE).exists()


async def woken_with_no_text(model, env, workspace: Path, run_dir: Path, goals_sid: str, work_sid: str) -> None:
    """`flower` with no text, answered as a re-derivation, one work round and the judge: the sentence reaches all three places."""
    at = len(model.conversation)
    model.push(*goals(workspace, MORE_GOALS), *work(workspace), *judge())
    done = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert "Traceback" not in done.err + done.out
    woken = model.conversation[at:]
    # S15 place 3: the goals were re-derived with the sentence, and 目标.md changed.
    assert any(r.session_id == goals_sid and MORE in r.last_user_text for r in woken), "no goals re-derivation"
    assert (workspace / "目标.md").read_text(encoding="utf-8") == MORE_GOALS
    # Place 1: the work session received it, exactly once in all it was sent.
    at_work = [r for r in woken if r.session_id == work_sid]
    assert at_work and LINE in at_work[0].last_user_text
    assert at_work[-1].text.count(LINE) == 1
    # Place 2: recorded with the requirements, once.
    assert (workspace / "需求.md").read_text(encoding="utf-8").count(MORE) == 1
    assert done.code == 0, done.err
    assert not pending(run_dir)


async def test_killed_in_the_goals_rederivation_the_next_wake_lands_the_sentence_in_all_three_places(
        model, env, workspace, run_dir):
    work_sid = await first_run_done(model, env, workspace, run_dir)
    goals_sid = lineage(run_dir)["steps"]["目标"]
    before = len(model.conversation)
    model.push(Reply(blocks=[say("never sent")], hold=True))
    proc = await start(MORE, "-r", str(run_dir), env=env, cwd=workspace)
    children: list[psutil.Process] = []
    try:
        held = await model.wait_for_requests(before + 1, timeout=90)
        assert held.session_id == goals_sid and MORE in held.last_user_text  # the re-derivation, held
        children = await kill_flower_alone(proc)
        assert pending(run_dir)
        await woken_with_no_text(model, env, workspace, run_dir, goals_sid, work_sid)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        end(children)


async def test_killed_after_the_work_session_got_the_sentence_it_is_not_sent_again(model, env, workspace, run_dir):
    work_sid = await first_run_done(model, env, workspace, run_dir)
    goals_sid = lineage(run_dir)["steps"]["目标"]
    before = len(model.conversation)
    model.push(*goals(workspace, MORE_GOALS), Reply(blocks=[say("never sent")], hold=True))
    proc = await start(MORE, "-r", str(run_dir), env=env, cwd=workspace)
    children: list[psutil.Process] = []
    try:
        held = await model.wait_for_requests(before + 3, timeout=90)  # the goal setter's two, then work
        assert held.session_id == work_sid and LINE in held.last_user_text
        children = await kill_flower_alone(proc)
        at = len(model.conversation)
        model.push(*work(workspace), *judge())
        done = await flower("-r", str(run_dir), env=env, cwd=workspace)
        assert done.code == 0, done.err
        woken = model.conversation[at:]
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
        end(children)
    assert not any(r.session_id == goals_sid for r in woken)  # the goals have it already: no re-derivation
    at_work = [r for r in woken if r.session_id == work_sid]
    assert at_work and at_work[0].last_user_text.endswith(WORK_RESUME)
    assert all(r.text.count(LINE) == 1 for r in at_work), [r.text.count(LINE) for r in at_work]  # never twice
    assert (workspace / "需求.md").read_text(encoding="utf-8").count(MORE) == 1
    assert not pending(run_dir)


async def test_ctrl_c_during_an_outage_in_the_goals_rederivation_leaves_the_sentence_for_the_next_wake(
        model, env, workspace, run_dir):
    work_sid = await first_run_done(model, env, workspace, run_dir)
    goals_sid = lineage(run_dir)["steps"]["目标"]
    model.push(overloaded())  # the re-derivation's request is refused; flower waits to retry
    proc = await start(MORE, "-r", str(run_dir), env=env, cwd=workspace)
    shown = b""
    try:
        while b"retrying in" not in shown:
            line = await asyncio.wait_for(proc.stdout.readline(), 90)
            assert line, f"flower ended before waiting: {shown.decode()}"
            shown += line
        proc.send_signal(signal.SIGINT)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 130, err.decode()
    assert model.pending == 0 and pending(run_dir)
    await woken_with_no_text(model, env, workspace, run_dir, goals_sid, work_sid)


async def test_a_sentence_said_as_a_wake_starts_keeps_the_ones_an_earlier_wake_left_pending(model, env, workspace, run_dir):
    """`say` the moment a wake starts, before it has read what a cut-off wake left pending: it waits for that read,
    so it is added to those sentences, not saved over them (issue 31: nothing said is lost; issue 34: `say` from a
    terminal attached as a wake begins)."""
    from flower import FlowerService
    from flower.core.caller import Caller

    work_sid = await first_run_done(model, env, workspace, run_dir)
    earlier = {"id": "a1b2c3d4e5f6", "text": MORE, "said_at": 1.0, "requirements": False, "goals": False, "work": False,
               "session": work_sid, "offset": 0}  # as core/sentences.py records a sentence no place has yet
    (run_dir / SENTENCES_FILE).write_text(json.dumps([earlier]), encoding="utf-8")
    later = "also print the result in green"
    at = len(model.conversation)
    # Whether `later` lands before the goal setter is asked or only at the work round's `pending` (a second
    # re-derivation) depends on the loop's timing; either is right, so each agent gets its own replies, enough for both.
    model.push(*by(GOAL_SETTER, goals(workspace, MORE_GOALS) + goals(workspace, MORE_GOALS)), *by(WORKER, work(workspace)), *by(JUDGE, judge()))
    service = FlowerService(workspace, run_dir)
    woke = asyncio.create_task(service.wake(None, Caller(env=env)))
    try:
        assert await asyncio.wait_for(service.say(later), 60) is None  # heard by the running wake, not a wake of its own
        result = await asyncio.wait_for(woke, 120)
    finally:
        await service.close()
    assert result.ok, result.error
    at_work = [r for r in model.conversation[at:] if r.session_id == work_sid]
    both = [LINE, WAKE_SENTENCE.format(sentence=later)]
    assert at_work and all(line in at_work[0].last_user_text for line in both)  # the first work round got both
    assert all(r.text.count(line) == 1 for r in at_work for line in both)  # once each, never again
    assert later in (workspace / "目标.md").read_text(encoding="utf-8") or any(  # the goals re-derived with it (S15)
        later in r.last_user_text for r in model.conversation[at:] if GOAL_SETTER.instructions in r.system)
    brief = (workspace / "需求.md").read_text(encoding="utf-8")
    assert brief.count(MORE) == 1 and brief.count(later) == 1
    assert not pending(run_dir)
