/**
 * The transcript page. Text only: every string goes in with textContent (Markdown becomes DOM
 * nodes through our own reader), so a reply holding `<script>` shows as text. Rows arrive as
 * changes; at most ~3000 are in the DOM, older ones come back on scroll (D8).
 */
import { type Block, type Inline, parseMarkdown } from '../model/markdown';
import { type FromPage, type Row, rowView, type ToPage } from '../model/rows';
import { RowWindow } from '../model/window';
import { mountApprovals } from './approval';

interface VsCodeApi {
    postMessage(message: FromPage): void;
    getState(): PageState | undefined;
    setState(state: PageState): void;
}
declare function acquireVsCodeApi(): VsCodeApi;

/** What survives the page being hidden and shown again. */
interface PageState {
    epoch: number | null;
    op: number | null;
    pruned: boolean;
    atBottom: boolean;
    scrollTop: number;
}

const DOM_CAP = 3000;
const vscode = acquireVsCodeApi();
const rowsEl = document.getElementById('rows') as HTMLDivElement;
const toggle = document.getElementById('pruned-toggle') as HTMLInputElement;
const input = document.getElementById('say-input') as HTMLTextAreaElement;
const messageEl = document.getElementById('view-message') as HTMLDivElement;
const showApprovals = mountApprovals(document.getElementById('approvals') as HTMLDivElement, (m) => send(m));

const saved = vscode.getState();
let state: PageState = saved ?? { epoch: null, op: null, pruned: false, atBottom: true, scrollTop: 0 };
let window_ = new RowWindow(DOM_CAP);
/** The rows shown, by key (the row data, for re-rendering when the toggle changes). */
const shown = new Map<string, { row: Row; el: HTMLElement }>();
let loadingOlder = false;
let loadingNewer = false;
let enabled = false;

toggle.checked = state.pruned;

function save(): void {
    vscode.setState(state);
}

function send(message: FromPage): void {
    vscode.postMessage(message);
}

// -- rendering ------------------------------------------------------------------------------

function inlineNodes(parent: HTMLElement, nodes: Inline[]): void {
    for (const node of nodes) {
        if (node.t === 'text') parent.appendChild(document.createTextNode(node.s));
        else if (node.t === 'code') {
            const code = document.createElement('code');
            code.textContent = node.s;
            parent.appendChild(code);
        } else {
            const el = document.createElement(node.t === 'strong' ? 'strong' : 'em');
            inlineNodes(el, node.c);
            parent.appendChild(el);
        }
    }
}

function markdown(parent: HTMLElement, blocks: Block[]): void {
    for (const block of blocks) {
        let el: HTMLElement;
        if (block.t === 'h') {
            el = document.createElement(`h${Math.min(6, Math.max(1, block.level))}`);
            inlineNodes(el, block.c);
        } else if (block.t === 'p') {
            el = document.createElement('p');
            inlineNodes(el, block.c);
        } else if (block.t === 'pre') {
            el = document.createElement('pre');
            const code = document.createElement('code');
            code.textContent = block.s;
            el.appendChild(code);
        } else {
            el = document.createElement(block.t);
            for (const item of block.items) {
                const li = document.createElement('li');
                inlineNodes(li, item);
                el.appendChild(li);
            }
        }
        parent.appendChild(el);
    }
}

/** One row's element, per the DOM contract (data-testid, data-kind, data-uuid, data-verdict). */
function render(row: Row): HTMLElement {
    const view = rowView(row, toggle.checked);
    const el = document.createElement('div');
    el.dataset.testid = 'row';
    el.dataset.kind = row.kind;
    el.dataset.key = row.key;
    el.dataset.pos = String(row.pos);
    if (row.uuid !== null) el.dataset.uuid = row.uuid;
    if (view.verdict !== null) el.dataset.verdict = view.verdict;
    if (row.result) el.dataset.result = 'true';
    if (row.passed !== null) el.dataset.passed = String(row.passed);
    el.className = `row ${row.kind}`;
    el.hidden = !view.visible;
    if (row.step !== null && (row.kind === 'assistant' || row.kind === 'tool')) el.title = row.step;
    if (row.kind === 'assistant') {
        markdown(el, parseMarkdown(view.text));
    } else if (row.kind === 'tool') {
        const line = document.createElement('button');
        line.type = 'button';
        line.className = 'tool-line';
        line.textContent = `${row.result ? '← ' : '→ '}${firstLine(view.text)}`;
        line.setAttribute('aria-expanded', 'false');
        el.appendChild(line);
        line.addEventListener('click', () => {
            const open = el.querySelector('[data-testid="tool-input"]');
            if (open !== null) {
                open.remove();
                line.setAttribute('aria-expanded', 'false');
                return;
            }
            const pre = document.createElement('pre');
            pre.dataset.testid = 'tool-input';
            pre.textContent = row.result || row.toolInput === null ? view.text : JSON.stringify(row.toolInput, null, 2);
            el.appendChild(pre);
            line.setAttribute('aria-expanded', 'true');
        });
    } else {
        el.textContent = view.text;
    }
    if (view.verdict !== null) {
        const mark = document.createElement('span');
        mark.className = 'verdict-mark';
        mark.textContent = view.verdict;
        el.prepend(mark);
    }
    return el;
}

function firstLine(s: string): string {
    const line = s.split('\n', 1)[0];
    return line.length > 200 ? `${line.slice(0, 200)}…` : line;
}

