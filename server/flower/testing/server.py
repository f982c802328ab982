"""A scripted Anthropic Messages API server on 127.0.0.1 that records what the model saw (D1)."""

from __future__ import annotations

import asyncio
import json
import logging
import os
import uuid
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from aiohttp import web

from .agents import agent_prompt, answers, is_subagent
from .script import ERROR_TYPES, Reply, text
from .validate import InvalidRequest, validate

log = logging.getLogger(__name__)

DEFAULT_REPLY = text("(the scripted model has no more replies)")


@dataclass
class Request:
    """One request the model server received: the assertion target of continuity tests."""

    path: str
    body: dict[str, Any]
    status: int = 200
    error: str | None = None
    api_key: str | None = None
    """The credential the request came with (`x-api-key`, or a bearer token): whose key reached the model."""

    @property
    def messages(self) -> list[dict[str, Any]]:
        """The conversation as sent."""
        messages: list[dict[str, Any]] = self.body.get("messages", [])
        return messages

    def blocks(self, role: str | None = None) -> list[dict[str, Any]]:
        """Every content block, optionally of one role only."""
        out: list[dict[str, Any]] = []
        for message in self.messages:
            if role and message.get("role") != role:
                continue
            content = message.get("content")
            out.extend([{"type": "text", "text": content}] if isinstance(content, str) else content or [])
        return out

    def texts(self, role: str | None = None) -> list[str]:
        """Every piece of text the model saw, tool results included, in order."""
        return [t for b in self.blocks(role) for t in _block_texts(b)]

    @property
    def text(self) -> str:
        """All that the model saw, as one string (system prompt excluded)."""
        return "\n".join(self.texts())

    @property
    def system(self) -> str:
        """The system prompt."""
        system = self.body.get("system", "")
        return system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system)

    @property
    def last_user_text(self) -> str:
        """The text of the newest user turn: what the model is asked to answer now."""
        for message in reversed(self.messages):
            if message.get("role") == "user":
                content = message["content"]
                blocks = [{"type": "text", "text": content}] if isinstance(content, str) else content
                return "\n".join(t for b in blocks for t in _block_texts(b))
        return ""

    def tool_results(self) -> list[dict[str, Any]]:
        """Every tool_result block the model saw."""
        return [b for b in self.blocks("user") if b.get("type") == "tool_result"]

    def tool_uses(self) -> list[dict[str, Any]]:
        """Every tool_use block the model saw."""
        return [b for b in self.blocks("assistant") if b.get("type") == "tool_use"]

    @property
    def subagent(self) -> bool:
        """Whether a subagent made this request, not the main conversation (testing/agents.py)."""
        return is_subagent(self.body)

    @property
    def agent_prompt(self) -> str | None:
        """The `Agent` prompt of the subagent that made this request; None for the main conversation."""
        return agent_prompt(self.body)

    @property
    def session_id(self) -> str | None:
        """The CLI's session id, read from the request metadata."""
        try:
            sid = json.loads(self.body["metadata"]["user_id"]).get("session_id")
            return sid if isinstance(sid, str) else None
        except (KeyError, TypeError, ValueError):
            return None


def _block_texts(block: dict[str, Any]) -> list[str]:
    if block.get("type") == "text":
        return [block.get("text", "")]
    if block.get("type") == "tool_use":
        return [json.dumps(block.get("input", {}), ensure_ascii=False)]
    if block.get("type") == "tool_result":
        content = block.get("content", "")
        if isinstance(content, str):
            return [content]
        return [c.get("text", "") for c in content if isinstance(c, dict)]
    return []


def _sse(event: str, data: dict[str, Any]) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


