/**
 * The transcript, in the sidebar (WebviewView `flower.transcript`) and in an editor tab
 * (WebviewPanel `flower.transcriptPanel`, restored after a reload by its serializer), for the
 * folder in focus. One `TranscriptPage` drives either webview: the page keeps what it shows;
 * this side sends only changes (numbered ops), answers the page's requests for older/newer
 * rows from the folder's model (fetching flower/history pages as needed), and on `ready` sends
 * what the page missed while hidden — never the whole transcript (D8).
 */
import { randomBytes } from 'node:crypto';
import * as vscode from 'vscode';
import type { Focus } from '../folders';
import { type ChartWords, chartData } from '../model/chart';
import type { FromPage, Row, ToPage } from '../model/rows';
import type { StepLabels } from '../model/steps';
import { type FolderServer, PAGE, type Servers } from '../server';
import { pageHtml } from '../webview/html';

type Say = (folder: vscode.WorkspaceFolder, text: string) => Promise<void>;

/** The view type of the editor tab (package.json `onWebviewPanel:` activation). */
export const PANEL_TYPE = 'flower.transcriptPanel';

/** The words of section heads and verdict lines, in the window's language (a step's own title is the server's). */
export function stepLabels(): StepLabels {
    const t = vscode.l10n.t;
    return {
        running: t('running'),
        done: t('done'),
        failed: t('failed'),
        passed: t('passed'),
        notPassed: t('not passed'),
        moreLines: t('{0} more lines', '{0}'),
        moreLine: t('1 more line'),
        output: t('output · {0} lines', '{0}'),
        outputLine: t('output · 1 line'),
        rawInput: t('raw input'),
        collapse: t('collapse or expand this step'),
        subagent: t('subagent'),
        subagentTool: t('1 tool call'),
        subagentTools: t('{0} tool calls', '{0}'),
        subagentFold: t('show or hide what the subagent did'),
        denied: t('denied'),
        prompt: t('prompt for the judge · {0} lines', '{0}'),
    };
}

/** The context chart's words (issue 34), in the window's language. */
export function chartWords(): ChartWords {
    const t = vscode.l10n.t;
    return {
        title: t('context per work round'),
        size: t('context {0} of {1}', '{0}', '{1}'),
        rounds: t('rounds {0}–{1}', '{0}', '{1}'),
        round: t('round {0}', '{0}'),
        point: t('round {0}: {1}', '{0}', '{1}'),
        last: t('last {0} (round {1})', '{0}', '{1}'),
        peak: t('highest {0} (round {1})', '{0}', '{1}'),
        handoff: t('handoff before round {0}', '{0}'),
        threshold: t('handoff at {0}', '{0}'),
        window: t('window {0}', '{0}'),
        toHandoff: t('handoff in {0} rounds', '{0}'),
        toHandoffOne: t('handoff in 1 round'),
        handoffDue: t('handoff at the next round'),
        empty: t('no work round yet'),
    };
}

/** What a page tells its owner besides rows: it was brought up to date, and each message it sent (approval answers among them). */
export class PageEvents implements vscode.Disposable {
    private readonly synced = new vscode.EventEmitter<void>();
    /** The page was brought up to date (reset, or back and given what it missed): parts it shows besides rows follow. */
    readonly onDidSync = this.synced.event;
    private readonly received = new vscode.EventEmitter<FromPage>();
    readonly onDidReceive = this.received.event;

    sync(): void {
        this.synced.fire();
    }

    receive(m: FromPage): void {
        this.received.fire(m);
    }

    dispose(): void {
        this.synced.dispose();
        this.received.dispose();
    }
}

/** One webview showing the transcript of the folder in focus. */
class TranscriptPage implements vscode.Disposable {
    /** The folder, epoch and op the page was last brought up to. */
    private shown: { uri: string | null; epoch: number; op: number } = { uri: null, epoch: 0, op: 0 };
    /** The chart data last sent to the page (as JSON): a status that changes nothing of it sends nothing. */
    private chartSent: string | null = null;
    private readonly subscriptions: vscode.Disposable[];

