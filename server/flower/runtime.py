"""The Runtime: runs one agent turn on the real Claude Agent SDK; the only module that imports it (D3)."""

from __future__ import annotations

import asyncio
import collections
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    ResultMessage,
    SystemMessage,
    TextBlock,
    ToolUseBlock,
    project_key_for_directory,
)

from .core.errors import MissingCredentials
from .core.events import AssistantText, ContextSize, Event, Listener, SessionStarted, ToolCall, Waiting
from .core.manifest import StepResult
from .core.resilience import OfflineWait, Resilience, advice, classify, endpoint, reachable_async, wait_online
from .stores.prune import PruningSessionStore
from .stores.sqlite import SqliteSessionStore

# Env vars any of which lets the CLI authenticate (or route to a cloud provider).
CREDENTIAL_ENV = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN",
    "CLAUDE_CODE_USE_BEDROCK", "CLAUDE_CODE_USE_VERTEX",
)


@dataclass
class AgentSpec:
    """One agent: its instructions, tools and limits (S2). Tools are explicit; no bypass by default (D6)."""

    name: str
    instructions: str = ""
    allowed_tools: list[str] = field(default_factory=list)
    max_turns: int | None = None
    model: str | None = None
    permission_mode: str = "default"
    disallowed_tools: list[str] = field(default_factory=list)


@dataclass
class _Attempt:
    """What one CLI run produced."""

    session_id: str | None = None
    ok: bool = False
    text: str = ""
    error: str | None = None
    cost_usd: float = 0.0
    num_turns: int = 0


def tokens_of(usage: dict) -> int:
    """Context size of one API response: input + cache read + cache creation tokens."""
    return sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


def context_of(entries: list[dict] | None) -> int | None:
    """Context size of a transcript: input + cache read + cache creation of its last real assistant message."""
    for entry in reversed(entries or []):
        message = entry.get("message") if entry.get("type") == "assistant" else None
        if not isinstance(message, dict) or message.get("model") == "<synthetic>":
            continue
        usage = message.get("usage")
        if isinstance(usage, dict):
            # One API response is several entries repeating one usage; the last one is enough (dedup by id).
            return tokens_of(usage)
    return None


