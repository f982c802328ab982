"""The flower path through the real CLI: clarify → goals → work under a fresh-eyes judge (S14–S19, S26–S28)."""

from __future__ import annotations

import asyncio
import json
import os
import sys

import pytest

import flowerscript as fs
from conftest import PROGRAMS, descriptors, kill_group, run_program, start_program, until
from flower import CLARIFY_RESUME, FlowerService, Runtime, wake_state
from flower.core.banner import banner, header
from flower.core.caller import Caller
from flower.core.manifest import Manifest, StepResult
from flower.service import Config
from flower.status import WINDOW, to_json
from flower.testing import Reply, say, text

TASK = "build a calculator"
JUDGING = "Judge the work in this workspace now."
DERIVING = "Write `目标.md`: a Markdown checklist"


def judge_requests(model):
    return [r for r in model.conversation if r.last_user_text.endswith(JUDGING)]


def goal_requests(model):
    return [r for r in model.conversation if DERIVING in r.last_user_text]


async def wake(workspace, env, text=None, **kw):
    service = FlowerService(workspace, config=Config(**kw))
    events = []
    service.subscribe(events.append)
    result = await service.wake(text, Caller(env=env))
    return result, events, service


async def test_full_first_run_writes_requirements_goals_and_passes_the_judge(model, env, workspace):
    model.push(*fs.first_run(workspace))
    result, events, service = await wake(workspace, env, TASK)
    assert result.ok and result.verdict.passed and result.woke == 1
    assert service.status().window == 1_000_000  # as CLI 2.1.332 reports its default model's window
    sections = (workspace / "需求.md").read_text()
    assert all(f"## {name}" in sections for name in ("目标 Goal", "范围 Scope", "约束 Constraints", "验收 Acceptance"))
    assert "- [ ] calc.py adds" in (workspace / "目标.md").read_text()
    assert (workspace / "calc.py").exists()
    assert [r["step"] for r in Manifest(workspace / "runs").rows()] == ["澄清", "目标", "干活", "干活·判定#1"]
    assert TASK in model.conversation[0].last_user_text
    assert not [e for e in events if e.kind == "banner"]  # a first run has nothing to resume


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="descriptors are read from Linux's /proc")
async def test_a_wake_leaves_the_service_holding_no_descriptor_of_sessions_db(model, env, workspace):
    """Issue 35: a long-lived service (the engine's) held the store's write connection between wakes, and with it
    every read connection SQLite kept open meanwhile; a wake ends with none, as it began."""
    db = workspace / "runs" / "sessions.db"
    model.push(*fs.first_run(workspace))
    service = FlowerService(workspace)
    assert descriptors(db) == []
    seen = []
    service.subscribe(lambda event: seen.append(descriptors(db)))  # while it runs: reads and writes hold some
    result = await service.wake(TASK, Caller(env=env))
    assert result.ok and any(seen)
    assert descriptors(db) == []
    service.status()
    assert descriptors(db) == []
    await service.close()


async def test_clarify_questions_reach_the_person_and_answers_return_to_the_same_session(model, env, workspace):
    model.push(text("Which language should it use?"), *fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace), *fs.judge())
    service = FlowerService(workspace)
    asked = []

    async def ask(question):
        asked.append(question)
        return "Python, please"

    result = await service.wake(TASK, Caller(env=env, ask=ask))
    assert result.ok and asked == ["Which language should it use?"]
    answer = model.conversation[1]
    assert answer.last_user_text.endswith("Python, please")
    assert answer.session_id == model.conversation[0].session_id


async def test_kill_during_clarify_resumes_it_with_CLARIFY_RESUME(model, env, workspace):
    sid = await kill_during_clarify(model, env, workspace)
    model.push(*fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace), *fs.judge())
    result = await run_program("service", {"workspace": str(workspace)}, env, workspace)
    assert result["ok"] and result["woke"] == 2 and result["sessions"]["澄清"] == sid
    resumed = model.conversation[1]
    assert resumed.session_id == sid
    assert resumed.last_user_text.endswith(CLARIFY_RESUME)
    assert resumed.text.count(TASK) == 1  # the brief is history, not re-sent as a new task
    assert "wake #2" in result["banners"][0]


async def kill_during_clarify(model, env, workspace) -> str:
    """Start a wake whose clarify reply never comes, kill it once its session is on disk; return the session id."""
    model.push(Reply(blocks=[say("Let me think about")], hold=True))
    proc = await start_program("service", {"workspace": str(workspace), "text": TASK}, env, workspace)
    runs = workspace / "runs"
    try:
        await model.wait_for_requests(1, timeout=30)
        assert TASK in (workspace / "需求.md").read_text()  # the request is on disk before any answer
        await until(lambda: (runs / "lineage.json").exists() and "澄清" in json.loads((runs / "lineage.json").read_text())["steps"])
        sid = json.loads((runs / "lineage.json").read_text())["steps"]["澄清"]
        await until(lambda: Runtime(workspace, runs).has_session(sid), what="clarify session stored")
    finally:
        await kill_group(proc)
    return sid