    constructor(
        private readonly webview: vscode.Webview,
        private readonly visible: () => boolean,
        extensionUri: vscode.Uri,
        private readonly servers: Servers,
        private readonly focus: Focus,
        private readonly say: Say,
        wide: boolean,
        private readonly events: PageEvents,
    ) {
        const dist = vscode.Uri.joinPath(extensionUri, 'dist');
        const media = vscode.Uri.joinPath(extensionUri, 'media');
        webview.options = { enableScripts: true, localResourceRoots: [dist, media] };
        webview.html = pageHtml({
            nonce: randomBytes(18).toString('base64').replace(/[+/=]/g, 'x'),
            cspSource: webview.cspSource,
            scriptUri: webview.asWebviewUri(vscode.Uri.joinPath(dist, 'webview.js')).toString(),
            styleUri: webview.asWebviewUri(vscode.Uri.joinPath(media, 'transcript.css')).toString(),
            lang: vscode.env.language,
            toggleLabel: vscode.l10n.t('what the model sees'),
            placeholder: vscode.l10n.t('Say something to flower (Enter sends, Shift+Enter for a new line)'),
            placeholderShort: vscode.l10n.t('Say something (Enter sends)'),
            wide,
        });
        this.subscriptions = [
            webview.onDidReceiveMessage((m: FromPage) => {
                events.receive(m);
                void this.receive(m);
            }),
            servers.onEvent(({ server, event }) => {
                if (server.uri !== this.focus.folder?.uri.toString()) return;
                if (event.type === 'rows') this.sendRows(server);
                else if (event.type === 'reset') this.reset();
                else if (event.type === 'steps') this.post({ type: 'steps', steps: server.model.stepList() });
                else if (event.type === 'status') {
                    this.post({ type: 'running', running: server.status?.running ?? false });
                    this.sendChart(server);
                }
            }),
            focus.onDidChange(() => this.reset()),
            vscode.workspace.onDidGrantWorkspaceTrust(() => this.reset()),
        ];
    }

    /** The page became visible again: it asks for what it missed. */
    sync(): void {
        this.post({ type: 'sync' });
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
                        this.post({ type: 'rows', epoch: server.epoch, op: server.model.op, rows: missed, steps: server.model.stepList() });
                        this.sendChart(server, true);
                        this.events.sync();
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
                this.post({ type: 'steps', steps: server.model.stepList() });
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
            case 'open': {
                await openFile(m.path, m.line);
                return;
            }
        }
    }

    /** Bring the page to the focused folder's newest rows. */
    reset(): void {
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
            workspace: folder?.uri.fsPath ?? '',
            labels: stepLabels(),
            steps: server?.model.stepList() ?? [],
        });
        this.sendChart(server, true);
        this.events.sync();
    }

    /**
     * The context chart (issue 34) of the focused folder's status: painted from the records' series at once, then
     * updated as rounds end (each status that changes it). `again`: the page was rebuilt or missed messages.
     */
    private sendChart(server: FolderServer | undefined, again = false): void {
        if (server !== undefined && server.uri !== this.focus.folder?.uri.toString()) return;
        const chart = chartData(server?.status ?? null, chartWords());
        const json = JSON.stringify(chart);
        if (!again && json === this.chartSent) return;
        this.chartSent = json;
        this.post({ type: 'chart', chart });
    }

    private sendRows(server: FolderServer): void {
        if (this.shown.uri !== server.uri || this.shown.epoch !== server.epoch) {
            this.reset();
            return;
        }
        const rows = server.model.since(this.shown.op);
        if (rows === null) {
            this.reset();
            return;
        }
        this.shown.op = server.model.op;
        this.post({ type: 'rows', epoch: server.epoch, op: server.model.op, rows, steps: server.model.stepList() });
    }

    post(message: ToPage): void {
        if (this.visible()) void this.webview.postMessage(message);
    }

    dispose(): void {
        for (const s of this.subscriptions) s.dispose();
    }
}

