/**
 * Telling the person where they are (issue 24): when a wake ends or starts waiting for them, a
 * notification in the editor even when the flower view is not visible, and with
 * `flower.notify: "os"` a desktop one too (`notify-send`, `osascript`; skipped quietly where
 * neither exists, never waited for).
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as vscode from 'vscode';
import { capReached } from '../model/gauge';
import { desktopCommand, findProgram, type Moment, notifyMode, oneLine, OutageWatch, wakeEnded } from '../model/notify';
import type { FolderServer, Servers } from '../server';

export class Notifier implements vscode.Disposable {
    private readonly outages = new Map<string, OutageWatch>();
    private readonly subscription: vscode.Disposable;

    constructor(
        servers: Servers,
        private readonly log: vscode.LogOutputChannel,
    ) {
        this.subscription = servers.onEvent(({ server, event }) => {
            if (event.type === 'status' && server.status !== null) {
                let watch = this.outages.get(server.uri);
                if (watch === undefined) this.outages.set(server.uri, (watch = new OutageWatch()));
                const moment = watch.update(server.status, Date.now() / 1000);
                if (moment !== null) this.tell(server, moment, true);
            }
        });
    }

    /**
     * A wake ended (flower/state running: false), with the status it ended with. Failures and the
     * cap already have their editor notification (Commands.wakeEnded, with its buttons): here
     * only the desktop one.
     */
    wakeEnded(server: FolderServer, n: Parameters<typeof wakeEnded>[0]): void {
        const moment = wakeEnded(n, server.status !== null && capReached(server.status));
        if (moment !== null) this.tell(server, moment, moment.kind === 'done');
    }

    /** Tell `moment`: in the editor when `editor`, on the desktop when `flower.notify` is `os`. */
    tell(server: FolderServer, moment: Moment, editor: boolean): void {
        const text = words(moment);
        if (editor) {
            const message = `flower · ${server.folder.name}: ${text}`;
            const show = vscode.l10n.t('Show Transcript');
            const shown = moment.kind === 'done' ? vscode.window.showInformationMessage(message, show) : vscode.window.showWarningMessage(message, show);
            void shown.then((choice) => {
                if (choice === show) void vscode.commands.executeCommand('flower.showTranscript');
            });
        }
        if (notifyMode(vscode.workspace.getConfiguration('flower', server.folder.uri).get('notify')) === 'os') {
            this.desktop(`flower · ${server.folder.name}`, text);
        }
    }

    /** A desktop notification, fire and forget: a missing program or a failure is a log line, nothing more. */
    private desktop(title: string, body: string): void {
        const found = (program: string): string | null => findProgram(program, process.env.PATH, executable);
        const command = desktopCommand(process.platform, title, body, found);
        if (command === null) {
            this.log.info(`flower.notify is "os" but neither notify-send nor osascript is on PATH (${process.env.PATH ?? ''}): no desktop notification`);
            return;
        }
        try {
            const child = execFile(command.command, command.args, { timeout: 10_000, windowsHide: true }, (error) => {
                if (error !== null) this.log.warn(`desktop notification (${command.command}): ${error.message}`);
            });
            child.unref();
        } catch (e) {
            this.log.warn(`desktop notification (${command.command}): ${String(e)}`);
        }
    }

    dispose(): void {
        this.subscription.dispose();
    }
}

function executable(file: string): boolean {
    try {
        fs.accessSync(file, fs.constants.X_OK);
        return fs.statSync(file).isFile();
    } catch {
        return false;
    }
}

/** The moment in the window's language. */
function words(m: Moment): string {
    const t = vscode.l10n.t;
    switch (m.kind) {
        case 'done':
            if (!m.passed) return t('wake #{0} ended before the judge passed the work; Continue goes on.', m.woke ?? '?');
            return t('wake #{0} is done: the judge passed the work.', m.woke ?? '?');
        case 'failed':
            return t('the wake failed: {0}', oneLine(m.error));
        case 'cap':
            return t('the wake stopped at the spending cap: {0}', oneLine(m.error));
        case 'approval':
            return t('waiting for you: allow {0}: {1}?', m.tool, oneLine(m.summary));
        case 'question':
            return t('waiting for you: {0}', oneLine(m.question));
        case 'outage':
            return t('waiting out an outage for {0} min; it continues by itself when the service is back.', m.minutes);
    }
}
