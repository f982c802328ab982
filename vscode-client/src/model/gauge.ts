/**
 * The status-bar gauge as text, colour and tooltip, from a folder's status (S19; no `vscode`
 * import, unit-tested in plain Node). The window and the handoff threshold are the server's
 * (never an assumed constant); tokens are what the server reports (input + cache read +
 * cache creation of the last request).
 */
import type { FolderStatus } from '../protocol';

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
    /** `warning` from the handoff threshold on, `error` offline or stopped. */
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
    const window = status.window > 0 ? status.window : null;
    const size =
        status.context === null
            ? window === null
                ? '—'
                : `— / ${formatTokens(window)}`
            : window === null
              ? formatTokens(status.context)
              : `${formatTokens(status.context)} / ${formatTokens(window)} · ${percent(status.context, window)}%`;
    let text = `flower ${size}`;
    let colour: Gauge['colour'] = null;
    if (status.context !== null && status.handoffAt > 0 && status.context >= status.handoffAt) colour = 'warning';
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
    return { text, colour, spinner: status.running, tooltip: tooltip(status) };
}

/** Tooltip lines: folder, wake #, step, goals n/m, last verdict, wait reason. */
export function tooltip(status: FolderStatus): string[] {
    const done = status.goals.filter((g) => g.done).length;
    const lines = [`flower · ${status.name}`, `wake #${status.woke}`];
    lines.push(status.step !== null ? `step: ${status.step}` : status.running ? 'running' : 'idle');
    lines.push(`goals ${done}/${status.goals.length}`);
    if (status.context !== null) {
        lines.push(`context ${formatTokens(status.context)} / ${formatTokens(status.window)} (hand-off at ${formatTokens(status.handoffAt)})`);
    }
    if (status.verdict !== null) {
        const v = status.verdict;
        lines.push(`round ${v.round}: ${v.passed ? 'passed' : 'not yet'} — ${v.reasons}`);
    }
    if (status.waiting !== null) {
        const w = status.waiting;
        lines.push(`waiting (${w.reason}), attempt ${w.attempt}/${w.maxAttempts}`);
    }
    return lines;
}
