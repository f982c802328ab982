/**
 * The status-bar gauge as text, colour and tooltip, from a folder's status (S19; no `vscode`
 * import, unit-tested in plain Node). The window and the handoff threshold are the server's
 * (never an assumed constant); tokens are what the server reports (input + cache read +
 * cache creation of the last request). The model in use and what work cost (issue 15) are
 * the server's too. The words are the window's language (issue 34): the caller passes its translator (the
 * extension `vscode.l10n.t`, whose bundle keys are the English below); without one the text is English.
 */
import type { Cost, FolderStatus, Forecast, WaitingFor } from '../protocol';

/** `vscode.l10n.t`'s shape: the English message (the l10n bundle's key) and the values of its `{0}`, `{1}`, …. */
export type Translate = (message: string, ...args: string[]) => string;

/** `{0}`, `{1}`, … filled in one pass (a value holding `{1}` is not filled again), as vscode.l10n.t does. */
export function fill(template: string, ...args: string[]): string {
    return template.replace(/\{(\d+)\}/g, (whole, i: string) => args[Number(i)] ?? whole);
}

/** The English UI: the message as written, filled in. */
export const english: Translate = (message, ...args) => fill(message, ...args);

/** What the server process is doing, as the client sees it. */
export type ServerState = 'starting' | 'running' | 'stopped';

export interface GaugeInput {
    status: FolderStatus | null;
    server: ServerState;
    /** Seconds left in the current wait, counted down by the caller from `secondsLeft`. */
    waitLeft?: number | null;
    /** The window's language; English without. */
    t?: Translate;
}

export interface Gauge {
    text: string;
    /** `warning` from the handoff threshold on, `error` offline, stopped or the store unreachable. */
    colour: 'warning' | 'error' | null;
    spinner: boolean;
    tooltip: string[];
}

/** Tokens as people read them: 812, 80.2K, 200K, 1.2M. */
export function formatTokens(n: number): string {
    if (n < 1000) return String(Math.round(n));
    if (n < 1_000_000) return `${trim1(n / 1000)}K`;
    return `${trim1(n / 1_000_000)}M`;
}

function trim1(x: number): string {
    const s = (Math.round(x * 10) / 10).toFixed(1);
    return s.endsWith('.0') ? s.slice(0, -2) : s;
}

/** Share of the window in whole percent, clamped to 0–100 (a gauge over 100 % is a bug). */
export function percent(tokens: number, window: number): number {
    if (!(window > 0)) return 0;
    return Math.max(0, Math.min(100, Math.round((tokens / window) * 100)));
}

/** The gauge for one folder's status. */
export function gauge(input: GaugeInput): Gauge {
    const { status, server } = input;
    const t = input.t ?? english;
    if (server === 'stopped') {
        return {
            text: t('flower: stopped'),
            colour: 'error',
            spinner: false,
            tooltip: [t('flower: the server stopped; click Restart (flower: Restart Server)')],
        };
    }
    if (status === null) {
        return { text: 'flower', colour: null, spinner: server === 'starting', tooltip: ['flower'] };
    }
    if (waitsForPerson(status)) {
        // The run stands still until the person answers (issue 24): that, not the context, is the news.
        return { text: t('flower: waiting for you'), colour: 'warning', spinner: false, tooltip: tooltip(status, t) };
    }
    const window = status.window > 0 ? status.window : null;
    const size =
        status.context === null
            ? window === null
                ? '—'
                : `— / ${formatTokens(window)}`
            : window === null
              ? formatTokens(status.context)
              : `${formatTokens(status.context)} / ${formatTokens(window)} · ${percent(status.context, window)}%`;
    let text = status.model == null ? `flower ${size}` : `flower ${size} · ${shortModel(status.model)}`;
    let colour: Gauge['colour'] = null;
    if (status.context !== null && status.handoffAt > 0 && status.context >= status.handoffAt) colour = 'warning';
    if (capReached(status)) {
        text = `${text} · ${t('cap reached')}`;
        colour = 'warning';
    }
    const waiting = status.waiting;
    if (waiting !== null) {
        const left = Math.max(0, Math.ceil(input.waitLeft ?? waiting.secondsLeft));
        if (waiting.reason === 'offline') {
            text = t('flower offline · retry in {0} s', String(left));
            colour = 'error';
        } else {
            text = `${text} · ${t('retry in {0} s', String(left))}`;
        }
    }
    if (status.unreachable != null) {
        // The store does not answer (D9): the rest is what was read before, and a wake now would fail.
        text = `${text} · ${t('store unreachable')}`;
        colour = 'error';
    }
    return { text, colour, spinner: status.running, tooltip: tooltip(status, t) };
}

