/**
 * The approval cards of the transcript page (issue 24): pinned under the rows, one per question,
 * with the command (a code block) or the diff (added and removed lines) and Allow / Always /
 * Deny… buttons; Deny… asks for an optional sentence. Text only, like every row: each string
 * goes in with textContent. A closed card stays as one line with the decision that won.
 */
import { type ApprovalCard, type ApprovalLabels, type ApprovalsToPage, type DecideFromPage, type Decision, denyCompact } from '../model/approvals';
import { breakPieces, nameParts } from '../model/wrap';

/**
 * Render the cards of each `approvals` message into `root`; answers go out through `send`; `stepName` shows a
 * step's name in the window's language (the records keep the seed's names, issue 34).
 */
export function mountApprovals(
    root: HTMLElement,
    send: (m: DecideFromPage) => void,
    stepName: (step: string) => string = (step) => step,
): (m: ApprovalsToPage) => void {
    /** A deny sentence being typed survives a re-render (another card arriving). */
    const drafts = new Map<string, string>();
    // The side bar dragged narrower or wider with a Deny form open: its card is fitted again (issue 34).
    window.addEventListener('resize', () => {
        for (const card of Array.from(root.querySelectorAll<HTMLElement>('.approval.denying'))) fitDenying(root, card);
    });
    return (m) => {
        const focused = document.activeElement instanceof HTMLElement ? document.activeElement.dataset.testid : undefined;
        const focusedId = document.activeElement?.closest<HTMLElement>('[data-testid="approval"]')?.dataset.id;
        root.replaceChildren(...m.cards.map((c) => cardElement(c, m.labels, send, drafts, stepName)));
        root.hidden = m.cards.length === 0;
        for (const card of Array.from(root.querySelectorAll<HTMLElement>('.approval.denying'))) fitDenying(root, card);
        // Keep the person's place while they type a sentence or tab through the buttons.
        if (focused !== undefined && focusedId !== undefined) {
            root.querySelector<HTMLElement>(`[data-id="${CSS.escape(focusedId)}"] [data-testid="${CSS.escape(focused)}"]`)?.focus();
        }
    };
}

function el<K extends keyof HTMLElementTagNameMap>(tag: K, className: string, text?: string): HTMLElementTagNameMap[K] {
    const node = document.createElement(tag);
    if (className !== '') node.className = className;
    if (text !== undefined) node.textContent = text;
    return node;
}

function button(label: string, testid: string, onClick: () => void, primary = false): HTMLButtonElement {
    const b = el('button', primary ? 'approval-button primary' : 'approval-button', label);
    b.type = 'button';
    b.dataset.testid = testid;
    b.addEventListener('click', onClick);
    return b;
}

/**
 * Text that wraps at word and path boundaries only (issue 34): each piece between separators (`/`, `=`, …, see
 * model/wrap.ts) is an inline block, so a line breaks between pieces or at spaces — never after the `-` inside a
 * name, as the browser otherwise would — and only a piece wider than the whole line wraps inside itself: at its name's
 * own boundaries first (a `<wbr>` after `-`, `_`, `.`), anywhere only inside a part wider still.
 */
export function wrapped(parent: HTMLElement, text: string): HTMLElement {
    for (const part of text.split(/(\s+)/)) {
        if (part === '') continue;
        if (/^\s+$/.test(part)) {
            parent.appendChild(document.createTextNode(part));
            continue;
        }
        for (const piece of breakPieces(part)) {
            const seg = el('span', 'seg');
            nameParts(piece).forEach((name, i) => {
                if (i > 0) seg.appendChild(document.createElement('wbr'));
                seg.appendChild(document.createTextNode(name));
            });
            parent.appendChild(seg);
        }
    }
    return parent;
}