async def test_a_sentence_said_during_unfinished_clarify_reaches_the_clarify_session(model, env, workspace):
    sid = await kill_during_clarify(model, env, workspace)
    model.push(*fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace), *fs.judge())
    result = await run_program("service", {"workspace": str(workspace), "text": "use Rust"}, env, workspace)
    assert result["ok"]
    resumed = model.conversation[1]
    assert resumed.session_id == sid and CLARIFY_RESUME in resumed.last_user_text and "use Rust" in resumed.last_user_text


async def test_a_request_whose_session_never_reached_disk_is_not_lost(model, env, workspace):
    await kill_during_clarify(model, env, workspace)
    (workspace / "runs" / "lineage.json").unlink()  # as if the kill came before the session id was written
    model.push(*fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace), *fs.judge())
    result = await run_program("service", {"workspace": str(workspace)}, env, workspace)  # no text: just continue
    assert result["ok"]
    restarted = model.conversation[1]
    assert restarted.session_id != model.conversation[0].session_id and TASK in restarted.last_user_text


async def test_wake_sentence_lands_in_three_places(model, env, workspace):
    model.push(*fs.first_run(workspace))
    first, _, _ = await wake(workspace, env, TASK)
    new_goals = fs.GOALS + "- [ ] calc.py multiplies\n"
    model.push(*fs.goals(workspace, new_goals), *fs.work(workspace), *fs.judge())
    sentence = "also support multiplication"
    result, events, _ = await wake(workspace, env, sentence)
    assert result.ok
    assert sentence in (workspace / "需求.md").read_text()  # place 2: the requirements record
    assert len(goal_requests(model)) == 2 and "multiplies" in (workspace / "目标.md").read_text()  # place 3
    work = [r for r in model.conversation if sentence in r.last_user_text and r.session_id == first.sessions["干活"]]
    assert work, "place 1: the work session receives the sentence as its next message"
    assert "calc.py multiplies" in judge_requests(model)[-1].last_user_text  # the judge reads the new list
    assert [e.text for e in events if e.kind == "banner"][0].endswith("wake #2")


async def test_empty_wake_costs_no_goal_request_and_continues_the_work_session(model, env, workspace):
    model.push(*fs.first_run(workspace))
    first, _, _ = await wake(workspace, env, TASK)
    before = len(model.conversation)
    model.push(*fs.work(workspace), *fs.judge())
    result, _, _ = await wake(workspace, env)
    assert result.ok and len(goal_requests(model)) == 1
    resumed = model.conversation[before]
    assert resumed.session_id == first.sessions["干活"] and "Continue the work" in resumed.last_user_text
    assert len(model.conversation) - before == 3  # two work turns and the judge, nothing else


async def test_S14_judge_is_fresh_every_round_and_every_wake_and_never_in_the_lineage(model, env, workspace):
    model.push(*fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace), *fs.judge(False, "subtraction is missing"),
               *fs.work(workspace), *fs.judge())
    await wake(workspace, env, TASK)
    model.push(*fs.work(workspace), *fs.judge())
    await wake(workspace, env)
    judged = judge_requests(model)
    assert len(judged) == 3
    sessions = {r.session_id for r in judged}
    assert len(sessions) == 3  # a new session every round and every wake
    for request in judged:
        assert [m["role"] for m in request.messages if m["role"] != "system"] == ["user"]  # no earlier history
        assert "calc.py written" not in request.text
    lineage = json.loads((workspace / "runs" / "lineage.json").read_text())
    assert not sessions & set(lineage["steps"].values())
    retry = [r for r in model.conversation if "did not pass it" in r.last_user_text]
    assert retry and "subtraction is missing" in retry[0].last_user_text
    assert "干活#round2" in [r["step"] for r in Manifest(workspace / "runs").rows()]


async def test_S17_frozen_requirements_and_goals_skip_clarify_and_goals(model, env, workspace):
    (workspace / "需求.md").write_text(fs.REQUIREMENTS)
    (workspace / "目标.md").write_text(fs.GOALS)
    model.push(*fs.work(workspace), *fs.judge())
    result, _, _ = await wake(workspace, env)
    assert result.ok and set(result.sessions) == {"干活"}
    assert "Do the work described in" in model.conversation[0].last_user_text
    assert not goal_requests(model) and len(model.conversation) == 3


