/** activate(): the log channel, folder clients, views and commands (D8); nothing else. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { Commands } from './commands';
import { Focus } from './folders';
import { cutOff } from './model/resume';
import { flowerPart, resumeOnStartup, SERVER_SETTINGS, SETTINGS_FILES } from './model/settings';
import { type FolderServer, Servers } from './server';
import { ApprovalsView } from './views/approvals';
import { GaugeView } from './views/gauge';
import { ChangesView } from './views/changes';
import { GoalsView } from './views/goals';
import { Notifier } from './views/notify';
import { ProgressView } from './views/progress';
import { PANEL_TYPE, TranscriptPanel, TranscriptView } from './views/transcript';

let servers: Servers | undefined;
let logger: vscode.LogOutputChannel | undefined;
/** Folders whose server was started for their task (at activation, added, or their settings naming a shared store). */
const launched = new Set<string>();

export function activate(ctx: vscode.ExtensionContext): void {
    const log = vscode.window.createOutputChannel('flower', { log: true });
    const focus = new Focus();
    const progress = new ProgressView();
    let commands: Commands | undefined = undefined;
    let approvals: ApprovalsView | undefined = undefined;
    let notifier: Notifier | undefined = undefined;
    logger = log;
    servers = new Servers(ctx, log, {
        missingFlower: (python) => commands?.missingFlower(python),
        stopped: (server) => commands?.stopped(server),
        reconnected: (server) => {
            if (commands !== undefined) void offerResume(server, commands, 'engine');
        },
        engineSays: (server, message) => commands?.engineSays(server, message),
        exited: (server) => progress.endAll(server),
        ask: (server, params) => {
            notifier?.tell(server, { kind: 'question', question: params.question }, false);
            return commands?.ask(server, params) ?? Promise.resolve({ answer: null });
        },
        // Not yet set up: no answer (an error response), never a decision made for the person.
        approve: (server, params, token) => approvals?.approve(server, params, token) ?? Promise.reject(new Error('flower is starting: no answer yet')),
        approved: (server, n) => approvals?.approved(server, n),
        progress: (server, token, params) => progress.handle(server, token, params),
    });
    const all = servers;
    const sayText = (folder: vscode.WorkspaceFolder, text: string): Promise<void> => commands?.sayText(folder, text) ?? Promise.resolve();
    const transcript = new TranscriptView(ctx.extensionUri, all, focus, sayText);
    const panel = new TranscriptPanel(ctx.extensionUri, all, focus, sayText);
    const changes = new ChangesView(all, focus, log);
    commands = new Commands(ctx, all, focus, log, () => transcript, () => panel, () => changes);
    const c = commands;
    const tell = new Notifier(all, log);
    notifier = tell;
    const asked = new ApprovalsView(all, focus, [transcript, panel], tell, log);
    approvals = asked;
    // A folder's `.flower.toml` / `[tool.flower]` is read when its server starts, like the options:
    // an edit that changes what the server reads restarts it when idle, else when its wake ends.
    const files = new SettingsFiles();
    for (const folder of vscode.workspace.workspaceFolders ?? []) files.prime(folder);
    const watcher = vscode.workspace.createFileSystemWatcher(`**/{${SETTINGS_FILES.join(',')}}`);
    const fileChanged = (uri: vscode.Uri): void => {
        if (!files.changed(uri.fsPath)) return;
        for (const server of all.all()) if (path.dirname(uri.fsPath) === server.folder.uri.fsPath) reconfigure(server, false);
    };
    ctx.subscriptions.push(
        watcher,
        watcher.onDidChange(fileChanged),
        watcher.onDidCreate(fileChanged),
        watcher.onDidDelete(fileChanged),
        log,
        focus,
        progress,
        all,
        transcript,
        tell,
        asked,
        vscode.window.registerWebviewViewProvider('flower.transcript', transcript),
        panel,
        vscode.window.registerWebviewPanelSerializer(PANEL_TYPE, panel),
        new GaugeView(all, focus),
        new GoalsView(all, focus),
        changes,
        ...c.register(),
        all.onEvent(async ({ server, event }) => {
            if (event.type === 'status') c.settingsProblem(server);
            if (event.type !== 'state' || event.n.running) return;
            // The status the wake ended with (its cost: stopped at the cap?), before any restart.
            await server.refreshStatus();
            if (server.settingsChanged && !(server.status?.running ?? false)) void server.restart();
            void c.wakeEnded(server, event.n);
            tell.wakeEnded(server, event.n);
        }),
        vscode.workspace.onDidChangeWorkspaceFolders((e) => {
            for (const folder of e.removed) void all.remove(folder);
            for (const folder of e.added) files.prime(folder);
            for (const folder of e.added) if (all.hasTask(folder)) void startFolder(all, c, folder);
        }),
        vscode.workspace.onDidGrantWorkspaceTrust(() => startUsedFolders(all, c)),
        vscode.workspace.onDidChangeConfiguration((e) => {
            // Server options and the interpreter are read at start: restart idle servers that use them.
            for (const server of all.all()) {
                if (SERVER_SETTINGS.some((k) => e.affectsConfiguration(k, server.folder.uri))) reconfigure(server, true);
            }
            // A shared store set after activation, or the user settings loaded only then (a remote window after
            // Reload Window; the event does not always name the keys): folders whose task lives there start now.
            if (!vscode.workspace.isTrusted) return;
            const started = new Set(all.all().filter((s) => s.client !== undefined).map((s) => s.folder.uri.toString()));
            for (const folder of vscode.workspace.workspaceFolders ?? []) {
                const key = folder.uri.toString();
                if (!started.has(key) && !launched.has(key) && all.hasTask(folder)) {
                    log.info(`${folder.name}: the settings name a shared store; starting its server`);
                    void startFolder(all, c, folder);
                }
            }
        }),
    );
    startUsedFolders(all, c);
}

