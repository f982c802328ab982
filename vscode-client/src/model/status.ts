/**
 * A folder's status as the client knows it (no `vscode` import, unit-tested): the server's
 * flower/status answers and what notifications say in between. The gauge's context size and
 * window are always the newest the server said (S19): an answer to a question asked before the
 * newest flower/context notification does not bring back its older size or window.
 *
 * What a notification changes is what the server put in it, never decided here (issue 33): the
 * work session, the step's label, whether the folder has a task all come from the server.
 */
import type { ContextNotification, FolderStatus, StateNotification, StepStartNotification } from '../protocol';

export class StatusKeeper {
    status: FolderStatus | null = null;
    /** Counts the notifications applied; a question is stamped with it when asked. */
    private applied = 0;
    /** The newest flower/context notification, and `applied` when it came. */
    private context: { tokens: number; window: number; at: number } | null = null;

    /** The stamp of a question asked now (pass it to `answer`). */
    asking(): number {
        return this.applied;
    }

    /** The server's status, answering a question stamped `asked`. */
    answer(status: FolderStatus, asked: number): FolderStatus {
        const c = this.context;
        this.status = c !== null && c.at > asked ? { ...status, context: c.tokens, window: c.window } : status;
        return this.status;
    }

    /** A flower/context notification of the work session. */
    contextSize(tokens: number, window: number): void {
        this.applied++;
        this.context = { tokens, window, at: this.applied };
        this.patch({ context: tokens, window });
    }

    /** A flower/context notification: the gauge's when the server says the size is the work session's. */
    contextOf(n: ContextNotification): boolean {
        if (!n.workSession) return false;
        this.contextSize(n.tokens, n.window);
        return true;
    }

    /** What a flower/stepStart says of the status: the step, its label and whether it is the work session's, as the server named them. */
    static stepStarted(n: StepStartNotification): Partial<FolderStatus> {
        return { step: n.step, stepLabel: n.label, workSession: n.workSession, running: true, waiting: null };
    }

    /** What a flower/state says of the status: running, or ended (no step, nothing waited for), and the wake count. */
    static state(n: StateNotification): Partial<FolderStatus> {
        return {
            ...(n.running ? { running: true } : StatusKeeper.idle()),
            ...(n.woke !== null ? { woke: n.woke } : {}),
        };
    }

    /**
     * Nothing runs: no step, no step label, not the work session, nothing waited for. A wake's end says so, and so
     * does the client once its server stopped for good (it gave up restarting or reconnecting): the step's label and
     * `workSession` go with the step, or the tooltip and the gauge would go on naming a step nobody runs.
     */
    static idle(): Partial<FolderStatus> {
        return { running: false, step: null, stepLabel: null, workSession: false, waiting: null, waitingFor: null };
    }

    /** What another notification says, applied at once (the next answer confirms it); false without a status yet. */
    patch(change: Partial<FolderStatus>): boolean {
        this.applied++;
        if (this.status === null) return false;
        this.status = { ...this.status, ...change };
        return true;
    }
}
