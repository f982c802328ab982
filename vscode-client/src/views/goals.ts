/**
 * The goals TreeView (`flower.goals`): 目标.md's checklist with ticks, `n/m` in its title, as the
 * folder's server read it (FolderStatus.goals). The client parses no task file (issue 33): when
 * 目标.md changes on disk it asks the server to read it again (`flower/status` with `fresh`).
 */
import * as path from 'node:path';
import * as vscode from 'vscode';
import type { Focus } from '../folders';
import type { Goal } from '../protocol';
import type { Servers } from '../server';

class GoalsProvider implements vscode.TreeDataProvider<Goal> {
    private readonly emitter = new vscode.EventEmitter<void>();
    readonly onDidChangeTreeData = this.emitter.event;
    goals: Goal[] = [];
    folder: vscode.WorkspaceFolder | undefined;

    refresh(folder: vscode.WorkspaceFolder | undefined, goals: Goal[]): void {
        this.folder = folder;
        this.goals = goals;
        this.emitter.fire();
    }

    getTreeItem(goal: Goal): vscode.TreeItem {
        const item = new vscode.TreeItem(goal.text, vscode.TreeItemCollapsibleState.None);
        item.iconPath = new vscode.ThemeIcon(goal.done ? 'pass-filled' : 'circle-large-outline');
        item.description = goal.done ? '✓' : undefined;
        item.tooltip = `${goal.done ? '[x]' : '[ ]'} ${goal.text}`;
        if (this.folder !== undefined) {
            item.command = {
                command: 'vscode.open',
                title: vscode.l10n.t('Open Goals'),
                arguments: [vscode.Uri.file(path.join(this.folder.uri.fsPath, '目标.md'))],
            };
        }
        return item;
    }

    getChildren(goal?: Goal): Goal[] {
        return goal === undefined ? this.goals : [];
    }
}

export class GoalsView implements vscode.Disposable {
    private readonly provider = new GoalsProvider();
    private readonly view: vscode.TreeView<Goal>;
    private readonly subscriptions: vscode.Disposable[];
    private readonly watcher = vscode.workspace.createFileSystemWatcher('**/目标.md');

    constructor(
        private readonly servers: Servers,
        private readonly focus: Focus,
    ) {
        this.view = vscode.window.createTreeView('flower.goals', { treeDataProvider: this.provider });
        const reread = (uri: vscode.Uri): void => {
            // The folder's server reads the file again; its answer comes back as a status event.
            const server = this.servers.all().find((s) => path.dirname(uri.fsPath) === s.folder.uri.fsPath);
            void server?.refreshStatus(true);
        };
        this.subscriptions = [
            servers.onEvent(({ server, event }) => {
                if (event.type === 'status' && server.uri === focus.folder?.uri.toString()) this.update();
            }),
            focus.onDidChange(() => this.update()),
            this.watcher,
            this.watcher.onDidChange(reread),
            this.watcher.onDidCreate(reread),
            this.watcher.onDidDelete(reread),
        ];
        this.update();
    }

    update(): void {
        const folder = this.focus.folder;
        const server = folder === undefined ? undefined : this.servers.all().find((s) => s.uri === folder.uri.toString());
        const goals = server?.status?.goals ?? [];
        const done = goals.filter((g) => g.done).length;
        const changed = JSON.stringify(goals) !== JSON.stringify(this.provider.goals) || folder !== this.provider.folder;
        if (changed) this.provider.refresh(folder, goals);
        this.view.title = goals.length > 0 ? `${vscode.l10n.t('Goals')} ${done}/${goals.length}` : vscode.l10n.t('Goals');
        this.view.message = goals.length > 0 ? undefined : vscode.l10n.t('No goals yet: 目标.md is written once the task is clear.');
    }

    dispose(): void {
        this.view.dispose();
        for (const s of this.subscriptions) s.dispose();
    }
}
