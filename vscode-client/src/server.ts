/**
 * Finding Python and running one language client per workspace folder (D8, anchors: ruff-vscode,
 * vscode-python-tools-extension-template), over one of two transports (`flower.engine`, D11):
 * `shared` (default) connects to the user's one flower engine through its socket, starting it
 * with `python -m flower.cli serve --background` when none answers, so the run outlives the
 * window; `window` runs `python -m flower.lsp` as this window's stdio child.
 *
 * Interpreter, in this order: the setting `flower.python`; else the Python extension's active
 * interpreter when that extension is installed (optional, never a dependency); else `python3`
 * on PATH. The API key from SecretStorage (D6) goes with each wake request to the engine
 * (shared), or into the child's environment (window). A crashed server restarts at most three
 * times, a lost engine is reconnected at most five times in a row (growing delays); then the
 * gauge says `flower: stopped`. Where a folder's server is (starting, running, restarting,
 * reconnecting, stopping, stopped, disposed) is one state, whose transitions are model/lifecycle.ts.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import type * as net from 'node:net';
import * as path from 'node:path';
import * as vscode from 'vscode';
import {
    type CancellationToken,
    CloseAction,
    type CloseHandlerResult,
    ErrorAction,
    type ErrorHandlerResult,
    LanguageClient,
    type LanguageClientOptions,
    type RequestType,
    type ServerOptions,
    State,
    WorkDoneProgressCancelNotification,
    type WorkDoneProgressBegin,
    type WorkDoneProgressEnd,
    type WorkDoneProgressReport,
} from 'vscode-languageclient/node';
import { connectEngine, ensureEngine } from './engine';
import { type EngineMode, engineMode, ReconnectPolicy, redactEnv, requestEnv } from './model/engine';
import type { ServerState } from './model/gauge';
import { type LifeEvent, Lifecycle, type LifeState, live, shown } from './model/lifecycle';
import { RestartBudget } from './model/restarts';
import { findWheel, type Source } from './model/install';
import { explicit, flowerPart, initializationOptions, redactUrls, SETTINGS_FILES, sharedStore } from './model/settings';
import { mayHaveTask } from './model/task';
import { StatusKeeper } from './model/status';
import { type LiveEvent, TranscriptModel } from './model/transcript';
import type { Row } from './model/rows';
import * as p from './protocol';

/** The SecretStorage key of the Anthropic API key. */
export const SECRET_KEY = 'flower.apiKey';
/** History entries per page. */
export const PAGE = 200;

/** Something that changed in a folder, for the views. */
export type FolderEvent =
    | { type: 'status' }
    | { type: 'rows'; rows: Row[] }
    | { type: 'reset' }
    /** A step's section head changed (it started or ended). */
    | { type: 'steps' }
    | { type: 'state'; n: p.StateNotification };

/** The interpreter to run the server with, and where it came from (for messages). */
export interface Interpreter {
    command: string;
    source: 'setting' | 'python extension' | 'PATH';
}

/** The interpreter: setting, then the Python extension's active one, then `python3`. */
export async function findPython(folder: vscode.WorkspaceFolder): Promise<Interpreter> {
    const setting = vscode.workspace.getConfiguration('flower', folder.uri).get<string>('python', '').trim();
    if (setting !== '' && vscode.workspace.isTrusted) return { command: setting, source: 'setting' };
    const fromExtension = await pythonExtensionInterpreter(folder);
    if (fromExtension !== undefined) return { command: fromExtension, source: 'python extension' };
    return { command: 'python3', source: 'PATH' };
}

/** The shape of the part of ms-python.python's API we read (it is optional). */
interface PythonApi {
    environments?: {
        getActiveEnvironmentPath(resource?: vscode.Uri): { path: string } | undefined;
        resolveEnvironment(env: { path: string } | string): Promise<{ executable: { uri?: vscode.Uri } } | undefined>;
    };
}

async function pythonExtensionInterpreter(folder: vscode.WorkspaceFolder): Promise<string | undefined> {
    const ext = vscode.extensions.getExtension<PythonApi>('ms-python.python');
    if (ext === undefined) return undefined;
    try {
        const api = ext.isActive ? ext.exports : await ext.activate();
        const envs = api?.environments;
        const active = envs?.getActiveEnvironmentPath(folder.uri);
        if (envs === undefined || active === undefined) return undefined;
        const resolved = await envs.resolveEnvironment(active);
        return resolved?.executable.uri?.fsPath;
    } catch {
        return undefined;
    }
}

