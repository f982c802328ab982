"""Chaos: the real `flower` command killed at seeded random moments loses nothing (issue 13; S1, S11, S23, S26).

The short run calls `benchmarks/chaos.py`'s own `chaos()`: one implementation, run long there.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from conftest import ROOT, until
from flower.runtime import Sessions, project_key
from flower.testing import text
from flower.workflow.flower import HANDOFF_MARK
from flowerscript import GOALS, REQUIREMENTS

sys.path.insert(0, str(ROOT / "benchmarks"))
from chaos import BIG, FLOWER, ChaosModel, _sigkilled, _status, chaos  # noqa: E402  (benchmarks/ is not a package)


@pytest.mark.timeout(300)
async def test_ten_seeded_kills_lose_no_session_no_turn_no_row(tmp_path: Path):
    figures = await chaos(10, seed=7, root=tmp_path, say_=print)
    print(figures.report())
    assert figures.kills == 10 and figures.survived == 10, figures.report()
    assert figures.laps_passed == figures.laps, figures.report()
    # turns_lost counts every entry of every CLI local transcript, killed judge rounds' included (the wake's sweep).
    assert (figures.sessions_lost, figures.turns_lost, figures.rows_lost, figures.unreadable) == (0, 0, 0, 0), figures.report()
    assert (figures.invalid_requests, figures.debris) == (0, 0), figures.report()
    assert figures.answers_lost == 0, figures.report()
    # Issue #31, at the model: kills of flower alone among them, and a sentence said at a wake killed in its re-derivation.
    assert figures.alone > 0 and figures.moments["rederive"] >= 1 and figures.sentences >= 1, figures.report()
    assert (figures.requests_after_kill, figures.model_turns_lost, figures.sentences_lost, figures.sentences_twice) == (0, 0, 0, 0), \
        figures.report()
    assert not figures.defects, figures.report()


@pytest.mark.timeout(300)
async def test_kills_at_the_models_edge_lose_no_answer(tmp_path: Path):
    # Killed the instant a request arrives, or within 200 ms after a tool ran: the CLI has often written nothing of
    # the last turn yet; the step's next request carries every answer the CLI acted on, as transcript or note (#22).
    figures = await chaos(6, seed=22, root=tmp_path, say_=print, kinds=("arrival", "tool"))
    print(figures.report())
    assert figures.kills == 6 and figures.survived == 6, figures.report()
    assert figures.answers > 0 and figures.answers_lost == 0, figures.report()
    assert (figures.sessions_lost, figures.turns_lost, figures.invalid_requests, figures.debris) == (0, 0, 0, 0), figures.report()
    assert (figures.requests_after_kill, figures.model_turns_lost) == (0, 0), figures.report()


@pytest.mark.timeout(300)
async def test_kills_inside_a_subagent_lose_none_of_its_answers(tmp_path: Path):
    # The work agent delegates to a foreground subagent (issue 32); kills land inside it, 0-500 ms after one of its
    # requests arrived: what it did reaches the work agent's next request (flower's note), nothing is done twice.
    figures = await chaos(4, seed=32, root=tmp_path, say_=print, kinds=("subagent", "tool"))
    print(figures.report())
    assert figures.kills == 4 and figures.survived == 4 and figures.moments["subagent"] >= 1, figures.report()
    assert figures.sidechain_answers_lost == 0 and figures.answers_lost == 0, figures.report()
    assert (figures.requests_after_kill, figures.model_turns_lost, figures.invalid_requests, figures.debris) == (0, 0, 0, 0), \
        figures.report()
    assert not figures.defects, figures.report()
    assert not figures.defects, figures.report()


STAND_IN = r"""
import subprocess, sys
client = subprocess.Popen([sys.executable, "-c", sys.argv[1], sys.argv[2]])  # no launcher: nothing ties it to us
print(client.pid, flush=True)
client.wait()
"""
CLIENT = r"""
import http.client, json, os, sys, time
body = json.dumps({"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]})
def ask():
    c = http.client.HTTPConnection("127.0.0.1", int(sys.argv[1]), timeout=30)
    c.request("POST", "/v1/messages", body, {"content-type": "application/json", "x-api-key": "k"})
    c.getresponse().read()
    return c
parent = os.getppid()
first = ask()
deadline = time.monotonic() + 60
while os.getppid() == parent and time.monotonic() < deadline:  # until its flower is dead
    time.sleep(0.01)
second = ask()
"""


async def test_a_request_sent_after_its_flower_died_is_counted_an_orphans(tmp_path: Path):
    # The harness's own check (issue #31): a process left running by a flower killed alone (here nothing ties it to its
    # flower, as before PR_SET_PDEATHSIG) asks the model again; that request, and only it, is an orphan's. The check
    # lets through a request of a CLI killed with its flower (in flight when it died): this one is alive, so it counts.
    async with ChaosModel(tmp_path, __import__("random").Random(1)) as model:
        flower = await asyncio.create_subprocess_exec(sys.executable, "-c", STAND_IN, CLIENT, str(model.port),
                                                      stdout=asyncio.subprocess.PIPE)
        model.flower = flower.pid
        client = int(await asyncio.wait_for(flower.stdout.readline(), 30))
        try:
            await model.wait_for_requests(1, timeout=30)
            assert model.orphans == []  # sent while its flower lived
            os.kill(flower.pid, signal.SIGKILL)  # the flower alone
            await asyncio.wait_for(flower.wait(), 30)
            await model.wait_for_requests(2, timeout=30)
            assert model.orphans == [1], model.why
            assert f"sender {client} " in model.why[1] and f"flower {flower.pid} " in model.why[1]
        finally:
            try:
                os.kill(client, signal.SIGKILL)
            except ProcessLookupError:
                pass


def test_only_a_pending_sigkill_makes_a_request_in_flight():
    # The SIGKILL bit (9: 1 << 8) of the main thread's or the group's pending signals; any other signal is not a kill.
    assert not _sigkilled(_status(os.getpid()))
    assert _sigkilled({"SigPnd": "0000000000000000", "ShdPnd": "0000000000000100"})
    assert _sigkilled({"SigPnd": "0000000000000100", "ShdPnd": "0000000000000000"})
    assert not _sigkilled({"SigPnd": "0000000000004000", "ShdPnd": "0000000000000003"})  # SIGTERM, SIGHUP, SIGINT
    assert not _sigkilled({})  # gone


def _env(env: dict[str, str]) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    return {**base, **env, "LANG": "C.UTF-8"}


def _lineage(run_dir: Path) -> dict:
    return json.loads((run_dir / "lineage.json").read_text())


async def test_a_kill_right_after_the_handoff_document_hands_off_again(model, env, workspace, run_dir):
    # The first round's reply crosses the handoff threshold; the judge fails it; round 2 hands off (S26).
    (workspace / "需求.md").write_text(REQUIREMENTS, encoding="utf-8")  # frozen: straight to work (S17)
    (workspace / "目标.md").write_text(GOALS, encoding="utf-8")
    model.push(text("phase 1 done", input_tokens=BIG), text("VERDICT: FAIL not yet"))
    proc = await asyncio.create_subprocess_exec(
        str(FLOWER), "-r", str(run_dir), cwd=workspace, env=_env(env), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, start_new_session=True)
    try:
        # The mark, not the note's file: that exists from its creation, before its text and the mark are written (a
        # kill in between resumes the old session, whose scripted handoff turn reported a small context).
        await until(lambda: (run_dir / HANDOFF_MARK).exists(), timeout=90, what="the handoff document, marked")
        old = model.conversation[0].session_id
    finally:
        os.killpg(proc.pid, signal.SIGKILL)  # before the new session's id arrives: the CLI is still starting
        await asyncio.wait_for(proc.wait(), 30)
    # S11: the file names the old session until the new one replaces it, so nothing starts without the document.
    assert _lineage(run_dir)["steps"].get("干活") == old

    model.push(text("phase 2 done"), text("VERDICT: PASS"))
    before = len(model.conversation)
    again = await asyncio.create_subprocess_exec(
        str(FLOWER), "-r", str(run_dir), cwd=workspace, env=_env(env), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True)
    out, err = await asyncio.wait_for(again.communicate(), 90)
    assert again.returncode == 0, err.decode()
    first = next(r for r in model.conversation[before:] if "careful coding agent" in r.system)
    assert first.session_id != old and "You take over this work from an earlier session" in first.text
    assert _lineage(run_dir)["steps"]["干活"] == first.session_id


async def test_a_session_only_the_clis_own_file_holds_is_resumed_not_started_over(model, env, workspace, run_dir):
    # chaos --seed 7: SIGHUP before the store mirror's first write left the goals session only in the CLI's
    # own transcript; S10 found it missing from sessions.db and the step started over in a fresh session.
    (workspace / "需求.md").write_text(REQUIREMENTS, encoding="utf-8")
    (workspace / "目标.md").write_text(GOALS, encoding="utf-8")
    model.push(text("half way"), text("VERDICT: FAIL not yet"))
    first = await asyncio.create_subprocess_exec(
        str(FLOWER), "--rounds", "1", "-r", str(run_dir), cwd=workspace, env=_env(env),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL)
    assert await asyncio.wait_for(first.wait(), 90) == 1
    sid = _lineage(run_dir)["steps"]["干活"]
    sessions = Sessions.open(run_dir)
    await sessions.raw.delete({"project_key": project_key(workspace), "session_id": sid})  # as if never mirrored
    await sessions.close()

    model.push(text("done"), text("VERDICT: PASS"))
    before = len(model.conversation)
    again = await asyncio.create_subprocess_exec(
        str(FLOWER), "-r", str(run_dir), cwd=workspace, env=_env(env), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(again.communicate(), 90)
    assert again.returncode == 0, err.decode()
    resumed = next(r for r in model.conversation[before:] if "careful coding agent" in r.system)
    assert resumed.session_id == sid and "half way" in resumed.text
