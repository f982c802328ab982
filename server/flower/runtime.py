"""The Runtime: runs one agent turn on the real Claude Agent SDK; the only module that imports it (D3)."""

from __future__ import annotations

import asyncio
import collections
import functools
import json
import logging
import os
import shutil
import tempfile
import time
import uuid
import warnings
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import claude_agent_sdk
from claude_agent_sdk import (
    AssistantMessage,
    CanUseToolShadowedWarning,
    ClaudeAgentOptions,
    ClaudeSDKClient,
    CLINotFoundError,
    HookContext,
    HookInput,
    HookJSONOutput,
    HookMatcher,
    MirrorErrorMessage,
    PermissionResult,
    PermissionResultAllow,
    PermissionResultDeny,
    PermissionUpdate,
    ProcessError,
    ResultError,
    ResultMessage,
    SessionStoreEntry,
    SystemMessage,
    TextBlock,
    ToolPermissionContext,
    ToolResultBlock,
    ToolUseBlock,
    UserMessage,
)
from claude_agent_sdk.types import PermissionRuleValue

from .core import children
from .core.approvals import Approval, Approvals, describe, tool_of
from .core.background import AGENT, STATE_EVENTS, Background, Task, ceiling
from .core.budget import Budget as Budget
from .core.budget import BudgetSpent as BudgetSpent
from .core.caller import Caller
from .core.changes import WRITE_TOOLS, ChangeLog
from .core.context import tail_pages, tokens_of
from .core.errors import FlowerError, MissingCredentials
from .core.events import AssistantText, ContextSize, Event, Listener, SessionStarted, ToolCall, Waiting
from .core.events import emit_to as emit_to
from .core.host import give_back
from .core.journal import Journal
from .core.lock import WorkspaceBusy
from .core.manifest import StepResult
from .core.projects import project_key as project_key
from .core.resilience import CLI_MISSING, Failure, OfflineWait, Resilience, endpoint, reachable_async, wait_online
from .core.texts import say
from .core.trust import Trust, decide, project_memory
from .sessions import Sessions as Sessions
from .stores.prefetch import Prefetch
from .stores.reconcile import RESUME_PREFIX, config_dir, reconcile, sweep
from .stores.resume import Mirror, Resume, materialize

log = logging.getLogger("flower")
# A step whose entries sessions.db refused is stopped and says why (`_Attempt.refused`); the SDK's own log line of
# the same failure, printed by logging's last resort with no handler of ours, would only repeat it as noise.
logging.getLogger("claude_agent_sdk._internal.transcript_mirror_batcher").addHandler(logging.NullHandler())
# The work agent's allowed tools are meant to pass unasked; can_use_tool is for everything else (issue 24).
warnings.filterwarnings("ignore", category=CanUseToolShadowedWarning)

LOAD_TIMEOUT = ClaudeAgentOptions.load_timeout_ms / 1000


def _cli() -> str | None:
    """The CLI the SDK starts by default: the one its wheel bundles, else `claude` on PATH (None: left to the SDK)."""
    bundled = Path(claude_agent_sdk.__file__).parent / "_bundled" / ("claude.exe" if os.name == "nt" else "claude")
    return str(bundled) if bundled.is_file() else shutil.which("claude")


CLI = _cli()
"""What flower's launcher execs (core/children.py): the SDK is handed the launcher as its `cli_path`."""
"""Seconds a resume's store reads may take (the SDK's default bound on its own)."""

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
    follows_settings: bool = False
    """Its allowed tools and permission mode are the person's `allow` and `mode` settings (the work agent)."""


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
    prompt: str = ""
    """What this attempt asks: journaled once its session id is known."""
    known: str | None = None
    """The session id already journaled and handed to `on_session` (a new one is, before its CLI starts)."""
    background: Background = field(default_factory=Background)
    """The background work the CLI reported and its session state: when the attempt may stop reading (issue 32)."""


