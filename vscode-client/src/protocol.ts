/**
 * The flower editor protocol (../protocol.md), typed: one constant per request and
 * notification, one interface per payload (D4, D8). Mirrors `flower.lsp.protocol` 1:1;
 * tests/test_protocol_ts.py keeps the method names in step with the Python module.
 *
 * Server → client payloads always carry every field (`null`: none / not known).
 */
import { NotificationType, RequestType } from 'vscode-languageclient';

/** A JSON value, for the parts of a payload that are free-form (a tool call's input). */
export type Json = string | number | boolean | null | Json[] | { [key: string]: Json };

// -- shared shapes ------------------------------------------------------------------------

/** One item of the goal checklist `目标.md`. */
export interface Goal {
    text: string;
    done: boolean;
}

/** A retry wait in progress (S20, S21), with its countdown. */
export interface WaitState {
    reason: 'backoff' | 'offline' | string;
    seconds: number;
    attempt: number;
    maxAttempts: number;
    /** Unix time (s) at which the wait ends. */
    until: number;
    /** `until` minus the server's clock when the status was made; count down from this. */
    secondsLeft: number;
}

/** What work has cost in USD (issue 15): this wake, the whole task so far (from the manifest), and the cap per wake. */
export interface Cost {
    wake: number;
    task: number;
    /** `flower.maxCost` / `--max-cost`: the cap per wake; null: no cap. */
    max: number | null;
}

/** The judge's last verdict (S14). */
export interface VerdictState {
    round: number;
    passed: boolean;
    reasons: string;
}

/** What a folder is doing: `flower/status`, and every request's result. */
export interface FolderStatus {
    folder: string;
    name: string;
    workspace: string;
    runDir: string;
    woke: number;
    steps: Record<string, string>;
    goals: Goal[];
    /** The work session's context size in tokens (S19), null before any model round. */
    context: number | null;
    /** The model's context window in tokens, as the CLI reports it. */
    window: number;
    /** The context size at which work hands off to a new session (S26): the gauge warns from here. */
    handoffAt: number;
    running: boolean;
    step: string | null;
    waiting: WaitState | null;
    verdict: VerdictState | null;
    /** A wake here was cut off (process died, window reloaded, server crashed) and nothing continued or finished it since. */
    interrupted: boolean;
    /** A wake of this task is under way in another process (a terminal, a closing window's server, another machine). */
    elsewhere: boolean;
    /** The model in use (`flower.model`, `ANTHROPIC_MODEL`, or what the CLI reported), null if not known yet. */
    model: string | null;
    /** What this wake and the whole task have cost, and the cap. */
    cost: Cost;
    /** A setting the server cannot use (its wakes are refused until it is fixed), null when all are fine. */
    settings: SettingsProblem | null;
    /** The person (a tool approval, a clarifying question) or the API (an outage) the run waits for, or null. */
    waitingFor: WaitingFor | null;
    /** The folder's own Claude Code settings and .mcp.json servers run for its agents (D10). */
    trusted: boolean;
    /** Who decided, one sentence in the window's language. */
    trust: string;
    /** The task's store is not answering: one line saying so (the rest is what was read before); null while it answers. */
    unreachable: string | null;
    /** What the task's store takes on disk in bytes (sessions.db with -wal/-shm, or the shared schema's tables); null until read. */
    storeBytes: number | null;
    /** The subagents and background shells the running wake's CLI runs now (issue 32). */
    background?: string[];
    /** The folder has a task (its lineage or requirements, wherever its run dir or store is): the server's answer (issue 33). */
    hasTask: boolean;
    /** `step` is the work session's (a work round or retry): the gauge follows it. False when idle. */
    workSession: boolean;
    /** `step` in the window's language (`work · round 2`, `judge · round 1`), null when idle. */
    stepLabel: string | null;
    /** Where the work session's context is heading: rounds left and cost per round (issue 34); null before a work round. */
    forecast?: Forecast | null;
}

