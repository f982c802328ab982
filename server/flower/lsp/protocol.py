"""The flower editor protocol: one attrs class per method and notification, mirrored 1:1 in `protocol.md` (D4).

Python names are snake_case; on the wire every field is camelCase (the lsprotocol converter's
rule). Every field of a server → client payload is always present; `null` means "none" or
"not known". Client → server params are strict: unknown fields and wrong types are refused
with InvalidParams and a message that says what to send instead.
"""

from __future__ import annotations

import dataclasses
import logging
import re
from collections.abc import Callable
from typing import Any, ClassVar, Literal, TypeVar

import attrs
import cattrs
from cattrs.gen import make_dict_structure_fn, make_dict_unstructure_fn, override
from lsprotocol.converters import get_converter
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidParams, JsonRpcServerError

from ..core import wire
from ..core.banner import label
from ..core.manifest import in_work_session
from ..core.redact import redact as redact  # D6: one redaction for every exit, re-exported for folders.py and server.py
from ..status import Status

# -- method names and error codes: core/wire.py, apart from pygls, so that the engine's client in a terminal uses them
# without importing the language server (issue 34); the same values under the names the server's side uses.
WAKE = wire.WAKE
SAY = wire.SAY
NEW = wire.NEW
STATUS = wire.STATUS
HISTORY = wire.HISTORY
ATTACH = wire.ATTACH
DETACH = wire.DETACH
RUNS = wire.RUNS
CANCEL = wire.CANCEL
CHANGES = wire.CHANGES
REVERT = wire.REVERT
ASK = wire.ASK
APPROVE = wire.APPROVE
ANSWER = wire.ANSWER
APPROVED = wire.APPROVED
STATE = wire.STATE
BANNER = wire.BANNER
HEADER = wire.HEADER
STEP_START = wire.STEP_START
STEP_END = wire.STEP_END
SESSION = wire.SESSION
TRANSCRIPT = wire.TRANSCRIPT
PRUNED = wire.PRUNED
CONTEXT = wire.CONTEXT
WAIT = wire.WAIT
VERDICT = wire.VERDICT
QUESTION = wire.QUESTION
HANDOFF = wire.HANDOFF
NOTICE = wire.NOTICE
UNKNOWN_FOLDER = wire.UNKNOWN_FOLDER
WORKSPACE_BUSY = wire.WORKSPACE_BUSY
FLOWER_ERROR = wire.FLOWER_ERROR
MISSING_CREDENTIALS = wire.MISSING_CREDENTIALS
UNEXPECTED = wire.UNEXPECTED

T = TypeVar("T")
Role = Literal["user", "assistant"]
EntryKind = Literal["text", "tool", "result"]
PrunedVerdict = Literal["hidden", "rewritten", "added"]
ChangeKind = Literal["created", "edited", "deleted"]


# -- client → server: requests -----------------------------------------------------------------
@attrs.define
class WakeParams:
    """`flower/wake`: continue the workflow in a folder, or start it."""

    folder: str
    """The workspace folder's URI, exactly as in LSP `WorkspaceFolder.uri`."""
    text: str | None = None
    """On a fresh folder: the task. On a used folder: one more sentence (S15). Absent: just continue (S1)."""
    env: dict[str, str] | None = None
    """The requesting client's environment: a wake started here runs with the variables that travel (core/travel.py, D11)."""

    EXAMPLE: ClassVar[str] = '{"folder": "file:///home/me/app", "text": "also support dark mode"}'


@attrs.define
class WakeResult:
    """What `flower/wake` did; the work goes on in the background."""

    folder: str
    """The folder URI."""
    action: Literal["started", "joined"]
    """`started`: a new wake began. `joined`: one was already running in this folder; this wake joined it (D5)."""
    delivered: bool
    """True when `text` was handed to the running work session (`joined` with a text)."""
    status: FolderStatus
    """The folder's status right after the call."""


@attrs.define
class SayParams:
    """`flower/say`: one sentence for the work session."""

    folder: str
    """The workspace folder's URI."""
    text: str
    """The sentence; must not be blank."""
    env: dict[str, str] | None = None
    """The requesting client's environment: a wake started here runs with the variables that travel (core/travel.py, D11)."""

    EXAMPLE: ClassVar[str] = '{"folder": "file:///home/me/app", "text": "use SQLite, not Postgres"}'


@attrs.define
class SayResult:
    """What `flower/say` did."""

    folder: str
    """The folder URI."""
    action: Literal["delivered", "started"]
    """`delivered`: queued for the running work session's next turn. `started`: nothing was running, so it woke the folder with it."""
    status: FolderStatus
    """The folder's status right after the call."""


