/**
 * The palette commands (category `flower`) and the conversations they start with the person:
 * input boxes, the archive question, the API key, flower/ask, a missing `flower` package.
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import type { Focus } from './folders';
import { cap, capReached, formatTokens, usd } from './model/gauge';
import * as p from './protocol';
import { pipInstall } from './model/install';
import { keyLine, type SettingsFix, settingsFix } from './model/settings';
import { type FolderServer, installSource, type Interpreter, SECRET_KEY, type Servers, type WakeCall } from './server';
import type { ChangesView, Node as ChangeNode } from './views/changes';
import type { TranscriptPanel, TranscriptView } from './views/transcript';

export class Commands {
    private readonly warnedInterpreters = new Set<string>();
    /** Folder URI → the settings error last told (its server process and line). */
    private readonly toldSettings = new Map<string, string>();
    /** Engine messages on screen now (not shown twice at once). */
    private readonly told = new Set<string>();

    constructor(
        private readonly ctx: vscode.ExtensionContext,
        private readonly servers: Servers,
        private readonly focus: Focus,
        private readonly log: vscode.LogOutputChannel,
        private readonly transcript: () => TranscriptView,
        private readonly panel: () => TranscriptPanel,
        private readonly changes: () => ChangesView,
    ) {}

    /** Register every command of package.json. */
    register(): vscode.Disposable[] {
        const c = (id: string, fn: (...args: unknown[]) => unknown): vscode.Disposable => vscode.commands.registerCommand(id, fn);
        return [
            c('flower.start', () => this.start()),
            c('flower.wake', () => this.wake()),
            c('flower.say', () => this.say()),
            c('flower.new', () => this.newTask()),
            c('flower.cancel', () => this.cancel()),
            c('flower.status', () => this.status()),
            c('flower.showTranscript', () => this.transcript().reveal(true)),
            c('flower.openRequirements', () => this.openFile('需求.md')),
            c('flower.openGoals', () => this.openFile('目标.md')),
            c('flower.restartServer', (folder?: unknown) => this.restart(folder)),
            c('flower.showLog', () => this.log.show()),
            c('flower.setApiKey', () => this.setApiKey()),
            c('flower.openTranscriptInEditor', () => this.panel().open()),
            c('flower.openChange', (node?: unknown) => this.changes().open(node as ChangeNode | undefined)),
            c('flower.revertFile', (node?: unknown) => this.changes().revertFile(node as ChangeNode | undefined)),
            c('flower.revertWake', (node?: unknown) => this.changes().revertWake(node as ChangeNode | undefined)),
            c('flower.refreshChanges', () => this.changes().refresh()),
        ];
    }

    // -- the commands -----------------------------------------------------------------------

    async start(): Promise<void> {
        // Ask first, start the server while the person types: a slow interpreter never delays the box.
        const folder = await this.folder();
        if (folder === undefined) return;
        const starting = this.started(folder);
        const text = await vscode.window.showInputBox({
            title: vscode.l10n.t('flower: Start a Task'),
            prompt: vscode.l10n.t('What should flower do in {0}?', folder.name),
            placeHolder: vscode.l10n.t('e.g. write a script that turns Markdown into HTML'),
            ignoreFocusOut: true,
            validateInput: (v) => (v.trim() === '' ? vscode.l10n.t('Say what to do.') : undefined),
        });
        const server = await starting;
        if (text === undefined || server === undefined) return;
        const used = (server.status?.woke ?? 0) > 0;
        if (used) {
            const archive = vscode.l10n.t('Archive and Start');
            const add = vscode.l10n.t('Add to the Current Task');
            const choice = await vscode.window.showWarningMessage(
                vscode.l10n.t('{0} already has a task. Archive it (to notes/archive/) and start this one, or add the sentence to the current task?', server.folder.name),
                { modal: true },
                archive,
                add,
            );
            if (choice === undefined) return;
            await this.send(server, { method: choice === archive ? 'new' : 'say', text: text.trim() });
            return;
        }
        await this.send(server, { method: 'wake', text: text.trim() });
    }

    async wake(): Promise<void> {
        const server = await this.server();
        if (server === undefined) return;
        if (server.status !== null && server.status.woke === 0 && !server.status.running) {
            await vscode.commands.executeCommand('flower.start');
            return;
        }
        await this.send(server, { method: 'wake', text: null });
    }

    async say(): Promise<void> {
        const folder = await this.folder();
        if (folder === undefined) return;
        const starting = this.started(folder);
        const text = await vscode.window.showInputBox({
            title: vscode.l10n.t('flower: Say'),
            prompt: vscode.l10n.t('One sentence for the work in {0} (added to 需求.md).', folder.name),
            ignoreFocusOut: true,
            validateInput: (v) => (v.trim() === '' ? vscode.l10n.t('Say something.') : undefined),
        });
        if (text !== undefined && (await starting) !== undefined) await this.sayText(folder, text.trim());
    }

    /** The transcript's input: say while running, wake otherwise (flower/say does both). */
    async sayText(folder: vscode.WorkspaceFolder, text: string): Promise<void> {
        if (!this.trusted()) return;
        const server = this.servers.get(folder);
        if (!(await server.ensureStarted())) return;
        const fresh = server.status !== null && server.status.woke === 0 && !server.status.running;
        await this.send(server, { method: fresh ? 'wake' : 'say', text });
    }

    async newTask(): Promise<void> {
        const folder = await this.folder();
        if (folder === undefined) return;
        const starting = this.started(folder);
        const text = await vscode.window.showInputBox({
            title: vscode.l10n.t('flower: New Task'),
            prompt: vscode.l10n.t('The new task for {0}; the current one is archived to notes/archive/.', folder.name),
            ignoreFocusOut: true,
            validateInput: (v) => (v.trim() === '' ? vscode.l10n.t('Say what to do.') : undefined),
        });
        const server = await starting;
        if (text !== undefined && server !== undefined) await this.send(server, { method: 'new', text: text.trim() });
    }

    async cancel(): Promise<void> {
        const folder = await this.focus.pick();
        if (folder === undefined) return;
        const server = this.servers.get(folder);
        if (!server.running || !(await server.cancel())) {
            void vscode.window.showInformationMessage(vscode.l10n.t('Nothing is running in {0}.', folder.name));
        }
    }

    async status(): Promise<void> {
        const server = await this.server();
        if (server === undefined) return;
        await server.refreshStatus();
        const s = server.status;
        if (s === null) return;
        const done = s.goals.filter((g) => g.done).length;
        type Item = vscode.QuickPickItem & { run?: () => unknown };
        const items: Item[] = [
            {
                label: `$(pulse) ${vscode.l10n.t('wake #{0}', s.woke)}`,
                description: s.running ? vscode.l10n.t('running {0}', s.stepLabel ?? s.step ?? '') : vscode.l10n.t('idle'),
                run: () => this.transcript().reveal(true),
            },
            {
                label: `$(checklist) ${vscode.l10n.t('goals {0}/{1}', done, s.goals.length)}`,
                run: () => this.openFile('目标.md', server.folder),
            },
            { label: `$(book) 需求.md`, run: () => this.openFile('需求.md', server.folder) },
        ];
        if (s.context !== null) items.push({ label: `$(dashboard) ${vscode.l10n.t('context {0} / {1}', formatTokens(s.context), formatTokens(s.window))}` });
        if (s.model != null) items.push({ label: `$(hubot) ${s.model}` });
        if (s.cost != null) {
            const spent = vscode.l10n.t('{0} this wake · {1} task', usd(s.cost.wake), usd(s.cost.task));
            items.push({ label: `$(credit-card) ${spent}`, description: s.cost.max === null ? undefined : vscode.l10n.t('cap {0}', cap(s.cost.max)) });
        }
        if (s.verdict !== null) {
            items.push({
                label: `$(law) ${vscode.l10n.t('round {0}: {1}', s.verdict.round, s.verdict.passed ? vscode.l10n.t('passed') : vscode.l10n.t('not yet'))}`,
                detail: s.verdict.reasons,
            });
        }
        if (s.waiting !== null) items.push({ label: `$(watch) ${s.waiting.reason}`, description: `${s.waiting.attempt}/${s.waiting.maxAttempts}` });
        const steps = Object.entries(s.steps);
        if (steps.length > 0) items.push({ label: vscode.l10n.t('steps and sessions'), kind: vscode.QuickPickItemKind.Separator });
        for (const [step, session] of steps) items.push({ label: `$(debug-step-over) ${step}`, description: session });
        const pick = await vscode.window.showQuickPick(items, { title: `flower · ${s.name}` });
        await pick?.run?.();
    }

    async openFile(name: string, folder?: vscode.WorkspaceFolder): Promise<void> {
        const f = folder ?? (await this.focus.pick());
        if (f === undefined) return;
        const uri = vscode.Uri.file(path.join(f.uri.fsPath, name));
        try {
            await vscode.workspace.fs.stat(uri);
        } catch {
            void vscode.window.showInformationMessage(vscode.l10n.t('{0} does not exist yet in {1}: flower writes it once the task is clear.', name, f.name));
            return;
        }
        await vscode.window.showTextDocument(uri, { preview: false });
    }

    async restart(arg?: unknown): Promise<void> {
        if (!this.trusted()) return;
        const folder = isFolder(arg) ? arg : await this.focus.pick();
        if (folder === undefined) return;
        await this.servers.get(folder).restart();
    }

    async setApiKey(): Promise<void> {
        const key = await vscode.window.showInputBox({
            title: vscode.l10n.t('flower: Set API Key'),
            prompt: vscode.l10n.t('Your Anthropic API key. It is kept in VS Code\'s secret storage and given only to the flower server process.'),
            password: true,
            ignoreFocusOut: true,
            placeHolder: 'sk-ant-…',
            validateInput: (v) => (v.trim() === '' ? vscode.l10n.t('Paste the key.') : undefined),
        });
        if (key === undefined) return;
        await this.ctx.secrets.store(SECRET_KEY, key.trim());
        this.log.info('API key saved in secret storage');
        // The key travels only in the server's environment: idle servers restart to get it
        // now; one running a wake gets it before its next call (send).
        for (const server of this.servers.all()) await server.useCurrentKey();
        for (const server of this.servers.all()) {
            const call = server.failedForCredentials;
            if (call === null) continue;
            server.failedForCredentials = null;
            const retry = vscode.l10n.t('Retry');
            const choice = await vscode.window.showInformationMessage(vscode.l10n.t('API key saved. Retry the wake in {0}?', server.folder.name), retry);
            if (choice === retry) await this.send(server, call);
        }
    }

    // -- talking to the person on the server's behalf ---------------------------------------

    /** flower/ask: an input box that stays open on focus loss; Escape answers null. */
    async ask(server: FolderServer, params: p.AskParams): Promise<p.AskResult> {
        const answer = await vscode.window.showInputBox({
            title: vscode.l10n.t('flower asks ({0})', server.folder.name),
            prompt: params.question,
            ignoreFocusOut: true,
        });
        return { answer: answer === undefined || answer.trim() === '' ? null : answer };
    }

    /** `import flower` failed: one notification with the interpreter and the exact pip command. */
    missingFlower(python: Interpreter): void {
        if (this.warnedInterpreters.has(python.command)) return;
        this.warnedInterpreters.add(python.command);
        const command = pipInstall(python.command, installSource(this.ctx.extensionPath));
        const install = vscode.l10n.t('Install in Terminal');
        void vscode.window
            .showErrorMessage(
                vscode.l10n.t('flower is not installed for {0} ({1}). Install it with: {2}', python.command, python.source, command),
                install,
                vscode.l10n.t('Show Log'),
            )
            .then((choice) => {
                if (choice === install) {
                    const terminal = vscode.window.createTerminal({ name: 'flower: install' });
                    terminal.show();
                    terminal.sendText(command);
                    this.warnedInterpreters.delete(python.command);
                } else if (choice !== undefined) this.log.show();
            });
    }

    /** The server crashed more than it may restart. */
    stopped(server: FolderServer): void {
        const restart = vscode.l10n.t('Restart');
        void vscode.window
            .showErrorMessage(vscode.l10n.t('The flower server for {0} keeps stopping; it was not restarted again.', server.folder.name), restart, vscode.l10n.t('Show Log'))
            .then((choice) => {
                if (choice === restart) void server.restart();
                else if (choice !== undefined) this.log.show();
            });
    }

    /** A wake ended (flower/state running: false) with an error: the server's own words (the status is the one it ended with). */
    async wakeEnded(server: FolderServer, n: p.StateNotification): Promise<void> {
        if (n.error === null || n.cancelled) return;
        const message = `flower · ${server.folder.name}: ${n.error}`;
        if (server.status === null || !capReached(server.status)) {
            void vscode.window.showErrorMessage(message);
            return;
        }
        // Stopped at the spending cap (issue 15): not a failure, everything is resumable; the
        // server's text says what was spent, the button opens the setting to raise.
        const raise = vscode.l10n.t('Raise the Cap…');
        const choice = await vscode.window.showWarningMessage(message, raise);
        if (choice === raise) await vscode.commands.executeCommand('workbench.action.openSettings', 'flower.maxCost');
    }

    /**
     * The server cannot use a setting (FolderStatus.settings): its own line, with Open Settings,
     * as soon as its status says so; once per server process and line (a restart that still finds
     * it wrong tells again).
     */
    settingsProblem(server: FolderServer): void {
        if (server.statusEpoch !== server.epoch) return; // the status of a process that is gone
        const problem = server.status?.settings ?? null;
        const told = problem === null ? undefined : `${server.epoch}\n${problem.message}`;
        if (this.toldSettings.get(server.uri) === told) return;
        if (told === undefined) this.toldSettings.delete(server.uri);
        else this.toldSettings.set(server.uri, told);
        if (problem !== null) this.showSettingsProblem(server, problem);
    }

    // -- internals ------------------------------------------------------------------------

    private showSettingsProblem(server: FolderServer, problem: p.SettingsProblem): void {
        const config = vscode.workspace.getConfiguration('flower', server.folder.uri);
        const inspected = problem.option === null ? undefined : config.inspect(problem.option);
        const fix = settingsFix(problem, inspected, vscode.workspace.workspaceFile !== undefined);
        const open = vscode.l10n.t('Open Settings');
        void vscode.window
            .showErrorMessage(`flower · ${server.folder.name}: ${problem.message}`, ...(fix === null ? [] : [open]))
            .then((choice) => (choice === open && fix !== null ? openFix(fix) : undefined))
            .then(undefined, (e: unknown) => this.log.warn(`${server.folder.name}: opening the settings: ${String(e)}`));
    }

    /**
     * Send a wake/say/new and show its outcome; errors become one clear message. `patience`
     * (ms): how long to keep retrying while another process still drives the folder — after a
     * reload the previous window's server may still be ending its wake (D5).
     */
    async send(server: FolderServer, call: WakeCall, patience = 0): Promise<void> {
        if (!this.trusted()) return;
        this.focus.set(server.folder);
        const folder = server.uri;
        try {
            await server.useCurrentKey();
            if (!(await server.ensureStarted())) throw new Error(server.startError ?? vscode.l10n.t('the flower server for {0} is not running', server.folder.name));
            // Shared engine: this window's variables and the key go with this request only (undefined in window mode).
            const env = await server.wakeEnv();
            const asked = server.asking();
            let status: p.FolderStatus;
            if (call.method === 'wake') status = (await server.request(p.wake, { folder, text: call.text, env })).status;
            else if (call.method === 'say') {
                const r = await server.request(p.say, { folder, text: call.text ?? '', env });
                status = r.status;
                if (r.action === 'delivered') void vscode.window.setStatusBarMessage(vscode.l10n.t('flower: the sentence goes to the work session next'), 4000);
            } else status = (await server.request(p.newTask, { folder, text: call.text ?? '', env })).status;
            server.setStatus(status, asked);
            void this.transcript().reveal(false);
        } catch (e) {
            const message = e instanceof Error ? e.message : String(e);
            const code = e instanceof ResponseError ? e.code : null;
            // Its own error code, checked before anything is recorded (protocol.md): no text matching.
            if (code === p.MISSING_CREDENTIALS) {
                this.offerKey(server, call);
                return;
            }
            if (code === p.WORKSPACE_BUSY && patience > 0) {
                this.log.info(`${server.folder.name}: another process still drives the folder; trying again in 2 s`);
                await new Promise((r) => setTimeout(r, 2000));
                return this.send(server, call, patience - 2000);
            }
            this.log.warn(`${server.folder.name}: ${call.method}: ${message}`);
            const problem = server.status?.settings ?? null;
            const reason: unknown = e instanceof ResponseError ? (e.data as { key?: unknown } | undefined)?.key : undefined;
            if (code === p.FLOWER_ERROR && (reason === 'settings_bad' || reason === 'settings_untrusted') && problem !== null) {
                this.showSettingsProblem(server, problem); // the same line, with the way to fix it
                return;
            }
            const items = code === p.WORKSPACE_BUSY || code === null ? [] : [vscode.l10n.t('Show Log')];
            void vscode.window.showErrorMessage(`flower · ${server.folder.name}: ${message}`, ...items).then((c) => {
                if (c !== undefined) this.log.show();
            });
        }
    }

    /** No credentials: one notification whose action sets the key; the same wake is retried after. */
    private offerKey(server: FolderServer, call: WakeCall): void {
        // Refused before anything was recorded (protocol.md, MissingCredentials): the retry is the same call.
        server.failedForCredentials = call;
        const set = vscode.l10n.t('Set API Key…');
        void vscode.window
            .showErrorMessage(vscode.l10n.t('flower has no Anthropic API key for {0}: set one (kept in VS Code\'s secret storage), or run `claude login` once.', server.folder.name), set)
            .then((choice) => {
                if (choice === set) void vscode.commands.executeCommand('flower.setApiKey');
            });
    }

    /** The folder to act on (trusted workspaces only). */
    private async folder(): Promise<vscode.WorkspaceFolder | undefined> {
        return this.trusted() ? this.focus.pick() : undefined;
    }

    /** The folder to act on, with its server started; undefined when it cannot be. */
    private async server(): Promise<FolderServer | undefined> {
        const folder = await this.folder();
        return folder === undefined ? undefined : this.started(folder);
    }

    /** The folder's server, started; undefined (and told why) when it cannot start. */
    private async started(folder: vscode.WorkspaceFolder): Promise<FolderServer | undefined> {
        const server = this.servers.get(folder);
        if (await server.ensureStarted()) return server;
        if (server.startFailure === 'failed') this.startFailed(server);
        return undefined;
    }

    /** The server could not start (or the engine be reached): one line saying why, and the log. */
    startFailed(server: FolderServer): void {
        const why = server.startError ?? vscode.l10n.t('see the log');
        void vscode.window.showErrorMessage(vscode.l10n.t('The flower server for {0} could not start: {1}', server.folder.name, why), vscode.l10n.t('Show Log')).then((c) => {
            if (c !== undefined) this.log.show();
        });
    }

    /** The engine's own words about this client (another flower version, a refused attach): shown once per text. */
    engineSays(server: FolderServer, message: string): void {
        if (this.told.has(message)) return;
        this.told.add(message);
        void vscode.window.showWarningMessage(`flower · ${server.folder.name}: ${message}`, vscode.l10n.t('Show Log')).then((c) => {
            this.told.delete(message);
            if (c !== undefined) this.log.show();
        });
    }

    private trusted(): boolean {
        if (vscode.workspace.isTrusted) return true;
        void vscode.window.showWarningMessage(vscode.l10n.t('flower runs an agent, so it works only in a trusted workspace. Trust this folder first (Manage Workspace Trust).'));
        return false;
    }
}

/** Open what fixes a setting: the settings editor at the setting, in its scope; or the settings file at the key. */
async function openFix(fix: NonNullable<SettingsFix>): Promise<void> {
    if (fix.kind === 'setting') {
        const command = { user: 'workbench.action.openSettings', workspace: 'workbench.action.openWorkspaceSettings', folder: 'workbench.action.openFolderSettings' }[fix.scope];
        await vscode.commands.executeCommand(command, { query: fix.id });
        return;
    }
    const doc = await vscode.workspace.openTextDocument(vscode.Uri.file(fix.path));
    const line = keyLine(path.basename(fix.path), doc.getText(), fix.key);
    await vscode.window.showTextDocument(doc, { selection: new vscode.Range(line, 0, line, 0) });
}

function isFolder(x: unknown): x is vscode.WorkspaceFolder {
    return typeof x === 'object' && x !== null && 'uri' in x && 'index' in x && 'name' in x;
}
