/**
 * The Changes TreeView (`flower.changes`, under Goals): the files the agents created, edited or
 * deleted, grouped by wake, with +/− counts (flower/changes). A click opens VS Code's diff
 * editor between the before-image flower kept and the file now; Revert File / Revert Wake put
 * the before-images back (flower/revert) after a confirmation, and never while a wake runs.
 */
import * as fs from 'node:fs/promises';
import * as path from 'node:path';
import * as vscode from 'vscode';
import { ResponseError } from 'vscode-languageclient/node';
import type { Focus } from '../folders';
import { byLabel, countLabel, countsLabel, wakeLabel } from '../model/changes';
import * as p from '../protocol';
import type { FolderServer, Servers } from '../server';

/** The scheme of the diff editor's left side: `flower-before:/<path>?<before-image file>` (empty query: no file). */
export const BEFORE_SCHEME = 'flower-before';

/** `1 file` / `3 files` in the window's language (issue 34: never `1 files`). */
function filesLabel(n: number): string {
    return countLabel(n, vscode.l10n.t('1 file'), vscode.l10n.t('{0} files', '{0}'));
}

export type Node = { kind: 'wake'; wake: p.ChangedWake } | { kind: 'file'; file: p.ChangedFile; wake: number; running: boolean };

class ChangesProvider implements vscode.TreeDataProvider<Node> {
    private readonly emitter = new vscode.EventEmitter<void>();
    readonly onDidChangeTreeData = this.emitter.event;
    wakes: p.ChangedWake[] = [];
    folder: vscode.WorkspaceFolder | undefined;

    set(folder: vscode.WorkspaceFolder | undefined, wakes: p.ChangedWake[]): void {
        this.folder = folder;
        this.wakes = wakes;
        this.emitter.fire();
    }

    getTreeItem(node: Node): vscode.TreeItem {
        if (node.kind === 'wake') {
            const item = new vscode.TreeItem(wakeLabel(node.wake.wake, vscode.l10n.t('wake #{0}', '{0}')), vscode.TreeItemCollapsibleState.Expanded);
            item.description = node.wake.running ? vscode.l10n.t('running') : filesLabel(node.wake.files.length);
            item.contextValue = node.wake.running ? 'flowerWakeRunning' : 'flowerWake';
            item.iconPath = new vscode.ThemeIcon(node.wake.running ? 'sync~spin' : 'history');
            item.id = `wake:${node.wake.wake}`;
            return item;
        }
        const { file } = node;
        const item = new vscode.TreeItem(path.posix.basename(file.path), vscode.TreeItemCollapsibleState.None);
        const dir = path.posix.dirname(file.path);
        item.description = `${dir === '.' ? '' : `${dir}  `}${countsLabel(file)}${byLabel(file, vscode.l10n.t('by the subagent {0}', '{0}'))}`;
        item.id = `file:${node.wake}:${file.path}`;
        if (this.folder !== undefined) item.resourceUri = vscode.Uri.file(path.join(this.folder.uri.fsPath, file.path));
        item.iconPath = new vscode.ThemeIcon(file.change === 'created' ? 'diff-added' : file.change === 'deleted' ? 'diff-removed' : 'diff-modified');
        item.tooltip = `${file.path} · ${file.change} · ${countsLabel(file)} · ${file.tool}${byLabel(file, vscode.l10n.t('by the subagent {0}', '{0}'))}`;
        item.contextValue = node.running ? 'flowerChangeRunning' : 'flowerChange';
        item.command = { command: 'flower.openChange', title: vscode.l10n.t('Open Changes'), arguments: [node] };
        return item;
    }

    getChildren(node?: Node): Node[] {
        if (node === undefined) return [...this.wakes].reverse().map((wake) => ({ kind: 'wake', wake }));
        if (node.kind === 'wake') return node.wake.files.map((file) => ({ kind: 'file', file, wake: node.wake.wake, running: node.wake.running }));
        return [];
    }
}

/** The before-images as read-only documents (the diff editor's left side). */
class BeforeImages implements vscode.TextDocumentContentProvider {
    async provideTextDocumentContent(uri: vscode.Uri): Promise<string> {
        const file = decodeURIComponent(uri.query);
        // Only flower's own before-images (`<runDir>/changes/objects/<sha256>`): a crafted URI reads nothing else.
        if (!/[\\/]changes[\\/]objects[\\/][0-9a-f]{64}$/.test(file)) return '';
        try {
            return await fs.readFile(file, 'utf8');
        } catch {
            return '';
        }
    }
}

export class ChangesView implements vscode.Disposable {
    private readonly provider = new ChangesProvider();
    private readonly view: vscode.TreeView<Node>;
    private readonly subscriptions: vscode.Disposable[];
    private timer: NodeJS.Timeout | undefined;

    constructor(
        private readonly servers: Servers,
        private readonly focus: Focus,
        private readonly log: vscode.LogOutputChannel,
    ) {
        this.view = vscode.window.createTreeView('flower.changes', { treeDataProvider: this.provider, showCollapseAll: true });
        this.subscriptions = [
            vscode.workspace.registerTextDocumentContentProvider(BEFORE_SCHEME, new BeforeImages()),
            servers.onEvent(({ server, event }) => {
                if (server.uri !== focus.folder?.uri.toString()) return;
                // A step or a wake ended, a tool ran, the server came up: the list may have changed.
                if (event.type === 'steps' || event.type === 'state' || event.type === 'rows' || event.type === 'status') this.soon();
            }),
            focus.onDidChange(() => this.soon(0)),
        ];
        this.soon(0);
    }