class Runtime:
    """Owns the session store of a run_dir and runs agents in a workspace (S2, S4)."""

    def __init__(
        self,
        workspace: str | os.PathLike = ".",
        run_dir: str | os.PathLike = "runs",
        *,
        trim: bool = False,
        resilience: Resilience | None = None,
        env: dict[str, str] | None = None,
    ):
        self.workspace = Path(os.path.abspath(workspace))
        # S4: run_dir is relative to the current directory, not to the workspace.
        self.run_dir = Path(os.path.abspath(run_dir))
        self.trim = trim
        self.resilience = resilience or Resilience()
        self.env = dict(env or {})
        self.project_key = project_key_for_directory(self.workspace)
        self.db_path = self.run_dir / "sessions.db"
        self.raw_store = SqliteSessionStore(self.db_path)
        # S23/S25: the model always resumes from the pruned view; `trim` only switches large-result trimming.
        self.store = PruningSessionStore(self.raw_store, trim=trim, spill_dir=self.run_dir / "spill")
        self.on_session: Callable[[str], None] | None = None
        """S11: called the instant a session id arrives; set only around `run` by the workflow."""
        self.listeners: list[Listener] = []
        self.window: int | None = None
        """The model's context window as the CLI last reported it (its `modelUsage`), once known."""

    # -- sessions.db -----------------------------------------------------------------------
    def has_session(self, session_id: str) -> bool:
        """Whether sessions.db holds this workspace's session (S10)."""
        return self.raw_store.has_session_sync(self.project_key, session_id)

    async def entries(self, session_id: str) -> list[dict] | None:
        """The raw stored transcript of a session, unpruned."""
        return await self.raw_store.load({"project_key": self.project_key, "session_id": session_id})

    async def context_size(self, session_id: str) -> int | None:
        """The session's last-round context size in tokens, read back from sessions.db; None if unknown."""
        return context_of(await self.entries(session_id))

    async def close(self) -> None:
        """Close the session store."""
        await self.raw_store.close()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- running ---------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        """Hand an event to every listener."""
        for listener in list(self.listeners):
            listener(event)

    def check_credentials(self) -> None:
        """Fail early, with what to do, when the CLI would have no way to authenticate."""
        env = {**os.environ, **self.env}
        if any(env.get(name) for name in CREDENTIAL_ENV):
            return
        config = Path(env.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
        if (config / ".credentials.json").exists():
            return
        raise MissingCredentials(
            "No Anthropic API key: set ANTHROPIC_API_KEY (export ANTHROPIC_API_KEY=sk-ant-…), "
            "or log in once with `claude login`; `flower demo` runs offline without one."
        )

    def options(self, agent: AgentSpec, resume: str | None, stderr: Callable[[str], None]) -> ClaudeAgentOptions:
        """SDK options: the workspace as cwd, our store mirrored eagerly, resume through the store (D2)."""
        return ClaudeAgentOptions(
            cwd=str(self.workspace),
            system_prompt={"type": "preset", "preset": "claude_code", "append": agent.instructions} if agent.instructions else None,
            allowed_tools=list(agent.allowed_tools),
            disallowed_tools=list(agent.disallowed_tools),
            max_turns=agent.max_turns,
            model=agent.model,
            permission_mode=agent.permission_mode,
            resume=resume,
            session_store=self.store,
            session_store_flush="eager",
            env=self.env,
            setting_sources=[],
            stderr=stderr,
        )

    async def run(self, agent: AgentSpec, prompt: str, resume: str | None = None, *, step: str | None = None) -> StepResult:
        """Run one agent turn (resuming `resume` when given), riding out outages, and return its StepResult (S6, S21)."""
        self.check_credentials()
        res = self.resilience
        result = StepResult(step=step or agent.name, started_at=time.time(), resumed=resume is not None, attempts=0)
        session, message = resume, prompt
        while True:
            result.attempts += 1
            attempt = await self._attempt(agent, message, session, result.step)
            session = attempt.session_id or session
            result.ok, result.text, result.error = attempt.ok, attempt.text, attempt.error
            result.cost_usd += attempt.cost_usd
            result.num_turns += attempt.num_turns
            if attempt.ok:
                break
            result.errors.append(attempt.error or "unknown error")
            kind = classify(attempt.error)
            if not res.should_retry(kind, result.attempts):
                if kind == "fatal":
                    result.error = f"{attempt.error}\nnot retried: {advice(attempt.error)}"
                break
            if not await self._wait(result, attempt.error or ""):
                result.error = (
                    f"offline for more than {res.max_offline_wait:.0f} s ({attempt.error}); "
                    "the session is kept: run again when the network is back to resume it"
                )
                break
            if session:
                # S22: resume the same session so earlier work is kept; the note carries no error detail.
                message, result.resumed = res.resume_prompt, True
        result.session_id = session
        if session:
            result.context = await self.context_size(session)
        result.ended_at = time.time()
        return result

    async def _wait(self, result: StepResult, error: str) -> bool:
        """Wait before the next attempt: probe, wait out an outage, then back off (S20, S21). False = gave up."""
        res = self.resilience
        host, port = endpoint({**os.environ, **self.env})

        def offline(w: OfflineWait) -> None:
            self.emit(Waiting("offline", result.attempts, res.max_attempts, w.next_probe_in, error, w.offline_since, step=result.step))

        if not await reachable_async(host, port, res.probe_timeout) and not await wait_online(res, host, port, offline):
            return False
        pause = res.delay(result.attempts)
        self.emit(Waiting("backoff", result.attempts, res.max_attempts, pause, error, step=result.step))
        await asyncio.sleep(pause)
        return True

    async def _attempt(self, agent: AgentSpec, prompt: str, resume: str | None, step: str) -> _Attempt:
        """One CLI process: stream its messages into events, return what it produced."""
        out = _Attempt(session_id=resume)
        stderr: collections.deque[str] = collections.deque(maxlen=40)
        texts: list[str] = []
        seen_usage: set[str] = set()
        try:
            async with ClaudeSDKClient(self.options(agent, resume, stderr.append)) as client:
                await client.query(prompt)
                async for message in client.receive_response():
                    self._observe(message, out, texts, seen_usage, step, resume)
        except Exception as exc:  # the CLI died or could not start: keep what arrived, report why
            tail = "\n".join(stderr).strip()
            out.ok = False
            out.error = f"{type(exc).__name__}: {exc}" + (f"\n{tail}" if tail else "")
        if not out.text:
            out.text = "\n".join(texts)
        return out

    def _observe(self, message: Any, out: _Attempt, texts: list[str], seen_usage: set[str], step: str, resume: str | None) -> None:
        if isinstance(message, SystemMessage) and message.subtype == "init":
            sid = message.data.get("session_id")
            if sid:
                out.session_id = sid
                if self.on_session is not None:
                    self.on_session(sid)  # S11: write the lineage now, not at the step boundary
                self.emit(SessionStarted(sid, resumed=resume is not None, step=step))
        elif isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
            sid = message.session_id or out.session_id
            for block in message.content:
                if isinstance(block, TextBlock) and block.text:
                    texts.append(block.text)
                    self.emit(AssistantText(block.text, session_id=sid, uuid=message.uuid, step=step))
                elif isinstance(block, ToolUseBlock):
                    self.emit(ToolCall(block.name, block.input, block.id, session_id=sid, uuid=message.uuid, step=step))
            usage = message.usage or {}
            if sid and message.model != "<synthetic>" and message.message_id not in seen_usage and usage:
                seen_usage.add(message.message_id or "")
                self.emit(ContextSize(sid, tokens_of(usage), step=step))
        elif isinstance(message, ResultMessage):
            out.session_id = message.session_id or out.session_id
            out.ok = not message.is_error and message.subtype == "success"
            out.text = message.result or ""
            out.cost_usd = message.total_cost_usd or 0.0
            out.num_turns = message.num_turns
            windows = [u.get("contextWindow") or 0 for u in (message.model_usage or {}).values()]
            self.window = max(windows, default=0) or self.window
            if not out.ok:
                detail = message.result or "; ".join(message.errors or []) or message.subtype
                out.error = f"{detail} (HTTP {message.api_error_status})" if message.api_error_status else detail