@attrs.define
class NewParams:
    """`flower/new`: archive the current task and start another (S28)."""

    folder: str
    """The workspace folder's URI."""
    text: str
    """The new task; must not be blank."""
    env: dict[str, str] | None = None
    """The requesting client's environment: a wake started here runs with the variables that travel (core/travel.py, D11)."""

    EXAMPLE: ClassVar[str] = '{"folder": "file:///home/me/app", "text": "write the user guide"}'


@attrs.define
class NewResult:
    """What `flower/new` did."""

    folder: str
    """The folder URI."""
    action: Literal["started"]
    """Always `started`: the old task was archived (a running one cancelled first) and the new one began."""
    cancelled: bool
    """True when a running wake was cancelled to make room for the new task."""
    status: FolderStatus
    """The folder's status right after the call."""


@attrs.define
class AnswerParams:
    """`flower/answer`: answer the folder's open tool question `id` (e.g. from a window reloaded while it waited)."""

    folder: str
    id: str
    decision: str
    """`allow`, `allowAlways` or `deny`; anything else is a denial."""
    message: str | None = None

    EXAMPLE: ClassVar[str] = '{"folder": "file:///home/me/app", "id": "toolu_01", "decision": "allow"}'


@attrs.define
class AnswerResult:
    """Whether the answer closed the question (false: it was already answered, or is not open)."""

    folder: str
    id: str
    accepted: bool


@attrs.define
class StatusParams:
    """`flower/status`: what each folder is doing; answered at once, also while a workflow streams."""

    folder: str | None = None
    """One folder's URI; absent or null: every folder."""
    fresh: bool = False
    """Read the records and the workspace's files again first (bounded): a client that saw `目标.md` or `需求.md` change."""

    EXAMPLE: ClassVar[str] = '{"folder": "file:///home/me/app"}'


@attrs.define
class Goal:
    """One item of the goal checklist `目标.md`."""

    text: str
    """The goal as written."""
    done: bool
    """Ticked (`- [x]`)."""


@attrs.define
class WaitState:
    """A retry wait in progress (S21)."""

    reason: str
    """`backoff` (waiting before a retry) or `offline` (the API is unreachable; probing)."""
    seconds: float
    """How long this wait lasts (offline: until the next probe)."""
    attempt: int
    """The attempt that failed (1 = the first try)."""
    max_attempts: int
    """Attempts allowed in all."""
    until: float
    """Unix time at which the wait ends (the retry or the next probe)."""
    seconds_left: float
    """`until` minus the server's clock when the status was made, never below 0."""


@attrs.define
class VerdictState:
    """The judge's last verdict (S14)."""

    round: int
    """The work round judged (1-based)."""
    passed: bool
    """True: every goal met."""
    reasons: str
    """What the judge said was missing (or why it passed)."""


@attrs.define
class Cost:
    """What was spent, in USD, and the spending cap (`maxCost`)."""

    wake: float
    """Spent by this server's current (or last) wake in the folder: every step, round and judge."""
    task: float
    """Spent by the whole task so far (the sum of its manifest rows, every process)."""
    max: float | None
    """The spending cap of one wake (`maxCost`), or null."""


@attrs.define
class Forecast:
    """Work rounds left before the handoff threshold and the window at the recent slope, and the cost per round (issue 34)."""

    rounds: int
    """Work rounds the task has run."""
    slope: float | None
    """Tokens the work session's context grows per work round lately (its last 10 rounds); null with fewer than two."""
    to_handoff: int | None
    """Work rounds until the context reaches `handoffAt` at that slope (0: there already); null when it does not grow."""
    to_window: int | None
    """Work rounds until it reaches `window` (the wall) at that slope; null when it does not grow."""
    wake_per_round: float | None
    """USD per work round of this (or the last) wake, every step and judge counted; null before one."""
    task_per_round: float | None
    """USD per work round of the whole task."""
    points: list[ContextPoint] = attrs.field(factory=list)
    """The context each of the task's last 100 work rounds ended at, oldest first: the chart's series."""


@attrs.define
class ContextPoint:
    """One work round of the chart (issue 34; S19, S26)."""

    round: int
    """The work round's number in the task (1 = the first; retries count, as `rounds` does)."""
    context: int | None
    """The work session's context in tokens when the round ended; null when the round recorded none (a gap)."""
    handoff: bool
    """The round ran in a new session: a handoff (S26) put the context back down before it."""


@attrs.define
class SettingsProblem:
    """A setting the folder's server cannot use: its wakes are refused with `message` until it is fixed."""

    message: str
    """The one line: the file, variable or editor setting, the key, what is expected and what it got."""
    key: str
    """The setting's key as the settings file names it (e.g. `handoff_at`)."""
    option: str | None
    """The `initializationOptions` key the bad value came from (e.g. `handoffAt`), or null."""
    file: str | None
    """The settings file the bad value came from (`.flower.toml` or `pyproject.toml`), or null."""


