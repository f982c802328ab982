/**
 * A folder server's lifecycle as one state and the transitions between them (issue 33; the model
 * is vscode-languageclient's own `State` enum), without `vscode`: what used to be ten flags of
 * `FolderServer` (starting, stopping, restartPending, reconnecting, the reconnect delay, the
 * transport, why a start failed, the waiters of a start and of a reconnect, the gauge's state).
 *
 *   stopped      --start-->   starting        (also from restarting: a command starts a fresh child)
 *   starting     --missing-->  stopped         (flower not importable)
 *   starting     --failed-->   stopped         (also from stopped after a give-up: the start's own reason)
 *   starting, restarting, reconnecting --running--> running
 *   starting, running, restarting --crashed--> restarting     (window mode only)
 *   starting, running, reconnecting --lost--> reconnecting    (shared mode only; `retry` stays there)
 *   any live state --gaveUp--> stopped;  live or stopped --stop--> stopping --stopped--> stopped
 *   anything but disposed --dispose--> disposed
 *
 * `next` is the whole rule: an event a state does not take is refused (null), never half applied.
 * `dispose` ends everything: a disposed server takes no event.
 */
import type { EngineMode } from './engine';
import type { ServerState } from './gauge';

/** Why a server is stopped: flower not importable, a start that failed, a budget used up, or asked to. */
export type StopReason = 'missing' | 'failed' | 'gaveUp' | 'stopped';

/** Where a folder server is; `mode` is the transport of its current or last client (`flower.engine`). */
export type LifeState =
    /** No client runs. `reason` null before the first start; `error` is a failed start's one line. */
    | { name: 'stopped'; mode: EngineMode; reason: StopReason | null; error: string | null }
    /** start(): the interpreter, the import check, the client's start and initialize. */
    | { name: 'starting'; mode: EngineMode }
    /** The client is up (its `State.Running`). */
    | { name: 'running'; mode: EngineMode }
    /** The window's child ended unasked; the client starts a new one (RestartBudget). */
    | { name: 'restarting'; mode: 'window' }
    /** The engine connection was lost; the client connects again after `delay` ms (ReconnectPolicy). */
    | { name: 'reconnecting'; mode: 'shared'; delay: number }
    /** stop(): detach, stop and dispose the client. The gauge keeps what it `shows` until stopped. */
    | { name: 'stopping'; mode: EngineMode; shows: ServerState }
    /** The folder went away: nothing moves any more. */
    | { name: 'disposed'; mode: EngineMode };

/** What happens to a folder server. */
export type LifeEvent =
    /** A start begins, with the transport read from the settings. */
    | { type: 'start'; mode: EngineMode }
    /** The interpreter cannot import flower. */
    | { type: 'missing' }
    /** The client's start failed (its one line). */
    | { type: 'failed'; error: string }
    /** The client reached `State.Running`. */
    | { type: 'running' }
    /** The window's child ended unasked and the restart budget allows another. */
    | { type: 'crashed' }
    /** The engine connection was lost and the reconnect policy allows another attempt after `delay` ms. */
    | { type: 'lost'; delay: number }
    /** A reconnect attempt failed; the next one after `delay` ms. */
    | { type: 'retry'; delay: number }
    /** The restart budget or the reconnect policy is used up. */
    | { type: 'gaveUp' }
    /** stop() begins. */
    | { type: 'stop' }
    /** stop() ended: the client is disposed. */
    | { type: 'stopped' }
    /** The folder's server is disposed. */
    | { type: 'dispose' };

/** The state a server starts in. */
export const INITIAL: LifeState = { name: 'stopped', mode: 'shared', reason: null, error: null };

/** Whether a client exists or is being made (the states a close, a give-up or a stop can reach). */
export function live(s: LifeState): boolean {
    return s.name === 'starting' || s.name === 'running' || s.name === 'restarting' || s.name === 'reconnecting';
}

/** The state after `e`, or null: `s` does not take `e` (refused; the caller keeps `s`). */
export function next(s: LifeState, e: LifeEvent): LifeState | null {
    const mode = s.mode;
    switch (e.type) {
        case 'start':
            // From restarting too: a command while a crashed child is being restarted starts a fresh one.
            return s.name === 'stopped' || s.name === 'restarting' ? { name: 'starting', mode: e.mode } : null;
        case 'missing':
            return s.name === 'starting' ? stopped(mode, 'missing') : null;
        case 'failed':
            // Also after a give-up during the start: the start's own reason is the one to tell. A start
            // cut short by stop() did not fail.
            return s.name === 'starting' || (s.name === 'stopped' && s.reason === 'gaveUp') ? stopped(mode, 'failed', e.error) : null;
        case 'running':
            return s.name === 'starting' || s.name === 'restarting' || s.name === 'reconnecting' ? { name: 'running', mode } : null;
        case 'crashed':
            return mode === 'window' && (s.name === 'starting' || s.name === 'running' || s.name === 'restarting') ? { name: 'restarting', mode } : null;
        case 'lost':
            return mode === 'shared' && (s.name === 'starting' || s.name === 'running' || s.name === 'reconnecting') ? { name: 'reconnecting', mode, delay: e.delay } : null;
        case 'retry':
            return s.name === 'reconnecting' ? { name: 'reconnecting', mode: s.mode, delay: e.delay } : null;
        case 'gaveUp':
            return live(s) ? stopped(mode, 'gaveUp') : null;
        case 'stop':
            // From stopped too: a client given up is still held, and stop() disposes it.
            return live(s) || s.name === 'stopped' ? { name: 'stopping', mode, shows: shown(s) } : null;
        case 'stopped':
            return s.name === 'stopping' ? stopped(mode, 'stopped') : null;
        case 'dispose':
            return s.name === 'disposed' ? null : { name: 'disposed', mode };
    }
}

function stopped(mode: EngineMode, reason: StopReason, error: string | null = null): LifeState {
    return { name: 'stopped', mode, reason, error };
}

/** What the gauge shows for a state: `starting` while a client is being made or made again. */
export function shown(s: LifeState): ServerState {
    switch (s.name) {
        case 'running':
            return 'running';
        case 'starting':
        case 'restarting':
        case 'reconnecting':
            return 'starting';
        case 'stopping':
            return s.shows;
        case 'stopped':
        case 'disposed':
            return 'stopped';
    }
}

/** The state of one folder server, with waiters for the states to come. */
export class Lifecycle {
    private current: LifeState = INITIAL;
    private waiters: { until: (s: LifeState) => boolean; resolve: (s: LifeState) => void }[] = [];

    get state(): LifeState {
        return this.current;
    }

    /** Apply `e`: true when taken; false when refused (the state stays as it was). */
    fire(e: LifeEvent): boolean {
        const after = next(this.current, e);
        if (after === null) return false;
        this.current = after;
        const due = this.waiters.filter((w) => w.until(after));
        this.waiters = this.waiters.filter((w) => !due.includes(w));
        for (const w of due) w.resolve(after);
        return true;
    }

    /** The first state (the current one included) for which `until` holds. */
    when(until: (s: LifeState) => boolean): Promise<LifeState> {
        if (until(this.current)) return Promise.resolve(this.current);
        return new Promise((resolve) => this.waiters.push({ until, resolve }));
    }

    /**
     * How the start or reconnect under way ends: true once running, false once stopped, stopping
     * or disposed. Bounded by the restart budget and the reconnect policy, which end in `gaveUp`.
     */
    async outcome(): Promise<boolean> {
        const s = await this.when((t) => t.name === 'running' || t.name === 'stopped' || t.name === 'stopping' || t.name === 'disposed');
        return s.name === 'running';
    }
}