/** Work rounds left before the handoff threshold and the window at the recent slope, and the cost per round (issue 34). */
export interface Forecast {
    rounds: number;
    /** Tokens per work round lately; null with fewer than two rounds. */
    slope: number | null;
    /** Work rounds until `handoffAt` at that slope (0: there already); null when the context does not grow. */
    toHandoff: number | null;
    /** Work rounds until `window` at that slope; null when the context does not grow. */
    toWindow: number | null;
    /** USD per work round of this (or the last) wake. */
    wakePerRound: number | null;
    /** USD per work round of the whole task. */
    taskPerRound: number | null;
    /** The context each of the task's last 100 work rounds ended at, oldest first: the chart's series (absent from an older flower). */
    points?: ContextPoint[];
}

/** One work round of the context chart (issue 34; S19, S26). */
export interface ContextPoint {
    /** The work round's number in the task (1 = the first; retries count). */
    round: number;
    /** The work session's context in tokens when the round ended; null when it recorded none (a gap in the line). */
    context: number | null;
    /** The round ran in a new session: a handoff put the context back down before it. */
    handoff: boolean;
}

/** A setting the server cannot use, and where it came from: shown to the person as it is, with a way to fix it. */
export interface SettingsProblem {
    /** The server's one line: the file, variable or setting, the key, what is expected and what it got. */
    message: string;
    /** The key as the settings file names it (`handoff_at`). */
    key: string;
    /** The `initializationOptions` key (= the setting `flower.<option>`) the bad value came from, or null. */
    option: string | null;
    /** The settings file (`.flower.toml`, `pyproject.toml`) the bad value came from, or null. */
    file: string | null;
}

/** What the pruner does with an entry when its session resumes (S23, S25). */
export type PrunedVerdict = 'hidden' | 'rewritten' | 'added';

// -- client → server requests -------------------------------------------------------------

export interface WakeParams {
    folder: string;
    text?: string | null;
    /** The variables that travel with a wake to the engine (ANTHROPIC_*, CLAUDE_*, FLOWER_*, PATH, HOME, proxies); never logged. */
    env?: Record<string, string> | null;
}
export interface WakeResult {
    folder: string;
    action: 'started' | 'joined';
    delivered: boolean;
    status: FolderStatus;
}
export const wake = new RequestType<WakeParams, WakeResult, void>('flower/wake');

export interface SayParams {
    folder: string;
    text: string;
    env?: Record<string, string> | null;
}
export interface SayResult {
    folder: string;
    action: 'delivered' | 'started';
    status: FolderStatus;
}
export const say = new RequestType<SayParams, SayResult, void>('flower/say');

export interface NewParams {
    folder: string;
    text: string;
    env?: Record<string, string> | null;
}
export interface NewResult {
    folder: string;
    action: 'started';
    cancelled: boolean;
    status: FolderStatus;
}
export const newTask = new RequestType<NewParams, NewResult, void>('flower/new');

export interface StatusParams {
    folder?: string | null;
    /** Read the records and the task files again first (the client saw `目标.md` change); default false. */
    fresh?: boolean;
}
export interface StatusResult {
    folders: FolderStatus[];
}
export const status = new RequestType<StatusParams, StatusResult, void>('flower/status');

export interface HistoryParams {
    folder: string;
    sessionId?: string | null;
    /** The previous page's `nextBefore`; absent: the newest page. */
    before?: number | null;
    /** 1 to 1000; absent: 200. */
    limit?: number | null;
}
export interface HistorySession {
    sessionId: string;
    steps: string[];
    entries: number;
    current: boolean;
}
export interface HistoryResult {
    folder: string;
    /** This page, oldest first; `seq` is the position in sessions.db. */
    entries: TranscriptNotification[];
    nextBefore: number | null;
    sessions: HistorySession[];
    /** Sessions whose verdicts follow in a `flower/pruned`. */
    pending: string[];
    /** Every step run the manifest records, oldest first (the transcript's section heads). */
    steps: StepSummary[];
}
export interface StepSummary {
    step: string;
    sessionId: string | null;
    ok: boolean;
    costUsd: number;
    durationS: number | null;
    startedAt: number | null;
    /** A judge round's verdict; null for other steps. */
    passed: boolean | null;
    /** Its name in the window's language: the section head's title (issue 33). */
    label: string;
}
export const history = new RequestType<HistoryParams, HistoryResult, void>('flower/history');