@attrs.define
class ApprovalDetail:
    """What a tool call would do, to show before it runs."""

    kind: Literal["command", "diff", "url", "input"]
    text: str
    """The command; a unified diff (lines `+`, `-`, ` `) for Write/Edit; the URL; the input as JSON."""


@attrs.define
class ApproveParams:
    """`flower/approve` (server → client): a tool call outside `allow` waits for the person (issue 24)."""

    folder: str
    id: str
    """The tool call's id: an answer (here, or by `flower/answer` from any window) finds its question by it."""
    step: str
    tool: str
    input: dict[str, Any]
    summary: str
    """One line: the command, the path, the URL."""
    detail: ApprovalDetail
    suggestions: list[str]
    """The rules the CLI suggests keeping for "always" (Claude Code syntax, e.g. `Bash(npm test:*)`)."""
    since: float
    """Unix time the question was asked."""
    agent: str | None = None
    """The subagent asking (its `Agent` call's description and type); null when the main agent asks (issue 32)."""


@attrs.define
class ApproveResult:
    """The person's answer; one that does not parse is a denial, never an allow."""

    decision: Literal["allow", "allowAlways", "deny"]
    message: str | None = None
    """With deny: the sentence the model receives as the reason."""


@attrs.define
class WaitingFor:
    """What the run waits for now, since when (`approval`: the open question is in `approval`)."""

    what: Literal["approval", "question", "outage"]
    since: float
    approval: ApproveParams | None = None


@attrs.define
class FolderStatus:
    """Everything the status bar and sidebar show for one folder."""

    folder: str
    """The folder URI."""
    name: str
    """The folder's display name (`WorkspaceFolder.name`)."""
    workspace: str
    """The folder's path on disk (the lineage key, P2)."""
    run_dir: str
    """`<workspace>/runs`: lineage.json, manifest.json, sessions.db."""
    woke: int
    """How many wakes this workspace has had (0 = never run)."""
    steps: dict[str, str]
    """Step name → its agent session id (the lineage, S5)."""
    goals: list[Goal]
    """The goal checklist with ticks; empty when `目标.md` is missing."""
    context: int | None
    """The work session's context size in tokens: last seen by this server, else read from sessions.db; null if unknown."""
    window: int
    """The model's context window in tokens (for the gauge)."""
    handoff_at: int
    """The context size in tokens at which work hands off to a new session (S26): the gauge warns from here."""
    running: bool
    """A wake is in progress in this server."""
    step: str | None
    """The step running now (e.g. `干活#round2`), or null."""
    waiting: WaitState | None
    """A retry wait in progress, or null."""
    verdict: VerdictState | None
    """The judge's last verdict on the current work session (seen here, else from the manifest), or null."""
    interrupted: bool = False
    """A wake here was cut off (its process died, the window reloaded, the server crashed) and nothing has continued or finished it since."""
    elsewhere: bool = False
    """A wake of this task is under way in another process: a terminal's, a closing window's server, another machine's."""
    model: str | None = None
    """The model in use: from the settings, else the one the CLI last reported; null if unknown (the CLI's default)."""
    cost: Cost = attrs.field(factory=lambda: Cost(0.0, 0.0, None))
    """What this wake and the whole task have spent, and the cap."""
    settings: SettingsProblem | None = None
    """A setting that cannot be used (wakes are refused until it is fixed), or null."""
    waiting_for: WaitingFor | None = None
    """The person (a tool approval, a clarifying question) or the API (an outage) the run waits for, or null."""
    trusted: bool = False
    """The folder's own Claude Code settings and .mcp.json servers run for its agents (D10)."""
    trust: str = ""
    """Who decided, as one sentence in the client's language (e.g. "the editor's workspace trust")."""
    unreachable: str | None = None
    """The task's store is not answering (a shared PostgreSQL down): one line saying so, in the editor's language; the
    rest of this status is what was read before it stopped answering. Null while the store answers."""
    store_bytes: int | None = None
    """What the task's store takes on disk in bytes (sessions.db with its -wal/-shm, or the shared schema's tables);
    null until the server read it."""
    background: list[str] = attrs.field(factory=list)
    """The subagents and background shells the running wake's CLI runs now (issue 32), e.g. `write the docs
    (general-purpose)`; empty when none runs."""
    has_task: bool = False
    """The folder has a task: its lineage has a session, or its requirements are written (wherever its run dir or store
    is). A client starts a folder's server at startup only for a folder with a task (issue 33)."""
    work_session: bool = False
    """`step` is the work session's (a work round or retry): the gauge follows it; false for clarify, goals, the judge's
    rounds and a handoff note, and when idle (issue 33)."""
    step_label: str | None = None
    """`step` as the client's language says it (`work · round 2`, `judge · round 1`), or null when idle."""
    forecast: Forecast | None = None
    """Where the work session's context is heading (issue 34), or null before the task's first work round."""


@attrs.define
class StatusResult:
    """`flower/status` result."""

    folders: list[FolderStatus]
    """One entry for the requested folder, or one per workspace folder."""


