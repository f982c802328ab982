/** activate(): the log channel, folder clients, views and commands (D8); nothing else. */
import * as vscode from 'vscode';
import { Commands } from './commands';
import { Focus } from './folders';
import { resumeOnStartup } from './model/settings';
import { type FolderServer, hasLineage, Servers } from './server';
import { GaugeView } from './views/gauge';
import { GoalsView } from './views/goals';
import { ProgressView } from './views/progress';
import { TranscriptView } from './views/transcript';

/** workspaceState key: folders whose wake was running (cleared when it ends), for resumeOnStartup. */
const RUNNING = 'flower.runningWakes';

let servers: Servers | undefined;
let logger: vscode.LogOutputChannel | undefined;
let closing = false;

export function activate(ctx: vscode.ExtensionContext): void {
    const log = vscode.window.createOutputChannel('flower', { log: true });
    const focus = new Focus();
    const progress = new ProgressView();
    let commands: Commands | undefined = undefined;
    logger = log;
    servers = new Servers(ctx, log, {
        missingFlower: (python) => commands?.missingFlower(python),
        stopped: (server) => commands?.stopped(server),
        exited: (server) => progress.endAll(server),
        ask: (server, params) => commands?.ask(server, params) ?? Promise.resolve({ answer: null }),
        progress: (server, token, params) => progress.handle(server, token, params),
    });
    const all = servers;
    const transcript = new TranscriptView(ctx.extensionUri, all, focus, (folder, text) => commands?.sayText(folder, text) ?? Promise.resolve());
    commands = new Commands(ctx, all, focus, log, () => transcript);
    const c = commands;
    ctx.subscriptions.push(
        log,
        focus,
        progress,
        all,
        transcript,
        vscode.window.registerWebviewViewProvider('flower.transcript', transcript),
        new GaugeView(all, focus),
        new GoalsView(all, focus),
        ...c.register(),
        all.onEvent(({ server, event }) => {
            if (event.type === 'state') {
                void remember(ctx, server, event.n.running);
                if (!event.n.running) c.wakeEnded(server, event.n);
            }
        }),
        vscode.workspace.onDidChangeWorkspaceFolders((e) => {
            for (const folder of e.removed) void all.remove(folder);
            for (const folder of e.added) if (hasLineage(folder)) void startFolder(ctx, all, c, folder);
        }),
        vscode.workspace.onDidGrantWorkspaceTrust(() => startUsedFolders(ctx, all, c)),
        vscode.workspace.onDidChangeConfiguration((e) => {
            // Server options and the interpreter are read at start: restart idle servers that use them.
            for (const server of all.all()) {
                const affected = ['flower.python', 'flower.rounds', 'flower.trim', 'flower.handoffAt'].some((k) => e.affectsConfiguration(k, server.folder.uri));
                if (affected && server.client !== undefined && !(server.status?.running ?? false)) void server.restart();
            }
        }),
    );
    startUsedFolders(ctx, all, c);
}

/** Folders that already have a task get their server, gauge and transcript at once. */
function startUsedFolders(ctx: vscode.ExtensionContext, all: Servers, commands: Commands): void {
    if (!vscode.workspace.isTrusted) return;
    for (const folder of vscode.workspace.workspaceFolders ?? []) {
        if (hasLineage(folder)) void startFolder(ctx, all, commands, folder);
    }
}

/** Start a folder's server; a wake the window cut off continues per `flower.resumeOnStartup`. */
async function startFolder(ctx: vscode.ExtensionContext, all: Servers, commands: Commands, folder: vscode.WorkspaceFolder): Promise<void> {
    const server = all.get(folder);
    if (!(await server.ensureStarted())) return;
    const running = ctx.workspaceState.get<string[]>(RUNNING, []);
    const cutOff = running.includes(server.uri) && server.status?.running === false;
    logger?.info(`${folder.name}: ${cutOff ? 'a wake was cut off when the window closed' : 'no wake was cut off'} (marked: ${running.includes(server.uri)}, running here: ${server.status?.running})`);
    if (!cutOff) return;
    const mode = resumeOnStartup(vscode.workspace.getConfiguration('flower', folder.uri).get('resumeOnStartup'));
    if (mode === 'never') {
        await remember(ctx, server, false);
        return;
    }
    if (mode === 'ask') {
        const go = vscode.l10n.t('Continue');
        const choice = await vscode.window.showInformationMessage(
            vscode.l10n.t('flower was working in {0} when the window closed. Continue where it stopped?', folder.name),
            go,
            vscode.l10n.t('Not now'),
        );
        if (choice !== go) {
            await remember(ctx, server, false);
            return;
        }
    }
    await commands.send(server, { method: 'wake', text: null }, 40_000);
}

/** Keep which folders have a wake running, so the next activation knows one was cut off. */
async function remember(ctx: vscode.ExtensionContext, server: FolderServer, running: boolean): Promise<void> {
    // While the window closes, the server's shutdown ends running wakes: they were cut off, not finished.
    if (closing && !running) return;
    logger?.debug(`${server.folder.name}: wake ${running ? 'running' : 'ended'}`);
    const set = new Set(ctx.workspaceState.get<string[]>(RUNNING, []));
    if (running) set.add(server.uri);
    else set.delete(server.uri);
    await ctx.workspaceState.update(RUNNING, [...set]);
}

export async function deactivate(): Promise<void> {
    closing = true;
    await servers?.stopAll();
}
