"""A resumed session's subagents, continued through the real CLI: their transcripts are materialised where the CLI looks
for them (stores/resume.py writes `<session>/subagents/agent-<id>.jsonl` and its `.meta.json` from the store's subkeys,
with flower's own code since issue 33, not the SDK's private helper).

The witness is the model: after the resume, the agent continued with SendMessage asks the model with its own earlier
conversation, which only the subkey in sessions.db holds (the resumed CLI runs on a fresh config dir).
"""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

from flower import AgentSpec, Runtime
from flower.testing import Reply, text, tool

RUN = 90.0  # seconds a CLI run may take before the test fails instead of hanging
TASK = "find the lost-key notes"
FOUND = "the notes are under the mat"


def _first_user_text(body: dict[str, Any]) -> str:
    content = body.get("messages", [{}])[0].get("content", "")
    return content if isinstance(content, str) else " ".join(b.get("text", "") for b in content if b.get("type") == "text")


def _subagent(body: dict[str, Any]) -> bool:
    """A request of the subagent: its conversation starts with the task it was given (the main one's starts elsewhere)."""
    return TASK in _first_user_text(body)


def _for(reply: Reply, subagent: bool) -> Reply:
    # Main and subagent ask the model concurrently (the agent runs in the background): each reply names its asker.
    reply.match = _subagent if subagent else (lambda body: not _subagent(body))
    return reply


async def test_a_subagent_of_a_resumed_session_goes_on_with_its_own_conversation(model, env, workspace, run_dir):
    agent = AgentSpec("worker", allowed_tools=["Agent", "SendMessage", "ToolSearch"])
    async with Runtime(workspace, run_dir, env=env) as rt:
        model.push(_for(tool("Agent", {"description": "look", "prompt": TASK, "subagent_type": "general-purpose"}), False),
                   _for(text(FOUND), True))
        first = await asyncio.wait_for(rt.run(agent, "start"), RUN)
        assert first.ok, first.error
        results = json.dumps([b for r in model.conversation for b in r.tool_results()])
        (agent_id,) = set(re.findall(r"agentId: (\w+)", results))
        key = {"project_key": rt.project_key, "session_id": first.session_id}
        # The subagent's transcript is in sessions.db as the SDK mirrors it: a subkey, with its metadata entries.
        assert await rt.store.list_subkeys(key) == [f"subagents/agent-{agent_id}"]
        stored = await rt.store.inner.load({**key, "subpath": f"subagents/agent-{agent_id}"})
        assert any(e.get("type") == "agent_metadata" for e in stored) and FOUND in json.dumps(stored)

        before = len(model.conversation)
        model.push(_for(tool("ToolSearch", {"query": "select:SendMessage"}), False),  # SendMessage is a deferred tool
                   _for(tool("SendMessage", {"to": agent_id, "summary": "go on looking", "message": "now the spare key"}), False),
                   _for(text("the spare key is in the drawer"), True))
        again = await asyncio.wait_for(rt.run(agent, "go on", resume=first.session_id), RUN)
        assert again.ok, again.error
        revived = [r for r in model.conversation[before:] if _subagent(r.body)]
        assert revived, "the continued subagent never asked the model: its transcript was not where the CLI looks"
        # It asked with its own earlier conversation (its task, its answer) and then the new message.
        asked = revived[0]
        assert TASK in _first_user_text(asked.body)
        assert FOUND in [t for m in asked.messages if m["role"] == "assistant" for t in _texts(m)]
        assert "now the spare key" in json.dumps(asked.messages[-1])


def _texts(message: dict[str, Any]) -> list[str]:
    content = message["content"]
    return [content] if isinstance(content, str) else [b.get("text", "") for b in content if b.get("type") == "text"]