@attrs.define
class HistoryParams:
    """`flower/history`: a page of the folder's stored transcript, newest page first."""

    folder: str
    """The workspace folder's URI."""
    session_id: str | None = None
    """Only this session (one of the folder's); absent: every session of the folder, interleaved by seq."""
    before: int | None = None
    """Only entries with seq below this (the previous page's `nextBefore`); absent: the newest page."""
    limit: int | None = None
    """Entries per page, 1..1000; absent: 200."""

    EXAMPLE: ClassVar[str] = '{"folder": "file:///home/me/app", "before": 18230, "limit": 200}'


@attrs.define
class HistorySession:
    """One session of the folder, as `flower/history` lists it."""

    session_id: str
    """The session."""
    steps: list[str]
    """The step names that ran in it, in the order they first did (the judge's `干活·判定#N`)."""
    entries: int
    """Entries stored for it."""
    current: bool
    """The lineage maps a step to it now."""


@attrs.define
class HistoryResult:
    """`flower/history` result: one page, oldest first."""

    folder: str
    """The folder URI."""
    entries: list[TranscriptNotification]
    """This page, oldest first, with seq = the position in sessions.db."""
    next_before: int | None
    """`before` for the page before this one; null when this page reaches the oldest entry."""
    sessions: list[HistorySession]
    """Every session of the folder that sessions.db holds, oldest first."""
    pending: list[str]
    """Sessions in this page whose pruner verdicts are still computed; a `flower/pruned` follows for each."""
    steps: list[StepSummary] = attrs.field(factory=list)
    """Every step run the manifest records (rounds, retries, judge rounds), oldest first: the transcript's section heads."""


@attrs.define
class StepSummary:
    """One run of a step as the manifest recorded it."""

    step: str
    """Its manifest name (`干活#round2`, `干活·判定#1`, S7)."""
    session_id: str | None
    """Its session."""
    ok: bool
    """It finished without error."""
    cost_usd: float
    """What it spent, in USD."""
    duration_s: float | None
    """How long it ran, in seconds."""
    started_at: float | None
    """Unix time it started."""
    passed: bool | None
    """A judge round: whether the work passed; null for other steps."""
    label: str = ""
    """Its name in the client's language (`work · round 2`, `judge · round 1`): the section head's title (issue 33)."""


@attrs.define
class ChangesParams:
    """`flower/changes`: the files the agents created, edited or deleted, per wake, against the workspace now."""

    folder: str
    """The workspace folder's URI."""

    EXAMPLE: ClassVar[str] = '{"folder": "file:///home/me/app"}'


@attrs.define
class ChangedFile:
    """One file a wake changed that still differs from its before-image."""

    path: str
    """Workspace-relative, `/`-separated."""
    change: ChangeKind
    """`created` (did not exist before the wake), `edited`, or `deleted` (gone now)."""
    added: int | None
    """Lines added since the before-image; null for binary content or when there is no before-image."""
    removed: int | None
    """Lines removed since the before-image; null as for `added`."""
    before: str | None
    """The before-image's id (sha256 of its bytes); null for a created file, or one too large to have been kept."""
    before_path: str | None
    """Where the before-image's bytes are on disk (under `<runDir>/changes/objects/`), for a diff editor; null with `before`."""
    tool: str
    """The tool that first changed it in the wake: `Write`, `Edit`, `MultiEdit`, `NotebookEdit` or `Bash`."""
    agent: str | None = None
    """The subagent whose tool call that was (its description and type); null for the main agent (issue 32)."""


@attrs.define
class ChangedWake:
    """The changes of one wake."""

    wake: int
    """The wake's number (`woke` at the time)."""
    running: bool
    """This wake is running now: its list still grows."""
    files: list[ChangedFile]
    """Its changed files, by path."""


@attrs.define
class ChangesResult:
    """`flower/changes` result."""

    folder: str
    """The folder URI."""
    wakes: list[ChangedWake]
    """Wakes with at least one changed file, oldest first."""


@attrs.define
class RevertParams:
    """`flower/revert`: put files back as they were before a wake changed them. Refused while a wake runs."""

    folder: str
    """The workspace folder's URI."""
    path: str | None = None
    """One file (workspace-relative or absolute): its before-image of `wake`, else of the newest wake that changed it."""
    wake: int | None = None
    """Without `path`: every file of this wake."""

    EXAMPLE: ClassVar[str] = '{"folder": "file:///home/me/app", "path": "src/app.py", "wake": 2}'


@attrs.define
class RevertResult:
    """`flower/revert` result."""

    folder: str
    """The folder URI."""
    reverted: list[str]
    """The workspace-relative paths restored (a file the wake created is deleted)."""