/** Whether `import flower` works with this interpreter (its error text otherwise). */
export function checkImport(command: string): Promise<string | null> {
    return new Promise((resolve) => {
        execFile(command, ['-c', 'import flower.lsp'], { timeout: 20_000 }, (error, _stdout, stderr) => {
            if (error === null) return resolve(null);
            const last = stderr.trim().split('\n').pop() ?? '';
            resolve(last !== '' ? last : error.killed ? 'it did not answer within 20 s' : error.message);
        });
    });
}

/** What `pip install` takes for this extension: its bundled wheel, else the checkout it runs from. */
export function installSource(extensionPath: string): Source {
    const dir = path.join(extensionPath, 'python');
    const wheel = fs.existsSync(dir) ? findWheel(fs.readdirSync(dir)) : undefined;
    return wheel !== undefined ? { wheel: path.join(dir, wheel) } : { checkout: path.dirname(extensionPath) };
}

/** A wake's parameters, kept so that a wake refused for missing credentials can be retried. */
export interface WakeCall {
    method: 'wake' | 'say' | 'new';
    text: string | null;
}

/** One workspace folder's language client, status and transcript. */
export class FolderServer implements vscode.Disposable {
    client: LanguageClient | undefined;
    /** Where the server is in its lifecycle: one state, its transitions in model/lifecycle.ts (issue 33). */
    private readonly lifecycle = new Lifecycle();
    /** The status: flower/status answers and the notifications in between (newest wins). */
    private readonly keeper = new StatusKeeper();
    /** When `status` was received (for the wait countdown). */
    statusAt = 0;
    model = new TranscriptModel();
    /** Increases whenever `model` is replaced (a new server process: its seq counter is new). */
    epoch = 1;
    /** The epoch of the server process that gave the status last (an older one's status may be stale). */
    statusEpoch = 0;
    /** The running step's `$/progress` token (for Cancel). */
    progressToken: string | null = null;
    /** The last wake refused for missing credentials. */
    failedForCredentials: WakeCall | null = null;
    /** A server setting changed while a wake ran: restart once it ends (the process read the old ones). */
    settingsChanged = false;
    private readonly restarts = new RestartBudget(3);
    /** Lost engine connections: how long to wait before the next attempt, and when to give up. */
    private readonly reconnects = new ReconnectPolicy();
    /** The open connection to the engine (shared mode). */
    private socket: net.Socket | undefined;
    /** A hash of the API key the running process got in its environment ('' for none). */
    private startedKey: string | null = null;
    private loaded: { epoch: number; done: Promise<void> } | undefined;
    /** The start under way (ensureStarted's callers share it). */
    private starting: Promise<boolean> | undefined;
    private restartChain: Promise<unknown> = Promise.resolve();
    private statusTimer: NodeJS.Timeout | undefined;
    private readonly emitter = new vscode.EventEmitter<FolderEvent>();
    readonly onEvent = this.emitter.event;

    constructor(
        readonly folder: vscode.WorkspaceFolder,
        private readonly ctx: vscode.ExtensionContext,
        private readonly log: vscode.LogOutputChannel,
        private readonly hooks: ServerHooks,
    ) {}

    get status(): p.FolderStatus | null {
        return this.keeper.status;
    }

    /** The stamp of a status question asked now: pass it to setStatus with the answer. */
    asking(): number {
        return this.keeper.asking();
    }

    get running(): boolean {
        return this.client?.state === State.Running;
    }

    /** The lifecycle's state (model/lifecycle.ts). */
    get state(): LifeState {
        return this.lifecycle.state;
    }

    /** What the gauge shows of the lifecycle. */
    get serverState(): ServerState {
        return shown(this.state);
    }

    /** The transport of the running (or last) client (`flower.engine`, read at each start). */
    get mode(): EngineMode {
        return this.state.mode;
    }

    /** Why the last start failed: `missing` (flower not importable; already told), `failed`. */
    get startFailure(): 'missing' | 'failed' | null {
        const s = this.state;
        return s.name === 'stopped' && (s.reason === 'missing' || s.reason === 'failed') ? s.reason : null;
    }

    /** Why the last start failed, in one line (the engine's own words in shared mode). */
    get startError(): string | null {
        const s = this.state;
        return s.name === 'stopped' ? s.error : null;
    }

