/**
 * The status-bar gauge as text, colour and tooltip, from a folder's status (S19; no `vscode`
 * import, unit-tested in plain Node). The window and the handoff threshold are the server's
 * (never an assumed constant); tokens are what the server reports (input + cache read +
 * cache creation of the last request). The model in use and what work cost (issue 15) are
 * the server's too.
 */
import type { Cost, FolderStatus, Forecast, WaitingFor } from '../protocol';

/** What the server process is doing, as the client sees it. */
export type ServerState = 'starting' | 'running' | 'stopped';

export interface GaugeInput {
    status: FolderStatus | null;
    server: ServerState;
    /** Seconds left in the current wait, counted down by the caller from `secondsLeft`. */
    waitLeft?: number | null;
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
    if (server === 'stopped') {
        return {
            text: 'flower: stopped',
            colour: 'error',
            spinner: false,
            tooltip: ['flower: the server stopped; click Restart (flower: Restart Server)'],
        };
    }
    if (status === null) {
        return { text: 'flower', colour: null, spinner: server === 'starting', tooltip: ['flower'] };
    }
    if (waitsForPerson(status)) {
        // The run stands still until the person answers (issue 24): that, not the context, is the news.
        return { text: 'flower: waiting for you', colour: 'warning', spinner: false, tooltip: tooltip(status) };
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
        text = `${text} · cap reached`;
        colour = 'warning';
    }
    const waiting = status.waiting;
    if (waiting !== null) {
        const left = Math.max(0, Math.ceil(input.waitLeft ?? waiting.secondsLeft));
        if (waiting.reason === 'offline') {
            text = `flower offline · retry in ${left} s`;
            colour = 'error';
        } else {
            text = `${text} · retry in ${left} s`;
        }
    }
    if (status.unreachable != null) {
        // The store does not answer (D9): the rest is what was read before, and a wake now would fail.
        text = `${text} · store unreachable`;
        colour = 'error';
    }
    return { text, colour, spinner: status.running, tooltip: tooltip(status) };
}

/** Tooltip lines: folder, wake #, step, goals n/m, model, cost, context, last verdict, wait reason, store unreachable, store size (#26), trust (D10). */
export function tooltip(status: FolderStatus): string[] {
    const done = status.goals.filter((g) => g.done).length;
    const lines = [`flower · ${status.name}`, `wake #${status.woke}`];
    // The server's label (issue 34): never the records' `干活` in the English UI; an older flower sends none.
    lines.push(status.step !== null ? `step: ${status.stepLabel ?? status.step}` : status.running ? 'running' : 'idle');
    lines.push(`goals ${done}/${status.goals.length}`);
    // `!= null`: a flower older than this client (flower.python) sends neither field.
    if (status.model != null) lines.push(`model: ${status.model}`);
    if (status.cost != null) lines.push(costLine(status.cost));
    if (capReached(status) && status.cost.max !== null) {
        lines.push(`the wake stopped at the cap of ${cap(status.cost.max)}: raise flower.maxCost (or clear it), then Continue`);
    }
    if (status.context !== null) {
        lines.push(`context ${formatTokens(status.context)} / ${formatTokens(status.window)} (hand-off at ${formatTokens(status.handoffAt)})`);
    }
    if (status.forecast != null) lines.push(...forecastLines(status.forecast));
    if (status.verdict !== null) {
        const v = status.verdict;
        lines.push(`round ${v.round}: ${v.passed ? 'passed' : 'not yet'} — ${v.reasons}`);
    }
    const asked = waitsForPerson(status) ? waitingLine(status.waitingFor) : null;
    if (asked !== null) lines.push(asked);
    if (status.waiting !== null) {
        const w = status.waiting;
        lines.push(`waiting (${w.reason}), attempt ${w.attempt}/${w.maxAttempts}`);
    }
    // `!= null`: an older flower sends neither field. The server's sentence, in the window's language (D4).
    if (status.unreachable != null) lines.push(`store unreachable: ${status.unreachable}`);
    if (status.storeBytes != null) lines.push(storeLine(status.storeBytes));
    // Issue 32: what the run delegated and still runs (an older flower sends no field).
    for (const work of status.background ?? []) lines.push(`in the background: ${work}`);
    // `!= null`: an older flower sends neither field. Who decided is the server's sentence, in the window's language.
    if (status.trusted != null) lines.push(`trusted: ${status.trusted ? 'yes' : 'no'}${status.trust ? ` (${status.trust})` : ''}`);
    return lines;
}

/** The forecast's lines (issue 34): how many work rounds remain to the hand-off and to the window, and what a round costs. */
export function forecastLines(f: Forecast): string[] {
    const rounds = (n: number): string => `${n} round${n === 1 ? '' : 's'}`;
    const where = f.slope === null ? 'too few rounds to tell where the context is heading'
        : f.toHandoff === null || f.toWindow === null ? 'the context is not growing'
        : `+${formatTokens(Math.round(f.slope))} a round: hand-off in ${rounds(f.toHandoff)}, the window in ${rounds(f.toWindow)}`;
    const lines = [`forecast: ${where}`];
    if (f.wakePerRound !== null || f.taskPerRound !== null) {
        const each = (n: number | null): string => (n === null ? '—' : usd(n));
        lines.push(`per work round: ${each(f.wakePerRound)} this wake · ${each(f.taskPerRound)} the task`);
    }
    return lines;
}

/** The store's size past which the tooltip suggests `flower gc` (the server's wake line uses the same, retention.py). */
export const STORE_WARN_BYTES = 2_000_000_000;

/** `store 12.3 MB on disk`; past STORE_WARN_BYTES in GB, with what frees it. */
export function storeLine(bytes: number): string {
    if (bytes >= STORE_WARN_BYTES) return `store ${(bytes / 1e9).toFixed(1)} GB on disk: \`flower gc\` shows what archived tasks hold and frees them`;
    return `store ${(bytes / 1e6).toFixed(1)} MB on disk`;
}

/** The run waits for the person: a tool approval or a clarifying question (not an outage: nobody can fix that). */
export function waitsForPerson(status: FolderStatus): boolean {
    // `?.`: a flower older than this client sends no waitingFor.
    const what = status.waitingFor?.what;
    return what === 'approval' || what === 'question';
}

/** The tooltip's line for what the run waits for. */
export function waitingLine(w: WaitingFor | null): string | null {
    if (w === null) return null;
    if (w.what === 'approval') return w.approval == null ? 'waiting for you: a tool approval' : `waiting for you: allow ${w.approval.tool}: ${w.approval.summary}?`;
    return w.what === 'question' ? 'waiting for you: a question' : null;
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
export function costLine(cost: Cost): string {
    const line = `${usd(cost.wake)} this wake · ${usd(cost.task)} task`;
    return cost.max === null ? line : `${line} · cap ${cap(cost.max)}`;
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