/** `flower/answer`: answer a folder's open tool question by its id (e.g. after Reload Window). */
export interface AnswerParams {
    folder: string;
    id: string;
    decision: string;
    message?: string | null;
}
export interface AnswerResult {
    folder: string;
    id: string;
    /** False: it was already answered (another window, the unattended rule), or is not open. */
    accepted: boolean;
}
export const answer = new RequestType<AnswerParams, AnswerResult, void>('flower/answer');

/** What a tool call would do: the command, a unified diff, the URL, or the input as JSON. */
export interface ApprovalDetail {
    kind: 'command' | 'diff' | 'url' | 'input';
    text: string;
}

/** What the run waits for, since when (Unix time). */
export interface WaitingFor {
    what: 'approval' | 'question' | 'outage';
    since: number;
    approval?: ApproveParams | null;
}

export interface AttachParams {
    folder: string;
}
export interface AttachResult {
    folder: string;
    status: FolderStatus;
    /** The `seq` of the last `flower/transcript` the folder sent before the attach: every live one after it is greater. */
    cursor: number;
    /** The running wake's live entries sent before the attach (the newest 500; empty when idle), for those not yet in history. */
    recent: TranscriptNotification[];
}
export const attach = new RequestType<AttachParams, AttachResult, void>('flower/attach');

export interface DetachParams {
    folder: string;
}
export interface DetachResult {
    folder: string;
    /** False when this connection was not attached to it. */
    detached: boolean;
}
export const detach = new RequestType<DetachParams, DetachResult, void>('flower/detach');

export interface RunsParams {
    // no fields (params may be null)
}
/** One folder the engine holds. */
export interface RunInfo {
    folder: string;
    name: string;
    workspace: string;
    running: boolean;
    step: string | null;
    context: number | null;
    /** Unix time (s) the folder began running, or became idle (or began being served). */
    since: number;
    /** Connections attached to it now. */
    clients: number;
    /** What its run waits for now (`FolderStatus.waitingFor`): the person, or the API; null: nothing. */
    waitingFor: WaitingFor | null;
    /** The subagents and background shells its running wake runs now (issue 32). */
    background?: string[];
}
export interface RunsResult {
    runs: RunInfo[];
    /** The engine's flower version. */
    version: string;
    /** The engine's process id. */
    pid: number;
}
export const runs = new RequestType<RunsParams, RunsResult, void>('flower/runs');

export interface CancelParams {
    folder: string;
}
export interface CancelResult {
    folder: string;
    /** False when nothing was running there. */
    cancelled: boolean;
}
export const cancel = new RequestType<CancelParams, CancelResult, void>('flower/cancel');

// -- server → client requests -------------------------------------------------------------
export interface ChangesParams {
    folder: string;
}
export interface ChangedFile {
    /** Workspace-relative, `/`-separated. */
    path: string;
    change: 'created' | 'edited' | 'deleted';
    /** Null for binary content or without a before-image. */
    added: number | null;
    removed: number | null;
    /** The before-image's id; null for a created file or one too large to keep. */
    before: string | null;
    /** The before-image's bytes on disk (the diff editor's left side). */
    beforePath: string | null;
    tool: string;
    /** The subagent whose tool call changed it (its description and type); null for the main agent. */
    agent?: string | null;
}
export interface ChangedWake {
    wake: number;
    running: boolean;
    files: ChangedFile[];
}
export interface ChangesResult {
    folder: string;
    /** Wakes with at least one changed file, oldest first. */
    wakes: ChangedWake[];
}
export const changes = new RequestType<ChangesParams, ChangesResult, void>('flower/changes');

export interface RevertParams {
    folder: string;
    /** One file (workspace-relative or absolute). */
    path?: string | null;
    /** The wake whose before-image to restore; without `path`, every file of it. */
    wake?: number | null;
}
export interface RevertResult {
    folder: string;
    reverted: string[];
}
export const revert = new RequestType<RevertParams, RevertResult, void>('flower/revert');

