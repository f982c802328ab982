/**
 * Tool approvals in the editor (issue 24): a card in the transcript for each question, a
 * notification with the same buttons when the transcript is hidden, and the answer sent back —
 * as the result of the server's `flower/approve` request when this connection holds it, else
 * (after a reload, a reconnect) as `flower/answer`, which the server matches by id. The first
 * answer wins in whichever window; `flower/approved` closes the card everywhere.
 */
import * as vscode from 'vscode';
import type { CancellationToken } from 'vscode-languageclient/node';
import type { Focus } from '../folders';
import { type Answer, type ApprovalLabels, Approvals, parseAnswer } from '../model/approvals';
import { oneLine } from '../model/notify';
import type { ToPage } from '../model/rows';
import * as p from '../protocol';
import type { FolderServer, Servers } from '../server';
import type { Notifier } from './notify';
import type { PageEvents } from './transcript';

/** A transcript page's owner (the sidebar view, the editor tab): where cards are shown and answered. */
export interface Surface {
    readonly events: PageEvents;
    readonly visible: boolean;
    post(message: ToPage): void;
}

/** The request a window holds for a question, answered when the person decides. */
interface Held {
    resolve(result: p.ApproveResult): void;
    /** No answer from this window (it closes, its connection went, the server withdrew the question). */
    reject(reason: Error): void;
}

/**
 * Why a held request ends without an answer. An error response is no answer (the server's rule and the
 * other windows still decide); a denial sent here would be taken as the person's — a reload must never deny.
 */
const NO_ANSWER = 'this window gave no answer (it closed, reconnected, or the question was withdrawn)';

export class ApprovalsView implements vscode.Disposable {
    private readonly byFolder = new Map<string, Approvals>();
    /** Folder uri + id → the open `flower/approve` request of this connection. */
    private readonly held = new Map<string, Held>();
    private readonly subscriptions: vscode.Disposable[];

    constructor(
        private readonly servers: Servers,
        private readonly focus: Focus,
        private readonly surfaces: Surface[],
        private readonly notifier: Notifier,
        private readonly log: vscode.LogOutputChannel,
    ) {
        this.subscriptions = [
            servers.onEvent(({ server, event }) => {
                const approvals = this.of(server);
                if (event.type === 'status') {
                    // After a reload the question is known only from the status (its request was the old window's).
                    this.fromStatus(server, approvals);
                } else if (event.type === 'reset') {
                    approvals.reconnect();
                    this.dropHeld(server);
                    // A new connection's status may have come before its reset (an attach): it names what is open.
                    if (!this.fromStatus(server, approvals)) this.changed(server);
                } else if (event.type === 'state' && !event.n.running) {
                    approvals.end();
                    this.dropHeld(server);
                    this.changed(server);
                }
            }),
            ...surfaces.flatMap((surface) => [
                surface.events.onDidSync(() => this.post()),
                surface.events.onDidReceive((m) => {
                    if (m.type === 'decide') this.decide(m);
                }),
            ]),
            focus.onDidChange(() => this.post()),
        ];
    }

    /** `flower/approve`: a card (and, with the view hidden, a notification); resolves with the person's answer. */
    approve(server: FolderServer, params: p.ApproveParams, token: CancellationToken): Promise<p.ApproveResult> {
        const approvals = this.of(server);
        const key = heldKey(server, params.id);
        // Asked again on this connection (a re-attach), or answered already: the card is the same one.
        const fresh = approvals.ask(params);
        const known = approvals.get(params.id);
        if (!fresh && known?.state !== 'open') {
            // Answered here: the same answer again. Closed without a decision known here: no answer.
            const decision = known?.decision ?? null;
            return decision === null ? Promise.reject(new Error(NO_ANSWER)) : Promise.resolve({ decision, message: known?.message ?? null });
        }
        // The same question asked twice on this connection: both requests get the one answer.
        const before = this.held.get(key);
        const answer = new Promise<p.ApproveResult>((resolve, reject) =>
            this.held.set(key, {
                resolve: (r) => {
                    before?.resolve(r);
                    resolve(r);
                },
                reject: (e) => {
                    before?.reject(e);
                    reject(e);
                },
            }),
        );
        token.onCancellationRequested(() => {
            // The server withdrew the question (answered elsewhere, or by the unattended rule).
            this.held.get(key)?.reject(new Error(NO_ANSWER));
            this.held.delete(key);
        });
        if (fresh) this.opened(server, params);
        return answer;
    }

    /** `flower/approved`: close the card with the decision that won. */
    approved(server: FolderServer, n: p.ApprovedNotification): void {
        const key = heldKey(server, n.id);
        // Another window answered first: this window's request gets the same decision (the server ignores it).
        this.held.get(key)?.resolve({ decision: n.decision, message: null });
        this.held.delete(key);
        if (this.of(server).closed(n)) this.changed(server);
    }