    /** Ask the server again, debounced: a run of tool calls is one request. */
    soon(delay = 400): void {
        clearTimeout(this.timer);
        this.timer = setTimeout(() => void this.refresh(), delay);
    }

    private current(): FolderServer | undefined {
        const folder = this.focus.folder;
        return folder === undefined ? undefined : this.servers.all().find((s) => s.uri === folder.uri.toString());
    }

    async refresh(): Promise<void> {
        const server = this.current();
        if (server === undefined || server.client === undefined || server.serverState !== 'running') {
            this.provider.set(this.focus.folder, []);
            this.view.message = vscode.l10n.t('No changes yet: the files the agents change show here, by wake.');
            return;
        }
        try {
            const result = await server.request(p.changes, { folder: server.uri });
            this.provider.set(server.folder, result.wakes);
            const files = result.wakes.reduce((n, w) => n + w.files.length, 0);
            this.view.message = files === 0 ? vscode.l10n.t('No changes yet: the files the agents change show here, by wake.') : undefined;
            this.view.description = files > 0 ? String(files) : undefined;
        } catch (e) {
            this.log.warn(`${server.folder.name}: flower/changes: ${e instanceof Error ? e.message : String(e)}`);
        }
    }

    /** The diff editor: the before-image on the left, the file now on the right. */
    async open(node?: Node): Promise<void> {
        const folder = this.provider.folder;
        if (node?.kind !== 'file' || folder === undefined) return;
        const { file } = node;
        const now = vscode.Uri.file(path.join(folder.uri.fsPath, file.path));
        const before = vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${file.path}`, query: file.beforePath === null ? '' : encodeURIComponent(file.beforePath) });
        const right = file.change === 'deleted' ? vscode.Uri.from({ scheme: BEFORE_SCHEME, path: `/${file.path}`, query: '' }) : now;
        const title = vscode.l10n.t('{0} (before wake #{1} ↔ now)', file.path, node.wake);
        await vscode.commands.executeCommand('vscode.diff', before, right, title, { preview: true });
    }

    /** Revert File: the tree's item, or (from the palette) the active editor's file. */
    async revertFile(node?: Node): Promise<void> {
        const target = node?.kind === 'file' ? node : await this.fileOfActiveEditor();
        if (target === undefined) return;
        const ok = vscode.l10n.t('Revert File');
        const question = target.file.change === 'created'
            ? vscode.l10n.t('Delete {0}? Wake #{1} created it.', target.file.path, target.wake)
            : vscode.l10n.t('Put {0} back as it was before wake #{1}? Its changes since are lost.', target.file.path, target.wake);
        if ((await vscode.window.showWarningMessage(question, { modal: true }, ok)) !== ok) return;
        await this.revert({ path: target.file.path, wake: target.wake });
    }

    /** Revert Wake: the tree's wake, or one picked from a list. */
    async revertWake(node?: Node): Promise<void> {
        let wake = node?.kind === 'wake' ? node.wake : undefined;
        if (wake === undefined) {
            const picked = await vscode.window.showQuickPick(
                [...this.provider.wakes].reverse().map((w) => ({ label: vscode.l10n.t('wake #{0}', w.wake), description: filesLabel(w.files.length), wake: w })),
                { title: vscode.l10n.t('Revert Wake') },
            );
            wake = picked?.wake;
        }
        if (wake === undefined) return;
        const ok = vscode.l10n.t('Revert Wake');
        const question = countLabel(
            wake.files.length,
            vscode.l10n.t('Put the file of wake #{0} back as it was before it?', wake.wake),
            vscode.l10n.t('Put the {0} files of wake #{1} back as they were before it?', '{0}', wake.wake),
        );
        if ((await vscode.window.showWarningMessage(question, { modal: true, detail: wake.files.map((f) => f.path).join('\n') }, ok)) !== ok) return;
        await this.revert({ wake: wake.wake });
    }

    private async revert(what: { path?: string; wake: number }): Promise<void> {
        const server = this.current();
        if (server === undefined) return;
        if (server.status?.running === true) {
            void vscode.window.showWarningMessage(vscode.l10n.t('A wake is running in {0}: revert once it has ended.', server.folder.name));
            return;
        }
        try {
            const result = await server.request(p.revert, { folder: server.uri, ...what });
            void vscode.window.setStatusBarMessage(vscode.l10n.t('flower: restored {0}', result.reverted.join(', ')), 5000);
        } catch (e) {
            // The server's sentence says what to do, in the window's language (revert_running, revert_nothing, …).
            const message = e instanceof ResponseError || e instanceof Error ? e.message : String(e);
            void vscode.window.showWarningMessage(`flower · ${server.folder.name}: ${message}`);
        }
        this.soon(0);
    }

    /** Revert File from the palette: the active editor's file, of the newest wake that changed it. */
    private async fileOfActiveEditor(): Promise<{ file: p.ChangedFile; wake: number } | undefined> {
        const folder = this.provider.folder;
        const open = vscode.window.activeTextEditor?.document.uri;
        if (folder === undefined || open === undefined) return undefined;
        const rel = path.relative(folder.uri.fsPath, open.scheme === BEFORE_SCHEME ? path.join(folder.uri.fsPath, open.path) : open.fsPath).split(path.sep).join('/');
        for (const wake of [...this.provider.wakes].reverse()) {
            const file = wake.files.find((f) => f.path === rel);
            if (file !== undefined) return { file, wake: wake.wake };
        }
        void vscode.window.showInformationMessage(vscode.l10n.t('{0} has no change recorded by flower.', rel));
        return undefined;
    }

    dispose(): void {
        clearTimeout(this.timer);
        this.view.dispose();
        for (const s of this.subscriptions) s.dispose();
    }
}