    /** Start the client if it is not running; false when it cannot (untrusted, no flower, …). */
    ensureStarted(): Promise<boolean> {
        if (this.running) return Promise.resolve(true);
        const s = this.state;
        // A reconnect under way is the start: a second client would race it.
        if (s.name === 'reconnecting') return this.lifecycle.outcome();
        // A stop under way ends first (its client is being disposed), then a new one starts.
        if (s.name === 'stopping') return this.lifecycle.when((t) => t.name !== 'stopping').then(() => this.ensureStarted());
        this.starting ??= this.start().finally(() => (this.starting = undefined));
        return this.starting;
    }

    /** Stop and start again; serialised (one in flight, the next waits its turn). */
    restart(): Promise<boolean> {
        const next = this.restartChain.then(async () => {
            this.restarts.reset();
            this.reconnects.reset();
            await this.stop();
            return this.ensureStarted();
        });
        this.restartChain = next.catch(() => undefined);
        return next;
    }

    /**
     * Restart an idle server whose process got another API key than SecretStorage holds now:
     * in window mode the key reaches the server only through its environment (D6), so a key set
     * after the start needs a new process before the next wake can use it. The engine gets the
     * key with each wake instead (wakeEnv).
     */
    async useCurrentKey(): Promise<void> {
        if (this.mode === 'shared') return;
        if (this.client === undefined || this.startedKey === null || (this.status?.running ?? false)) return;
        if (keyHash(await this.ctx.secrets.get(SECRET_KEY)) === this.startedKey) return;
        this.log.info(`${this.folder.name}: the API key changed; restarting the server so that it has the new one`);
        await this.restart();
    }

    /** Stop the client. The engine goes on: this connection detaches first, and the run (if any) continues there. */
    async stop(): Promise<void> {
        const client = this.client;
        this.client = undefined;
        if (client === undefined) return;
        // A reconnect or start waiting on this client ends here (Lifecycle.outcome: false).
        this.go({ type: 'stop' });
        try {
            if (this.mode === 'shared' && client.state === State.Running) {
                await withTimeout(client.sendRequest(p.detach, { folder: this.uri }), 3000).catch((e: unknown) => {
                    this.log.warn(`${this.folder.name}: flower/detach: ${String(e)}`);
                });
            }
            if (client.state !== State.Stopped) await client.stop(30_000);
        } catch (e) {
            this.log.warn(`${this.folder.name}: stopping the server: ${String(e)}`);
        } finally {
            await client.dispose().catch(() => undefined);
            this.socket?.destroy();
            this.socket = undefined;
        }
        // A window's own server took its wake with it; the engine's run goes on (its next attach says how it stands).
        if (this.mode === 'window') this.keeper.patch(StatusKeeper.idle());
        this.go({ type: 'stopped' });
    }

    /**
     * The environment a wake, say or new carries to the engine (shared mode): this window's, and
     * the API key from SecretStorage; the engine keeps what travels (its core/travel.py, issue 33).
     * Undefined in window mode, where the child has this window's environment already.
     */
    async wakeEnv(): Promise<Record<string, string> | undefined> {
        if (this.mode === 'window') return undefined;
        return requestEnv(process.env, await this.ctx.secrets.get(SECRET_KEY));
    }

    dispose(): void {
        clearTimeout(this.statusTimer);
        this.lifecycle.fire({ type: 'dispose' });
        this.emitter.dispose();
    }

    /** Send a request once the server runs; errors are the caller's to show. */
    async request<P, R>(type: RequestType<P, R, void>, params: P): Promise<R> {
        if (!(await this.ensureStarted()) || this.client === undefined) {
            throw new Error(vscode.l10n.t('the flower server for {0} is not running', this.folder.name));
        }
        return this.client.sendRequest(type, params);
    }

    /**
     * Cancel the running wake: in the engine by folder (flower/cancel: any attached window can,
     * also one that attached mid-step and never saw the step's progress token); in window mode
     * through the step's progress token (window/workDoneProgress/cancel).
     */
    async cancel(token: string | null = this.progressToken): Promise<boolean> {
        if (this.client === undefined) return false;
        if (this.mode === 'shared') {
            try {
                return (await this.client.sendRequest(p.cancel, { folder: this.uri })).cancelled;
            } catch (e) {
                this.log.warn(`${this.folder.name}: flower/cancel: ${String(e)}`);
                return false;
            }
        }
        if (token === null) return false;
        await this.client.sendNotification(WorkDoneProgressCancelNotification.type, { token });
        return true;
    }

