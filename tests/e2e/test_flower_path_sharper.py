"""The flower path, sharper (issue #16): a wake sentence reaches the goal setter with the brief (S15, S18), and the
handoff carries the outgoing session's own note (S26), through the real CLI."""

from __future__ import annotations

import asyncio
import json

import flowerscript as fs
from flower import FlowerService, Runtime
from flower.core.caller import Caller
from flower.core.manifest import Manifest, parse_name
from flower.core.resilience import Resilience
from flower.service import Config
from flower.testing import server_error
from flower.workflow.base import step_of
from flower.workflow.flower import HANDOFF_ASK, HANDOFF_MARK, FlowerPath

DERIVING = "Write `目标.md`: a Markdown checklist"
ASKED = "Answer with the note alone"


def goal_requests(model):
    return [r for r in model.conversation if DERIVING in r.last_user_text]


def note_requests(model):
    return [r for r in model.conversation if ASKED in r.last_user_text]


async def wake(workspace, env, text=None, **kw):
    service = FlowerService(workspace, config=Config(**kw))
    events = []
    service.subscribe(events.append)
    result = await asyncio.wait_for(service.wake(text, Caller(env=env)), 120)
    return result, events


async def test_a_wake_sentence_reaches_the_goal_setter_with_the_current_brief_and_goals(model, env, workspace):
    (workspace / "需求.md").write_text(fs.REQUIREMENTS)  # frozen (S17): no clarify run needed here
    model.push(*fs.goals(workspace), *fs.work(workspace), *fs.judge())
    first, _ = await wake(workspace, env)
    (workspace / "目标.md").write_text(fs.GOALS.replace("- [ ] calc.py adds", "- [x] calc.py adds"))  # met meanwhile
    model.push(*fs.goals(workspace, fs.GOALS + "- [ ] calc.py multiplies\n"), *fs.work(workspace), *fs.judge(),
               *fs.goals(workspace, fs.GOALS + "- [ ] calc.py multiplies\n- [ ] green\n"), *fs.work(workspace), *fs.judge())
    sentence, later = "also support multiplication", "also print it in green"
    service = FlowerService(workspace)
    said = []

    def say_while_working(event) -> None:  # a sentence said while the work runs lands before its next round (`pending`)
        if event.kind == "step_start" and event.step == "干活" and not said:
            said.append(asyncio.get_running_loop().create_task(service.say(later)))

    service.subscribe(say_while_working)
    result = await asyncio.wait_for(service.wake(sentence, Caller(env=env)), 120)
    assert result.ok and said and said[0].done()
    at_wake, while_running = goal_requests(model)[-2:]
    assert at_wake.session_id == while_running.session_id == first.sessions["目标"]  # resumed: it holds an older brief
    told = at_wake.last_user_text
    assert sentence in told and fs.REQUIREMENTS.strip() in told  # the brief again, not "read it again"
    assert "- [x] calc.py adds" in told  # the current goals, so the met one stays ticked
    brief = (workspace / "需求.md").read_text().strip()
    assert sentence in brief and later in brief
    assert later in while_running.last_user_text and brief in while_running.last_user_text  # in full, as it is now
    before = len(goal_requests(model))
    model.push(*fs.work(workspace), *fs.judge())
    assert (await wake(workspace, env))[0].ok
    assert len(goal_requests(model)) == before  # an empty wake sends no goal request


async def test_the_outgoing_session_writes_the_handoff_and_the_new_session_starts_from_it(model, env, workspace):
    model.push(*fs.grown_past_handoff(workspace), *fs.handoff_note(), *fs.work(workspace), *fs.judge())
    result, events = await wake(workspace, env, handoff_at=1000)
    assert result.ok
    rows = Manifest(workspace / "runs").rows()
    assert [r["step"] for r in rows] == ["干活", "干活·判定#1", "干活·交接#2", "干活#round2", "干活·判定#2"]
    by = {r["step"]: r for r in rows}
    old, new = by["干活"]["session_id"], by["干活#round2"]["session_id"]
    note_row = by["干活·交接#2"]
    assert note_row["session_id"] == old and note_row["ok"] and note_row["cost_usd"] > 0  # its cost, under its own name
    assert parse_name("干活·交接#2") == ("干活", "handoff", 2) and step_of("干活·交接#2") != "干活"  # not a work round
    asked = note_requests(model)
    assert len(asked) == 1 and asked[0].session_id == old  # the session that knows the work was asked
    assert asked[0].last_user_text.endswith(HANDOFF_ASK)
    work_request = next(r for r in model.conversation if r.session_id == old)
    # The API accepted it (a transcript with tool calls must define tools): the work session's own tools and system
    # prompt, so the cached prefix of a long session is reused rather than paid for again.
    assert asked[0].status == 200 and asked[0].body["tools"] and asked[0].body["tools"] == work_request.body["tools"]
    assert asked[0].body["system"] == work_request.body["system"]
    assert "calc.py written" in asked[0].text  # with its whole history
    document = next((workspace / "notes").glob("handoff-*.md")).read_text()
    assert fs.HANDOFF_NOTE.strip() in document
    assert "## Requirements (需求.md)" in document and fs.REQUIREMENTS.strip() in document
    assert "## Goals (目标.md)" in document and "calc.py subtracts" in document
    first_of_new = next(r for r in model.conversation if r.session_id == new)
    assert "NOTE-MARK" in first_of_new.last_user_text and document.strip() in first_of_new.last_user_text
    assert by["干活#round2"]["retired"] == [old] and result.sessions["干活"] == new
    assert not (workspace / "runs" / HANDOFF_MARK).exists()  # the successor started: nothing waits
    assert not [e for e in events if e.kind == "notice" and "could not write" in e.text]


