"""The Runtime: runs one agent turn on the real Claude Agent SDK; the only module that imports it (D3)."""

from __future__ import annotations

import asyncio
import collections
import logging
import os
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from claude_agent_sdk import (
    AssistantMessage,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    CLINotFoundError,
    HookContext,
    HookInput,
    HookJSONOutput,
    HookMatcher,
    MirrorErrorMessage,
    ProcessError,
    ResultError,
    ResultMessage,
    SessionStoreEntry,
    SystemMessage,
    TextBlock,
    ToolUseBlock,
    project_key_for_directory,
)

from .core.changes import WRITE_TOOLS, ChangeLog
from .core.errors import FlowerError, MissingCredentials
from .core.events import AssistantText, ContextSize, Event, Listener, SessionStarted, ToolCall, Waiting
from .core.identity import workspace_identity
from .core.lock import WorkspaceBusy
from .core.manifest import StepResult
from .core.resilience import CLI_MISSING, Failure, OfflineWait, Resilience, endpoint, reachable_async, wait_online
from .core.texts import Said, say
from .stores.postgres import PostgresSessionStore
from .stores.prune import PruningSessionStore
from .stores.reconcile import reconcile, sweep
from .stores.shared import open_shared
from .stores.sqlite import SqliteSessionStore

log = logging.getLogger("flower")
# A step whose entries sessions.db refused is stopped and says why (`_Attempt.refused`); the SDK's own log line of
# the same failure, printed by logging's last resort with no handler of ours, would only repeat it as noise.
logging.getLogger("claude_agent_sdk._internal.transcript_mirror_batcher").addHandler(logging.NullHandler())

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
    permission_mode: Literal["default", "acceptEdits", "plan", "bypassPermissions", "dontAsk", "auto"] = "default"
    disallowed_tools: list[str] = field(default_factory=list)


@dataclass
class _Attempt:
    """What one CLI run produced."""

    session_id: str | None = None
    ok: bool = False
    text: str = ""
    failure: Failure | None = None
    category: str | None = None
    """The CLI's category of the last API error it reported (`AssistantMessage.error`)."""
    cost_usd: float = 0.0
    num_turns: int = 0
    refused: FlowerError | None = None
    """sessions.db refused a write during this attempt (a full disk, read-only): what to tell the person."""


@dataclass
class Budget:
    """What one wake may spend (`cap` in USD, None = no cap) and has spent, from every run's result cost (issue #15)."""

    cap: float | None = None
    spent: float = 0.0

    def exhausted(self) -> bool:
        """The next run would start at or over the cap."""
        return self.cap is not None and self.spent >= self.cap

    @property
    def remaining(self) -> float | None:
        """USD left under the cap (None = no cap): the SDK's `max_budget_usd` for the next run."""
        return None if self.cap is None else max(0.0, self.cap - self.spent)

    def said(self) -> Said:
        """What was spent and how to continue, in the reader's language."""
        cap = self.cap or 0.0
        return say("budget_spent", spent=f"{self.spent:.2f}", cap=f"{cap:.2f}", more=f"{max(cap * 2, 1):g}")


class BudgetSpent(FlowerError):
    """The wake's spending cap is reached: it stops cleanly here, and everything stays resumable."""

    def __init__(self, budget: Budget) -> None:
        said = budget.said()
        super().__init__(said.key, **said.fields)


SETTING_SOURCES: list[Literal["user", "project", "local"]] = ["user", "project", "local"]
"""What agents load as the `claude` command does: CLAUDE.md, .claude/settings*.json, .mcp.json, ~/.claude (issue #15)."""


def tokens_of(usage: dict[str, Any]) -> int:
    """Context size of one API response: input + cache read + cache creation tokens."""
    return sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


def context_of(entries: Sequence[Mapping[str, object]] | None) -> int | None:
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


def project_key(workspace: str | os.PathLike[str]) -> str:
    """The SDK's project key of a workspace: its sessions are stored under it (S12: the path is the key)."""
    return project_key_for_directory(Path(os.path.abspath(workspace)))