    /** Fetch the history page before the model's oldest entry and merge it. */
    async loadOlder(): Promise<Row[]> {
        const before = this.model.nextBefore;
        if (before === null || this.client === undefined || !this.running) return [];
        const epoch = this.epoch;
        try {
            const page = await this.client.sendRequest(p.history, {
                folder: this.uri,
                before: before ?? null,
                limit: PAGE,
            });
            if (epoch !== this.epoch) return [];
            return this.model.mergeHistory(page);
        } catch (e) {
            this.log.warn(`${this.folder.name}: flower/history: ${String(e)}`);
            this.model.nextBefore = null;
            return [];
        }
    }

    /** Ask the server for the folder's status now (and let the views know); `fresh`: after it read its files again. */
    async refreshStatus(fresh = false): Promise<void> {
        if (this.client === undefined || !this.running) return;
        try {
            const asked = this.keeper.asking();
            const result = await this.client.sendRequest(p.status, { folder: this.uri, ...(fresh ? { fresh } : {}) });
            const status = result.folders[0];
            if (status !== undefined) this.setStatus(status, asked);
        } catch (e) {
            this.log.warn(`${this.folder.name}: flower/status: ${String(e)}`);
        }
    }

    /** The server's status, answering a question stamped `asked` (see StatusKeeper). */
    setStatus(status: p.FolderStatus, asked: number): void {
        this.keeper.answer(status, asked);
        rememberTask(this.folder, this.ctx.workspaceState, status.hasTask);
        this.statusEpoch = this.epoch;
        this.statusAt = Date.now();
        this.emitter.fire({ type: 'status' });
    }

    get uri(): string {
        return this.folder.uri.toString();
    }

    // -- internals ------------------------------------------------------------------------

    private async start(): Promise<boolean> {
        if (!vscode.workspace.isTrusted) return false;
        const config = vscode.workspace.getConfiguration('flower', this.folder.uri);
        if (!this.go({ type: 'start', mode: engineMode(config.get('engine')) })) return false;
        // A client left behind by a failed start or reconnect is done with: a new one replaces it.
        const old = this.client;
        this.client = undefined;
        await old?.dispose().catch(() => undefined);
        const python = await findPython(this.folder);
        const importError = await checkImport(python.command);
        if (importError !== null) {
            this.log.error(`${this.folder.name}: ${python.command} (${python.source}) cannot import flower: ${importError}`);
            this.hooks.missingFlower(python);
            this.go({ type: 'missing' });
            return false;
        }
        this.settingsChanged = false;
        const env: NodeJS.ProcessEnv = { ...process.env, PYTHONUNBUFFERED: '1' };
        let serverOptions: ServerOptions;
        if (this.mode === 'shared') {
            // The engine's own environment is only the fallback: the key goes with each wake (wakeEnv).
            this.log.info(`${this.folder.name}: connecting to the flower engine (${python.command} -m flower.cli serve --background; interpreter from ${python.source})`);
            this.startedKey = null;
            serverOptions = () => this.engineTransport(python.command, env);
        } else {
            this.log.info(`${this.folder.name}: starting ${python.command} -m flower.lsp (interpreter from ${python.source})`);
            const key = await this.ctx.secrets.get(SECRET_KEY);
            if (key !== undefined && key !== '') env.ANTHROPIC_API_KEY = key;
            this.startedKey = keyHash(key);
            serverOptions = { command: python.command, args: ['-m', 'flower.lsp'], options: { cwd: this.folder.uri.fsPath, env } };
        }
        const options = initializationOptions((option) => explicit(config.inspect(option)));
        this.log.info(`${this.folder.name}: server options ${redactUrls(JSON.stringify(options))} (the rest from .flower.toml, the environment or the defaults)`);
        const clientOptions: LanguageClientOptions = {
            documentSelector: [],
            workspaceFolder: this.folder,
            // The verbose trace prints `initialize` whole, and the server's stderr goes here too: a
            // `store` URL's password never reaches the log.
            outputChannel: redacting(this.log),
            traceOutputChannel: redacting(this.log),
            // VS Code's workspace trust is flower's for the folder (D10): its own hooks and .mcp.json servers may
            // run. Not a setting (protocol.md, `trusted`), so it rides beside the options.
            // The engine is told the client's flower version (another one restarts it when idle, D11), and that this
            // window answers flower/approve and flower/ask (the engine asks only clients that say so, issue 31);
            // none is a setting.
            initializationOptions: {
                ...options,
                trusted: vscode.workspace.isTrusted,
                ...(this.mode === 'shared'
                    ? { flowerVersion: String(this.ctx.extension.packageJSON.version), answers: [p.approve.method, p.ask.method] }
                    : {}),
            },
            errorHandler: {
                error: (): ErrorHandlerResult => ({ action: ErrorAction.Continue }),
                closed: (): CloseHandlerResult => this.closed(),
            },
            middleware: {
                handleWorkDoneProgress: (token, params, next) => {
                    this.hooks.progress(this, String(token), params);
                    // Only the end goes on: the built-in part then disposes itself, never having shown.
                    if (params.kind === 'end') next(token, params);
                },
            },
        };
        // The id `flower` makes the client read `flower.trace.server`.
        const client = new LanguageClient('flower', `flower · ${this.folder.name}`, serverOptions, clientOptions);
        this.register(client);
        this.client = client;
        this.model = new TranscriptModel();
        this.epoch++;
        this.emitter.fire({ type: 'reset' });
        try {
            await client.start();
        } catch (e) {
            // A server that dies while starting is being restarted already (closed() ran before
            // this rejection and said Restart): the outcome is that restart's, not this error.
            const again = this.state.name === 'restarting' || this.state.name === 'reconnecting';
            if (!(this.client === client && again && (await this.lifecycle.outcome()))) {
                const error = e instanceof Error ? e.message : String(e);
                this.log.error(`${this.folder.name}: the server did not start: ${error}`);
                if (this.client === client) this.client = undefined;
                await client.dispose().catch(() => undefined);
                this.go({ type: 'failed', error });
                return false;
            }
        }
        this.log.info(`${this.folder.name}: the server runs`);
        await this.afterStart();
        return true;
    }

