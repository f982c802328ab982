"""The scripted model server itself: streams, errors, drops, restarts, validation (D1)."""

from __future__ import annotations

import asyncio
import json

import aiohttp
import pytest

from flower.testing import (
    SUBAGENT,
    InvalidRequest,
    Reply,
    ScriptedModel,
    agent_call,
    background_bash,
    delegate,
    dropped,
    for_main,
    for_subagent,
    overloaded,
    reply,
    say,
    server_error,
    text,
    tool_use,
    unauthorized,
    validate,
)

BASE = {"model": "claude-test", "max_tokens": 100, "tools": [{"name": "Bash", "input_schema": {"type": "object"}}]}


def body(*messages: dict) -> dict:
    return {**BASE, "messages": list(messages)}


def user(*content) -> dict:
    return {"role": "user", "content": list(content)}


def assistant(*content) -> dict:
    return {"role": "assistant", "content": list(content)}


TU = {"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "ls"}}
TR = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "a.txt"}
T = {"type": "text", "text": "hi"}


@pytest.mark.parametrize("request_body, fragment", [
    (body(user(TR)), "unexpected `tool_use_id`"),
    (body(user(T), assistant(TU), user(T)), "without `tool_result`"),
    (body(user(T), assistant(TU)), "without `tool_result`"),
    (body(user(T), assistant(TU), user(TR, TR)), "single result"),
    (body(assistant(T)), "first message"),
    (body({"role": "robot", "content": "x"}), "role"),
    (body(user({"type": "text", "text": "  "})), "non-whitespace"),
    (body(user(T), assistant(TR)), "not allowed"),
    (body(user(T), assistant(TU), user(T, TR)), "must come first"),
    ({"model": "m", "messages": [user(T)]}, "max_tokens"),
    ({**body(user(T), assistant(TU), user(TR)), "tools": []}, "must define tools"),
])
def test_validator_rejects_what_the_real_api_rejects(request_body, fragment):
    with pytest.raises(InvalidRequest, match=fragment.replace("`", ".")):
        validate(request_body)


def test_validator_accepts_a_well_formed_tool_round_and_system_notes():
    validate(body(user(T), {"role": "system", "content": [T]}, assistant(T, TU), user(TR, T), assistant(T)))


async def post(model: ScriptedModel, payload: dict) -> tuple[int, str]:
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{model.url}/v1/messages", json=payload) as resp:
            return resp.status, await resp.text()


async def test_orphan_tool_result_gets_a_400_and_is_recorded(model):
    status, raw = await asyncio.wait_for(post(model, body(user(T), user(TR))), 10)
    assert status == 400
    error = json.loads(raw)
    assert error["type"] == "error" and error["error"]["type"] == "invalid_request_error"
    assert model.last.status == 400 and "tool_use_id" in model.last.error
    assert model.pending == 0  # a rejected request consumes no scripted reply


async def test_stream_carries_text_and_tool_use_json_deltas_and_usage(model):
    model.push(reply(say("two tools"), tool_use("Read", {"file_path": "/a"}), tool_use("Bash", {"command": "ls -la " * 20}), input_tokens=777))
    status, raw = await asyncio.wait_for(post(model, body(user(T))), 10)
    assert status == 200
    events = [json.loads(line[6:]) for line in raw.splitlines() if line.startswith("data: ")]
    assert events[0]["message"]["usage"]["input_tokens"] == 777
    starts = [e["content_block"]["type"] for e in events if e["type"] == "content_block_start"]
    assert starts == ["text", "tool_use", "tool_use"]
    partial = "".join(e["delta"]["partial_json"] for e in events if e["type"] == "content_block_delta" and e["index"] == 2)
    assert json.loads(partial) == {"command": "ls -la " * 20}
    assert [e for e in events if e["type"] == "message_delta"][0]["delta"]["stop_reason"] == "tool_use"