function cardElement(
    c: ApprovalCard,
    t: ApprovalLabels,
    send: (m: DecideFromPage) => void,
    drafts: Map<string, string>,
    stepName: (step: string) => string,
): HTMLElement {
    const card = el('div', `approval ${c.state}`);
    card.dataset.testid = 'approval';
    card.dataset.id = c.id;
    card.dataset.state = c.state;
    card.dataset.tool = c.tool;
    if (c.decision !== null) card.dataset.decision = c.decision;
    card.setAttribute('role', 'group');
    card.setAttribute('aria-label', `${t.asks} ${c.tool}`);

    const head = el('div', 'approval-head');
    head.appendChild(el('span', 'approval-asks', t.asks));
    head.appendChild(el('span', 'approval-tool', c.tool));
    if (c.state === 'closed' || c.state === 'sent') {
        // Answered: one line — the tool, the command cut to the width, the decision (issue 34).
        const summary = el('code', 'approval-summary-line', c.summary);
        summary.dataset.testid = 'approval-summary';
        summary.title = c.summary;
        head.appendChild(summary);
        const outcome = el('span', `approval-outcome ${c.decision ?? 'none'}`, outcomeText(c, t));
        outcome.dataset.testid = 'approval-outcome';
        outcome.title = outcome.textContent ?? '';
        head.appendChild(outcome);
        card.appendChild(head);
        return card;
    }
    if (c.step !== null) head.appendChild(el('span', 'approval-step', stepName(c.step)));
    card.appendChild(head);
    if (c.agent) {  // a subagent's tool call says so (issue 32)
        const who = el('div', 'approval-agent', (t.bySubagent ?? 'for the subagent {0}').replace('{0}', c.agent));
        who.dataset.testid = 'approval-agent';
        card.appendChild(who);
    }
    // A command is shown once, whole, wrapped at its boundaries (issue 34): with a detail (a long or multi-line command)
    // its one-line summary is there for a screen reader only; a diff or URL shows under its one-line summary.
    const summary = el('div', c.kind === 'command' && c.lines.length > 0 ? 'approval-summary visually-hidden' : 'approval-summary');
    summary.dataset.testid = 'approval-summary';
    summary.appendChild(wrapped(el('code', ''), c.summary));
    card.appendChild(summary);
    if (c.lines.length > 0) card.appendChild(detail(c));
    // The buttons, the rule and the Deny form stay in sight at the bottom of the cards' area (sticky), however long
    // the command above them (issue 34).
    const actions = el('div', 'approval-actions');
    const decide = (decision: Decision, message: string | null = null): void => {
        drafts.delete(c.id);
        send({ type: 'decide', id: c.id, decision, message });
    };
    const buttons = el('div', 'approval-buttons');
    buttons.appendChild(button(t.allow, 'approval-allow', () => decide('allow'), true));
    if (c.always !== null) {
        const always = button(t.always, 'approval-always', () => decide('allowAlways'));
        always.title = `${t.alwaysRule} ${c.always}`;
        buttons.appendChild(always);
    }
    const deny = el('div', 'approval-deny');
    const denyButton = button(t.deny, 'approval-deny', () => {
        openDeny();
        const root = card.parentElement;
        if (root !== null) fitDenying(root, card);
    });
    const closeDeny = (): void => {
        deny.replaceChildren();
        card.classList.remove('denying', 'deny-compact');
        denyButton.focus({ preventScroll: true }); // the keyboard's place: the button that opened the form
    };
    const openDeny = (): void => {
        deny.replaceChildren(denyForm(c, t, decide, drafts, closeDeny));
        card.classList.add('denying');
        deny.querySelector('textarea')?.focus();
    };
    buttons.appendChild(denyButton);
    actions.appendChild(buttons);
    if (c.always !== null) {
        const rule = el('div', 'approval-rule');
        rule.appendChild(document.createTextNode(`${t.alwaysRule} `));
        rule.appendChild(el('code', '', c.always));
        rule.title = `${t.alwaysRule} ${c.always}`; // one line: the whole rule on hover (issue 34)
        actions.appendChild(rule);
    }
    actions.appendChild(deny);
    card.appendChild(actions);
    if (drafts.has(c.id)) openDeny();
    return card;
}

