"""Subagents and background work at the scripted model: how their requests are told apart, and the calls that start them.

What the bundled CLI 2.1.332 does, probed against this server (issue 32, D12):

- The `Agent` tool (input `description`, `prompt`, `subagent_type`, `run_in_background`, …) runs a subagent in the
  same CLI process and the same session: its conversation is sent as its own `/v1/messages` requests, with the same
  `metadata.user_id` session id. What tells them apart: the first system block (the billing header) of a subagent's
  request says `cc_is_subagent=true;`, its system prompt is the agent type's own ("You are an agent for Claude
  Code…"), its first user message ends with a text block that is the `Agent` call's `prompt`, and it is offered
  fewer tools (no ScheduleWakeup, no Workflow).
- Background is the default (`run_in_background` omitted or true): the `Agent` tool_result comes back at once
  ("Async agent launched successfully…"), the main agent goes on and may end its turn (a ResultMessage) while the
  subagent still runs. When the subagent ends, the CLI wakes the main agent for another turn in the same process
  (a new `init` SystemMessage, then a second ResultMessage) whose request carries a `<task-notification>` with the
  subagent's final words. `claude -p` holds its exit until then; through the SDK the CLI reports
  `session_state_changed` "idle" only once no such turn is owed (with CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS=1).
- Foreground (`run_in_background: false`): the `Agent` tool_result is the subagent's hand-back ("[Subagent
  hand-back] … The report follows:\\n  <its last words>"), and the main agent's next request carries it.
- The SDK stream carries the subagent's assistant and user messages with `parent_tool_use_id` = the `Agent` call's
  id, and `task_started` (`is_backgrounded`, `task_type` "local_agent"), `task_progress`, `task_updated`,
  `task_notification` and `background_tasks_changed` (the live background set) system messages.
- `Bash` with `run_in_background: true` answers at once ("Command running in background with ID: <id>…"); its
  end wakes the main agent the same way (task_type "local_bash"). Through the SDK the CLI reports "idle" while such a
  shell still runs; `claude -p` waits for it.
"""

from __future__ import annotations

import json
from typing import Any

SUBAGENT_MARK = "cc_is_subagent=true"
"""In the billing header, the first system block, of every request a subagent makes (CLI 2.1.332)."""
MAIN = "main"
"""`Reply.agent` value: answer only the main conversation's requests."""
SUBAGENT = "subagent"
"""`Reply.agent` value: answer only a subagent's requests (any subagent)."""


def is_subagent(body: dict[str, Any]) -> bool:
    """Whether a `/v1/messages` request body is a subagent's, not the main conversation's."""
    system = body.get("system", "")
    head = system if isinstance(system, str) else json.dumps(system[:1], ensure_ascii=False)
    return SUBAGENT_MARK in head


def agent_prompt(body: dict[str, Any]) -> str | None:
    """The `Agent` prompt a subagent's request answers (the last text block of its first message); None for the main agent."""
    if not is_subagent(body):
        return None
    messages = body.get("messages") or [{}]
    content = messages[0].get("content", "")
    if isinstance(content, str):
        return content
    texts = [b.get("text", "") for b in content if isinstance(b, dict) and b.get("type") == "text"]
    return texts[-1] if texts else ""


def answers(agent: str | None, body: dict[str, Any]) -> bool:
    """Whether a reply scripted for `agent` (None: anyone; MAIN; SUBAGENT; else a piece of the subagent's prompt) fits."""
    if agent is None:
        return True
    if agent == MAIN:
        return not is_subagent(body)
    prompt = agent_prompt(body)
    return prompt is not None and (agent == SUBAGENT or agent in prompt)
