/**
 * The shared engine (D11) as the client sees it, without `vscode`: which transport a folder uses
 * (`flower.engine`), what environment goes with a wake, how `serve --background`
 * answers, and how often a lost engine connection is tried again.
 */

/** `shared`: one engine per user over its socket (the run outlives the window); `window`: a stdio child of this window. */
export type EngineMode = 'shared' | 'window';

/** The setting's value, `shared` for anything unexpected. */
export function engineMode(raw: unknown): EngineMode {
    return raw === 'window' ? 'window' : 'shared';
}

/**
 * What a wake, say or new carries to the engine as `env`: this window's whole environment, plus the
 * API key from SecretStorage as `ANTHROPIC_API_KEY` (it wins over the window's own). Which of these
 * a wake runs with is the engine's rule alone (server `core/travel.py`, protocol.md "Whose
 * environment"; issue 33: the client kept a second copy of that rule and the two disagreed). The
 * result goes into that one request only: the engine keeps what travels in memory for the folder,
 * never writes or logs it, and this client's log never shows it (redactEnv).
 */
export function requestEnv(env: Readonly<Record<string, string | undefined>>, apiKey?: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(env)) {
        if (value !== undefined) out[name] = value;
    }
    if (apiKey !== undefined && apiKey !== '') out.ANTHROPIC_API_KEY = apiKey;
    return out;
}

/** What an `env` object is replaced with in a log line. */
export const ENV_NOT_LOGGED = '"[not logged]"';

/**
 * A log line with the value of every `"env": {…}` in it replaced by `"[not logged]"`: the JSON-RPC
 * trace (`flower.trace.server`) prints each request's params whole, and a wake's `env` holds the
 * API key and the rest of the window's environment. An object cut off by the end of the line is
 * replaced up to the end.
 */
export function redactEnv(line: string): string {
    const opening = /"env"\s*:\s*\{/g;
    let out = '';
    let from = 0;
    for (let m = opening.exec(line); m !== null; m = opening.exec(line)) {
        const start = m.index + m[0].length - 1; // the `{`
        const end = objectEnd(line, start);
        out += `${line.slice(from, start)}${ENV_NOT_LOGGED}`;
        from = end;
        opening.lastIndex = end;
    }
    return out + line.slice(from);
}

/** The index just after the JSON object that opens at `start` (its strings skipped), or the text's length. */
function objectEnd(text: string, start: number): number {
    let depth = 0;
    let inString = false;
    for (let i = start; i < text.length; i++) {
        const c = text[i];
        if (inString) {
            if (c === '\\') i++;
            else if (c === '"') inString = false;
        } else if (c === '"') inString = true;
        else if (c === '{') depth++;
        else if (c === '}' && --depth === 0) return i + 1;
    }
    return text.length;
}

/**
 * What `<python> -m flower.cli serve --background` answered: the socket path (its last non-empty
 * stdout line) and, when it wrote one, the engine's note for the person (its last stderr line:
 * e.g. that an engine of another version finishes its task first); or, when it failed, the
 * one-line reason it gave.
 */
export function serveAnswer(code: number | null, stdout: string, stderr: string): { path: string; note: string | null } | { error: string } {
    const last = (text: string): string => text.split(/\r?\n/).map((l) => l.trim()).filter((l) => l !== '').pop() ?? '';
    const line = last(stdout);
    const said = last(stderr).replace(/^flower: /, '');
    if (code === 0 && line.startsWith('/')) return { path: line, note: said !== '' ? said : null };
    const why = line !== '' ? line : said;
    return { error: why !== '' ? why : `flower serve --background exited with ${code === null ? 'a signal' : `code ${code}`}` };
}

/**
 * Reconnecting to an engine that went away: the delays grow (0.5 s, 1, 2, 4, 8), `max` attempts
 * in a row, then the client gives up and says so. A connection that stayed up for `stableMs`
 * counts as healthy again: the next loss starts from the first delay.
 */
export class ReconnectPolicy {
    private attempts = 0;
    private upSince: number | null = null;

    constructor(
        readonly max = 5,
        readonly firstMs = 500,
        readonly stableMs = 60_000,
    ) {}

    /** A connection was made at `now`. */
    connected(now: number): void {
        this.upSince = now;
    }

    /** The connection was lost at `now`: the delay before the next attempt (ms), or null to give up. */
    lost(now: number): number | null {
        if (this.upSince !== null && now - this.upSince >= this.stableMs) this.attempts = 0;
        this.upSince = null;
        if (this.attempts >= this.max) return null;
        return this.firstMs * 2 ** this.attempts++;
    }

    /** Attempts made since the last healthy connection. */
    get count(): number {
        return this.attempts;
    }

    /** The person asked for a restart: a fresh budget. */
    reset(): void {
        this.attempts = 0;
        this.upSince = null;
    }
}