/** Open a workspace file from a clickable path, at `line` (1-based) when given. */
async function openFile(path: string, line: number | null): Promise<void> {
    const uri = vscode.Uri.file(path);
    try {
        const at = line !== null ? new vscode.Position(Math.max(0, line - 1), 0) : undefined;
        await vscode.window.showTextDocument(uri, { preview: true, selection: at ? new vscode.Range(at, at) : undefined });
    } catch {
        void vscode.window.showWarningMessage(vscode.l10n.t('{0} cannot be opened: it may have been moved or deleted.', path));
    }
}

/** What the sidebar view and the editor tab share: one page at a time over a webview, and its events. */
abstract class PageHost implements vscode.Disposable {
    protected page: TranscriptPage | undefined;
    /** Its page's syncs and messages (the approval cards follow them). */
    readonly events = new PageEvents();

    constructor(
        protected readonly extensionUri: vscode.Uri,
        private readonly servers: Servers,
        private readonly focus: Focus,
        private readonly say: Say,
    ) {}

    /** Whether its page is on screen (a hidden one receives nothing). */
    abstract get visible(): boolean;

    /** A message to its page, if it has one on screen. */
    post(message: ToPage): void {
        this.page?.post(message);
    }

    /** A new page over `webview` (the one before it disposed). */
    protected host(webview: vscode.Webview, visible: () => boolean, wide: boolean): TranscriptPage {
        this.page?.dispose();
        this.page = new TranscriptPage(webview, visible, this.extensionUri, this.servers, this.focus, this.say, wide, this.events);
        return this.page;
    }

    dispose(): void {
        this.events.dispose();
        this.page?.dispose();
    }
}

/** The sidebar view, for glancing. */
export class TranscriptView extends PageHost implements vscode.WebviewViewProvider {
    private view: vscode.WebviewView | undefined;

    get visible(): boolean {
        return this.view?.visible ?? false;
    }

    resolveWebviewView(view: vscode.WebviewView): void {
        this.view = view;
        const page = this.host(view.webview, () => view.visible, false);
        view.onDidChangeVisibility(() => {
            // A hidden view receives nothing: when it shows again, it asks for what it missed.
            if (view.visible) page.sync();
        });
        view.onDidDispose(() => {
            page.dispose();
            if (this.page === page) this.page = undefined;
            this.view = undefined;
        });
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
}

/** The transcript in an editor tab ("flower: Open Transcript in Editor"); a reload restores it (serializer). */
export class TranscriptPanel extends PageHost implements vscode.WebviewPanelSerializer {
    private panel: vscode.WebviewPanel | undefined;

    get visible(): boolean {
        return this.panel?.visible ?? false;
    }

    /** Open the tab, or bring it forward. */
    open(): void {
        if (this.panel !== undefined) {
            this.panel.reveal();
            return;
        }
        this.attach(vscode.window.createWebviewPanel(PANEL_TYPE, vscode.l10n.t('flower transcript'), vscode.ViewColumn.Active, {
            enableScripts: true,
            localResourceRoots: [vscode.Uri.joinPath(this.extensionUri, 'dist'), vscode.Uri.joinPath(this.extensionUri, 'media')],
        }));
    }

    /** After a reload: the tab VS Code kept gets its page again (its scroll and folds come back from its state). */
    async deserializeWebviewPanel(panel: vscode.WebviewPanel, _state: unknown): Promise<void> {
        this.attach(panel);
    }

    private attach(panel: vscode.WebviewPanel): void {
        this.panel = panel;
        panel.title = vscode.l10n.t('flower transcript');
        panel.iconPath = vscode.Uri.joinPath(this.extensionUri, 'media', 'flower.svg');
        const page = this.host(panel.webview, () => panel.visible, true);
        panel.onDidChangeViewState(() => {
            if (panel.visible) page.sync();
        });
        panel.onDidDispose(() => {
            page.dispose();
            if (this.panel === panel) {
                this.panel = undefined;
                this.page = undefined;
            }
        });
    }
}