# -- client → server: the engine's requests (D11) ----------------------------------------------
@attrs.define
class AttachParams:
    """`flower/attach`: send this connection the folder's notifications from now on."""

    folder: str
    """The folder's URI (served from now on if it was not)."""

    EXAMPLE: ClassVar[str] = '{"folder": "file:///home/me/app"}'


@attrs.define
class AttachResult:
    """`flower/attach` result: where live notifications begin for this connection."""

    folder: str
    """The folder URI."""
    status: FolderStatus
    """The folder's status at the moment of the attach."""
    cursor: int
    """The `seq` of the last `flower/transcript` the folder sent before the attach: every live one after it has a greater `seq`."""
    recent: list[TranscriptNotification]
    """The running wake's live transcript entries sent before the attach (the newest 500; empty when idle), for those not yet in history."""


@attrs.define
class DetachParams:
    """`flower/detach`: stop sending this connection the folder's notifications; the run goes on."""

    folder: str
    """The folder's URI."""

    EXAMPLE: ClassVar[str] = '{"folder": "file:///home/me/app"}'


@attrs.define
class DetachResult:
    """`flower/detach` result."""

    folder: str
    """The folder URI."""
    detached: bool
    """False when this connection was not attached to it."""


@attrs.define
class RunsParams:
    """`flower/runs`: every folder the engine holds (params may be null)."""

    EXAMPLE: ClassVar[str] = "{}"


@attrs.define
class RunInfo:
    """One folder the engine holds."""

    folder: str
    """The folder URI."""
    name: str
    """Its display name."""
    workspace: str
    """Its path on disk."""
    running: bool
    """A wake runs there now."""
    step: str | None
    """The step running now, or null."""
    context: int | None
    """The work session's context size in tokens, or null."""
    since: float
    """Unix time the folder began running, or became idle (or began being served)."""
    clients: int
    """Connections attached to it now."""
    waiting_for: WaitingFor | None = None
    """What its run waits for now (`FolderStatus.waitingFor`): the person, attaching (`flower` there) answers (issue 31)."""
    background: list[str] = attrs.field(factory=list)
    """The subagents and background shells its running wake runs now (issue 32)."""


@attrs.define
class RunsResult:
    """`flower/runs` result."""

    runs: list[RunInfo]
    """Every folder the engine holds, in the order it began serving them."""
    version: str
    """The engine's flower version."""
    pid: int
    """The engine's process id."""


@attrs.define
class CancelParams:
    """`flower/cancel`: stop the folder's running wake cleanly (its sessions resume at the next wake)."""

    folder: str
    """The folder's URI."""

    EXAMPLE: ClassVar[str] = '{"folder": "file:///home/me/app"}'


@attrs.define
class CancelResult:
    """`flower/cancel` result."""

    folder: str
    """The folder URI."""
    cancelled: bool
    """False when nothing was running there."""


# -- server → client: request ------------------------------------------------------------------
@attrs.define
class AskParams:
    """`flower/ask` (server → client): the clarify step asks the person something (S16)."""

    folder: str
    """The folder URI."""
    question: str
    """The agent's questions, as it wrote them."""


@attrs.define
class AskResult:
    """The client's answer to `flower/ask`."""

    answer: str | None = None
    """The person's answer; null or blank: nobody answers, the agent assumes and notes its assumptions."""


# -- server → client: notifications ------------------------------------------------------------
@attrs.define
class ApprovedNotification:
    """`flower/approved`: a tool question is closed (answered in some window, or by the unattended rule): close its card."""

    folder: str
    id: str
    decision: Literal["allow", "allowAlways", "deny"]
    by: Literal["person", "unattended"]
    reason: str | None = None
    """A denial: what the model was told instead of the result (the person's sentence, or flower's line); else null.
    The transcript marks the call as denied with it (issue 34)."""


@attrs.define
class StateNotification:
    """`flower/state`: a wake began (`running: true`) or ended (`running: false`, with how it ended)."""

    folder: str
    """The folder URI."""
    run: int
    """A number for this wake in this server, the same in its begin and end notifications."""
    running: bool
    """True when the wake begins, false when it ends."""
    ok: bool | None
    """At the end: true when the work passed the judge. Null at the beginning."""
    cancelled: bool
    """At the end: true when it was cancelled (a later wake resumes it)."""
    error: str | None
    """At the end: what went wrong, or null."""
    woke: int | None
    """At the end: the wake count of this workspace."""


@attrs.define
class BannerNotification:
    """`flower/banner`: the wake banner (S19), sent when a used folder wakes."""

    folder: str
    """The folder URI."""
    text: str
    """The line, e.g. `<- resumed in ~/app · requirements confirmed · 15 goals · work context 80.2K · wake #3`."""
    woke: int
    """The wake count (#3 above)."""


@attrs.define
class HeaderNotification:
    """`flower/header`: a step header line (S19), sent before the step starts."""

    folder: str
    """The folder URI."""
    step: str | None
    """The step's name."""
    text: str
    """The line, e.g. `== work ==============================  3/3  <- resumed · wake #3`."""