def _events(reply: Reply, model: str) -> list[bytes]:
    """The SSE frames of one streamed reply."""
    usage = {"input_tokens": 0, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0, "output_tokens": 1}
    usage.update(reply.usage)
    out = [
        _sse("message_start", {
            "type": "message_start",
            "message": {
                "id": f"msg_{uuid.uuid4().hex[:24]}", "type": "message", "role": "assistant", "model": model,
                "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage,
            },
        })
    ]
    for index, block in enumerate(reply.blocks):
        if block["type"] == "text":
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": {"type": "text", "text": ""}}))
            body = block["text"]
            # Several deltas, as a real stream would send them.
            for k in range(0, max(len(body), 1), 64):
                out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "text_delta", "text": body[k:k + 64]}}))
        else:
            start = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
            out.append(_sse("content_block_start", {"type": "content_block_start", "index": index, "content_block": start}))
            raw = json.dumps(block["input"], ensure_ascii=False)
            for k in range(0, len(raw), 48):
                out.append(_sse("content_block_delta", {"type": "content_block_delta", "index": index, "delta": {"type": "input_json_delta", "partial_json": raw[k:k + 48]}}))
        out.append(_sse("content_block_stop", {"type": "content_block_stop", "index": index}))
    out.append(_sse("message_delta", {
        "type": "message_delta",
        "delta": {"stop_reason": reply.stop_reason, "stop_sequence": None},
        "usage": {"output_tokens": usage["output_tokens"]},
    }))
    out.append(_sse("message_stop", {"type": "message_stop"}))
    return out