@pytest.mark.parametrize("scripted, status, etype", [
    (overloaded(), 529, "overloaded_error"), (server_error(), 500, "api_error"), (unauthorized(), 401, "authentication_error"),
])
async def test_http_errors_have_the_real_body_shape(model, scripted, status, etype):
    model.push(scripted)
    got, raw = await asyncio.wait_for(post(model, body(user(T))), 10)
    assert got == status and json.loads(raw)["error"]["type"] == etype


async def test_dropped_stream_ends_without_message_stop(model):
    model.push(dropped(after_events=2))
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{model.url}/v1/messages", json=body(user(T))) as resp:
            with pytest.raises(aiohttp.ClientPayloadError):
                await asyncio.wait_for(resp.read(), 10)


async def test_stop_refuses_and_start_listens_on_the_same_port(model):
    port = model.port
    await model.stop()
    with pytest.raises(aiohttp.ClientConnectionError):
        await asyncio.wait_for(post(model, body(user(T))), 10)
    await model.start()
    assert model.port == port
    model.push(text("back"))
    status, _ = await asyncio.wait_for(post(model, body(user(T))), 10)
    assert status == 200


async def test_hold_waits_for_release_and_match_routes_requests(model):
    model.push(Reply(blocks=[T], hold=True), text("side answer", match=lambda b: b["max_tokens"] == 7))
    held = asyncio.create_task(post(model, body(user(T))))
    await model.wait_for_requests(1, timeout=10)
    status, raw = await asyncio.wait_for(post(model, {**body(user(T)), "max_tokens": 7}), 10)
    assert "side answer" in raw and not held.done()
    model.release()
    status, _ = await asyncio.wait_for(held, 10)
    assert status == 200


SUB_SYSTEM = [{"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.332.0e6; cc_is_subagent=true;"},
              {"type": "text", "text": "You are an agent for Claude Code"}]


def sub_body(prompt: str) -> dict:
    """A request as a subagent started with `prompt` sends it (CLI 2.1.332, testing/agents.py)."""
    return {**body(user({"type": "text", "text": "<system-reminder>x</system-reminder>"}, {"type": "text", "text": prompt})),
            "system": SUB_SYSTEM}


async def test_replies_scripted_for_the_main_agent_or_a_subagent_answer_only_its_requests(model):
    model.push(*for_main(text("main 1"), text("main 2")), *for_subagent(text("the tests sub"), prompt="run the tests"),
               *for_subagent(text("any sub")))
    _, raw = await asyncio.wait_for(post(model, sub_body("please run the tests now")), 10)
    assert "the tests sub" in raw  # the first reply that fits, not the main agent's before it
    _, raw = await asyncio.wait_for(post(model, body(user(T))), 10)
    assert "main 1" in raw
    _, raw = await asyncio.wait_for(post(model, sub_body("write docs")), 10)
    assert "any sub" in raw  # not the main agent's "main 2", still first in the script
    _, raw = await asyncio.wait_for(post(model, body(user(T))), 10)
    assert "main 2" in raw
    assert [r.subagent for r in model.conversation] == [True, False, True, False]
    assert model.subagents[0].agent_prompt == "please run the tests now" and model.main[0].agent_prompt is None
    assert (await model.wait_for_requests(2, agent=SUBAGENT)).agent_prompt == "write docs"
    assert Reply.from_json(for_subagent(text("x"))[0].to_json()).agent == SUBAGENT  # kept in a JSON script


def test_delegation_blocks_say_background_only_when_asked():
    assert "run_in_background" not in delegate("p").blocks[0]["input"]  # the CLI's default
    assert delegate("p", background=False, description="d").blocks[0]["input"] == {
        "description": "d", "prompt": "p", "subagent_type": "general-purpose", "run_in_background": False}
    assert agent_call("p", background=True)["name"] == "Agent"
    assert background_bash("sleep 1")["input"]["run_in_background"] is True


async def test_count_tokens(model):
    async with aiohttp.ClientSession() as http:
        async with http.post(f"{model.url}/v1/messages/count_tokens", json=body(user(T))) as resp:
            assert resp.status == 200 and (await resp.json())["input_tokens"] > 0