@attrs.define
class StepStartNotification:
    """`flower/stepStart`: a step's agent run begins."""

    folder: str
    """The folder URI."""
    step: str | None
    """The step's name as recorded in the manifest (`干活`, `干活#round2`, `澄清#retry1`, S7)."""
    index: int
    """Its position, 1-based."""
    total: int
    """Steps in the path."""
    session_id: str | None
    """The session it resumes, or null for a new session."""
    woke: int
    """The wake count."""
    progress: str | None
    """The `$/progress` token created for this step, or null when the client has no work-done progress."""
    label: str | None = None
    """The step's name in the client's language (`work · round 2`), as `FolderStatus.stepLabel` (issue 33)."""
    work_session: bool = False
    """The step is the work session's (`FolderStatus.workSession`): its `flower/context` drives the gauge."""


@attrs.define
class StepEndNotification:
    """`flower/stepEnd`: a step's agent run ended."""

    folder: str
    """The folder URI."""
    step: str | None
    """The step's name."""
    ok: bool
    """It finished without error."""
    session_id: str | None
    """Its session id."""
    error: str | None
    """What went wrong, or null."""
    context: int | None
    """The session's context size after the run, in tokens, when known."""
    cost_usd: float | None = None
    """What the step's run spent, in USD (every attempt)."""
    duration_s: float | None = None
    """How long it ran, in seconds."""
    label: str | None = None
    """The step's name in the client's language, as in `flower/stepStart`."""


@attrs.define
class SessionNotification:
    """`flower/session`: a session id arrived for a step (written to the lineage at once, S11)."""

    folder: str
    """The folder URI."""
    step: str | None
    """The step's name."""
    session_id: str
    """The session id."""
    resumed: bool
    """True when an earlier session was resumed."""


@attrs.define
class TranscriptNotification:
    """`flower/transcript`: one transcript entry appended (for the sidebar transcript view)."""

    folder: str
    """The folder URI."""
    step: str | None
    """The step it belongs to (the judge's rounds are `干活·判定#N`)."""
    session_id: str | None
    """The agent session; null for a sentence the person said that no session has received yet."""
    uuid: str | None
    """The transcript entry's uuid (null for the person's sentences)."""
    role: Role
    """`assistant` (the model) or `user` (a sentence the person said through wake/say/new)."""
    kind: EntryKind
    """`text`, `tool` for a tool call, or (history only) `result` for a tool result."""
    text: str
    """The text; for a tool call a one-line summary like `Write(notes.txt)`."""
    tool_name: str | None
    """The tool's name for `tool`, else null."""
    tool_input: dict[str, Any] | None
    """The tool call's input for `tool` (long strings cut at 4000 characters), else null."""
    tool_use_id: str | None
    """The tool_use id for `tool`, else null."""
    pruned: PrunedVerdict | None
    """What the pruner does to this entry on resume if known when sent (in practice null: the pruner judges an
    entry by what follows it); the verdicts come with `flower/pruned` after the step (S23). In history: the verdict."""
    pruned_text: str | None
    """History only: for `rewritten` the text the model gets instead, for `added` the synthesized result; else null."""
    seq: int
    """Live: the folder's notification counter (above every history seq known). History: the position in sessions.db."""
    parent: str | None = None
    """A subagent's entry: the `toolUseId` of the `Agent` call it works for (issue 32); null for the main conversation."""
    step_label: str | None = None
    """`step` in the client's language (`judge · round 1`), as `FolderStatus.stepLabel`: its section head's title (issue 33)."""
    denied: bool = False
    """History: a `result` that is a denial (the person's or a rule's), not the tool's output; `text` is what the model
    was told. Live, a denial comes as `flower/approved` with its `reason` (issue 34)."""


@attrs.define
class PrunedNotification:
    """`flower/pruned`: how the pruner treats a session's entries on resume (S23, S25), sent after each step."""

    folder: str
    """The folder URI."""
    session_id: str
    """The session."""
    verdicts: dict[str, PrunedVerdict]
    """Entry uuid → `hidden` (not shown to the model), `rewritten` (body replaced) or `added` (synthesized). Entries not listed are kept as they are."""


@attrs.define
class ContextNotification:
    """`flower/context`: a session's context size after a model round (the status-bar gauge)."""

    folder: str
    """The folder URI."""
    step: str | None
    """The step (the gauge follows the work step; the judge's sizes come with its own step name)."""
    session_id: str
    """The session."""
    tokens: int
    """Context size in tokens."""
    window: int
    """The model's context window in tokens."""
    work_session: bool = False
    """The size is the work session's: the gauge shows it (the judge's and the other steps' sizes are not the gauge's)."""