// -- server → client request --------------------------------------------------------------

export interface AskParams {
    folder: string;
    question: string;
}
export interface AskResult {
    answer?: string | null;
}
export const ask = new RequestType<AskParams, AskResult, void>('flower/ask');

/** A tool call outside `flower.allow`, waiting for the person (issue 24). */
export interface ApproveParams {
    folder: string;
    /** The tool call's id: `flower/answer` and `flower/approved` name the question by it. */
    id: string;
    step: string;
    tool: string;
    input: Record<string, unknown>;
    /** One line: the command, the path, the URL. */
    summary: string;
    detail: ApprovalDetail;
    /** Rules the CLI suggests keeping for "always", e.g. `Bash(npm test:*)`. */
    suggestions: string[];
    since: number;
    /** A subagent's tool call: the subagent (its `Agent` call's description and type); null when the main agent asks. */
    agent?: string | null;
}
export interface ApproveResult {
    decision: 'allow' | 'allowAlways' | 'deny';
    /** With deny: the sentence the model receives. */
    message?: string | null;
}
export const approve = new RequestType<ApproveParams, ApproveResult, void>('flower/approve');

// -- server → client notifications --------------------------------------------------------

/** A tool question is closed (answered in some window, or by the unattended rule): close its card. */
export interface ApprovedNotification {
    folder: string;
    id: string;
    decision: 'allow' | 'allowAlways' | 'deny';
    by: 'person' | 'unattended';
    /** A denial: what the model was told instead of the result; null otherwise (issue 34). */
    reason?: string | null;
}
export const approved = new NotificationType<ApprovedNotification>('flower/approved');

export interface StateNotification {
    folder: string;
    run: number;
    running: boolean;
    ok: boolean | null;
    cancelled: boolean;
    error: string | null;
    woke: number | null;
}
export const state = new NotificationType<StateNotification>('flower/state');

export interface BannerNotification {
    folder: string;
    text: string;
    woke: number;
}
export const banner = new NotificationType<BannerNotification>('flower/banner');

export interface HeaderNotification {
    folder: string;
    step: string | null;
    text: string;
}
export const header = new NotificationType<HeaderNotification>('flower/header');

export interface StepStartNotification {
    folder: string;
    step: string | null;
    index: number;
    total: number;
    sessionId: string | null;
    woke: number;
    progress: string | null;
    /** The step's name in the window's language (`work · round 2`). */
    label: string | null;
    /** The step is the work session's: its flower/context drives the gauge. */
    workSession: boolean;
}
export const stepStart = new NotificationType<StepStartNotification>('flower/stepStart');

export interface StepEndNotification {
    folder: string;
    step: string | null;
    ok: boolean;
    sessionId: string | null;
    error: string | null;
    context: number | null;
    costUsd: number | null;
    durationS: number | null;
    /** The step's name in the window's language. */
    label: string | null;
}
export const stepEnd = new NotificationType<StepEndNotification>('flower/stepEnd');

export interface SessionNotification {
    folder: string;
    step: string | null;
    sessionId: string;
    resumed: boolean;
}
export const session = new NotificationType<SessionNotification>('flower/session');

/** A transcript entry: live (`flower/transcript`) or stored (`flower/history` entries). */
export interface TranscriptNotification {
    folder: string;
    step: string | null;
    sessionId: string | null;
    uuid: string | null;
    role: 'user' | 'assistant';
    /** `result`: a tool result, history only. */
    kind: 'text' | 'tool' | 'result';
    text: string;
    toolName: string | null;
    toolInput: { [key: string]: Json } | null;
    toolUseId: string | null;
    pruned: PrunedVerdict | null;
    /** For `rewritten`: the text the model gets instead; for `added`: the synthesized result. */
    prunedText: string | null;
    /** Live: the folder's notification counter; history: the position in sessions.db. */
    seq: number;
    /** A subagent's entry: the `toolUseId` of the `Agent` call it works for; null/absent for the main conversation. */
    parent?: string | null;
    /** `step` in the window's language: the section head's title, also for a step no stepStart announced (the judge's). */
    stepLabel?: string | null;
    /** History: a `result` that is a denial, not the tool's output; `text` is what the model was told (issue 34). */
    denied?: boolean;
}
export const transcript = new NotificationType<TranscriptNotification>('flower/transcript');