SettingSource = Literal["user", "project", "local"]
SETTING_SOURCES: list[SettingSource] = ["user", "project", "local"]
"""What agents load in a trusted folder, as the `claude` command does: CLAUDE.md, .claude/settings*.json, .mcp.json, ~/.claude."""
UNTRUSTED_SOURCES: list[SettingSource] = ["user"]
"""What agents load in an untrusted folder (D10): the user's own setup only. Without "project" the CLI reads neither the
folder's .claude/settings*.json (hooks, env, apiKeyHelper, permissions) nor its .mcp.json, nor its CLAUDE.md, which
flower then puts in the prompt itself (it is text)."""


MESSAGE_LIMIT = 256 * 2**20
"""Largest message the CLI may stream to flower. The SDK's 1 MB default ends the turn with a fatal reader error when the
model writes or reads a file of some 600 KB (a tool call's input and its echo travel in one message), so a long
workflow would fail on an ordinary generated file; the bound stays, against a runaway stream."""


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
        trust: Trust | None = None,
        allow: list[str] | None = None,
        mode: str | None = None,
        approvals: Approvals | None = None,
        prefetch: Prefetch | None = None,
        caller: Caller | None = None,
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
        self.records = self.sessions.records
        """The task's lineage, manifest, lock and wake mark: the same backend as its sessions."""
        # S23/S25: the model always resumes from the pruned view; `trim` only switches large-result trimming.
        self.store = self.sessions.pruned
        self.mirror = Mirror(self.raw_store)
        """The SDK's session store: it mirrors every entry the CLI writes; a resume is materialised here (`_attempt`)."""
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
        self.trust = trust or decide(self.workspace, {**os.environ, **self.env})
        """Whether the folder's own configuration may run (D10): decided once, for every agent of this Runtime."""
        self.allow, self.mode = allow, mode
        """The person's `allow` rules and permission `mode` for agents that follow the settings (None: the agent's own)."""
        self.approvals = approvals
        """Where a tool call outside the rules is asked (None: it is denied on the spot, as the CLI does unasked)."""
        self.caller = caller or Caller()
        """The front-end this wake runs for: who it asks besides `approvals`' own, and how long it waits (issue 33)."""
        self.journal = Journal(self.run_dir)
        """Every message of every run, kept as it arrives: what a kill keeps from the CLI's transcript (issue #22)."""
        self.changes = ChangeLog(self.run_dir, self.workspace)
        """What agents change in the workspace, with before-images; records only while a wake set its number (issue #25)."""
        self.prefetch = prefetch
        """A session's pruned view a worker is preparing (stores/prefetch.py): the first resume of that session takes it."""
        self.delegated: dict[str, Task] = {}
        """Every subagent and background shell the CLI reported, by task id (a subagent's is its agent id, as the
        permission prompt and the hooks name it): who asks, who wrote (issue 32)."""

    # -- sessions.db -----------------------------------------------------------------------
    def has_session(self, session_id: str) -> bool:
        """Whether sessions.db holds this workspace's session (S10)."""
        return self.sessions.has(self.workspace, session_id)

    async def entries(self, session_id: str) -> list[SessionStoreEntry] | None:
        """The raw stored transcript of a session, unpruned."""
        return await self.sessions.entries(self.workspace, session_id)

    async def sidechain(self, session_id: str, agent_id: str) -> list[Any]:
        """A subagent's transcript (the SDK's subkey `subagents/agent-<id>`, D12) as sessions.db stores it, then what
        only the CLI's own file of it holds (a kill can land before the mirror got it; the file is only read)."""
        key: Any = {"project_key": self.project_key, "session_id": session_id, "subpath": f"subagents/agent-{agent_id}"}
        stored: list[Any] = list(await self.raw_store.load(key) or [])
        known = {e.get("uuid") for e in stored if isinstance(e, dict)}
        name = Path(self.project_key) / session_id / "subagents" / f"agent-{agent_id}.jsonl"
        files = [config_dir({**os.environ, **self.env}) / "projects" / name,
                 *Path(tempfile.gettempdir()).glob(f"{RESUME_PREFIX}*/projects/{name}")]
        for path in files:
            for line in await asyncio.to_thread(_lines, path):
                if isinstance(line, dict) and line.get("uuid") not in known:
                    known.add(line.get("uuid"))
                    stored.append(line)
        return stored

    async def entry_count(self, session_id: str) -> int:
        """How many entries the session's main transcript stores."""
        return await self.raw_store.count(self.project_key, session_id)

    async def newest_first(self, session_id: str) -> AsyncIterator[list[Any]]:
        """The session's stored entries (unpruned), a page at a time from the newest back; nothing when none is stored."""
        ids = [row_id for row_id, _, _ in await self.raw_store.transcripts(self.project_key, [session_id])]
        if not ids:
            return
        before = 1 << 62
        for limit in tail_pages():
            rows = await self.raw_store.page(ids, before, limit)
            if rows:
                yield [entry for _, _, entry in rows]
            if len(rows) < limit:
                return
            before = rows[-1][0]

    async def context_size(self, session_id: str) -> int | None:
        """The session's last-round context size in tokens, read back from the end of sessions.db; None if unknown."""
        return await self.raw_store.last_context(self.project_key, session_id)

    async def close(self) -> None:
        """Close the journal, and the session store if this Runtime opened it."""
        self.journal.close()
        if self.prefetch is not None:  # never resumed here: its worker and files go
            self.prefetch.discard()
            self.prefetch = None
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

    def setting_sources(self) -> list[SettingSource]:
        """Which Claude Code settings every agent loads: none when isolated, the user's only until the folder is trusted."""
        if self.isolated:
            return []
        return list(SETTING_SOURCES if self.trust.trusted else UNTRUSTED_SOURCES)

    def permissions(self, agent: AgentSpec) -> tuple[list[str], str]:
        """The agent's allowed tool rules (with what the person allowed always) and permission mode."""
        allowed = list(self.allow if agent.follows_settings and self.allow is not None else agent.allowed_tools)
        mode = self.mode if agent.follows_settings and self.mode is not None else agent.permission_mode
        if self.approvals is not None and mode != "dontAsk":
            allowed += [r for r in self.approvals.always if r not in allowed and tool_of(r) not in agent.disallowed_tools]
        return allowed, mode

    def options(self, agent: AgentSpec, resume: str | None, stderr: Callable[[str], None], step: str | None = None,
                resumed: Resume | None = None, spawn: children.Spawn | None = None,
                session_id: str | None = None) -> ClaudeAgentOptions:
        """SDK options: the workspace as cwd, our store mirrored eagerly, a resume from the pruned view (`resumed`, D2).

        `spawn` starts the CLI through flower's launcher: recorded, and ended with this process (D5, core/children.py).
        `session_id` names a new session before its CLI starts (`_attempt`); never with `resume`.
        """
        sources = self.setting_sources()
        allowed, mode = self.permissions(agent)
        # A tool call the rules leave to a prompt is put to the person. Also set under dontAsk (where the CLI asks
        # nothing): the callback changes which tools the CLI offers (plan mode's), and a handoff turn that offered
        # other tools than its session's turns would get the CLI's "tools no longer available" note, and lose the cache.
        asks = self.approvals is not None
        # An untrusted folder's CLAUDE.md is still read (D10), but by flower: the CLI reads it only with "project".
        memory = project_memory(self.workspace) if sources == UNTRUSTED_SOURCES else ""
        append = "\n\n".join(part for part in (agent.instructions, memory) if part)
        env = {**self.env, "CLAUDE_CONFIG_DIR": str(resumed.config_dir)} if resumed is not None else self.env
        return ClaudeAgentOptions(
            cwd=str(self.workspace),
            system_prompt={"type": "preset", "preset": "claude_code", "append": append} if append else None,
            allowed_tools=allowed,
            disallowed_tools=list(agent.disallowed_tools),
            max_turns=agent.max_turns,
            permission_mode=mode,  # type: ignore[arg-type]  # checked against MODES by the settings
            can_use_tool=functools.partial(self._can_use_tool, step or agent.name) if asks else None,
            resume=resume,
            session_id=session_id,
            session_store=self.mirror,
            session_store_flush="eager",
            env={**env, **spawn.env} if spawn is not None else env,
            cli_path=spawn.cli_path if spawn is not None else None,
            # The judge's spec blocks writes whatever the sources.
            setting_sources=sources,
            model=agent.model or self.model,
            fallback_model=self.fallback_model,
            max_budget_usd=self.budget.remaining,
            stderr=stderr,
            hooks=self._hooks(),
            max_buffer_size=MESSAGE_LIMIT,
        )

    def _hooks(self) -> dict[Any, list[HookMatcher]]:
        """flower's own tool hooks (not the folder's): keep before-images of what agents change (core/changes.py)."""
        changes = self.changes

        async def before(data: HookInput, tool_use_id: str | None, _: HookContext) -> HookJSONOutput:
            if data["hook_event_name"] == "PreToolUse":
                # A subagent's write is attributed to it (issue 32): the hook names its agent id.
                await _quietly(changes.before_tool, data["tool_name"], data["tool_input"], tool_use_id or data["tool_use_id"],
                               self._subagent(data.get("agent_id")))
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
                  on_session: Callable[[str], None] | None = None, early: bool = True) -> StepResult:
        """Run one agent turn (resuming `resume` when given), riding out outages, and return its StepResult (S6, S21).

        `on_session(sid)` is called the instant a session id arrives (S11: the workflow writes its lineage there): for a
        new session before its CLI starts, unless not `early` (a handoff's successor: named once its CLI confirms it).
        """
        self.check_credentials()
        if self.budget.exhausted():  # the one place the spending cap is checked: before any run of the wake starts
            raise BudgetSpent(self.budget)
        res = self.resilience
        result = StepResult(step=step or agent.name, started_at=time.time(), resumed=resume is not None, attempts=0)
        session, message = resume, prompt
        while True:
            result.attempts += 1
            attempt = await self._attempt(agent, message, session, result.step, on_session, early)
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
                       on_session: Callable[[str], None] | None, early: bool = True) -> _Attempt:
        """One CLI process: stream its messages into events, return what it produced."""
        out = _Attempt(session_id=resume, prompt=prompt)
        stderr: collections.deque[str] = collections.deque(maxlen=40)
        texts: list[str] = []
        seen_usage: set[str] = set()
        planned: str | None = None
        if resume:
            await self.end_strays()  # D5: no CLI of a dead flower writes the session while it is read and resumed
            await self._reconcile(resume)
        else:
            # A new session is named here and recorded (journal, lineage) before its CLI starts (S11, issue 31). Learnt
            # from the CLI's init it was recorded while the CLI already asked the model: a kill in that write (a slow
            # fsync under load) left the model's answer in a session no lineage named, and the next wake started afresh.
            # Only an init seen names it a session to resume on a retry (`out.session_id`): the CLI may die before it.
            planned = str(uuid.uuid4())
            if early:  # a handoff's successor is recorded at its init: until then the file keeps the old session (S26)
                self._known(out, planned, on_session)
        refused = self.raw_store.refused
        resumed: Resume | None = None
        spawn = children.spawn(self.run_dir, CLI, resume or planned)
        try:
            if resume:  # the pruned view, where the CLI reads it (stores/resume.py); bounded as the SDK bounds its load
                prefetched = self.prefetch if self.prefetch is not None and self.prefetch.session_id == resume else None
                if prefetched is not None:
                    self.prefetch = None  # taken or discarded by this resume, never by a later one
                resumed = await materialize(self.store, self.project_key, resume, self.env, LOAD_TIMEOUT, prefetched)
            options = self.options(agent, resume, stderr.append, step, resumed, spawn, planned)
            # Issue 32: the CLI says when it owes no other turn (background work ended and told), as `claude -p` waits.
            options.env = {**options.env, STATE_EVENTS: "1"}
            async with ClaudeSDKClient(options) as client:
                try:
                    await client.query(prompt)
                    if resume:  # the session pruned and written is freed by now; the CLI works meanwhile
                        give_back()
                    await self._receive(client, out, functools.partial(
                        self._observe, out=out, texts=texts, seen_usage=seen_usage, step=step, resume=resume,
                        on_session=on_session))
                except BaseException:
                    # Cut off (Ctrl-C to flower alone, a stop, an error): nobody answers the CLI's tool calls now, and
                    # the SDK's close waits 5 s for it to exit, in which it went on refusing itself tools and asking the
                    # model again (chaos: 18 requests). It is interrupted now (D5); the journal keeps what it did (#22).
                    # In a thread: cancelled again, this await ends but the thread still ends the CLI.
                    if spawn is not None:
                        await asyncio.to_thread(spawn.end)
                    raise
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
        finally:
            if spawn is not None:  # the client has ended its CLI
                spawn.forget()
            if resumed is not None:  # the CLI has ended (the client closed it): its config dir holds credentials
                # In a thread: its rmdirs took ~110 ms of a loaded disk's time on the event loop at every resume, which
                # every status waited for (issue 35: soak.py's profile). Cancelled meanwhile, the thread still removes it.
                await asyncio.to_thread(resumed.remove)
        if self.raw_store.refused is not refused:  # also a refusal of the last flush, as the client closed
            out.ok, out.refused = False, self.raw_store.refused
        if not out.text:
            out.text = "\n".join(texts)
        return out

    async def _receive(self, client: ClaudeSDKClient, out: _Attempt, observe: Callable[[Any], None]) -> None:
        """Read the CLI's messages until its turn ended and the background work the step started ended and was told
        to the model (core/background.py). The first ResultMessage is not the end: stopping there left a background
        subagent's tool calls refused (its hooks unanswered) and its result untold (issue 32)."""
        bound = ceiling({**os.environ, **self.env})
        work = out.background
        messages = client.receive_messages().__aiter__()
        while not work.done:
            # The wait between turns is bounded, as the CLI bounds its own; never while the main agent works, a person
            # is asked, or a subagent runs (its model calls are bounded themselves).
            between = work.results and not work.turn and work.state != "requires_action" and not any(
                t.type == AGENT for t in work.running)
            try:
                message = await asyncio.wait_for(anext(messages), bound if between else None)
            except StopAsyncIteration:  # the CLI ended: what it ran in the background ended with it
                return
            except TimeoutError:
                log.info("background work still running %.0f s after the last turn, ended with the CLI: %s",
                         bound or 0, ", ".join(t.description or t.id for t in work.running))
                return
            observe(message)

    async def _can_use_tool(self, step: str, tool: str, tool_input: dict[str, Any],
                            context: ToolPermissionContext) -> PermissionResult:
        """The CLI's permission prompt, put to the person through the approvals (issue 24); never allowed by a timeout."""
        assert self.approvals is not None
        summary, kind, detail = describe(tool, tool_input)
        suggested = [r for u in context.suggestions if u.type == "addRules" and u.behavior == "allow" for r in u.rules or []]
        rules = [r.tool_name + (f"({r.rule_content})" if r.rule_content else "") for r in suggested]
        approval = Approval(id=context.tool_use_id or f"{tool}-{time.time()}", step=step, tool=tool, input=tool_input,
                            summary=summary, detail_kind=kind, detail=detail, suggestions=rules,
                            agent=self._subagent(context.agent_id))
        asker = self.caller.approve
        decision = await self.approvals.decide(approval, [asker] if asker is not None else [], self.caller.wait)
        if decision.choice == "deny":
            return PermissionResultDeny(message=decision.reason(tool))
        if decision.choice == "allow":
            return PermissionResultAllow()
        # Always: the CLI keeps its suggested rule in .claude/settings.local.json, as Claude Code does; flower
        # remembers it too, for this workspace's later runs (an untrusted folder's CLI does not read that file).
        keep = rules or [tool]
        self.approvals.always.extend(r for r in keep if r not in self.approvals.always)
        values = suggested or [PermissionRuleValue(tool_name=tool)]
        # "session" applies it to this CLI at once (an untrusted folder's CLI does not load the local file it is kept in).
        return PermissionResultAllow(updated_permissions=[
            PermissionUpdate(type="addRules", rules=values, behavior="allow", destination=where)
            for where in ("session", "localSettings")])

    async def end_strays(self) -> list[children.Stray]:
        """End the CLIs a dead flower left running in this run_dir (D5; the kernel already has, where it can)."""
        try:
            return await asyncio.to_thread(children.end_strays, self.run_dir)
        except Exception:  # a record that cannot be read ends nothing; the wake goes on
            log.exception("children: looking for CLIs a dead flower left running failed")
            return []

    async def sweep(self) -> list[children.Stray]:
        """End strays, then reconcile every CLI transcript of this workspace that changed since the last sweep.

        Returns the CLIs of a dead flower it ended, for the wake's one line (core/children.py). The sweep reads
        the CLIs' own transcripts: none may still be written by a stray while it does (judge rounds, sessions never named).
        """
        ended = await self.end_strays()
        try:
            await sweep(self.raw_store, self.project_key, self.run_dir, self.env)
        except FlowerError as exc:  # the store refuses writes (full, read-only): the wake's first write says so, once
            log.info("reconcile: the sweep stopped: %s", exc)
        except Exception:  # the wake goes on from sessions.db as it is: a failed import loses nothing stored
            log.exception("reconcile: the sweep of this workspace's CLI transcripts failed")
        return ended

    async def _reconcile(self, session_id: str) -> None:
        """Import what the CLI's own transcript has and sessions.db lacks, before the resume is materialised (D2)."""
        try:
            await reconcile(self.raw_store, self.project_key, session_id, self.env, self.run_dir)
        except FlowerError as exc:  # the store refuses writes (full, read-only): the attempt that follows says so, once
            log.info("reconcile: session %s not imported: %s", session_id, exc)
        except Exception:  # the resume goes on from sessions.db as it is: a failed import loses nothing stored
            log.exception("reconcile: importing the CLI's own transcript of session %s failed", session_id)

    def _subagent(self, agent_id: str | None) -> str | None:
        """Who a subagent is, for the person: its `Agent` call's description and type (None: the main agent)."""
        if not agent_id:
            return None
        task = self.delegated.get(agent_id)
        return task.label if task is not None else agent_id

    def _observe(self, message: Any, out: _Attempt, texts: list[str], seen_usage: set[str], step: str,
                 resume: str | None, on_session: Callable[[str], None] | None) -> None:
        """Keep what one message of the CLI says: journaled before the next model request (#22), shown as events."""
        if isinstance(message, SystemMessage):
            if message.subtype == "init":
                self._started(message, out, step, resume, on_session)
                return
            task = out.background.see(message.subtype, message.data)
            if task is not None:  # started or ended: journaled, so a wake after a kill can say what a kill ended
                self.delegated[task.id] = task
                if out.session_id:
                    self.journal.task(out.session_id, task.id, task.tool_use_id, task.type, task.description,
                                      task.background, task.status)
            if isinstance(message, MirrorErrorMessage):
                # The store missed entries (the CLI's own file has them): stop now rather than go on losing turns.
                raise RuntimeError(f"sessions.db did not store the newest entries: {message.error}")
        elif isinstance(message, AssistantMessage):
            self._said(message, out, texts, seen_usage, step)
        elif isinstance(message, UserMessage) and out.session_id and isinstance(message.content, list):
            for block in message.content:
                if isinstance(block, ToolResultBlock):  # the tool ran: journaled before the next model request
                    self.journal.result(out.session_id, block.tool_use_id, block.content, block.is_error,
                                        message.parent_tool_use_id)
        elif isinstance(message, ResultMessage):
            self._ended(message, out)

    def _started(self, message: SystemMessage, out: _Attempt, step: str, resume: str | None,
                 on_session: Callable[[str], None] | None) -> None:
        """The CLI's init: the session exists now (S11: the lineage is written at once, not at the step boundary)."""
        if isinstance(message.data.get("model"), str):
            self.model_seen = message.data["model"]
        sid = message.data.get("session_id")
        if not sid:
            return
        out.session_id = sid
        if sid != out.known:  # a resume, or a CLI that did not take the name it was given
            self._known(out, sid, on_session)
        self.emit(SessionStarted(session_id=sid, resumed=resume is not None, step=step))

    def _known(self, out: _Attempt, sid: str, on_session: Callable[[str], None] | None) -> None:
        """The attempt's session is known: its prompt journaled (#22) and the lineage written (S11), once."""
        out.known = sid
        self.journal.prompt(sid, out.prompt)
        if on_session is not None:
            on_session(sid)

    def _said(self, message: AssistantMessage, out: _Attempt, texts: list[str], seen_usage: set[str], step: str) -> None:
        """A model answer, the main agent's or a subagent's (shown with the `Agent` call it works for, issue 32)."""
        parent, synthetic = message.parent_tool_use_id, message.model == "<synthetic>"
        if parent is None:
            out.background.turn = True  # the main agent works: no wait between turns runs meanwhile
            out.category = message.error  # the CLI's category of an API error, on its synthetic message
            if message.model and not synthetic:
                self.model_seen = message.model
            sid = message.session_id or out.session_id
        elif synthetic or not out.session_id:
            return
        else:
            sid = out.session_id
        real = sid if not synthetic else None  # API-error filler is never journaled (S23)
        for block in message.content:
            if isinstance(block, TextBlock) and block.text:
                if parent is None:
                    texts.append(block.text)
                if real:
                    self.journal.said(real, message.message_id, block.text, parent)
                self.emit(AssistantText(text=block.text, session_id=sid, uuid=message.uuid, step=step, parent=parent))
            elif isinstance(block, ToolUseBlock):
                if real:
                    self.journal.call(real, message.message_id, block.id, block.name, block.input, parent)
                self.emit(ToolCall(name=block.name, input=block.input, tool_use_id=block.id, session_id=sid,
                                   uuid=message.uuid, step=step, parent=parent))
        usage = message.usage or {}
        if parent is None and sid and not synthetic and message.message_id not in seen_usage and usage:
            seen_usage.add(message.message_id or "")
            self.emit(ContextSize(session_id=sid, tokens=tokens_of(usage), step=step))

    def _ended(self, message: ResultMessage, out: _Attempt) -> None:
        """One per turn of the main agent: a later one (after background work woke it) is the step's answer;
        its cost is the CLI's total so far, its turns are its own (issue 32)."""
        out.background.result()
        out.session_id = message.session_id or out.session_id
        out.ok = not message.is_error and message.subtype == "success"
        out.text = message.result or ""
        out.cost_usd = message.total_cost_usd or 0.0
        out.num_turns += message.num_turns
        out.failure = None
        windows = [u.get("contextWindow") or 0 for u in (message.model_usage or {}).values()]
        self.window = max(windows, default=0) or self.window
        if not out.ok:
            detail = message.result or "; ".join(message.errors or []) or message.subtype
            out.failure = Failure.of(detail, status=message.api_error_status, category=out.category,
                                     reason=message.terminal_reason)

def _lines(path: Path) -> list[Any]:
    """The JSON lines of a CLI transcript file ([] when it cannot be read; a torn line is skipped)."""
    try:
        raw = path.read_bytes()
    except OSError:
        return []
    out = []
    for line in raw.splitlines():
        try:
            out.append(json.loads(line))
        except ValueError:
            continue
    return out


async def _quietly(fn: Callable[..., None], *args: Any) -> None:
    """Run a change-recording call in a worker thread; its failure is logged and never stops the tool call."""
    try:
        await asyncio.to_thread(fn, *args)
    except Exception:
        log.exception("changes: recording %s failed; the tool call goes on", args[0] if args else fn)