@attrs.define
class WaitNotification:
    """`flower/wait`: the runtime waits before a retry (S21) or while offline (S20)."""

    folder: str
    """The folder URI."""
    step: str | None
    """The step that waits."""
    reason: str
    """`backoff` or `offline`."""
    attempt: int
    """The attempt that failed."""
    max_attempts: int
    """Attempts allowed in all."""
    seconds: float
    """How long this wait lasts."""
    error: str
    """The error that caused it (API keys removed)."""
    offline_since: float | None
    """Unix time the API became unreachable, for `offline`."""


@attrs.define
class VerdictNotification:
    """`flower/verdict`: the judge's verdict on a work round (S14)."""

    folder: str
    """The folder URI."""
    step: str | None
    """The judge's step name, e.g. `干活·判定#1`."""
    round: int
    """The work round judged."""
    passed: bool
    """Every goal met."""
    reasons: str
    """What is missing, or why it passed."""
    cost_usd: float | None = None
    """What the judge's round spent, in USD."""
    duration_s: float | None = None
    """How long the judge's round ran, in seconds."""
    label: str | None = None
    """The judge's round in the client's language (`judge · round 1`): the verdict line's title."""


@attrs.define
class QuestionNotification:
    """`flower/question`: the clarify step asked the person something (the answer goes through `flower/ask`)."""

    folder: str
    """The folder URI."""
    text: str
    """The questions."""


@attrs.define
class HandoffNotification:
    """`flower/handoff`: work moved to a new session seeded with a handoff document (S26)."""

    folder: str
    """The folder URI."""
    old_session: str
    """The retired session."""
    new_session: str | None
    """The new session, when already known."""
    path: str
    """The handoff document (readable, editable)."""


@attrs.define
class NoticeNotification:
    """`flower/notice`: a line of information (a wake sentence recorded, an archive made, a sentence queued)."""

    folder: str
    """The folder URI."""
    text: str
    """The line."""


# -- the converter -----------------------------------------------------------------------------
def _strict_str(value: Any, _: type) -> str:
    if not isinstance(value, str):
        raise TypeError(f"expected a string, got {type(value).__name__}")
    return value


def _strict_int(value: Any, _: type) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise TypeError(f"expected an integer, got {type(value).__name__}")
    return value


def _strict_bool(value: Any, _: type) -> bool:
    if not isinstance(value, bool):
        raise TypeError(f"expected true or false, got {type(value).__name__}")
    return value


def _camel(name: str) -> str:
    head, *rest = name.split("_")
    return head + "".join(p.title() for p in rest)


def _ours(cls: type) -> bool:
    return attrs.has(cls) and cls.__module__ == __name__


def make_converter() -> cattrs.Converter:
    """The lsprotocol converter, strict for params (no extra keys, no coercion) and camelCase both ways.

    Unlike lsprotocol's own classes, our payloads never omit fields: `null` is sent explicitly.
    """
    converter = get_converter(cattrs.Converter(forbid_extra_keys=True))
    converter.register_structure_hook(str, _strict_str)
    converter.register_structure_hook(int, _strict_int)
    converter.register_structure_hook(bool, _strict_bool)  # else bool, a subclass of int, dispatches to _strict_int

    def unstructure(cls: type) -> Callable[[Any], dict[str, Any]]:
        names: dict[str, Any] = {a.name: override(rename=_camel(a.name)) for a in attrs.fields(cls)}
        return make_dict_unstructure_fn(cls, converter, **names)

    def structure(cls: type) -> Callable[[Any, Any], Any]:
        names: dict[str, Any] = {a.name: override(rename=_camel(a.name)) for a in attrs.fields(cls)}
        return make_dict_structure_fn(cls, converter, _cattrs_forbid_extra_keys=True, **names)

    converter.register_unstructure_hook_factory(_ours, unstructure)
    converter.register_structure_hook_factory(_ours, structure)
    return converter


CONVERTER = make_converter()


def structure_params(method: str, params: Any, cls: type[T]) -> T:
    """Params as `cls`, or JsonRpcInvalidParams saying what is wrong and what to send instead."""
    example = getattr(cls, "EXAMPLE", "{}")
    fields = attrs.fields_dict(cls)  # type: ignore[arg-type]  # every params class is an attrs class
    if params is None and not any(a.default is attrs.NOTHING for a in fields.values()):
        params = {}
    if not isinstance(params, dict):
        raise JsonRpcInvalidParams(
            f"{method}: params must be an object like {example}, not {type(params).__name__ if params is not None else 'null'}"
        )
    try:
        value: T = CONVERTER.structure(params, cls)
    except cattrs.BaseValidationError as exc:
        problems = "; ".join(cattrs.transform_error(exc, path="params"))
        problems = re.sub(r"(?<=params\.)(\w+)", lambda m: _camel(m.group(1)), problems)  # the wire's names
        raise JsonRpcInvalidParams(f"{method}: {problems}. Send params like {example}") from None
    text_field = fields.get("text")
    if text_field is not None and text_field.default is attrs.NOTHING and not getattr(value, "text", "x").strip():
        raise JsonRpcInvalidParams(f"{method}: params.text is blank; say something, e.g. {example}")
    return value