    /**
     * A connection to the engine (the ServerOptions function of shared mode; the client calls it
     * again for each reconnect): after the reconnect delay, `serve --background` makes sure the
     * engine runs (starting it when none answers), then its socket is opened. A reconnect that
     * fails is tried again here, with the policy's delays, until the policy gives up.
     */
    private async engineTransport(python: string, env: NodeJS.ProcessEnv): Promise<{ reader: net.Socket; writer: net.Socket }> {
        for (;;) {
            const s = this.state;
            const delay = s.name === 'reconnecting' ? s.delay : 0;
            if (delay > 0) await new Promise((resolve) => setTimeout(resolve, delay));
            if (this.client === undefined) throw new Error('the folder\'s client was stopped');
            try {
                const { path: socketPath, note } = await ensureEngine(python, env, this.folder.uri.fsPath);
                // The same words reach the person as the engine's window/showMessage on this connection's initialize.
                if (note !== null) this.log.info(`${this.folder.name}: the flower engine says: ${note}`);
                this.socket?.destroy();
                const socket = await connectEngine(socketPath);
                this.socket = socket;
                this.reconnects.connected(Date.now());
                this.log.info(`${this.folder.name}: connected to the flower engine at ${socketPath}`);
                return { reader: socket, writer: socket };
            } catch (e) {
                // The first connection fails at once, with the engine's own words (start() shows them).
                const reconnecting = this.state.name === 'reconnecting';
                const next = reconnecting ? this.reconnects.lost(Date.now()) : null;
                if (next === null) {
                    if (reconnecting) {
                        this.log.error(`${this.folder.name}: the flower engine could not be reached ${this.reconnects.max} times in a row; not trying again (flower: Restart Server tries again)`);
                        this.go({ type: 'gaveUp' });
                        this.keeper.patch(StatusKeeper.idle());
                    }
                    throw e;
                }
                this.log.warn(`${this.folder.name}: ${e instanceof Error ? e.message : String(e)}; trying again in ${next / 1000} s (${this.reconnects.count}/${this.reconnects.max})`);
                this.go({ type: 'retry', delay: next });
            }
        }
    }

    /**
     * Once per connection: attach (shared mode; its status and cursor) or ask the status
     * (window mode), then the newest history page and a fresh view. Attached, the engine sends
     * this connection the folder's notifications after the cursor: the history page holds what
     * came before, so nothing is missed, and the model drops what it already has.
     */
    private afterStart(): Promise<void> {
        // Called by start() and by the client's Running state (also after an automatic restart):
        // both wait for the same load.
        if (this.loaded?.epoch !== this.epoch) {
            const load = async (): Promise<void> => {
                if (this.mode === 'shared') await this.attach();
                else await this.refreshStatus();
                await this.loadOlder();
                this.emitter.fire({ type: 'reset' });
            };
            this.loaded = { epoch: this.epoch, done: load() };
        }
        return this.loaded.done;
    }

