/**
 * Which moments of a run are told to the person wherever they are (issue 24; no `vscode`
 * import, unit-tested): a wake that ends (done, failed, stopped at the cap) and a run that
 * starts waiting for them (a tool approval, a clarifying question, an outage over a minute);
 * and the desktop notification command for `flower.notify: "os"`.
 */
import type { FolderStatus, StateNotification } from '../protocol';

/** A moment worth a notification; the caller words it in the window's language. */
export type Moment =
    /** `passed`: the work passed the judge; false: the rounds ran out first (continue to go on). */
    | { kind: 'done'; woke: number | null; passed: boolean }
    | { kind: 'failed'; error: string }
    | { kind: 'cap'; error: string }
    | { kind: 'approval'; tool: string; summary: string }
    | { kind: 'question'; question: string }
    | { kind: 'outage'; minutes: number };

/** `flower.notify`: editor notifications only, or desktop ones too. */
export type NotifyMode = 'off' | 'os';

/** The setting's value, `off` for anything unexpected. */
export function notifyMode(raw: unknown): NotifyMode {
    return raw === 'os' ? 'os' : 'off';
}

/** An outage is told once it has lasted (or will last, by its next wait) a minute. */
export const OUTAGE_SECONDS = 60;

/** The moment a `flower/state` with running false is: cancelled by the person is none. */
export function wakeEnded(n: StateNotification, capReached: boolean): Moment | null {
    if (n.running || n.cancelled) return null;
    if (n.error !== null) return capReached ? { kind: 'cap', error: n.error } : { kind: 'failed', error: n.error };
    return { kind: 'done', woke: n.woke, passed: n.ok === true };
}

/**
 * One folder's outage (S20, S21), told once: while the status says the run waits out an outage
 * (`waitingFor.what` outage, or a retry wait), it is a moment once it has lasted — or will
 * have, by the end of the wait under way — a minute; then not again until the outage is over.
 */
export class OutageWatch {
    private told = false;
    /** When this outage began (Unix s): the server's `since`, else when the client first saw it. */
    private began: number | null = null;

    /** A status at `now` (Unix s): the moment to tell, or null. */
    update(status: FolderStatus, now: number): Moment | null {
        const w = status.waitingFor ?? null; // `??`: an older flower sends no waitingFor
        if (!(w?.what === 'outage' || (status.waiting !== null && status.running))) {
            this.told = false;
            this.began = null;
            return null;
        }
        this.began = w?.what === 'outage' ? Math.min(w.since, this.began ?? w.since) : (this.began ?? now);
        const lasting = Math.max(0, now - this.began) + Math.max(0, status.waiting?.secondsLeft ?? 0);
        if (this.told || lasting < OUTAGE_SECONDS) return null;
        this.told = true;
        return { kind: 'outage', minutes: Math.max(1, Math.round(lasting / 60)) };
    }
}

/** A program to run, with its arguments (never a shell line: the texts are the model's). */
export interface Command {
    command: string;
    args: string[];
}

/**
 * The desktop notification for `platform`: `notify-send` on Linux, `osascript` on macOS, when
 * `found` finds the program; null otherwise (skipped quietly). The texts go as arguments, so
 * nothing in them is read as a shell word or as AppleScript.
 */
export function desktopCommand(platform: string, title: string, body: string, found: (program: string) => string | null): Command | null {
    if (platform === 'darwin') {
        const osascript = found('osascript');
        if (osascript === null) return null;
        const script = ['on run argv', 'display notification (item 2 of argv) with title (item 1 of argv)', 'end run'];
        return { command: osascript, args: [...script.flatMap((line) => ['-e', line]), title, body] };
    }
    if (platform === 'win32') return null;
    const notifySend = found('notify-send');
    return notifySend === null ? null : { command: notifySend, args: ['--app-name=flower', '--', title, body] };
}

/** The first executable `program` in a PATH-like list of dirs, checked by `executable`. */
export function findProgram(program: string, pathList: string | undefined, executable: (file: string) => boolean, sep = ':'): string | null {
    for (const dir of (pathList ?? '').split(sep)) {
        if (dir === '') continue;
        const file = `${dir.replace(/\/+$/, '')}/${program}`;
        if (executable(file)) return file;
    }
    return null;
}

/** A text cut to one line of at most `max` characters (a notification is not the transcript). */
export function oneLine(text: string, max = 200): string {
    const line = text.replace(/\s+/g, ' ').trim();
    return line.length > max ? `${line.slice(0, max - 1)}…` : line;
}