@dataclass(frozen=True)
class Sessions:
    """A run_dir's `sessions.db`: the raw store (every entry as written) and the pruned view the model resumes from (S23, D2)."""

    raw: SqliteSessionStore | PostgresSessionStore
    pruned: PruningSessionStore

    @classmethod
    def open(cls, run_dir: str | os.PathLike[str], *, trim: bool = False, store: str | None = None,
             workspace: str | os.PathLike[str] | None = None, project: str | None = None) -> Sessions:
        """The store of `run_dir` (opened on first use); `trim` switches large-result trimming only (S25).

        `store` = None or `sqlite`: run_dir/sessions.db. A `postgresql://` URL: the shared store, where the
        workspace's sessions, lineage, manifest and lock are keyed by its identity (`project` overrides it, D9).
        """
        run_dir = Path(os.path.abspath(run_dir))
        raw: SqliteSessionStore | PostgresSessionStore
        if store is None or store.strip().lower() in ("", "sqlite"):
            raw = SqliteSessionStore(run_dir / "sessions.db")
        else:
            where = workspace if workspace is not None else os.getcwd()
            raw = open_shared(store, run_dir, project_key(where), workspace_identity(where, project))
        return cls(raw, PruningSessionStore(raw, trim=trim, spill_dir=run_dir / "spill"))

    async def __aenter__(self) -> Sessions:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def ready(self) -> None:
        """Open the store now: a bad store URL is one line (StoreError) before anything runs or is written."""
        if isinstance(self.raw, PostgresSessionStore):
            await self.raw.open()

    def has(self, workspace: str | os.PathLike[str], session_id: str) -> bool:
        """Whether sessions.db holds this workspace's session (S10)."""
        return self.raw.has_session_sync(project_key(workspace), session_id)

    async def entries(self, workspace: str | os.PathLike[str], session_id: str) -> list[SessionStoreEntry] | None:
        """The raw stored transcript of a session, unpruned."""
        return await self.raw.load({"project_key": project_key(workspace), "session_id": session_id})

    def context(self, workspace: str | os.PathLike[str], session_id: str) -> int | None:
        """The session's last-round context size read back from sessions.db now (sync, read-only); None if unknown."""
        return context_of(self.raw.load_sync({"project_key": project_key(workspace), "session_id": session_id}))

    async def close(self) -> None:
        """Close the database connection (the next use reopens it)."""
        await self.raw.close()