    /** flower/attach: subscribe this connection to the folder; its status, and live entries only after the cursor. */
    private async attach(): Promise<void> {
        if (this.client === undefined) return;
        try {
            const asked = this.keeper.asking();
            const result = await this.client.sendRequest(p.attach, { folder: this.uri });
            this.model.attached(result.recent, result.cursor);
            this.setStatus(result.status, asked);
        } catch (e) {
            const message = e instanceof Error ? e.message : String(e);
            this.log.error(`${this.folder.name}: flower/attach: ${message}`);
            this.hooks.engineSays(this, message);
        }
    }

    /**
     * Our own close handler (not the default 5-in-3-minutes): a window's child restarts ≤ 3
     * times; a lost engine is reconnected with growing delays, ≤ 5 times in a row; then `stopped`.
     */
    private closed(): CloseHandlerResult {
        // Whatever follows, the process that ran the steps is gone: so are its progress notifications.
        this.progressToken = null;
        this.hooks.exited(this);
        // Stopping (asked), stopped or disposed: nothing to restart.
        if (!live(this.state)) return { action: CloseAction.DoNotRestart, handled: true };
        const delay = this.mode === 'shared' ? this.reconnects.lost(Date.now()) : null;
        if (this.mode === 'shared' && delay !== null) {
            this.go({ type: 'lost', delay });
            this.log.warn(`${this.folder.name}: the connection to the flower engine was lost; reconnecting in ${delay / 1000} s (${this.reconnects.count}/${this.reconnects.max})`);
            this.model = new TranscriptModel();
            this.epoch++;
            this.emitter.fire({ type: 'reset' });
            return { action: CloseAction.Restart, handled: true, message: `reconnecting to the flower engine (${this.reconnects.count}/${this.reconnects.max})` };
        }
        if (this.mode === 'window' && this.restarts.crashed()) {
            this.go({ type: 'crashed' });
            this.log.warn(`${this.folder.name}: the server stopped; restart ${this.restarts.count}/${this.restarts.max}`);
            // The restarted process numbers its live entries anew: start the transcript over.
            this.model = new TranscriptModel();
            this.epoch++;
            this.emitter.fire({ type: 'reset' });
            return { action: CloseAction.Restart, handled: true, message: `restarting the server (${this.restarts.count}/${this.restarts.max})` };
        }
        this.log.error(this.mode === 'shared'
            ? `${this.folder.name}: the flower engine could not be reached ${this.reconnects.max} times in a row; not trying again`
            : `${this.folder.name}: the server stopped ${this.restarts.max + 1} times; not restarting`);
        this.go({ type: 'gaveUp' });
        this.keeper.patch(StatusKeeper.idle());
        this.hooks.stopped(this);
        return { action: CloseAction.DoNotRestart, handled: true, message: 'the server keeps stopping: not restarted again' };
    }

    /**
     * Take a lifecycle event and let the views know; false when the state does not take it (a
     * late event of a client being stopped: logged, and nothing changes).
     */
    private go(event: LifeEvent): boolean {
        const before = this.state;
        if (!this.lifecycle.fire(event)) {
            if (before.name !== 'disposed') this.log.info(`${this.folder.name}: ${event.type} ignored while ${before.name}`);
            return false;
        }
        this.emitter.fire({ type: 'status' });
        return true;
    }

