/**
 * Tool approvals as the client knows them (issue 24; no `vscode` import, unit-tested): one card
 * per question the server asked (`flower/approve`, or `FolderStatus.waitingFor.approval` after a
 * reload), closed by `flower/approved` — the first answer wins, in whichever window — and the
 * messages between the extension and the page about them. An answer that does not parse is
 * never sent: the page's message is checked here.
 */
import type { ApprovedNotification, ApproveParams, ApproveResult, FolderStatus } from '../protocol';

/** The person's choice; anything else is never sent (the server would take it as a denial). */
export type Decision = ApproveResult['decision'];

/** One line of a card's detail; `diff` lines are marked added, removed or context. */
export interface DetailLine {
    mark: 'add' | 'del' | 'hunk' | 'ctx';
    text: string;
}

/** What a card shows and where it is in its life. */
export interface ApprovalCard {
    id: string;
    tool: string;
    step: string | null;
    summary: string;
    kind: ApproveParams['detail']['kind'];
    /** The detail, line by line (a diff's lines marked); empty when the summary says it all. */
    lines: DetailLine[];
    /** The rule "Always" keeps; null: the CLI suggests none, so there is no Always. */
    always: string | null;
    since: number;
    /** `open`: buttons live; `sent`: answered here, waiting for the server; `closed`: decided. */
    state: 'open' | 'sent' | 'closed';
    decision: Decision | null;
    by: ApprovedNotification['by'] | null;
    /** With a denial said here: the sentence. */
    message: string | null;
    /** A subagent's tool call: the subagent (its description and type), so the card says who asks (issue 32). */
    agent?: string | null;
}

/** The person's answer to one card, as the page or a notification gives it. */
export interface Answer {
    id: string;
    decision: Decision;
    /** Only with deny; null for none. */
    message: string | null;
}

/** The texts a card shows, in the window's language (the page has no l10n of its own). */
export interface ApprovalLabels {
    asks: string;
    allow: string;
    always: string;
    deny: string;
    denyPlaceholder: string;
    denySend: string;
    cancel: string;
    alwaysRule: string;
    sent: string;
    allowed: string;
    allowedAlways: string;
    denied: string;
    deniedUnattended: string;
    closed: string;
    /** `{0}` = the subagent asking (its description and type). */
    bySubagent?: string;
}

/** Extension → page: the folder's cards (a handful: sent whole). */
export interface ApprovalsToPage {
    type: 'approvals';
    cards: ApprovalCard[];
    labels: ApprovalLabels;
}

/** Page → extension: an answer. */
export interface DecideFromPage {
    type: 'decide';
    id: string;
    decision: Decision;
    message: string | null;
}

const DECISIONS: readonly Decision[] = ['allow', 'allowAlways', 'deny'];
/** Closed cards kept (compact, with their decision) after they closed. */
export const KEEP_CLOSED = 3;
/** A deny sentence is one sentence for the model, not a document. */
export const MESSAGE_MAX = 2000;

/** The fewest lines of the command a person must see while writing why they deny it (issue 34). */
export const DENY_MIN_LINES = 3;

/** A vertical span on the page (CSS px, top < bottom). */
export interface Span {
    top: number;
    bottom: number;
}

/**
 * How many lines of a command's box (`box`) show inside the scrolling area (`area`) above the card's sticky
 * buttons, whose top is `coverTop`; `line` is one line's height. Partial lines do not count.
 */
export function shownLines(box: Span, area: Span, coverTop: number, line: number): number {
    if (line <= 0) return 0;
    const shown = Math.min(box.bottom, area.bottom, coverTop) - Math.max(box.top, area.top);
    return Math.max(0, Math.floor(shown / line));
}

/**
 * Whether the Deny form leaves too little of the command in sight with the Allow / Always / Deny… row and the rule
 * above it (issue 34: at VS Code's narrowest side bar they covered all but a sliver): then the page hides that row and
 * the rule while the form is open — Cancel brings them back. A card without a command box (the summary says it all)
 * keeps them.
 */
export function denyCompact(box: Span | null, area: Span, coverTop: number, line: number): boolean {
    return box !== null && shownLines(box, area, coverTop, line) < DENY_MIN_LINES;
}

/** The page's `decide` message as an Answer, or null when it is not one (then nothing is sent). */
export function parseAnswer(raw: unknown): Answer | null {
    if (typeof raw !== 'object' || raw === null) return null;
    const m = raw as Record<string, unknown>;
    if (typeof m.id !== 'string' || m.id === '' || !DECISIONS.includes(m.decision as Decision)) return null;
    const decision = m.decision as Decision;
    const text = typeof m.message === 'string' ? m.message.trim().slice(0, MESSAGE_MAX) : '';
    return { id: m.id, decision, message: decision === 'deny' && text !== '' ? text : null };
}