def error(code: int, message: str, **data: Any) -> JsonRpcServerError:
    """A JSON-RPC error in flower's range with its data (API keys removed)."""
    return JsonRpcServerError(redact(message), code, redact(data) if data else None)  # type: ignore[no-untyped-call]


# -- the one status, mapped once (issue 33) ----------------------------------------------------
def _from_domain() -> cattrs.Converter:
    """A converter from the domain's plain values (Python names, extra fields ignored) to these classes.

    A value that is already one of these classes (what only the editor adds) is taken as it is.
    """
    converter = get_converter(cattrs.Converter())

    def structure(cls: type) -> Callable[[Any, Any], Any]:
        made: Callable[[Any, Any], Any] = make_dict_structure_fn(cls, converter)
        return lambda value, kind: value if isinstance(value, cls) else made(value, kind)

    converter.register_structure_hook_factory(_ours, structure)
    return converter


_FROM_DOMAIN = _from_domain()


def folder_status(s: Status, locale: str, now: float, **editor: Any) -> FolderStatus:
    """The wire's FolderStatus of the service's one Status: every field of the same name, nested states alike.

    No field-by-field copy: a new Status field reaches the wire by being declared here with its name. What only the
    protocol has is made here — the step's label and the store's line in the client's language, the wait's seconds
    left by the server's clock `now`, `hasTask` (the domain's `started`), `workSession` (the step's, by the one rule
    `in_work_session`) — and what only the editor knows
    (`editor`: folder, name, trust, the settings problem, the open approval) is given as it is. The domain's
    `settings` (the values in effect) is not the wire's (a settings problem) and is left out.
    """
    plain = {k: v for k, v in dataclasses.asdict(s).items() if k != "settings"}
    if s.waiting is not None:
        until = s.waiting.until if s.waiting.until is not None else now + s.waiting.seconds
        plain["waiting"] = {**plain["waiting"], "until": until, "seconds_left": max(0.0, until - now)}
    plain.update(has_task=s.started, work_session=in_work_session(s.step), step_label=label(locale, s.step) if s.step else None,
                 unreachable=s.unreachable.text(locale) if s.unreachable is not None else None, **editor)
    return _FROM_DOMAIN.structure(plain, FolderStatus)


def answered(error: BaseException | None) -> bool:
    """Whether an error is an answer flower chose (a busy folder, bad params), not a fault: logged as one line (issue 34)."""
    return isinstance(error, JsonRpcException) and not isinstance(error, JsonRpcInternalError)


class ExpectedErrors(logging.Filter):
    """pygls logs every error answer with its traceback; an answer flower chose becomes one INFO line (issue 34)."""

    def filter(self, record: logging.LogRecord) -> bool:
        error = record.exc_info[1] if record.exc_info else None
        if answered(error):
            record.exc_info, record.exc_text = None, None
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg, record.args = "answered with an error: %s", (redact(str(error)),)
        return True


EXPECTED_ERRORS = ExpectedErrors()


def report(logger: logging.Logger, error: Exception, source: Any) -> None:
    """Log an error a handler ended with (redacted, D6): a fault at ERROR; an answer flower chose is already pygls's INFO line."""
    logger.log(logging.DEBUG if answered(error) else logging.ERROR, "%s: %s", getattr(source, "__name__", source),
               redact(str(error)))


# -- to the wire (D6: no API key ever leaves) --------------------------------------------------
def to_wire(payload: Any) -> Any:
    """A payload as the JSON it is sent as: camelCase, explicit nulls, API keys removed."""
    return redact(CONVERTER.unstructure(payload))


PARAMS = {WAKE: WakeParams, SAY: SayParams, NEW: NewParams, STATUS: StatusParams, HISTORY: HistoryParams,
          ANSWER: AnswerParams, ATTACH: AttachParams, DETACH: DetachParams, RUNS: RunsParams, CANCEL: CancelParams,
          CHANGES: ChangesParams, REVERT: RevertParams}
"""Each request method's params class."""

NOTIFICATIONS = {
    STATE: StateNotification, BANNER: BannerNotification, HEADER: HeaderNotification,
    STEP_START: StepStartNotification, STEP_END: StepEndNotification, SESSION: SessionNotification,
    TRANSCRIPT: TranscriptNotification, PRUNED: PrunedNotification, CONTEXT: ContextNotification,
    WAIT: WaitNotification, VERDICT: VerdictNotification, QUESTION: QuestionNotification,
    HANDOFF: HandoffNotification, NOTICE: NoticeNotification, APPROVED: ApprovedNotification,
}
"""Each notification method's payload class (server → client)."""