def _error_body(status: int, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": ERROR_TYPES.get(status, "api_error"), "message": message}, "request_id": f"req_{uuid.uuid4().hex[:24]}"}


class ScriptedModel:
    """The scripted model server: `async with ScriptedModel([text("hi")]) as model: ... model.requests`."""

    def __init__(self, script: Iterable[Reply] = (), *, port: int = 0, default: Reply | None = DEFAULT_REPLY):
        self._script: list[Reply] = list(script)
        self.port = port
        self.default = default
        self.requests: list[Request] = []
        self._runner: web.AppRunner | None = None
        self._released = asyncio.Event()
        self._arrived = asyncio.Condition()

    # -- lifecycle -------------------------------------------------------------------------
    async def start(self) -> ScriptedModel:
        """Listen on 127.0.0.1 (the same port again after `stop`)."""
        app = web.Application(client_max_size=256 * 1024 * 1024)
        app.router.add_post("/v1/messages", self._messages)
        app.router.add_post("/v1/messages/count_tokens", self._count_tokens)
        app.router.add_route("*", "/{tail:.*}", self._unknown)
        self._runner = web.AppRunner(app, handle_signals=False, access_log=None, shutdown_timeout=0.5)
        await self._runner.setup()
        site = web.TCPSite(self._runner, "127.0.0.1", self.port, reuse_address=True)
        await site.start()
        if isinstance(site._server, asyncio.Server):  # always, once started; learn the port chosen for port=0
            self.port = site._server.sockets[0].getsockname()[1]
        return self

    async def stop(self) -> None:
        """Stop listening and close every connection: clients now see refused connections."""
        if self._runner is not None:
            # Held replies are cancelled with their connections, never answered: an outage, not a release.
            await self._runner.cleanup()
            self._runner = None

    async def __aenter__(self) -> ScriptedModel:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()

    # -- script ----------------------------------------------------------------------------
    def push(self, *replies: Reply) -> None:
        """Append replies to the script."""
        self._script.extend(replies)

    @property
    def pending(self) -> int:
        """Replies not yet used."""
        return len(self._script)

    def release(self) -> None:
        """Let every held reply (`hold=True`) answer."""
        self._released.set()

    @property
    def url(self) -> str:
        """The base URL to give the CLI as ANTHROPIC_BASE_URL."""
        return f"http://127.0.0.1:{self.port}"

    def env(self, config_dir: str | os.PathLike[str]) -> dict[str, str]:
        """Environment that points the real Claude Code CLI at this server, offline (D1)."""
        return {
            "ANTHROPIC_BASE_URL": self.url,
            "ANTHROPIC_API_KEY": "sk-ant-scripted-model",
            "CLAUDE_CONFIG_DIR": str(config_dir),
            "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
            "DISABLE_TELEMETRY": "1",
            "DISABLE_AUTOUPDATER": "1",
        }

    async def wait_for_requests(self, count: int, timeout: float = 30.0, agent: str | None = None) -> Request:
        """Wait (bounded) until `count` model requests arrived (`agent`: of the main conversation or subagents only,
        as `Reply.agent`); return the newest of them."""
        def those() -> list[Request]:
            return [r for r in self.conversation if answers(agent, r.body)]

        async def arrived() -> None:
            async with self._arrived:
                await self._arrived.wait_for(lambda: len(those()) >= count)
        await asyncio.wait_for(arrived(), timeout)
        return those()[count - 1]

    @property
    def conversation(self) -> list[Request]:
        """The `/v1/messages` requests, in arrival order."""
        return [r for r in self.requests if r.path == "/v1/messages"]

    @property
    def main(self) -> list[Request]:
        """The main conversation's `/v1/messages` requests, in arrival order (no subagent's)."""
        return [r for r in self.conversation if not r.subagent]

    @property
    def subagents(self) -> list[Request]:
        """The subagents' `/v1/messages` requests, in arrival order."""
        return [r for r in self.conversation if r.subagent]

    @property
    def last(self) -> Request:
        """The newest `/v1/messages` request."""
        return self.conversation[-1]

    def _next_reply(self, body: dict[str, Any]) -> Reply | None:
        for i, candidate in enumerate(self._script):
            if candidate.fits(body):
                return self._script.pop(i)
        return self.default

    # -- handlers --------------------------------------------------------------------------
    async def _record(self, request: Request) -> None:
        self.requests.append(request)
        async with self._arrived:
            self._arrived.notify_all()

    async def _messages(self, http: web.Request) -> web.StreamResponse:
        try:
            body = json.loads(await http.read())
        except ValueError:
            return web.json_response(_error_body(400, "request body is not valid JSON"), status=400)
        bearer = http.headers.get("authorization", "")
        record = Request(http.path, body, api_key=http.headers.get("x-api-key") or bearer.removeprefix("Bearer ") or None)
        try:
            validate(body)
        except InvalidRequest as exc:
            record.status, record.error = 400, str(exc)
            await self._record(record)
            return web.json_response(_error_body(400, str(exc)), status=400)
        reply = self._next_reply(body)
        await self._record(record)
        if reply is None:
            record.status = 500
            return web.json_response(_error_body(500, "script exhausted"), status=500)
        if reply.delay:
            await asyncio.sleep(reply.delay)
        if reply.hold:
            await self._released.wait()
        if reply.status != 200:
            record.status = reply.status
            return web.json_response(_error_body(reply.status, reply.message or "error"), status=reply.status)
        response = web.StreamResponse(headers={"content-type": "text/event-stream", "cache-control": "no-cache"})
        await response.prepare(http)
        for n, frame in enumerate(_events(reply, body.get("model", "claude-scripted"))):
            if reply.drop_after is not None and n >= reply.drop_after:
                # A connection dropped mid-stream: no more bytes, no clean end.
                record.status = -1
                if http.transport is not None:
                    http.transport.abort()
                return response
            await response.write(frame)
        await response.write_eof()
        return response

    async def _count_tokens(self, http: web.Request) -> web.Response:
        raw = await http.read()
        await self._record(Request(http.path, json.loads(raw or b"{}")))
        return web.json_response({"input_tokens": max(1, len(raw) // 4)})

    async def _unknown(self, http: web.Request) -> web.Response:
        return web.json_response(_error_body(404, f"scripted model: no route {http.method} {http.path}"), status=404)


def load_script(path: str | os.PathLike[str]) -> list[Reply]:
    """Read a JSON list of replies (the `Reply.to_json` form)."""
    return [Reply.from_json(r) for r in json.loads(Path(path).read_text())]