/**
 * With the Deny form open, keep the command readable (issue 34): when the card's sticky block (the Allow row, the rule,
 * the form) would leave fewer than DENY_MIN_LINES of it in sight, hide the row and the rule (`deny-compact`) and
 * scroll the area to the command's first line; otherwise the card is as it was. Measured with the row shown, so the
 * choice is the same each time.
 */
function fitDenying(root: HTMLElement, card: HTMLElement): void {
    card.classList.remove('deny-compact');
    const box = card.querySelector<HTMLElement>('[data-testid="approval-detail"]');
    const actions = card.querySelector<HTMLElement>('.approval-actions');
    if (box === null || actions === null) return;
    // One line's height: a command's first piece (its .line holds the whole wrapped command), a diff's first line.
    const line = (box.querySelector('.seg') ?? box.querySelector('.line'))?.getBoundingClientRect().height ?? 0;
    const area = root.getBoundingClientRect();
    const compact = denyCompact(box.getBoundingClientRect(), area, actions.getBoundingClientRect().top, line);
    card.classList.toggle('deny-compact', compact);
    // Compact, the area starts at the command (the head above it scrolls away, still there by scrolling back).
    if (compact) root.scrollTop += box.getBoundingClientRect().top - root.getBoundingClientRect().top;
}

/** The command as a code block; a diff with its added and removed lines marked; a URL or input as text. */
function detail(c: ApprovalCard): HTMLElement {
    const pre = el('pre', `approval-detail ${c.kind}`);
    pre.dataset.testid = 'approval-detail';
    pre.dataset.kind = c.kind;
    const code = el('code', '');
    for (const line of c.lines) {
        // A diff's lines keep their indentation and scroll sideways; a command's wrap at its boundaries (issue 34).
        const span = c.kind === 'diff' ? el('span', `line ${line.mark}`, line.text) : wrapped(el('span', `line ${line.mark}`), line.text);
        span.dataset.mark = line.mark;
        code.appendChild(span);
    }
    pre.appendChild(code);
    return pre;
}

function denyForm(
    c: ApprovalCard,
    t: ApprovalLabels,
    decide: (decision: Decision, message: string | null) => void,
    drafts: Map<string, string>,
    close: () => void,
): HTMLElement {
    const form = el('div', 'approval-deny-form');
    const text = el('textarea', '');
    text.rows = 2;
    text.placeholder = t.denyPlaceholder;
    text.dataset.testid = 'approval-deny-text';
    text.value = drafts.get(c.id) ?? '';
    drafts.set(c.id, text.value);
    text.addEventListener('input', () => drafts.set(c.id, text.value));
    const submit = (): void => decide('deny', text.value.trim() === '' ? null : text.value.trim());
    text.addEventListener('keydown', (e: KeyboardEvent) => {
        if (e.key === 'Enter' && !e.shiftKey && !e.isComposing) {
            e.preventDefault();
            submit();
        } else if (e.key === 'Escape') {
            drafts.delete(c.id);
            close();
        }
    });
    form.appendChild(text);
    const row = el('div', 'approval-buttons');
    row.appendChild(button(t.denySend, 'approval-deny-send', submit, true));
    row.appendChild(
        button(t.cancel, 'approval-deny-cancel', () => {
            drafts.delete(c.id);
            close();
        }),
    );
    form.appendChild(row);
    return form;
}

function outcomeText(c: ApprovalCard, t: ApprovalLabels): string {
    if (c.state === 'sent') return t.sent;
    switch (c.decision) {
        case 'allow':
            return t.allowed;
        case 'allowAlways':
            return `${t.allowedAlways}${c.always !== null ? ` ${c.always}` : ''}`;
        case 'deny':
            if (c.by === 'unattended') return t.deniedUnattended;
            return c.message !== null ? `${t.denied} — ${c.message}` : t.denied;
        default:
            return t.closed;
    }
}
