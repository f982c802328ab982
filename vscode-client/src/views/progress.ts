/**
 * Work-done progress as a notification with the step's title and a Cancel button. The
 * client's built-in `$/progress` UI is a status-bar spinner without Cancel (STYLE), so
 * flower's tokens are taken over through `middleware.handleWorkDoneProgress`.
 */
import * as vscode from 'vscode';
import type { WorkDoneProgressBegin, WorkDoneProgressEnd, WorkDoneProgressReport } from 'vscode-languageclient/node';
import type { FolderServer } from '../server';

interface Open {
    progress: vscode.Progress<{ message?: string }>;
    done: () => void;
}

export class ProgressView implements vscode.Disposable {
    private readonly open = new Map<string, Open>();

    /** One `$/progress` event of a folder's server. */
    handle(server: FolderServer, token: string, params: WorkDoneProgressBegin | WorkDoneProgressReport | WorkDoneProgressEnd): void {
        const key = `${server.uri} ${token}`;
        if (params.kind === 'begin') {
            void vscode.window.withProgress(
                {
                    location: vscode.ProgressLocation.Notification,
                    title: `${params.title} · ${server.folder.name}`,
                    cancellable: params.cancellable ?? true,
                },
                (progress, cancel) =>
                    new Promise<void>((resolve) => {
                        this.open.set(key, { progress, done: resolve });
                        if (params.message !== undefined) progress.report({ message: tidy(params.message) });
                        cancel.onCancellationRequested(() => {
                            // Cancel stops the step cleanly; flower: Continue resumes it (protocol.md).
                            void server.cancel(token);
                        });
                    }),
            );
        } else if (params.kind === 'report') {
            if (params.message !== undefined) this.open.get(key)?.progress.report({ message: tidy(params.message) });
        } else {
            this.open.get(key)?.done();
            this.open.delete(key);
        }
    }

    /** A server that went away ends its progress notifications. */
    endAll(server: FolderServer): void {
        for (const [key, open] of this.open) {
            if (key.startsWith(`${server.uri} `)) {
                open.done();
                this.open.delete(key);
            }
        }
    }

    dispose(): void {
        for (const open of this.open.values()) open.done();
        this.open.clear();
    }
}

/** A step header's rule of `=` is for terminals: `== work =====  3/3` reads `work  3/3` here. */
function tidy(message: string): string {
    return message.replace(/\s*={2,}\s*/g, ' ').trim();
}