// -- the window of rows ---------------------------------------------------------------------

function nearBottom(): boolean {
    return rowsEl.scrollHeight - rowsEl.scrollTop - rowsEl.clientHeight < 40;
}

/** Insert or update rows; keep the reading position; drop the farthest rows past the cap. */
function upsert(rows: Row[], reading: 'top' | 'bottom'): void {
    const stick = reading === 'bottom' && nearBottom();
    const anchor = reading === 'top' ? rowsEl.firstElementChild : null;
    const anchorTop = anchor instanceof HTMLElement ? anchor.offsetTop - rowsEl.scrollTop : 0;
    for (const row of rows) {
        const existing = shown.get(row.key);
        if (existing !== undefined) {
            const el = render(row);
            existing.el.replaceWith(el);
            shown.set(row.key, { row, el });
            continue;
        }
        const index = window_.place(row.pos);
        if (index === null) continue;
        const el = render(row);
        rowsEl.insertBefore(el, rowsEl.children[index] ?? null);
        shown.set(row.key, { row, el });
    }
    const drop = window_.trim(reading);
    for (let i = 0; i < drop.top; i++) remove(rowsEl.firstElementChild);
    for (let i = 0; i < drop.bottom; i++) remove(rowsEl.lastElementChild);
    if (stick) rowsEl.scrollTop = rowsEl.scrollHeight;
    else if (anchor instanceof HTMLElement && anchor.isConnected) rowsEl.scrollTop = anchor.offsetTop - anchorTop;
}

function remove(el: Element | null): void {
    if (!(el instanceof HTMLElement)) return;
    const key = el.dataset.key;
    if (key !== undefined) shown.delete(key);
    el.remove();
}

function resetRows(rows: Row[], hasOlder: boolean): void {
    rowsEl.replaceChildren();
    shown.clear();
    window_ = new RowWindow(DOM_CAP);
    window_.clear(hasOlder);
    upsert(rows, 'bottom');
    rowsEl.scrollTop = rowsEl.scrollHeight;
}

function rerenderAll(): void {
    for (const [key, entry] of shown) {
        const el = render(entry.row);
        entry.el.replaceWith(el);
        shown.set(key, { row: entry.row, el });
    }
}

// -- messages -------------------------------------------------------------------------------

window.addEventListener('message', (event: MessageEvent<ToPage>) => {
    const m = event.data;
    switch (m.type) {
        case 'reset':
            state = { ...state, epoch: m.epoch, op: m.op };
            messageEl.hidden = m.message === null;
            messageEl.textContent = m.message ?? '';
            enabled = m.enabled;
            input.disabled = !enabled;
            document.body.dataset.folder = m.folderName;
            document.body.dataset.running = String(m.running);
            resetRows(m.rows, m.hasOlder);
            loadingOlder = false;
            loadingNewer = false;
            wantOlder();
            break;
        case 'rows':
            if (m.epoch !== state.epoch) {
                send({ type: 'ready', epoch: null, op: null });
                return;
            }
            state.op = m.op;
            // Reading older rows: new ones past the cap are dropped at the bottom, not the top.
            upsert(m.rows, nearBottom() ? 'bottom' : 'top');
            break;
        case 'older':
            loadingOlder = false;
            if (m.epoch !== state.epoch) return;
            // Placed above the first row shown, so the window must accept rows up there.
            window_.moreAbove = false;
            upsert(m.rows, 'top');
            window_.moreAbove = m.hasOlder;
            if (m.rows.length > 0) wantOlder();
            break;
        case 'newer':
            loadingNewer = false;
            if (m.epoch !== state.epoch) return;
            window_.moreBelow = false;
            upsert(m.rows, 'bottom');
            window_.moreBelow = m.hasNewer;
            break;
        case 'running':
            document.body.dataset.running = String(m.running);
            break;
        case 'sync':
            send({ type: 'ready', epoch: state.epoch, op: state.op });
            break;
        case 'approvals':
            showApprovals(m);
            break;
    }
    save();
});

/** Older rows are asked for when the top is near — also when the rows do not fill the view yet. */
function wantOlder(): void {
    if (rowsEl.scrollTop < 200 && window_.moreAbove && !loadingOlder && window_.first !== null) {
        loadingOlder = true;
        send({ type: 'older', beforePos: window_.first });
    }
}

rowsEl.addEventListener('scroll', () => {
    state.atBottom = nearBottom();
    state.scrollTop = rowsEl.scrollTop;
    save();
    wantOlder();
    if (nearBottom() && window_.moreBelow && !loadingNewer && window_.last !== null) {
        loadingNewer = true;
        send({ type: 'newer', afterPos: window_.last });
    }
});

toggle.addEventListener('change', () => {
    state.pruned = toggle.checked;
    document.body.classList.toggle('pruned-view', toggle.checked);
    save();
    rerenderAll();
});
document.body.classList.toggle('pruned-view', toggle.checked);

input.addEventListener('keydown', (e: KeyboardEvent) => {
    if (e.key !== 'Enter' || e.shiftKey || e.isComposing) return;
    e.preventDefault();
    const text = input.value.trim();
    if (text === '' || !enabled) return;
    send({ type: 'say', text });
    input.value = '';
});
(document.getElementById('say-form') as HTMLFormElement).addEventListener('submit', (e) => e.preventDefault());

// A fresh page has nothing in its DOM: it asks for the newest rows (op null).
send({ type: 'ready', epoch: null, op: null });