/**
 * Settings a server read at its start changed: restart it when idle; a running wake keeps the
 * settings it started with, and the server restarts with the new ones when it ends. With
 * `retryRefused`, a start that found no flower is tried again: it may have read the settings
 * before they were loaded (seen after Reload Window in a remote window, where user settings
 * arrive after activation).
 */
function reconfigure(server: FolderServer, retryRefused: boolean): void {
    const idle = server.client !== undefined && !(server.status?.running ?? false);
    const refused = retryRefused && server.client === undefined && server.startFailure === 'missing';
    if (idle || refused) void server.restart();
    else if (server.client !== undefined) server.settingsChanged = true;
}

/** The flower part of each folder's settings files as last read, to tell a change the server would see. */
class SettingsFiles {
    private readonly parts = new Map<string, string>();

    prime(folder: vscode.WorkspaceFolder): void {
        for (const name of SETTINGS_FILES) this.changed(path.join(folder.uri.fsPath, name));
    }

    /** Read `file` again; whether its flower part differs from the last reading (a file never read counts as changed). */
    changed(file: string): boolean {
        let text: string | undefined;
        try {
            text = fs.readFileSync(file, 'utf8');
        } catch {
            text = undefined; // gone, or not readable: the server reads it as absent too
        }
        const part = flowerPart(path.basename(file), text);
        const before = this.parts.get(file);
        this.parts.set(file, part);
        return before !== part;
    }
}

/** Folders that already have a task get their server, gauge and transcript at once. */
function startUsedFolders(all: Servers, commands: Commands): void {
    if (!vscode.workspace.isTrusted) {
        logger?.info('the workspace is not trusted: no server starts until it is');
        return;
    }
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
        if (all.hasTask(folder)) void startFolder(all, commands, folder);
        else logger?.info(`${folder.name}: no task yet (no runs/lineage.json, no run_dir or postgresql:// store in the settings, and its server never said it had one)`);
    }
}

/** Start a folder's server; a wake that was cut off continues per `flower.resumeOnStartup`. */
async function startFolder(all: Servers, commands: Commands, folder: vscode.WorkspaceFolder): Promise<void> {
    launched.add(folder.uri.toString());
    const server = all.get(folder);
    if (await server.ensureStarted()) await offerResume(server, commands, 'window');
    else if (server.startFailure === 'failed') commands.startFailed(server);
}

/**
 * A wake that was cut off continues per `flower.resumeOnStartup` (at activation, and after the
 * engine connection was lost and made again). A wake still running in the engine is not cut
 * off: the window attached to it, and there is nothing to offer.
 */
async function offerResume(server: FolderServer, commands: Commands, lost: 'window' | 'engine'): Promise<void> {
    const folder = server.folder;
    if (!(await wasCutOff(server))) return;
    const mode = resumeOnStartup(vscode.workspace.getConfiguration('flower', folder.uri).get('resumeOnStartup'));
    if (mode === 'never') return;
    if (mode === 'ask') {
        const go = vscode.l10n.t('Continue');
        const choice = await vscode.window.showInformationMessage(
            lost === 'window'
                ? vscode.l10n.t('flower was working in {0} when the window closed. Continue where it stopped?', folder.name)
                : vscode.l10n.t('The flower engine stopped while it was working in {0}. Continue where it stopped?', folder.name),
            go,
            vscode.l10n.t('Not now'),
        );
        if (choice !== go) return;
    }
    await commands.send(server, { method: 'wake', text: null }, 40_000);
}

/**
 * Whether the server reports the folder's last wake cut off (FolderStatus.interrupted). While a
 * wake is under way in another process (FolderStatus.elsewhere) — after a reload, the previous
 * window's server ending its wake (D5) — the status is asked again each second, for up to 40 s.
 */
async function wasCutOff(server: FolderServer): Promise<boolean> {
    const end = Date.now() + 40_000;
    for (;;) {
        const answer = cutOff(server.status);
        logger?.info(`${server.folder.name}: ${answer === 'cut-off' ? 'a wake was cut off' : answer === 'wait' ? 'another process still holds the folder; asking again' : 'no wake was cut off'}`);
        if (answer !== 'wait' || Date.now() > end) return answer === 'cut-off';
        await new Promise((resolve) => setTimeout(resolve, 1000));
        await server.refreshStatus();
    }
}

export async function deactivate(): Promise<void> {
    await servers?.stopAll();
}