async def test_S19_banner_and_header_in_both_languages(model, env, workspace):
    ws = "/home/someone/explore/test-ide"
    assert banner("zh", ws, 15, 80_200, 3) == "<- 在 /home/someone/explore/test-ide 接上上次  需求已确认 · 目标 15 条 · 干活上下文 80.2K · 第 3 次唤醒"
    assert banner("zh-CN", ws, 0, None, 2) == "<- 在 /home/someone/explore/test-ide 接上上次  需求已确认 · 第 2 次唤醒"
    assert banner("en", ws, 15, 80_200, 3) == "<- resumed in /home/someone/explore/test-ide · requirements confirmed · 15 goals · work context 80.2K · wake #3"
    assert banner("en", ws, 0, None, 2) == "<- resumed in /home/someone/explore/test-ide · requirements confirmed · wake #2"
    assert header("zh", "干活", 3, 3, 3, True) == "== 干活 ==============================  3/3  <- 接上次 · 第 3 次唤醒"
    assert header("en", "干活", 3, 3, 3, True) == "== work ==============================  3/3  <- resumed · wake #3"
    assert header("en", "目标", 2, 3, 1, False) == "== goals ==============================  2/3"
    model.push(*fs.first_run(workspace))
    await wake(workspace, env, TASK)
    model.push(*fs.work(workspace, input_tokens=80_000, cache_read=200), *fs.judge())
    _, events, _ = await wake(workspace, env, locale="zh")
    assert [e.context for e in events if e.kind == "banner"] == [100]  # read back from sessions.db at wake
    lines = [e.text for e in events if e.kind in ("banner", "header")]
    assert lines[0] == f"<- 在 {workspace} 接上上次  需求已确认 · 目标 2 条 · 干活上下文 0.1K · 第 2 次唤醒"
    assert lines[1] == "== 干活 ==============================  3/3  <- 接上次 · 第 2 次唤醒"


async def test_handoff_moves_work_to_a_new_session_seeded_with_the_document(model, env, workspace):
    model.push(*fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace, input_tokens=5000),
               *fs.judge(False, "not yet"), *fs.handoff_note(), *fs.work(workspace), *fs.judge())
    result, events, _ = await wake(workspace, env, TASK, handoff_at=1000)
    assert result.ok
    rows = {r["step"]: r for r in Manifest(workspace / "runs").rows()}
    old, new = rows["干活"]["session_id"], rows["干活#round2"]["session_id"]
    assert old != new and rows["干活#round2"]["retired"] == [old]
    assert result.sessions["干活"] == new
    documents = list((workspace / "notes").glob("handoff-*.md"))
    assert len(documents) == 1 and "NOTE-MARK" in documents[0].read_text()  # the old session's own note (issue #16)
    first_of_new = next(r for r in model.conversation if r.session_id == new)
    assert "# Handoff" in first_of_new.last_user_text and "NOTE-MARK" in first_of_new.last_user_text
    assert [e for e in events if e.kind == "handoff"][0].new_session == new


async def test_new_archives_and_starts_the_new_task(model, env, workspace):
    model.push(*fs.first_run(workspace))
    first, _, service = await wake(workspace, env, TASK)
    model.push(*fs.first_run(workspace))
    result = await service.new("write the docs instead", Caller(env=env))
    assert result.ok and result.woke == 1
    archived = list((workspace / "notes" / "archive").iterdir())
    assert len(archived) == 1
    assert {p.name for p in archived[0].iterdir()} == {"lineage.json", "需求.md", "目标.md"}
    assert (workspace / "runs" / "sessions.db").exists()
    assert set(result.sessions.values()).isdisjoint(first.sessions.values())
    assert "write the docs instead" in model.conversation[-7].last_user_text


async def test_S27_rounds_cap_work_rounds_and_reset_at_every_wake(model, env, workspace):
    model.push(*fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace), *fs.judge(False, "half done"))
    first, _, _ = await wake(workspace, env, TASK, rounds=1)
    assert not first.ok and "1 round" in first.error and "half done" in first.error
    model.push(*fs.work(workspace), *fs.judge())
    second, _, _ = await wake(workspace, env, rounds=1)  # a new wake is a new intent: one more round
    assert second.ok
    steps = [r["step"] for r in Manifest(workspace / "runs").rows()]
    assert steps[-4:] == ["干活", "干活·判定#1", "干活", "干活·判定#1"]