async def test_a_failing_handoff_turn_falls_back_to_flowers_own_document_and_says_so(model, env, workspace):
    failing = server_error(match=lambda body: ASKED in json.dumps(body["messages"][-1], ensure_ascii=False))
    model.push(*fs.grown_past_handoff(workspace), failing, *fs.work(workspace), *fs.judge())
    result, events = await wake(workspace, env, handoff_at=1000, rounds=2, resilience=Resilience(max_attempts=1))
    assert result.ok and model.pending == 0  # the handoff still happens, from the files
    by = {r["step"]: r for r in Manifest(workspace / "runs").rows()}
    assert by["干活·交接#2"]["ok"] is False and "500" in by["干活·交接#2"]["error"]
    document = next((workspace / "notes").glob("handoff-*.md")).read_text()
    assert "that turn failed" in document and "500" in document  # the note says so
    assert "calc.py written" in document and fs.REQUIREMENTS.strip() in document  # the mechanical document
    new = by["干活#round2"]["session_id"]
    assert new != by["干活"]["session_id"]
    assert "that turn failed" in next(r for r in model.conversation if r.session_id == new).last_user_text
    assert [e for e in events if e.kind == "notice" and "could not write its handoff note" in e.text]


async def test_a_tool_called_in_the_handoff_turn_does_not_run_and_the_turn_falls_back(model, env, workspace):
    """The note turn offers the work session's tools but allows none: a `Write` is denied, not run, and the one
    turn ends there: flower neither answers the call nor retries the turn (that would resume it past its limit)."""
    saved = workspace / "notes" / "my-handoff.md"
    model.push(*fs.grown_past_handoff(workspace), *fs.handoff_by_tool(saved), *fs.work(workspace), *fs.judge())
    result, events = await wake(workspace, env, handoff_at=1000, rounds=2)
    assert result.ok and model.pending == 0
    assert not saved.exists()  # denied, not run
    by = {r["step"]: r for r in Manifest(workspace / "runs").rows()}
    old = by["干活"]["session_id"]
    [asked] = note_requests(model)
    assert asked.status == 200 and asked.body["tools"]  # offered, and accepted by the API
    assert [r for r in model.conversation if r.session_id == old][-1] is asked  # the old session was not driven on
    assert by["干活·交接#2"]["ok"] is False and by["干活·交接#2"]["attempts"] == 1
    [document] = (workspace / "notes").glob("handoff-*.md")
    assert "that turn failed" in document.read_text() and fs.REQUIREMENTS.strip() in document.read_text()
    assert [e for e in events if e.kind == "notice" and "could not write its handoff note" in e.text]


async def test_a_wake_stopped_after_the_note_seeds_the_next_one_from_the_file_as_edited(model, env, workspace):
    """Stopped between writing the note and starting the new session (nothing is written on the way out, so the disk
    is as a kill -9 there leaves it): the next wake starts the new session from the file as edited, asking nothing again."""
    model.push(*fs.grown_past_handoff(workspace), *fs.handoff_note())
    service = FlowerService(workspace, config=Config(handoff_at=1000))

    def stop(event) -> None:  # at the instant the new session is about to start
        if event.kind == "step_start" and event.step == "干活#round2":
            service.cancel()

    service.subscribe(stop)
    stopped = await asyncio.wait_for(service.wake(None, Caller(env=env)), 120)
    assert not stopped.ok and "cancelled" in stopped.error
    assert len(model.conversation) == 4  # two work turns, the judge, the note: the new session sent nothing
    runs = workspace / "runs"
    old = json.loads((runs / "lineage.json").read_text())["steps"]["干活"]
    assert old == note_requests(model)[0].session_id  # the lineage still names the old session
    assert json.loads((runs / HANDOFF_MARK).read_text())["session"] == old
    [note] = (workspace / "notes").glob("handoff-*.md")
    note.write_text(note.read_text().replace("NOTE-MARK", "EDITED-BY-THE-PERSON"))

    model.push(*fs.work(workspace), *fs.judge())
    result, events = await wake(workspace, env, handoff_at=1000)
    assert result.ok and result.sessions["干活"] != old
    assert len(note_requests(model)) == 1  # not regenerated
    first_of_new = next(r for r in model.conversation if r.session_id == result.sessions["干活"])
    assert "EDITED-BY-THE-PERSON" in first_of_new.last_user_text and "NOTE-MARK" not in first_of_new.last_user_text
    assert [p.name for p in (workspace / "notes").glob("handoff-*.md")] == [note.name]
    assert not (runs / HANDOFF_MARK).exists()
    assert [e for e in events if e.kind == "handoff"][0].old_session == old


async def test_a_handoff_mark_that_cannot_be_read_is_kept_aside_and_a_stale_one_is_dropped(workspace):
    """No process: the mark's own rules. Unreadable = evidence kept aside, never used; another session's = stale."""
    runs = workspace / "runs"
    runs.mkdir()
    note = workspace / "notes" / "handoff-1.md"
    note.parent.mkdir()
    note.write_text("# Handoff\n")
    async with Runtime(workspace, runs) as rt:
        path = FlowerPath(rt)
        (runs / HANDOFF_MARK).write_bytes(b"\xff not json")
        assert path.handoff_waiting("s-old") is None
        assert not (runs / HANDOFF_MARK).exists() and len(list(runs.glob(HANDOFF_MARK + ".corrupt-*"))) == 1
        (runs / HANDOFF_MARK).write_text(json.dumps({"session": "s-old", "path": str(note)}))
        assert path.handoff_waiting("s-old") == note  # written for the session the lineage still names: waiting
        assert path.handoff_waiting("s-new") is None and not (runs / HANDOFF_MARK).exists()  # its successor started
