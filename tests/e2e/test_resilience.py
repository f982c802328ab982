"""Resilience through the real CLI: outages are waited out and the same session resumes (S20–S24)."""

from __future__ import annotations

import asyncio

import pytest

from flower import AgentSpec, Runtime, Step, Workflow
from flower.core.lineage import Lineage
from flower.core.manifest import Manifest
from flower.core.resilience import Resilience, classify
from flower.testing import Reply, dropped, error, overloaded, say, server_error, text, tool, unauthorized

FAST = dict(base_delay=0.05, max_delay=0.2, probe_interval=0.1, probe_timeout=1.0)


def worker(workspace) -> Step:
    agent = AgentSpec("work", allowed_tools=["Write"])
    return Step("work", agent, "write the report")


async def test_outage_mid_step_is_waited_out_and_the_same_session_resumes(model, env, workspace, run_dir):
    model.push(
        tool("Write", {"file_path": str(workspace / "report.md"), "content": "# half\n"}),
        Reply(blocks=[say("lost in the outage")], hold=True),
        text("report finished"),
    )
    events, restarts = [], []

    def listen(event) -> None:
        events.append(event)
        if event.kind == "wait" and event.reason == "offline" and not restarts:
            restarts.append(asyncio.create_task(model.start()))  # the network comes back

    async with Runtime(workspace, run_dir, env=env, resilience=Resilience(**FAST)) as rt:
        rt.listeners.append(listen)
        run = asyncio.create_task(Workflow([worker(workspace)]).run(rt))
        await model.wait_for_requests(2, timeout=30)
        await model.stop()  # the outage: the held reply is never sent, new connections are refused
        ctx = await asyncio.wait_for(run, 60)
    assert ctx["_ok"], ctx
    row = Manifest(run_dir).rows()[-1]
    assert (row["attempts"], row["resumed"], row["ok"]) == (2, True, True)
    assert row["session_id"] == ctx["_sessions"]["work"] and len(row["errors"]) == 1
    seen = model.last
    assert seen.session_id == row["session_id"]
    assert seen.last_user_text.endswith(Resilience.resume_prompt)
    assert "write the report" in seen.text and "# half" in seen.text  # earlier work kept
    assert "API Error" not in seen.text  # S23a: outage residue never reaches the model
    assert [e.reason for e in events if e.kind == "wait"][:1] == ["offline"]


async def test_401_stops_at_once_naming_the_key(model, env, workspace, run_dir):
    model.push(unauthorized())
    events = []
    async with Runtime(workspace, run_dir, env=env, resilience=Resilience(**FAST)) as rt:
        rt.listeners.append(events.append)
        result = await rt.run(AgentSpec("w"), "hi")
    assert not result.ok and result.attempts == 1
    assert "not retried: the API key was refused: check ANTHROPIC_API_KEY" in result.error
    assert not [e for e in events if e.kind == "wait"]
    assert len(model.conversation) == 1


@pytest.mark.parametrize("scripted, kind", [
    (unauthorized(), "fatal"),
    (error(400, "prompt is too long: 250000 tokens > 200000 maximum"), "fatal"),
    (overloaded(), "transient"),
    (server_error(), "transient"),
    (dropped(after_events=2), "transient"),
    (None, "transient"),  # connection refused: the server is down
], ids=["401", "400-too-long", "529", "500", "dropped", "refused"])
async def test_classify_the_texts_the_real_cli_prints(model, env, workspace, run_dir, scripted, kind):
    if scripted is None:
        await model.stop()
    else:
        model.push(scripted)
    async with Runtime(workspace, run_dir, env=env, resilience=Resilience(max_attempts=1)) as rt:
        result = await rt.run(AgentSpec("w"), "hi")
    assert not result.ok
    assert classify(result.errors[0]) == kind, result.errors[0]


async def test_offline_too_long_fails_clearly_and_a_later_run_resumes(model, env, workspace, run_dir):
    model.push(Reply(blocks=[say("cut off")], hold=True))
    res = Resilience(**{**FAST, "max_offline_wait": 0.5})
    async with Runtime(workspace, run_dir, env=env, resilience=res) as rt:
        run = asyncio.create_task(Workflow([worker(workspace)]).run(rt))
        await model.wait_for_requests(1, timeout=30)
        await model.stop()
        ctx = await asyncio.wait_for(run, 60)
        assert not ctx["_ok"] and "offline for more than" in ctx["_error"] and "run again" in ctx["_error"]
        sid = Lineage.load(run_dir, workspace, rt.has_session).steps["work"]
    await model.start()
    model.push(text("resumed after the long outage"))
    async with Runtime(workspace, run_dir, env=env, resilience=res) as rt:
        ctx = await asyncio.wait_for(Workflow([worker(workspace)]).run(rt), 60)
    assert ctx["_ok"] and ctx["_sessions"]["work"] == sid and ctx["_woke"] == 2
    assert model.last.session_id == sid and "write the report" in model.last.text


@pytest.mark.parametrize("scripted", [
    error(503, "authentication_error upstream"),
    error(429, "You exceeded your current quota, please check your plan"),
], ids=["503-saying-authentication", "429-saying-quota"])
async def test_the_http_status_decides_before_the_text(model, env, workspace, run_dir, scripted):
    """S21 from fields first: a 503 or 429 is transient even when its message reads like a fatal one."""
    model.push(scripted, text("answered after the retry"))
    async with Runtime(workspace, run_dir, env=env, resilience=Resilience(**FAST)) as rt:
        result = await rt.run(AgentSpec("w"), "hi")
    assert classify(result.errors[0]) == "fatal", result.errors[0]  # the text alone would have stopped here
    assert result.ok and result.attempts == 2 and result.text == "answered after the retry"


async def test_a_fatal_status_stops_with_advice_from_the_status(model, env, workspace, run_dir):
    """A 403 names the key's permissions, whatever its message says (S21)."""
    model.push(error(403, "connection not allowed from this network"))
    async with Runtime(workspace, run_dir, env=env, resilience=Resilience(**FAST)) as rt:
        result = await rt.run(AgentSpec("w"), "hi")
    assert not result.ok and result.attempts == 1 and len(model.conversation) == 1
    assert "(HTTP 403)" in result.errors[0]
    assert "not retried: this key may not use this model or endpoint" in result.error