async def test_a_subscriber_raising_on_every_event_never_changes_the_wake(model, env, workspace, caplog):
    """The service contains a front-end's bug the way the Runtime does: logged, the wake goes on unchanged."""
    model.push(*fs.first_run(workspace))
    service = FlowerService(workspace)
    seen = []

    def broken(event) -> None:
        seen.append(event)
        raise RuntimeError("front-end bug")

    service.subscribe(broken)
    result = await service.wake(TASK, Caller(env=env))
    assert result.ok and result.verdict.passed and result.woke == 1
    rows = Manifest(workspace / "runs").rows()
    assert [r["step"] for r in rows] == ["澄清", "目标", "干活", "干活·判定#1"] and all(r["attempts"] == 1 for r in rows)
    assert len(model.conversation) == 7  # 2 + 2 + 2 + 1: nothing retried
    assert service.status().steps == result.sessions
    failed = [r for r in caplog.records if r.name == "flower" and "listener failed" in r.getMessage()]
    assert seen and len(failed) == len(seen)


async def test_status_and_wake_state_come_from_one_status(model, env, workspace):
    """`flower status --json` keys, the editor's gauge (context, window, handoff_at) and S3's wake_state agree."""
    model.push(*fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace, input_tokens=4321), *fs.judge())
    result, _, live = await wake(workspace, env, TASK, handoff_at=50_000)
    fresh = FlowerService(workspace, config=Config(handoff_at=50_000))  # a new process: nothing in memory yet
    st = fresh.status()
    assert st.context == 4321 == live.status().context  # read back from sessions.db before any wake
    # The window the CLI reported is recorded in the manifest, so a new process's gauge does not fall back to 200K.
    assert st.window == live.status().window == Manifest(workspace / "runs").rows()[-1]["window"]
    data = to_json(st)
    assert list(data) == ["workspace", "run_dir", "woke", "started", "steps", "goals", "context", "window",
                          "running", "step", "waiting", "waiting_for", "verdict", "handoff_at", "interrupted", "elsewhere", "model",
                          "cost", "settings", "unreachable", "store_bytes", "background", "forecast"]  # forecast: issue 34
    assert data["handoff_at"] == 50_000 and data["steps"] == result.sessions and data["started"] is True
    assert data["goals"] == [{"text": "calc.py adds", "done": False}, {"text": "calc.py subtracts", "done": False}]
    assert to_json(live.status())["verdict"] == {"round": 1, "passed": True, "reasons": result.verdict.reasons}
    state = wake_state(workspace, workspace / "runs")
    assert (state["waking"], state["checks"], state["woke"], state["steps"]) == (True, 2, st.woke, st.steps)
    assert to_json(result) == {"ok": True, "error": None, "woke": 1, "sessions": result.sessions,
                               "verdict": {"passed": True, "rounds": 1, "reasons": result.verdict.reasons}}


async def test_S14_the_judge_stays_out_of_the_lineage_under_python_O(model, env, workspace):
    """The lineage hook is an argument of the work run, not an `assert`-guarded attribute: -O changes nothing (S11)."""
    model.push(*fs.first_run(workspace))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-O", str(PROGRAMS / "service.py"), json.dumps({"workspace": str(workspace), "text": TASK}),
        cwd=workspace, env={**os.environ, **env}, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 120)
    assert proc.returncode == 0, err.decode()[-3000:]
    result = json.loads(out.decode().strip().splitlines()[-1])
    assert result["ok"] and result["debug"] is False  # really ran with asserts stripped
    rows = {r["step"]: r["session_id"] for r in Manifest(workspace / "runs").rows()}
    lineage = json.loads((workspace / "runs" / "lineage.json").read_text())
    assert lineage["steps"]["干活"] == rows["干活"] != rows["干活·判定#1"]
    assert rows["干活·判定#1"] not in lineage["steps"].values()


def test_status_window_comes_from_the_manifest_before_any_wake(workspace):
    """A fresh process shows the context window the CLI last reported (manifest), not the assumed one."""
    runs = workspace / "runs"
    assert FlowerService(workspace).status().window == WINDOW  # nothing recorded: assumed
    Manifest(runs).add(StepResult(step="干活", ok=True, window=1_000_000, ended_at=2.0))
    Manifest(runs).add(StepResult(step="澄清", ok=True, window=None, ended_at=3.0))  # newer, but reported none
    assert FlowerService(workspace).status().window == 1_000_000


def test_status_with_an_unreadable_sessions_db_shows_no_gauge_and_does_not_fail(workspace, caplog):
    """The gauge is a bonus (S12): a sessions.db that is not a database leaves `context` unknown, logged."""
    runs = workspace / "runs"
    runs.mkdir()
    (runs / "lineage.json").write_text(json.dumps({"workspace": str(workspace), "woke": 1, "steps": {"干活": "s-1"}}))
    (runs / "sessions.db").write_bytes(b"not a database at all" * 100)
    st = FlowerService(workspace).status()
    assert st.steps == {"干活": "s-1"} and st.context is None and st.started
    assert any("cannot read the context size" in r.getMessage() for r in caplog.records)
    assert (runs / "sessions.db").read_bytes() == b"not a database at all" * 100  # kept as it was
