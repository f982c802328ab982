/**
 * The transcript WebviewView (`flower.transcript`) for the folder in focus. The page keeps
 * what it shows; this side sends only changes (numbered ops), answers the page's requests for
 * older/newer rows from the folder's model (fetching flower/history pages as needed), and on
 * `ready` sends what the page missed while hidden — never the whole transcript (D8).
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { Focus } from '../folders';
import type { FromPage, Row, ToPage } from '../model/rows';
import { type FolderServer, PAGE, type Servers } from '../server';
import { pageHtml } from '../webview/html';

export class TranscriptView implements vscode.WebviewViewProvider, vscode.Disposable {
    private view: vscode.WebviewView | undefined;
    /** The folder, epoch and op the page was last brought up to. */
    private shown: { uri: string | null; epoch: number; op: number } = { uri: null, epoch: 0, op: 0 };
    private readonly subscriptions: vscode.Disposable[];
    private readonly synced = new vscode.EventEmitter<void>();
    /** The page was brought up to date (reset, or came back and asked for what it missed): parts it shows besides rows follow. */
    readonly onDidSync = this.synced.event;
    private readonly received = new vscode.EventEmitter<FromPage>();
    /** Every message of the page (the approval cards' answers among them). */
    readonly onDidReceive = this.received.event;

    constructor(
        private readonly extensionUri: vscode.Uri,
        private readonly servers: Servers,
        private readonly focus: Focus,
        private readonly say: (folder: vscode.WorkspaceFolder, text: string) => Promise<void>,
    ) {
        this.subscriptions = [
            servers.onEvent(({ server, event }) => {
                if (server.uri !== this.focus.folder?.uri.toString()) return;
                if (event.type === 'rows') this.sendRows(server, event.rows);
                else if (event.type === 'reset') this.reset();
                else if (event.type === 'status') this.post({ type: 'running', running: server.status?.running ?? false });
            }),
            focus.onDidChange(() => this.reset()),
            vscode.workspace.onDidGrantWorkspaceTrust(() => this.reset()),
        ];
    }

    resolveWebviewView(view: vscode.WebviewView): void {
        this.view = view;
        const dist = vscode.Uri.joinPath(this.extensionUri, 'dist');
        const media = vscode.Uri.joinPath(this.extensionUri, 'media');
        view.webview.options = { enableScripts: true, localResourceRoots: [dist, media] };
        view.webview.html = this.html(view.webview);
        view.webview.onDidReceiveMessage((m: FromPage) => {
            this.received.fire(m);
            void this.receive(m);
        });
        view.onDidChangeVisibility(() => {
            // A hidden view receives nothing: when it shows again, it asks for what it missed.
            if (view.visible) this.post({ type: 'sync' });
        });
        view.onDidDispose(() => (this.view = undefined));
    }

    /**
     * Show the view. `focus`: the person asked (flower.showTranscript, the gauge's click);
     * otherwise (a wake began) the view shows without taking the focus, so an open quick pick
     * or input box stays open and keys keep going where the person types.
     */
    async reveal(focus: boolean): Promise<void> {
        if (this.view !== undefined) {
            this.view.show(!focus);
            return;
        }
        // Never resolved yet (the sidebar was not opened in this window): only the view's focus
        // command creates it; a wake does not open it uninvited.
        if (focus) await vscode.commands.executeCommand('flower.transcript.focus');
    }

    private server(): FolderServer | undefined {
        const folder = this.focus.folder;
        return folder === undefined ? undefined : this.servers.get(folder);
    }

    private async receive(m: FromPage): Promise<void> {
        const server = this.server();
        switch (m.type) {
            case 'ready': {
                if (server !== undefined && m.epoch === server.epoch && m.op !== null && this.shown.uri === server.uri) {
                    const missed = server.model.since(m.op);
                    if (missed !== null) {
                        this.post({ type: 'rows', epoch: server.epoch, op: server.model.op, rows: missed });
                        this.synced.fire();
                        return;
                    }
                }
                this.reset();
                return;
            }
            case 'older': {
                if (server === undefined) return;
                const epoch = server.epoch;
                let rows = server.model.before(m.beforePos, PAGE);
                if (rows.length < PAGE && server.model.hasOlderHistory) {
                    await server.loadOlder();
                    if (epoch !== server.epoch) return;
                    rows = server.model.before(m.beforePos, PAGE);
                }
                const hasOlder = rows.length > 0 && (server.model.before(rows[0].pos, 1).length > 0 || server.model.hasOlderHistory);
                this.post({ type: 'older', epoch, rows, hasOlder });
                return;
            }
            case 'newer': {
                if (server === undefined) return;
                const rows = server.model.after(m.afterPos, PAGE);
                const last = rows.length > 0 ? rows[rows.length - 1].pos : m.afterPos;
                this.post({ type: 'newer', epoch: server.epoch, rows, hasNewer: server.model.after(last, 1).length > 0 });
                return;
            }
            case 'say': {
                const folder = this.focus.folder;
                if (folder !== undefined && m.text.trim() !== '') await this.say(folder, m.text.trim());
                return;
            }
        }
    }

    /** Bring the page to the focused folder's newest rows. */
    private reset(): void {
        const folder = this.focus.folder;
        const server = folder === undefined ? undefined : this.servers.get(folder);
        const trusted = vscode.workspace.isTrusted;
        let message: string | null = null;
        if (!trusted) {
            message = vscode.l10n.t(
                'This folder is not trusted, so flower runs nothing here: no agent, no Python. Trust the folder (Manage Workspace Trust) to use flower.',
            );
        } else if (folder === undefined) {
            message = vscode.l10n.t('No folder is open. flower keeps one task per folder: open a folder, then run "flower: Start a Task…".');
        } else if (server !== undefined && server.serverState === 'stopped' && server.client === undefined && server.status === null) {
            message = vscode.l10n.t('Nothing here yet: run "flower: Start a Task…" or type the task below.');
        }
        const rows: Row[] = server?.model.tail(PAGE) ?? [];
        const hasOlder = server !== undefined && (server.model.size > rows.length || server.model.hasOlderHistory);
        const epoch = server?.epoch ?? 0;
        const op = server?.model.op ?? 0;
        this.shown = { uri: server?.uri ?? null, epoch, op };
        this.post({
            type: 'reset',
            folder: server?.uri ?? null,
            folderName: folder?.name ?? '',
            epoch,
            op,
            rows,
            hasOlder,
            message,
            enabled: trusted && folder !== undefined,
            running: server?.status?.running ?? false,
        });
        this.synced.fire();
    }

    private sendRows(server: FolderServer, rows: Row[]): void {
        if (this.shown.uri !== server.uri || this.shown.epoch !== server.epoch) {
            this.reset();
            return;
        }
        this.shown.op = server.model.op;
        this.post({ type: 'rows', epoch: server.epoch, op: server.model.op, rows });
    }

    /** Whether the view is on screen (a hidden one receives nothing). */
    get visible(): boolean {
        return this.view?.visible ?? false;
    }

    post(message: ToPage): void {
        if (this.view?.visible) void this.view.webview.postMessage(message);
    }

    private html(webview: vscode.Webview): string {
        return pageHtml({
            nonce: randomBytes(18).toString('base64').replace(/[+/=]/g, 'x'),
            cspSource: webview.cspSource,
            scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'dist', 'webview.js')).toString(),
            styleUri: webview.asWebviewUri(vscode.Uri.joinPath(this.extensionUri, 'media', 'transcript.css')).toString(),
            lang: vscode.env.language,
            toggleLabel: vscode.l10n.t('what the model sees'),
            placeholder: vscode.l10n.t('Say something to flower (Enter sends, Shift+Enter for a new line)'),
        });
    }

    dispose(): void {
        for (const s of this.subscriptions) s.dispose();
        this.synced.dispose();
        this.received.dispose();
    }
}
