"""Scripted replies: what the model says to each request, one `Reply` per request."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from .agents import MAIN, SUBAGENT, answers

# Error bodies exactly as the Messages API shapes them: {"type": "error", "error": {...}}.
ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
ERROR_MESSAGES = {
    401: "invalid x-api-key",
    429: "Number of request tokens has exceeded your per-minute rate limit",
    500: "Internal server error",
    529: "Overloaded",
}


@dataclass
class Reply:
    """One scripted answer to one `POST /v1/messages`."""

    blocks: list[dict[str, Any]] = field(default_factory=list)
    """Content blocks: `{"type": "text", "text": …}` or `{"type": "tool_use", "id", "name", "input"}`."""
    usage: dict[str, int] = field(default_factory=dict[str, Any])
    """Usage numbers reported in `message_start` (scripts context growth)."""
    status: int = 200
    """An HTTP status other than 200 answers with the API's error body instead of a stream."""
    message: str | None = None
    """The error message for a non-200 status."""
    delay: float = 0.0
    """Seconds to wait before answering."""
    hold: bool = False
    """Wait until `ScriptedModel.release()` before answering (for kills mid-step)."""
    drop_after: int | None = None
    """Close the connection after this many SSE events (a connection dropped mid-stream)."""
    match: Callable[[dict[str, Any]], bool] | None = None
    """Answer only requests for which this is true; others take the next reply without `match`."""
    agent: str | None = None
    """Whose request this answers: None anyone's, "main" the main conversation's, "subagent" any subagent's, any other
    text a subagent whose `Agent` prompt contains it (testing/agents.py tells them apart)."""

    def fits(self, body: dict[str, Any]) -> bool:
        """Whether this reply may answer the request `body` (its `match` and its `agent`)."""
        return (self.match is None or self.match(body)) and answers(self.agent, body)

    @property
    def stop_reason(self) -> str:
        """`tool_use` when the reply calls a tool, else `end_turn`."""
        return "tool_use" if any(b["type"] == "tool_use" for b in self.blocks) else "end_turn"

    def to_json(self) -> dict[str, Any]:
        """A JSON-safe form (for `python -m flower.testing --script`); `match` is not kept."""
        data = {k: v for k, v in self.__dict__.items() if k != "match"}
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Reply:
        """Inverse of `to_json`."""
        return cls(**data)


def _usage(input_tokens: int, cache_read: int, cache_creation: int, output_tokens: int) -> dict[str, int]:
    return {
        "input_tokens": input_tokens,
        "cache_read_input_tokens": cache_read,
        "cache_creation_input_tokens": cache_creation,
        "output_tokens": output_tokens,
    }


def text(body: str, **kw: Any) -> Reply:
    """A reply that says `body` and ends the turn (usage numbers as in `reply`)."""
    return reply(say(body), **kw)


def tool_use(name: str, input: dict[str, Any], *, id: str | None = None) -> dict[str, Any]:
    """One tool_use block (combine several in `reply`)."""
    # Random ids: a session resumed against another server process must never see one twice.
    return {"type": "tool_use", "id": id or f"toolu_{uuid.uuid4().hex[:24]}", "name": name, "input": input}


def say(body: str) -> dict[str, Any]:
    """One text block (combine with tool_use blocks in `reply`)."""
    return {"type": "text", "text": body}


def reply(
    *blocks: dict[str, Any],
    input_tokens: int = 100,
    cache_read: int = 0,
    cache_creation: int = 0,
    output_tokens: int = 10,
    **kw: Any,
) -> Reply:
    """A reply made of several blocks, e.g. `reply(say("writing"), tool_use("Write", {...}))`."""
    return Reply(
        blocks=list(blocks),
        usage=_usage(input_tokens, cache_read, cache_creation, output_tokens),
        **kw,
    )


def tool(name: str, input: dict[str, Any], **kw: Any) -> Reply:
    """A reply that calls one tool."""
    return reply(tool_use(name, input), **kw)


def agent_call(prompt: str, *, description: str = "delegated task", subagent_type: str = "general-purpose",
               background: bool | None = None, id: str | None = None) -> dict[str, Any]:
    """An `Agent` tool_use block that starts a subagent; `background` None leaves the CLI's default (background in 2.1.x)."""
    input: dict[str, Any] = {"description": description, "prompt": prompt, "subagent_type": subagent_type}
    if background is not None:
        input["run_in_background"] = background
    return tool_use("Agent", input, id=id)


def delegate(prompt: str, *, background: bool | None = None, **kw: Any) -> Reply:
    """A reply that starts one subagent with `prompt` (`agent_call`'s keywords go there, the rest to `reply`)."""
    call = {k: kw.pop(k) for k in ("description", "subagent_type", "id") if k in kw}
    return reply(agent_call(prompt, background=background, **call), **kw)


def background_bash(command: str, *, description: str = "background command", id: str | None = None) -> dict[str, Any]:
    """A `Bash` tool_use block with `run_in_background`: the CLI answers at once and reports the shell's end later."""
    return tool_use("Bash", {"command": command, "description": description, "run_in_background": True}, id=id)


def for_main(*replies: Reply) -> list[Reply]:
    """The replies, each answering only the main conversation's requests, in order."""
    return _for(MAIN, replies)


def for_subagent(*replies: Reply, prompt: str | None = None) -> list[Reply]:
    """The replies, each answering only a subagent's requests (one whose `Agent` prompt contains `prompt`, if given)."""
    return _for(prompt or SUBAGENT, replies)


def _for(agent: str, replies: tuple[Reply, ...]) -> list[Reply]:
    for r in replies:
        r.agent = agent
    return list(replies)


def error(status: int, message: str | None = None, **kw: Any) -> Reply:
    """An HTTP error with the real API error body (529, 500, 401, …)."""
    return Reply(status=status, message=message or ERROR_MESSAGES.get(status, "error"), **kw)


def overloaded(**kw: Any) -> Reply:
    """529 overloaded_error."""
    return error(529, **kw)


def server_error(**kw: Any) -> Reply:
    """500 api_error."""
    return error(500, **kw)


def unauthorized(**kw: Any) -> Reply:
    """401 authentication_error."""
    return error(401, **kw)


def dropped(after_events: int = 3, body: str = "this reply is cut off", **kw: Any) -> Reply:
    """A stream whose connection closes after `after_events` SSE events."""
    return text(body, drop_after=after_events, **kw)