/** The detail's lines: a unified diff marked line by line; a command, URL or input as they are. */
export function detailLines(detail: ApproveParams['detail'], summary: string): DetailLine[] {
    const text = detail.text.replace(/\r\n/g, '\n').replace(/\n$/, '');
    if (text === '' || (detail.kind !== 'diff' && text === summary)) return [];
    return text.split('\n').map((line) => ({ mark: detail.kind === 'diff' ? diffMark(line) : 'ctx', text: line }));
}

function diffMark(line: string): DetailLine['mark'] {
    // The file header lines (`--- a/x`, `+++ b/x`) are neither added nor removed.
    if (line.startsWith('+++ ') || line.startsWith('--- ')) return 'hunk';
    if (line.startsWith('@@')) return 'hunk';
    if (line.startsWith('+')) return 'add';
    if (line.startsWith('-')) return 'del';
    return 'ctx';
}

/** A fresh card for a question. */
export function card(params: ApproveParams): ApprovalCard {
    return {
        id: params.id,
        tool: params.tool,
        step: params.step,
        summary: params.summary.split('\n', 1)[0] ?? '',
        kind: params.detail.kind,
        lines: detailLines(params.detail, params.summary),
        always: params.suggestions[0] ?? null,
        since: params.since,
        state: 'open',
        decision: null,
        by: null,
        message: null,
        agent: params.agent ?? null,
    };
}

/**
 * One folder's approvals. A card opens once per id; once answered or closed, that id never
 * opens again from a status asked before the answer reached the server (the server matches
 * answers by id, so a late status is the only way a closed question could come back).
 */
export class Approvals {
    private readonly cards = new Map<string, ApprovalCard>();
    /** Ids answered here or closed: a stale status does not bring them back. */
    private readonly done = new Set<string>();

    /** Cards in the order they were asked: the closed ones kept, then the open ones. */
    all(): ApprovalCard[] {
        return [...this.cards.values()].sort((a, b) => a.since - b.since).map((c) => ({ ...c }));
    }

    get(id: string): ApprovalCard | undefined {
        return this.cards.get(id);
    }

    /** The cards waiting for the person (open, not yet answered). */
    open(): ApprovalCard[] {
        return this.all().filter((c) => c.state === 'open');
    }

    /** A question asked (`flower/approve`); false when it was already known (asked again, or closed). */
    ask(params: ApproveParams): boolean {
        if (this.done.has(params.id) || this.cards.has(params.id)) return false;
        this.cards.set(params.id, card(params));
        return true;
    }

    /** A status: the question it names opens a card (after a reload nothing else brings it back). */
    fromStatus(status: FolderStatus | null): boolean {
        const approval = status?.waitingFor?.approval ?? null;
        return status?.waitingFor?.what === 'approval' && approval !== null ? this.ask(approval) : false;
    }

    /** Answered here: the card waits for the server's `flower/approved`; null when the card is not open. */
    answer(a: Answer): ApprovalCard | null {
        const c = this.cards.get(a.id);
        if (c === undefined || c.state !== 'open') return null;
        c.state = 'sent';
        c.decision = a.decision;
        c.message = a.message;
        this.done.add(a.id);
        return { ...c };
    }

    /** The answer could not be delivered: the card is open again. */
    reopen(id: string): void {
        const c = this.cards.get(id);
        if (c === undefined || c.state !== 'sent') return;
        c.state = 'open';
        c.decision = null;
        c.message = null;
        this.done.delete(id);
    }

    /** `flower/approved`: the question is closed, with the decision that won; false for an unknown id. */
    closed(n: ApprovedNotification): boolean {
        this.done.add(n.id);
        const c = this.cards.get(n.id);
        if (c === undefined) return false;
        c.state = 'closed';
        c.decision = n.decision;
        c.by = n.by;
        if (n.decision !== 'deny') c.message = null;
        this.trim();
        return true;
    }

    /** The server says the question is not open (closed meanwhile, or gone with its process): the card closes undecided. */
    gone(id: string): void {
        const c = this.cards.get(id);
        this.done.add(id);
        if (c === undefined || c.state === 'closed') return;
        c.state = 'closed';
        c.decision = null;
        c.message = null;
        this.trim();
    }

    /** The wake ended or the server is gone: nothing can be pending any more; open cards go. */
    end(): void {
        for (const [id, c] of this.cards) {
            if (c.state !== 'closed') {
                this.cards.delete(id);
                this.done.add(id);
            }
        }
    }

    /**
     * A new connection to the server (restart, reconnect): questions not closed are forgotten
     * but may come back — the server's next status names any that is still pending (an engine
     * holds it across connections), and an answer sent on the old connection may have been lost.
     */
    reconnect(): void {
        for (const [id, c] of this.cards) {
            if (c.state === 'closed') continue;
            this.cards.delete(id);
            this.done.delete(id);
        }
    }

    private trim(): void {
        const closed = this.all().filter((c) => c.state === 'closed');
        for (const c of closed.slice(0, Math.max(0, closed.length - KEEP_CLOSED))) this.cards.delete(c.id);
    }
}