    /** One handler per method (vscode-languageclient keeps one), fanned out as FolderEvents. */
    private register(client: LanguageClient): void {
        client.onDidChangeState((e) => {
            if (e.newState !== State.Running) return;
            const was = this.state.name;
            if (!this.go({ type: 'running' })) return;
            void this.afterStart().then(() => {
                // Attached again after a lost engine: the run may have been cut off (flower.resumeOnStartup).
                if (was === 'reconnecting' && this.lifecycle.state.name === 'running') this.hooks.reconnected(this);
            });
        });
        client.onRequest(p.ask, (params) => this.hooks.ask(this, params));
        client.onRequest(p.approve, (params, token) => {
            this.patch({ waitingFor: { what: 'approval', since: params.since, approval: params } });
            return this.hooks.approve(this, params, token);
        });
        client.onNotification(p.approved, (n) => {
            if (this.status?.waitingFor?.approval?.id === n.id) this.patch({ waitingFor: null });
            this.hooks.approved(this, n);
            // A denied call gets no result live: its row says it was denied (issue 34).
            if (n.decision === 'deny') rows(this.model.denied(n.id, n.reason ?? null));
        });
        const rows = (changed: Row[]): void => {
            if (changed.length > 0) this.emitter.fire({ type: 'rows', rows: changed });
        };
        const event = (e: LiveEvent): void => rows(this.model.appendEvent(e));
        client.onNotification(p.transcript, (n) => rows(this.model.appendTranscript(n)));
        client.onNotification(p.pruned, (n) => rows(this.model.applyVerdicts(n.sessionId, n.verdicts)));
        client.onNotification(p.banner, (n) => event({ kind: 'banner', n }));
        client.onNotification(p.header, (n) => event({ kind: 'header', n }));
        client.onNotification(p.question, (n) => event({ kind: 'question', n }));
        client.onNotification(p.notice, (n) => event({ kind: 'notice', n }));
        client.onNotification(p.handoff, (n) => {
            event({ kind: 'handoff', n });
            this.statusSoon();
        });
        client.onNotification(p.verdict, (n) => {
            event({ kind: 'verdict', n });
            this.patch({ verdict: { round: n.round, passed: n.passed, reasons: n.reasons } });
        });
        client.onNotification(p.wait, (n) => {
            event({ kind: 'wait', n });
            this.patch({
                waiting: {
                    reason: n.reason,
                    seconds: n.seconds,
                    attempt: n.attempt,
                    maxAttempts: n.maxAttempts,
                    until: Date.now() / 1000 + n.seconds,
                    secondsLeft: n.seconds,
                },
            });
        });
        client.onNotification(p.context, (n) => {
            // The gauge follows the work session: the server says whether this size is its (protocol.md, issue 33).
            if (this.keeper.contextOf(n)) this.patch({ waiting: null });
        });
        client.onNotification(p.stepStart, (n) => {
            this.model.stepStarted(n);
            this.emitter.fire({ type: 'steps' });
            this.progressToken = n.progress;
            this.patch(StatusKeeper.stepStarted(n));
        });
        client.onNotification(p.stepEnd, (n) => {
            this.model.stepEnded(n);
            this.emitter.fire({ type: 'steps' });
            this.progressToken = null;
            this.statusSoon();
        });
        client.onNotification(p.session, () => this.statusSoon());
        client.onNotification(p.state, (n) => {
            if (!n.running) this.progressToken = null;
            this.patch(StatusKeeper.state(n));
            this.emitter.fire({ type: 'state', n });
            this.statusSoon();
        });
    }

    /** Apply what a notification says at once; the next flower/status confirms it. */
    private patch(change: Partial<p.FolderStatus>): void {
        if (!this.keeper.patch(change)) {
            this.statusSoon();
            return;
        }
        if (change.waiting !== undefined) this.statusAt = Date.now();
        this.emitter.fire({ type: 'status' });
        this.statusSoon();
    }

    /** A flower/status shortly (debounced: a burst of notifications costs one request). */
    private statusSoon(): void {
        clearTimeout(this.statusTimer);
        this.statusTimer = setTimeout(() => void this.refreshStatus(), 300);
    }
}

/** What a FolderServer needs from the rest of the extension (UI it does not own). */
export interface ServerHooks {
    missingFlower(python: Interpreter): void;
    stopped(server: FolderServer): void;
    /** The engine connection was lost and made again: the run may have been cut off (flower.resumeOnStartup). */
    reconnected(server: FolderServer): void;
    /** The engine refused this client (another flower version, …): its own words, for the person. */
    engineSays(server: FolderServer, message: string): void;
    /** The server process ended (asked or not). */
    exited(server: FolderServer): void;
    ask(server: FolderServer, params: p.AskParams): Promise<p.AskResult>;
    /** `flower/approve`: resolves with the person's answer (issue 24). */
    approve(server: FolderServer, params: p.ApproveParams, token: CancellationToken): Promise<p.ApproveResult>;
    approved(server: FolderServer, n: p.ApprovedNotification): void;
    progress(server: FolderServer, token: string, params: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd): void;
}

/** Every folder's server, created on first use. */
export class Servers implements vscode.Disposable {
    private readonly byUri = new Map<string, FolderServer>();
    private readonly emitter = new vscode.EventEmitter<{ server: FolderServer; event: FolderEvent }>();
    readonly onEvent = this.emitter.event;
    private readonly disposables: vscode.Disposable[] = [];