    /** The person decided (on the card or the notification). */
    async answer(server: FolderServer, a: Answer): Promise<void> {
        const approvals = this.of(server);
        if (approvals.answer(a) === null) return; // closed meanwhile: the first answer won
        this.changed(server);
        const key = heldKey(server, a.id);
        const held = this.held.get(key);
        if (held !== undefined) {
            this.held.delete(key);
            held.resolve({ decision: a.decision, message: a.message });
            return;
        }
        try {
            const result = await server.request(p.answer, { folder: server.uri, id: a.id, decision: a.decision, message: a.message });
            if (!result.accepted) {
                // Answered first elsewhere (its flower/approved closes the card with that decision) or not open any more.
                this.log.info(`${server.folder.name}: flower/answer ${a.id}: not open any more`);
                if (approvals.get(a.id)?.state === 'sent') approvals.gone(a.id);
                this.changed(server);
            }
        } catch (e) {
            const message = e instanceof Error ? e.message : String(e);
            this.log.warn(`${server.folder.name}: flower/answer ${a.id}: ${message}`);
            approvals.reopen(a.id);
            this.changed(server);
            void vscode.window.showWarningMessage(`flower · ${server.folder.name}: ${message}`);
            await server.refreshStatus();
        }
    }

    /** A page message: an answer for the focused folder's card, checked before anything is sent. */
    decide(raw: unknown): void {
        const a = parseAnswer(raw);
        const folder = this.focus.folder;
        if (a === null || folder === undefined) return;
        void this.answer(this.servers.get(folder), a);
    }

    /** Open the card of the question the folder's status names, if it is new here. */
    private fromStatus(server: FolderServer, approvals: Approvals): boolean {
        if (!approvals.fromStatus(server.status)) return false;
        this.opened(server, server.status?.waitingFor?.approval ?? null);
        return true;
    }

    private of(server: FolderServer): Approvals {
        let approvals = this.byFolder.get(server.uri);
        if (approvals === undefined) {
            approvals = new Approvals();
            this.byFolder.set(server.uri, approvals);
        }
        return approvals;
    }

    /** A card opened: the page shows it; a hidden view gets a notification instead; the person is told where they are. */
    private opened(server: FolderServer, params: p.ApproveParams | null): void {
        this.changed(server);
        if (params === null) return;
        const focused = server.uri === this.focus.folder?.uri.toString();
        this.notifier.tell(server, { kind: 'approval', tool: params.tool, summary: params.summary }, false);
        if (!(focused && this.surfaces.some((s) => s.visible))) void this.notification(server, params);
    }

    /** The same three choices as the card, as a notification; Deny… asks for the sentence in an input box. */
    private async notification(server: FolderServer, params: p.ApproveParams): Promise<void> {
        const allow = vscode.l10n.t('Allow');
        const always = vscode.l10n.t('Always');
        const deny = vscode.l10n.t('Deny…');
        const choices = params.suggestions.length > 0 ? [allow, always, deny] : [allow, deny];
        const text = vscode.l10n.t('flower · {0} asks to use {1}: {2}', server.folder.name, params.tool, oneLine(params.summary));
        const choice = await vscode.window.showWarningMessage(text, ...choices);
        if (choice === undefined || this.of(server).get(params.id)?.state !== 'open') return;
        if (choice === deny) {
            const sentence = await vscode.window.showInputBox({
                title: vscode.l10n.t('flower: Deny {0}', params.tool),
                prompt: vscode.l10n.t('Optional: one sentence the model receives as the reason (Enter denies; Escape goes back to the question).'),
                ignoreFocusOut: true,
            });
            if (sentence === undefined) {
                if (this.of(server).get(params.id)?.state === 'open') void this.notification(server, params);
                return;
            }
            await this.answer(server, { id: params.id, decision: 'deny', message: sentence.trim() === '' ? null : sentence.trim() });
            return;
        }
        await this.answer(server, { id: params.id, decision: choice === always ? 'allowAlways' : 'allow', message: null });
    }

    private changed(server: FolderServer): void {
        if (server.uri === this.focus.folder?.uri.toString()) this.post();
    }

    /** The focused folder's cards to the page (also after it comes back or resets). */
    private post(): void {
        const folder = this.focus.folder;
        const cards = folder === undefined ? [] : (this.byFolder.get(folder.uri.toString())?.all() ?? []);
        for (const surface of this.surfaces) surface.post({ type: 'approvals', cards, labels: labels() });
    }

    private dropHeld(server: FolderServer): void {
        for (const [key, held] of this.held) {
            if (!key.startsWith(`${server.uri}\n`)) continue;
            held.reject(new Error(NO_ANSWER));
            this.held.delete(key);
        }
    }

    dispose(): void {
        // The window closes (a reload among others): its open questions stay open for the next window.
        for (const held of this.held.values()) held.reject(new Error(NO_ANSWER));
        this.held.clear();
        for (const s of this.subscriptions) s.dispose();
    }
}

function heldKey(server: FolderServer, id: string): string {
    return `${server.uri}\n${id}`;
}

/** The card's texts in the window's language. */
function labels(): ApprovalLabels {
    const t = vscode.l10n.t;
    return {
        asks: t('flower asks to use'),
        allow: t('Allow'),
        always: t('Always'),
        deny: t('Deny…'),
        denyPlaceholder: t('Optional: why not, in one sentence for the model (Enter denies)'),
        denySend: t('Deny'),
        cancel: t('Cancel'),
        alwaysRule: t('Always keeps the rule'),
        sent: t('Answered; waiting for flower…'),
        allowed: t('Allowed'),
        allowedAlways: t('Allowed from now on:'),
        denied: t('Denied'),
        deniedUnattended: t('Denied: nobody answered in time'),
        closed: t('Closed'),
        bySubagent: t('for the subagent {0}', '{0}'),
    };
}
