/** The status-bar gauge (`flower.gauge`) for the folder in focus: one update() driven by events. */
import * as vscode from 'vscode';
import type { Focus } from '../folders';
import { gauge } from '../model/gauge';
import type { Servers } from '../server';

export class GaugeView implements vscode.Disposable {
    private readonly item = vscode.window.createStatusBarItem('flower.gauge', vscode.StatusBarAlignment.Left, 50);
    private ticker: NodeJS.Timeout | undefined;
    private readonly subscriptions: vscode.Disposable[];

    constructor(
        private readonly servers: Servers,
        private readonly focus: Focus,
    ) {
        this.item.name = 'flower';
        this.subscriptions = [
            servers.onEvent(({ server, event }) => {
                if (event.type === 'status' && server.folder.uri.toString() === focus.folder?.uri.toString()) this.update();
            }),
            focus.onDidChange(() => this.update()),
        ];
        this.update();
    }

    /** Redraw from the focused folder's status; ticks each second while a wait counts down. */
    update(): void {
        const folder = this.focus.folder;
        const server = folder === undefined ? undefined : this.servers.all().find((s) => s.uri === folder.uri.toString());
        if (server === undefined || (server.status === null && server.serverState !== 'stopped' && server.client === undefined)) {
            this.item.hide();
            this.tick(false);
            return;
        }
        const status = server.status;
        const waitLeft = status?.waiting ? status.waiting.secondsLeft - (Date.now() - server.statusAt) / 1000 : null;
        // The window's language (issue 34): the gauge's text and tooltip, the forecast lines among them.
        const g = gauge({ status, server: server.serverState, waitLeft, t: vscode.l10n.t });
        this.item.text = g.spinner ? `$(sync~spin) ${g.text}` : g.text;
        this.item.tooltip = g.tooltip.join('\n');
        this.item.backgroundColor =
            g.colour === null ? undefined : new vscode.ThemeColor(g.colour === 'error' ? 'statusBarItem.errorBackground' : 'statusBarItem.warningBackground');
        this.item.command =
            server.serverState === 'stopped'
                ? { command: 'flower.restartServer', title: vscode.l10n.t('Restart'), arguments: [server.folder] }
                : { command: 'flower.showTranscript', title: vscode.l10n.t('Show Transcript') };
        if (server.serverState === 'stopped') this.item.tooltip = `${g.tooltip.join('\n')}\n${vscode.l10n.t('Click to restart the flower server.')}`;
        this.item.show();
        this.tick(status?.waiting !== null && status?.waiting !== undefined && server.serverState !== 'stopped');
    }

    private tick(on: boolean): void {
        if (on && this.ticker === undefined) this.ticker = setInterval(() => this.update(), 1000);
        if (!on && this.ticker !== undefined) {
            clearInterval(this.ticker);
            this.ticker = undefined;
        }
    }

    dispose(): void {
        this.tick(false);
        this.item.dispose();
        for (const s of this.subscriptions) s.dispose();
    }
}