    constructor(
        private readonly ctx: vscode.ExtensionContext,
        private readonly log: vscode.LogOutputChannel,
        private readonly hooks: ServerHooks,
    ) {}

    /** The folder's server object (not started). */
    get(folder: vscode.WorkspaceFolder): FolderServer {
        const key = folder.uri.toString();
        let server = this.byUri.get(key);
        if (server === undefined) {
            server = new FolderServer(folder, this.ctx, this.log, this.hooks);
            const s = server;
            this.disposables.push(server.onEvent((event) => this.emitter.fire({ server: s, event })));
            this.byUri.set(key, server);
        }
        return server;
    }

    all(): FolderServer[] {
        return [...this.byUri.values()];
    }

    /** Whether to start the folder's server when the window opens (see `hasTask`). */
    hasTask(folder: vscode.WorkspaceFolder): boolean {
        return hasTask(folder, this.ctx.workspaceState);
    }

    /** A removed folder: its server stops. */
    async remove(folder: vscode.WorkspaceFolder): Promise<void> {
        const key = folder.uri.toString();
        const server = this.byUri.get(key);
        this.byUri.delete(key);
        if (server !== undefined) {
            await server.stop();
            server.dispose();
        }
    }

    async stopAll(): Promise<void> {
        await Promise.all(this.all().map((s) => s.stop()));
    }

    dispose(): void {
        for (const s of this.all()) s.dispose();
        for (const d of this.disposables) d.dispose();
        this.emitter.dispose();
    }
}

/** The log channel with every URL's password masked in what is written to it (see redactUrls), and no request's `env` (redactEnv). */
function redacting(log: vscode.LogOutputChannel): vscode.LogOutputChannel {
    const writers = new Set<string | symbol>(['append', 'appendLine', 'replace', 'trace', 'debug', 'info', 'warn', 'error']);
    return new Proxy(log, {
        get(target, key) {
            const value: unknown = Reflect.get(target, key);
            if (typeof value !== 'function') return value;
            if (!writers.has(key)) return value.bind(target);
            return (...args: unknown[]) => value.apply(target, args.map((a) => (typeof a === 'string' ? redactEnv(redactUrls(a)) : a)));
        },
    });
}

/** `promise`, or a rejection after `ms`. */
function withTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
    let timer: NodeJS.Timeout | undefined;
    const late = new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer within ${ms / 1000} s`)), ms)));
    return Promise.race([promise, late]).finally(() => clearTimeout(timer));
}

/** The key's sha-256 ('' for none): what is kept in memory to notice a changed key. */
function keyHash(key: string | undefined): string {
    return key === undefined || key === '' ? '' : createHash('sha256').update(key).digest('hex');
}

/** The workspaceState key of the servers' last `hasTask` answers: folder URI → boolean. */
const HAS_TASK = 'flower.hasTask';

/**
 * Whether to start the folder's server when the window opens (model/task.ts): the server's last
 * `FolderStatus.hasTask` for it, else the cheap facts that say it may have a task.
 */
export function hasTask(folder: vscode.WorkspaceFolder, state: vscode.Memento): boolean {
    if (folder.uri.scheme !== 'file') return false;
    const dir = folder.uri.fsPath;
    const read = (name: string): string => {
        try {
            return flowerPart(name, fs.readFileSync(path.join(dir, name), 'utf8'));
        } catch {
            return ''; // no such file
        }
    };
    return mayHaveTask({
        remembered: state.get<Record<string, boolean>>(HAS_TASK, {})[folder.uri.toString()],
        lineage: fs.existsSync(path.join(dir, 'runs', 'lineage.json')),
        runDirVariable: (process.env.FLOWER_RUN_DIR ?? '').trim() !== '',
        settings: SETTINGS_FILES.map(read).join('\n'), // either file naming a run_dir is reason enough to ask
        sharedStore: sharedStore(explicit(vscode.workspace.getConfiguration('flower', folder.uri).inspect('store')), process.env.FLOWER_STORE),
    });
}

/** Remember the server's `hasTask` for the folder, for the next window's start (only a change is written). */
function rememberTask(folder: vscode.WorkspaceFolder, state: vscode.Memento, has: boolean): void {
    const known = state.get<Record<string, boolean>>(HAS_TASK, {});
    const key = folder.uri.toString();
    if (known[key] !== has) void state.update(HAS_TASK, { ...known, [key]: has });
}