class Runtime:
    """Runs agents in a workspace on the session store of a run_dir (S2, S4)."""

    def __init__(
        self,
        workspace: str | os.PathLike[str] = ".",
        run_dir: str | os.PathLike[str] = "runs",
        *,
        sessions: Sessions | None = None,
        trim: bool = False,
        resilience: Resilience | None = None,
        env: dict[str, str] | None = None,
        model: str | None = None,
        fallback_model: str | None = None,
        isolated: bool = False,
        budget: Budget | None = None,
    ):
        self.workspace = Path(os.path.abspath(workspace))
        # S4: run_dir is relative to the current directory, not to the workspace.
        self.run_dir = Path(os.path.abspath(run_dir))
        self.sessions = sessions or Sessions.open(self.run_dir, trim=trim)
        """Given by the caller (who closes it) or opened here (closed by `close`)."""
        self._owns_sessions = sessions is None
        self.trim = self.sessions.pruned.trim
        self.resilience = resilience or Resilience()
        self.env = dict(env or {})
        self.project_key = project_key(self.workspace)
        self.raw_store = self.sessions.raw
        # S23/S25: the model always resumes from the pruned view; `trim` only switches large-result trimming.
        self.store = self.sessions.pruned
        self.db_path = self.raw_store.path
        self.listeners: list[Listener] = []
        self.window: int | None = None
        """The model's context window as the CLI last reported it (its `modelUsage`), once known."""
        self.model, self.fallback_model, self.isolated = model, fallback_model, isolated
        """The model agents run on unless their AgentSpec names one (None: the CLI's default, or ANTHROPIC_MODEL)."""
        self.budget = budget or Budget()
        """What this wake may spend and has spent: checked at the start of every run, so no workflow code needs to."""
        self.model_seen: str | None = None
        """The model the CLI last reported using (its init message, assistant messages)."""
        self.changes = ChangeLog(self.run_dir, self.workspace)
        """What agents change in the workspace, with before-images; records only while a wake set its number (issue #25)."""

    # -- sessions.db -----------------------------------------------------------------------
    def has_session(self, session_id: str) -> bool:
        """Whether sessions.db holds this workspace's session (S10)."""
        return self.sessions.has(self.workspace, session_id)

    async def entries(self, session_id: str) -> list[SessionStoreEntry] | None:
        """The raw stored transcript of a session, unpruned."""
        return await self.sessions.entries(self.workspace, session_id)

    async def context_size(self, session_id: str) -> int | None:
        """The session's last-round context size in tokens, read back from sessions.db; None if unknown."""
        return context_of(await self.entries(session_id))

    async def close(self) -> None:
        """Close the session store if this Runtime opened it."""
        if self._owns_sessions:
            await self.sessions.close()

    async def __aenter__(self) -> Runtime:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    # -- running ---------------------------------------------------------------------------
    def emit(self, event: Event) -> None:
        """Hand an event to every listener; a listener's exception is logged and never changes the run."""
        emit_to(self.listeners, event)

    def check_credentials(self) -> None:
        """Fail early, with what to do, when the CLI would have no way to authenticate."""
        env = {**os.environ, **self.env}
        if any(env.get(name) for name in CREDENTIAL_ENV):
            return
        config = Path(env.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")
        if (config / ".credentials.json").exists():
            return
        raise MissingCredentials()

    def options(self, agent: AgentSpec, resume: str | None, stderr: Callable[[str], None]) -> ClaudeAgentOptions:
        """SDK options: the workspace as cwd, our store mirrored eagerly, resume through the store (D2)."""
        return ClaudeAgentOptions(
            cwd=str(self.workspace),
            system_prompt={"type": "preset", "preset": "claude_code", "append": agent.instructions} if agent.instructions else None,
            allowed_tools=list(agent.allowed_tools),
            disallowed_tools=list(agent.disallowed_tools),
            max_turns=agent.max_turns,
            permission_mode=agent.permission_mode,
            resume=resume,
            session_store=self.store,
            session_store_flush="eager",
            env=self.env,
            # The user's Claude Code setup applies unless isolated (issue #15); the judge's spec blocks writes either way.
            setting_sources=[] if self.isolated else list(SETTING_SOURCES),
            model=agent.model or self.model,
            fallback_model=self.fallback_model,
            max_budget_usd=self.budget.remaining,
            stderr=stderr,
            hooks=self._hooks(),
        )

    def _hooks(self) -> dict[Any, list[HookMatcher]]:
        """flower's own tool hooks (not the folder's): keep before-images of what agents change (core/changes.py)."""
        changes = self.changes

        async def before(data: HookInput, tool_use_id: str | None, _: HookContext) -> HookJSONOutput:
            if data["hook_event_name"] == "PreToolUse":
                await _quietly(changes.before_tool, data["tool_name"], data["tool_input"], tool_use_id or data["tool_use_id"])
            return {}

        async def after(data: HookInput, tool_use_id: str | None, _: HookContext) -> HookJSONOutput:
            if data["hook_event_name"] in ("PostToolUse", "PostToolUseFailure"):
                await _quietly(changes.after_tool, data["tool_name"], tool_use_id or data["tool_use_id"])
            return {}

        writes = "|".join(sorted(WRITE_TOOLS | {"Bash"}))
        return {"PreToolUse": [HookMatcher(matcher=writes, hooks=[before])],
                "PostToolUse": [HookMatcher(matcher="Bash", hooks=[after])],
                "PostToolUseFailure": [HookMatcher(matcher="Bash", hooks=[after])]}

    async def run(self, agent: AgentSpec, prompt: str, resume: str | None = None, *, step: str | None = None,
                  on_session: Callable[[str], None] | None = None) -> StepResult:
        """Run one agent turn (resuming `resume` when given), riding out outages, and return its StepResult (S6, S21).

        `on_session(sid)` is called the instant a session id arrives (S11: the workflow writes its lineage there).
        """
        self.check_credentials()
        if self.budget.exhausted():  # the one place the spending cap is checked: before any run of the wake starts
            raise BudgetSpent(self.budget)
        res = self.resilience
        result = StepResult(step=step or agent.name, started_at=time.time(), resumed=resume is not None, attempts=0)
        session, message = resume, prompt
        while True:
            result.attempts += 1
            attempt = await self._attempt(agent, message, session, result.step, on_session)
            session = attempt.session_id or session
            result.ok, result.text, result.error, result.said = attempt.ok, attempt.text, None, None
            result.cost_usd += attempt.cost_usd
            result.num_turns += attempt.num_turns
            self.budget.spent += attempt.cost_usd
            if attempt.ok:
                break
            # D2: sessions.db refused the entries: the next wake resumes from it, so retrying only loses turns.
            # The CLI stopped at max_budget_usd (or spent the cap failing): no retry either.
            stop = attempt.refused.said if attempt.refused is not None else self.budget.said() if self.budget.exhausted() else None
            if stop is not None:
                result.said = stop
                result.error = str(result.said)
                result.errors.append(result.error)
                break
            failure = attempt.failure or Failure.of(str(say("no_result")), category=attempt.category)
            # The CLI's own text (and HTTP status) is the technical detail: shown as it is, untranslated (D4).
            said = say("no_result") if attempt.failure is None else None
            result.error, result.said = failure.detail, said
            result.errors.append(failure.detail)
            # S21: the kind was decided from the SDK's fields (status, category, exit) before any text. The agent's
            # own turn limit is no outage: a retry would resume the session past the limit its caller set.
            if failure.reason == "max_turns" or not res.should_retry(failure.kind, result.attempts):
                if failure.kind == "fatal":
                    result.said = say("not_retried", detail=said or failure.detail, advice=failure.fix)
                    result.error = str(result.said)
                break
            if not await self._wait(result, failure.detail):
                result.said = say("gave_up_offline", seconds=f"{res.max_offline_wait:.0f}", detail=said or failure.detail)
                result.error = str(result.said)
                break
            if session:
                # S22: resume the same session so earlier work is kept; the note carries no error detail.
                message, result.resumed = res.resume_prompt, True
        result.session_id = session
        if session:
            result.context = await self.context_size(session)
        result.window, result.model = self.window, self.model_seen
        result.ended_at = time.time()
        return result

    async def _wait(self, result: StepResult, error: str) -> bool:
        """Wait before the next attempt: probe, wait out an outage, then back off (S20, S21). False = gave up."""
        res = self.resilience
        host, port = endpoint({**os.environ, **self.env})

        def offline(w: OfflineWait) -> None:
            self.emit(Waiting(reason="offline", attempt=result.attempts, max_attempts=res.max_attempts,
                              seconds=w.next_probe_in, error=error, offline_since=w.offline_since, step=result.step))

        if not await reachable_async(host, port, res.probe_timeout) and not await wait_online(res, host, port, offline):
            return False
        pause = res.delay(result.attempts)
        self.emit(Waiting(reason="backoff", attempt=result.attempts, max_attempts=res.max_attempts,
                          seconds=pause, error=error, step=result.step))
        await asyncio.sleep(pause)
        return True

    async def _attempt(self, agent: AgentSpec, prompt: str, resume: str | None, step: str,
                       on_session: Callable[[str], None] | None) -> _Attempt:
        """One CLI process: stream its messages into events, return what it produced."""
        out = _Attempt(session_id=resume)
        stderr: collections.deque[str] = collections.deque(maxlen=40)
        texts: list[str] = []
        seen_usage: set[str] = set()
        if resume:
            await self._reconcile(resume)
        refused = self.raw_store.refused
        try:
            async with ClaudeSDKClient(self.options(agent, resume, stderr.append)) as client:
                await client.query(prompt)
                async for message in client.receive_response():
                    self._observe(message, out, texts, seen_usage, step, resume, on_session)
        except WorkspaceBusy:  # a shared lock lost to another flower (D9): no retry, this wake stops
            raise
        except Exception as exc:  # the CLI died or could not start: keep what arrived, report why
            tail = "\n".join(stderr).strip()
            out.ok = False
            # An error result already read says more than the exit that follows it; else the exception's own fields.
            out.failure = out.failure or Failure.of(
                f"{type(exc).__name__}: {exc}" + (f"\n{tail}" if tail else ""),
                status=exc.api_error_status if isinstance(exc, ResultError) else None,
                category=CLI_MISSING if isinstance(exc, CLINotFoundError) else out.category,
                reason=exc.terminal_reason if isinstance(exc, ResultError) else None,
                exit_code=exc.exit_code if isinstance(exc, ProcessError) else None,
            )
        if self.raw_store.refused is not refused:  # also a refusal of the last flush, as the client closed
            out.ok, out.refused = False, self.raw_store.refused
        if not out.text:
            out.text = "\n".join(texts)
        return out

    async def sweep(self) -> None:
        """Reconcile every CLI transcript of this workspace that changed since the last sweep (judge rounds, sessions never named)."""
        try:
            await sweep(self.raw_store, self.project_key, self.run_dir, self.env)
        except FlowerError as exc:  # the store refuses writes (full, read-only): the wake's first write says so, once
            log.info("reconcile: the sweep stopped: %s", exc)
        except Exception:  # the wake goes on from sessions.db as it is: a failed import loses nothing stored
            log.exception("reconcile: the sweep of this workspace's CLI transcripts failed")

    async def _reconcile(self, session_id: str) -> None:
        """Import what the CLI's own transcript has and sessions.db lacks, before the SDK materialises the resume (D2)."""
        try:
            await reconcile(self.raw_store, self.project_key, session_id, self.env, self.run_dir)
        except FlowerError as exc:  # the store refuses writes (full, read-only): the attempt that follows says so, once
            log.info("reconcile: session %s not imported: %s", session_id, exc)
        except Exception:  # the resume goes on from sessions.db as it is: a failed import loses nothing stored
            log.exception("reconcile: importing the CLI's own transcript of session %s failed", session_id)

    def _observe(self, message: Any, out: _Attempt, texts: list[str], seen_usage: set[str], step: str,
                 resume: str | None, on_session: Callable[[str], None] | None) -> None:
        if isinstance(message, SystemMessage) and message.subtype == "init":
            sid = message.data.get("session_id")
            if isinstance(message.data.get("model"), str):
                self.model_seen = message.data["model"]
            if sid:
                out.session_id = sid
                if on_session is not None:
                    on_session(sid)  # S11: write the lineage now, not at the step boundary
                self.emit(SessionStarted(session_id=sid, resumed=resume is not None, step=step))
        elif isinstance(message, AssistantMessage) and message.parent_tool_use_id is None:
            sid = message.session_id or out.session_id
            out.category = message.error  # the CLI's category of an API error, on its synthetic message
            if message.model and message.model != "<synthetic>":
                self.model_seen = message.model
            for block in message.content:
                if isinstance(block, TextBlock) and block.text:
                    texts.append(block.text)
                    self.emit(AssistantText(text=block.text, session_id=sid, uuid=message.uuid, step=step))
                elif isinstance(block, ToolUseBlock):
                    self.emit(ToolCall(name=block.name, input=block.input, tool_use_id=block.id,
                                       session_id=sid, uuid=message.uuid, step=step))
            usage = message.usage or {}
            if sid and message.model != "<synthetic>" and message.message_id not in seen_usage and usage:
                seen_usage.add(message.message_id or "")
                self.emit(ContextSize(session_id=sid, tokens=tokens_of(usage), step=step))
        elif isinstance(message, MirrorErrorMessage):
            # The store missed entries (the CLI's own file has them): stop now rather than go on losing turns.
            raise RuntimeError(f"sessions.db did not store the newest entries: {message.error}")
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
                out.failure = Failure.of(detail, status=message.api_error_status, category=out.category,
                                         reason=message.terminal_reason)


async def _quietly(fn: Callable[..., None], *args: Any) -> None:
    """Run a change-recording call in a worker thread; its failure is logged and never stops the tool call."""
    try:
        await asyncio.to_thread(fn, *args)
    except Exception:
        log.exception("changes: recording %s failed; the tool call goes on", args[0] if args else fn)


def emit_to(listeners: list[Listener], event: Event) -> None:
    """Hand `event` to each listener; one that raises is logged and skipped: a front-end's bug never breaks a run."""
    for listener in list(listeners):
        try:
            listener(event)
        except Exception:
            log.exception("a listener failed on a %s event; the run goes on", event.kind)