/** Tooltip lines: folder, wake #, step, goals n/m, model, cost, context, last verdict, wait reason, store unreachable, store size (#26), trust (D10). */
export function tooltip(status: FolderStatus, t: Translate = english): string[] {
    const done = status.goals.filter((g) => g.done).length;
    const lines = [`flower · ${status.name}`, t('wake #{0}', String(status.woke))];
    // The server's label (issue 34): never the records' `干活` in the English UI; an older flower sends none.
    lines.push(status.step !== null ? t('step: {0}', status.stepLabel ?? status.step) : status.running ? t('running') : t('idle'));
    lines.push(t('goals {0}/{1}', String(done), String(status.goals.length)));
    // `!= null`: a flower older than this client (flower.python) sends neither field.
    if (status.model != null) lines.push(t('model: {0}', status.model));
    if (status.cost != null) lines.push(costLine(status.cost, t));
    if (capReached(status) && status.cost.max !== null) {
        lines.push(t('the wake stopped at the cap of {0}: raise flower.maxCost (or clear it), then Continue', cap(status.cost.max)));
    }
    if (status.context !== null) {
        lines.push(t('context {0} / {1} (hand-off at {2})', formatTokens(status.context), formatTokens(status.window), formatTokens(status.handoffAt)));
    }
    if (status.forecast != null) lines.push(...forecastLines(status.forecast, t));
    if (status.verdict !== null) {
        const v = status.verdict;
        lines.push(`${t('round {0}: {1}', String(v.round), v.passed ? t('passed') : t('not yet'))} — ${v.reasons}`);
    }
    const asked = waitsForPerson(status) ? waitingLine(status.waitingFor, t) : null;
    if (asked !== null) lines.push(asked);
    if (status.waiting !== null) {
        const w = status.waiting;
        const reason = w.reason === 'offline' ? t('offline') : w.reason === 'backoff' ? t('backoff') : w.reason;
        lines.push(t('waiting ({0}), attempt {1}/{2}', reason, String(w.attempt), String(w.maxAttempts)));
    }
    // `!= null`: an older flower sends neither field. The server's sentence, in the window's language (D4).
    if (status.unreachable != null) lines.push(t('store unreachable: {0}', status.unreachable));
    if (status.storeBytes != null) lines.push(storeLine(status.storeBytes, t));
    // Issue 32: what the run delegated and still runs (an older flower sends no field).
    for (const work of status.background ?? []) lines.push(t('in the background: {0}', work));
    // `!= null`: an older flower sends neither field. Who decided is the server's sentence, in the window's language.
    if (status.trusted != null) {
        const answer = status.trusted ? t('yes') : t('no');
        lines.push(status.trust ? t('trusted: {0} ({1})', answer, status.trust) : t('trusted: {0}', answer));
    }
    return lines;
}

/** The forecast's lines (issue 34): how many work rounds remain to the hand-off and to the window, and what a round costs. */
export function forecastLines(f: Forecast, t: Translate = english): string[] {
    const rounds = (n: number): string => (n === 1 ? t('1 round') : t('{0} rounds', String(n)));
    const where = f.slope === null ? t('too few rounds to tell where the context is heading')
        : f.toHandoff === null || f.toWindow === null ? t('the context is not growing')
        : t('+{0} a round: hand-off in {1}, the window in {2}', formatTokens(Math.round(f.slope)), rounds(f.toHandoff), rounds(f.toWindow));
    const lines = [t('forecast: {0}', where)];
    if (f.wakePerRound !== null || f.taskPerRound !== null) {
        const each = (n: number | null): string => (n === null ? '—' : usd(n));
        lines.push(t('per work round: {0} this wake · {1} the task', each(f.wakePerRound), each(f.taskPerRound)));
    }
    return lines;
}

/** The store's size past which the tooltip suggests `flower gc` (the server's wake line uses the same, retention.py). */
export const STORE_WARN_BYTES = 2_000_000_000;

/** `store 12.3 MB on disk`; past STORE_WARN_BYTES in GB, with what frees it. */
export function storeLine(bytes: number, t: Translate = english): string {
    if (bytes >= STORE_WARN_BYTES) return t('store {0} GB on disk: `flower gc` shows what archived tasks hold and frees them', (bytes / 1e9).toFixed(1));
    return t('store {0} MB on disk', (bytes / 1e6).toFixed(1));
}

/** The run waits for the person: a tool approval or a clarifying question (not an outage: nobody can fix that). */
export function waitsForPerson(status: FolderStatus): boolean {
    // `?.`: a flower older than this client sends no waitingFor.
    const what = status.waitingFor?.what;
    return what === 'approval' || what === 'question';
}

/** The tooltip's line for what the run waits for. */
export function waitingLine(w: WaitingFor | null, t: Translate = english): string | null {
    if (w === null) return null;
    if (w.what === 'approval') return w.approval == null ? t('waiting for you: a tool approval') : t('waiting for you: allow {0}: {1}?', w.approval.tool, w.approval.summary);
    return w.what === 'question' ? t('waiting for you: a question') : null;
}

/** US dollars as spent: two decimals (`$0.42`, `$3.10`), `<$0.01` for a fraction of a cent. */
export function usd(n: number): string {
    return n > 0 && n < 0.005 ? '<$0.01' : `$${n.toFixed(2)}`;
}

/** A cap as the person set it: `$20`, `$0.50`. */
export function cap(n: number): string {
    return Number.isInteger(n) ? `$${n}` : usd(n);
}

/** `$0.42 this wake · $3.10 task · cap $20` (no cap part without a cap). */
export function costLine(cost: Cost, t: Translate = english): string {
    const line = t('{0} this wake · {1} task', usd(cost.wake), usd(cost.task));
    return cost.max === null ? line : `${line} · ${t('cap {0}', cap(cost.max))}`;
}

/** An idle folder whose last wake spent its cap: it stopped there (issue 15), not because of a failure. */
export function capReached(status: FolderStatus): boolean {
    const cost = status.cost as Cost | undefined; // undefined from an older flower (see tooltip)
    return !status.running && cost != null && cost.max !== null && cost.wake >= cost.max;
}

/** The model's name for the status bar: `claude-sonnet-4-5-20250929` → `sonnet-4-5` (the tooltip has it whole). */
export function shortModel(model: string): string {
    return model.replace(/^claude-/, '').replace(/-\d{8}$/, '');
}
