/**
 * Which workspace folder the person means (multi-root: each folder is its own task): the
 * active editor's folder, else the one last acted on, else the only one, else ask.
 */
import * as vscode from 'vscode';

export class Focus implements vscode.Disposable {
    private current: vscode.WorkspaceFolder | undefined;
    private readonly emitter = new vscode.EventEmitter<vscode.WorkspaceFolder | undefined>();
    readonly onDidChange = this.emitter.event;
    private readonly subscription: vscode.Disposable;

    constructor() {
        this.current = this.fromEditor() ?? vscode.workspace.workspaceFolders?.[0];
        this.subscription = vscode.Disposable.from(
            vscode.window.onDidChangeActiveTextEditor(() => {
                const folder = this.fromEditor();
                if (folder !== undefined) this.set(folder);
            }),
            vscode.workspace.onDidChangeWorkspaceFolders(() => {
                const folders = vscode.workspace.workspaceFolders ?? [];
                if (this.current === undefined || !folders.some((f) => f.uri.toString() === this.current?.uri.toString())) {
                    this.set(folders[0]);
                }
            }),
        );
    }

    /** The folder the views follow. */
    get folder(): vscode.WorkspaceFolder | undefined {
        return this.current;
    }

    set(folder: vscode.WorkspaceFolder | undefined): void {
        if (folder?.uri.toString() === this.current?.uri.toString()) return;
        this.current = folder;
        this.emitter.fire(folder);
    }

    /** The folder a command acts on: the active editor's, the only one, or the person's pick. */
    async pick(): Promise<vscode.WorkspaceFolder | undefined> {
        const folders = vscode.workspace.workspaceFolders ?? [];
        if (folders.length === 0) {
            void vscode.window.showWarningMessage(vscode.l10n.t('flower works in a folder: open a folder first (File › Open Folder…).'));
            return undefined;
        }
        const chosen =
            this.fromEditor() ??
            (folders.length === 1
                ? folders[0]
                : await vscode.window.showWorkspaceFolderPick({ placeHolder: vscode.l10n.t('Which folder?') }));
        if (chosen !== undefined) this.set(chosen);
        return chosen;
    }

    private fromEditor(): vscode.WorkspaceFolder | undefined {
        const uri = vscode.window.activeTextEditor?.document.uri;
        return uri === undefined ? undefined : vscode.workspace.getWorkspaceFolder(uri);
    }

    dispose(): void {
        this.subscription.dispose();
        this.emitter.dispose();
    }
}