export interface PrunedNotification {
    folder: string;
    sessionId: string;
    /** Entry uuid → verdict; entries not listed are shown to the model as they are. */
    verdicts: Record<string, PrunedVerdict>;
}
export const pruned = new NotificationType<PrunedNotification>('flower/pruned');

export interface ContextNotification {
    folder: string;
    step: string | null;
    sessionId: string;
    tokens: number;
    window: number;
    /** The size is the work session's: the gauge shows it (not the judge's, not the other steps'). */
    workSession: boolean;
}
export const context = new NotificationType<ContextNotification>('flower/context');

export interface WaitNotification {
    folder: string;
    step: string | null;
    reason: 'backoff' | 'offline' | string;
    attempt: number;
    maxAttempts: number;
    seconds: number;
    error: string;
    offlineSince: number | null;
}
export const wait = new NotificationType<WaitNotification>('flower/wait');

export interface VerdictNotification {
    folder: string;
    step: string | null;
    round: number;
    passed: boolean;
    reasons: string;
    costUsd: number | null;
    durationS: number | null;
    /** The judge's round in the window's language (`judge · round 1`). */
    label: string | null;
}
export const verdict = new NotificationType<VerdictNotification>('flower/verdict');

export interface QuestionNotification {
    folder: string;
    text: string;
}
export const question = new NotificationType<QuestionNotification>('flower/question');

export interface HandoffNotification {
    folder: string;
    oldSession: string;
    newSession: string | null;
    path: string;
}
export const handoff = new NotificationType<HandoffNotification>('flower/handoff');

export interface NoticeNotification {
    folder: string;
    text: string;
}
export const notice = new NotificationType<NoticeNotification>('flower/notice');

// -- error codes --------------------------------------------------------------------------

/** `folder` is not one of the server's workspace folders. */
export const UNKNOWN_FOLDER = -32010;
/** Another process drives this folder (D5). */
export const WORKSPACE_BUSY = -32011;
/** An expected failure with an actionable message. */
export const FLOWER_ERROR = -32012;
/** No API key and no `claude login`: offer "Set API Key…". */
export const MISSING_CREDENTIALS = -32013;
/** A bug: one line naming it and the log file (under the folder's run dir) with its traceback. */
export const UNEXPECTED = -32014;

/**
 * The server options `initialize` reads from `initializationOptions` (protocol.md): the settings
 * `flower.<option>` as the person set them, unchecked; the server checks them and says what is wrong.
 */
export interface InitializationOptions {
    rounds?: unknown;
    trim?: unknown;
    handoffAt?: unknown;
    /** The model agents run with (`--model`). */
    model?: unknown;
    /** The model the CLI falls back to when the first is overloaded (`--fallback-model`). */
    fallbackModel?: unknown;
    /** The spending cap per wake in USD (`--max-cost`). */
    maxCost?: unknown;
    /** Run agents without the user's CLAUDE.md, settings and MCP servers (`--isolated`). */
    isolated?: unknown;
    /** Where the task's store lives: `sqlite` or a `postgresql://` URL (D9). */
    store?: unknown;
    /** The project's name in a team store (D9). */
    project?: unknown;
    /** Tool rules the work agent may use without asking, e.g. `["Read", "Edit", "Bash(npm test:*)"]` (issue 24). */
    allow?: unknown;
    /** The CLI's permission mode (default `acceptEdits`). */
    mode?: unknown;
    /** Seconds a tool question waits for the person; unset: as long as it takes. */
    approvalsWait?: unknown;
    /** After that: `deny` (the model is told the person was away) or `wait`. */
    approvalsUnattended?: unknown;
    /** Days after which a wake deletes an archived task's sessions from the store (`flower gc`); unset: never. */
    retentionDays?: unknown;
}
