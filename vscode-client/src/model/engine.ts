/**
 * The shared engine (D11) as the client sees it, without `vscode`: which transport a folder uses
 * (`flower.engine`), which environment variables travel with a wake, how `serve --background`
 * answers, and how often a lost engine connection is tried again.
 */

/** `shared`: one engine per user over its socket (the run outlives the window); `window`: a stdio child of this window. */
export type EngineMode = 'shared' | 'window';

/** The setting's value, `shared` for anything unexpected. */
export function engineMode(raw: unknown): EngineMode {
    return raw === 'window' ? 'window' : 'shared';
}

/** The proxy variables, in both spellings the tools read. */
const PROXIES = ['HTTP_PROXY', 'HTTPS_PROXY', 'ALL_PROXY', 'NO_PROXY'];

/** Whether a variable is one the agent and the CLI read, and so travels with a wake (issue 23). */
export function travels(name: string): boolean {
    if (/^(ANTHROPIC_|CLAUDE_|FLOWER_)/.test(name)) return true;
    if (name === 'PATH' || name === 'HOME') return true;
    return PROXIES.includes(name.toUpperCase());
}

/**
 * The variables of `env` that travel with a wake, plus the API key from SecretStorage as
 * `ANTHROPIC_API_KEY` (it wins over the window's own). The result goes into that one request
 * only: the engine holds it in memory for the folder, never writes or logs it.
 */
export function travellingEnv(env: Readonly<Record<string, string | undefined>>, apiKey?: string): Record<string, string> {
    const out: Record<string, string> = {};
    for (const [name, value] of Object.entries(env)) {
        if (value !== undefined && travels(name)) out[name] = value;
    }
    if (apiKey !== undefined && apiKey !== '') out.ANTHROPIC_API_KEY = apiKey;
    return out;
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
