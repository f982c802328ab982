/**
 * The transcript page. Text only: every string goes in with textContent (Markdown becomes DOM
 * nodes through our own reader), so a reply holding `<script>` shows as text. Rows arrive as
 * changes; at most ~3000 are in the DOM, older ones come back on scroll (D8).
 */
import { type Block, type Inline, parseMarkdown } from '../model/markdown';
import { type FromPage, type Row, rowView, type ToPage } from '../model/rows';
import { ENGLISH, fill, type StepInfo, type StepLabels, stepFacts, stepTitle } from '../model/steps';
import { languageOf, relativeText, tokens, toolView } from '../model/tools';
import { children, isAgentCall, section, sectionLine } from '../model/subagents';
import { isJudgeRound } from '../model/reading';
import { RowWindow } from '../model/window';
import { mountApprovals, wrapped } from './approval';
import { mountChart } from './chart';

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
    /** The keys of the section heads folded by the person. */
    collapsed?: string[];
    /** The `Agent` calls whose subagent section the person opened (folded by default, issue 32). */
    opened?: string[];
    /** The context chart is folded (issue 34; open by default). */
    chartFolded?: boolean;
}

const DOM_CAP = 3000;
/** Diff lines shown before "n more lines". */
const FOLD = 12;
const vscode = acquireVsCodeApi();
const rowsEl = document.getElementById('rows') as HTMLDivElement;
const toggle = document.getElementById('pruned-toggle') as HTMLInputElement;
const input = document.getElementById('say-input') as HTMLTextAreaElement;
const messageEl = document.getElementById('view-message') as HTMLDivElement;
const showApprovals = mountApprovals(
    document.getElementById('approvals') as HTMLDivElement,
    (m) => send(m),
    (step) => stepTitle(step, steps.get(step)), // the card names its step as the server titles it (issue 34)
);

const saved = vscode.getState();
let state: PageState = saved ?? { epoch: null, op: null, pruned: false, atBottom: true, scrollTop: 0 };
const showChart = mountChart(document.getElementById('chart') as HTMLDetailsElement, state.chartFolded !== true, (open) => {
    state.chartFolded = !open;
    save();
});
let window_ = new RowWindow(DOM_CAP);
/** The rows shown, by key (the row data, for re-rendering when the toggle changes). */
const shown = new Map<string, { row: Row; el: HTMLElement }>();
let loadingOlder = false;
let loadingNewer = false;
let enabled = false;
let workspace = '';
let labels: StepLabels = ENGLISH;
let steps = new Map<string, StepInfo>();
const collapsed = new Set<string>(state.collapsed ?? []);
const opened = new Set<string>(state.opened ?? []);

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

/** One row's element, per the DOM contract (data-testid, data-kind, data-uuid, data-verdict, data-step). */
function render(row: Row): HTMLElement {
    const view = rowView(row, toggle.checked);
    const el = document.createElement('div');
    el.dataset.testid = 'row';
    el.dataset.kind = row.kind;
    el.dataset.key = row.key;
    el.dataset.pos = String(row.pos);
    el.dataset.step = row.step ?? '';
    if (row.uuid !== null) el.dataset.uuid = row.uuid;
    if (view.verdict !== null) el.dataset.verdict = view.verdict;
    if (row.result) el.dataset.result = 'true';
    if (row.toolUseId) el.dataset.toolUseId = row.toolUseId;
    if (row.parent) el.dataset.parent = row.parent; // a subagent's row: nested under its Agent call (issue 32)
    if (row.stepTitle) el.dataset.stepTitle = row.stepTitle; // the server's words for its step (issue 33)
    if (row.passed !== null) el.dataset.passed = String(row.passed);
    el.className = `row ${row.kind}`;
    el.hidden = !view.visible;
    if (view.verdict !== null) {
        // Its own line above the content, never over it (the `hidden` badge overlapped the text it hides).
        const mark = document.createElement('span');
        mark.className = 'verdict-mark';
        mark.dataset.testid = 'verdict-mark';
        mark.textContent = view.verdict;
        el.appendChild(mark);
    }
    const body = document.createElement('div');
    body.className = 'body';
    el.appendChild(body);
    const text = relativeText(view.text, workspace);
    if (row.denied != null) el.dataset.denied = 'true';
    if (row.kind === 'assistant') markdown(body, parseMarkdown(text));
    else if (row.kind === 'tool' && row.result && row.denied != null) denial(body, relativeText(row.denied, workspace));
    else if (row.kind === 'tool' && row.result) result(body, text);
    else if (row.kind === 'tool') {
        tool(body, row, view.text);
        if (row.denied != null) denial(body, relativeText(row.denied, workspace)); // live: no result follows it
    } else if (row.kind === 'user' && isJudgeRound(row.step)) {
        el.classList.add('judge-prompt');
        judgePrompt(body, text);
    }
    else if (row.kind === 'verdict') body.textContent = verdictLine(row, text);
    else if (row.kind === 'header') body.textContent = ''; // the section head replaces the terminal's ruler
    else body.textContent = text;
    return el;
}

/** `judge · round 1: not passed — …`: the round as the server titles the judge's step, the verdict in the window's language. */
function verdictLine(row: Row, reasons: string): string {
    const said = row.passed === true ? labels.passed : labels.notPassed;
    return `${stepTitle(row.step ?? '', steps.get(row.step ?? ''), row.stepTitle ?? null)}: ${said}${reasons ? ` — ${reasons}` : ''}`;
}

function button(className: string, testid: string, text: string): HTMLButtonElement {
    const b = document.createElement('button');
    b.type = 'button';
    b.className = className;
    b.dataset.testid = testid;
    b.textContent = text;
    return b;
}

/** A clickable workspace-relative path: the extension opens the file (at the line). */
function pathLink(shown: string, absPath: string | null, line: number | null): HTMLElement {
    if (absPath === null) {
        const span = document.createElement('span');
        span.className = 'path';
        span.textContent = shown;
        return span;
    }
    const link = button('path-link', 'open-path', line !== null ? `${shown}:${line}` : shown);
    link.title = absPath;
    link.addEventListener('click', () => send({ type: 'open', path: absPath, line }));
    return link;
}

/**
 * Items past `keep` go behind a "n more lines" button; they are made only when it is clicked
 * (a page of long Writes would otherwise build every line of every file).
 */
function folded(parent: HTMLElement, count: number, make: (i: number) => HTMLElement, keep: number): void {
    for (let i = 0; i < Math.min(count, keep); i++) parent.appendChild(make(i));
    if (count <= keep) return;
    const rest = count - keep;
    const more = button('more-lines', 'more-lines', rest === 1 ? labels.moreLine : fill(labels.moreLines, rest));
    more.addEventListener('click', () => {
        const items: HTMLElement[] = [];
        for (let i = keep; i < count; i++) items.push(make(i));
        more.replaceWith(...items);
    });
    parent.appendChild(more);
}

function codeLine(sign: string, s: string, language: string, className: string): HTMLElement {
    const line = document.createElement('div');
    line.className = `line ${className}`;
    const mark = document.createElement('span');
    mark.className = 'sign';
    mark.textContent = sign;
    line.appendChild(mark);
    for (const t of tokens(s, language)) {
        if (t.c === '') line.appendChild(document.createTextNode(t.s));
        else {
            const span = document.createElement('span');
            span.className = `tok-${t.c}`;
            span.textContent = t.s;
            line.appendChild(span);
        }
    }
    return line;
}

/** A tool call by kind (issue #25); the raw input is one click away for every kind. */
function tool(body: HTMLElement, row: Row, summary: string): void {
    const v = toolView(row.toolName, row.toolInput, summary, workspace);
    const line = document.createElement('div');
    line.className = 'tool-line';
    const name = document.createElement('span');
    name.className = 'tool-name';
    name.textContent = v.kind === 'bash' ? 'Bash' : v.tool;
    line.appendChild(name);
    body.dataset.tool = v.kind;
    if (v.kind === 'diff') {
        line.appendChild(pathLink(v.path, v.absPath, null));
        const counts = document.createElement('span');
        counts.className = 'counts';
        counts.dataset.testid = 'diff-counts';
        counts.textContent = `+${v.added} −${v.removed}`;
        line.appendChild(counts);
    } else if (v.kind === 'path') {
        line.appendChild(pathLink(v.path, v.absPath, v.line));
        if (v.detail !== '') {
            const detail = document.createElement('code');
            detail.textContent = v.detail;
            line.appendChild(detail);
        }
    } else if (v.kind === 'bash') {
        if (v.description !== '') {
            const d = document.createElement('span');
            d.className = 'description';
            d.textContent = relativeText(v.description, workspace);
            line.appendChild(d);
        }
    } else {
        const s = document.createElement('span');
        s.className = 'summary';
        s.textContent = v.summary.replace(/^[^(]*\(/s, '(').replace(/^\((.*)\)$/s, '$1');
        line.appendChild(s);
    }
    const raw = button('raw-toggle', 'raw-toggle', '{ }');
    raw.title = labels.rawInput;
    raw.setAttribute('aria-expanded', 'false');
    line.appendChild(raw);
    body.appendChild(line);
    if (v.kind === 'diff') {
        const pre = document.createElement('div');
        pre.className = 'diff';
        pre.dataset.testid = 'tool-diff';
        const language = languageOf(v.path);
        const line = (i: number): HTMLElement => {
            const l = v.lines[i];
            return codeLine(l.t === ' ' ? ' ' : l.t === '+' ? '+' : '−', l.s, language, l.t === '+' ? 'add' : l.t === '-' ? 'del' : 'ctx');
        };
        folded(pre, v.lines.length, line, FOLD);
        body.appendChild(pre);
    } else if (v.kind === 'bash') {
        const pre = document.createElement('pre');
        pre.className = 'command';
        pre.dataset.testid = 'tool-bash';
        const code = document.createElement('code');
        wrapped(code, `$ ${relativeText(v.command, workspace)}`); // wraps at word and path boundaries (issue 34)
        pre.appendChild(code);
        body.appendChild(pre);
    }
    raw.addEventListener('click', () => {
        const open = body.querySelector('[data-testid="tool-input"]');
        if (open !== null) {
            open.remove();
            raw.setAttribute('aria-expanded', 'false');
            return;
        }
        const pre = document.createElement('pre');
        pre.dataset.testid = 'tool-input';
        pre.className = 'raw';
        pre.textContent = row.toolInput === null ? summary : JSON.stringify(row.toolInput, null, 2);
        body.appendChild(pre);
        raw.setAttribute('aria-expanded', 'true');
    });
}

/** A denied call (issue 34): a mark and what the model was told, where an output would be. */
function denial(body: HTMLElement, reason: string): void {
    const line = document.createElement('div');
    line.className = 'denial';
    line.dataset.testid = 'denial';
    const word = document.createElement('span');
    word.className = 'denial-word';
    word.textContent = `✕ ${labels.denied ?? ENGLISH.denied}`;
    line.appendChild(word);
    if (reason.trim() !== '') line.appendChild(document.createTextNode(` — ${reason}`));
    body.appendChild(line);
}

/**
 * The judge's prompt (the checklist and the requirements it is given, issue 34): one line that opens it, as Markdown;
 * its reply and verdict below are what a person reads.
 */
function judgePrompt(body: HTMLElement, text: string): void {
    const count = text === '' ? 0 : text.split('\n').length;
    const toggle = button('prompt-toggle', 'prompt-toggle', `▸ ${fill(labels.prompt ?? ENGLISH.prompt ?? '{0}', count)}`);
    toggle.setAttribute('aria-expanded', 'false');
    body.appendChild(toggle);
    toggle.addEventListener('click', () => {
        const open = body.querySelector('.prompt-body');
        toggle.setAttribute('aria-expanded', String(open === null));
        toggle.textContent = `${open === null ? '▾' : '▸'} ${fill(labels.prompt ?? ENGLISH.prompt ?? '{0}', count)}`;
        if (open !== null) {
            open.remove();
            return;
        }
        const shown = document.createElement('div');
        shown.className = 'prompt-body';
        shown.dataset.testid = 'prompt-body';
        markdown(shown, parseMarkdown(text));
        body.appendChild(shown);
    });
}

/** A tool's result (history): folded to one line that opens its output. */
function result(body: HTMLElement, text: string): void {
    const count = text === '' ? 0 : text.split('\n').length;
    const line = button('result-line', 'result-toggle', `← ${count === 1 ? labels.outputLine : fill(labels.output, count)}`);
    line.setAttribute('aria-expanded', 'false');
    body.appendChild(line);
    line.addEventListener('click', () => {
        const open = body.querySelector('[data-testid="tool-input"]');
        line.setAttribute('aria-expanded', String(open === null));
        if (open !== null) {
            open.remove();
            return;
        }
        const pre = document.createElement('pre');
        pre.dataset.testid = 'tool-input';
        pre.className = 'raw';
        pre.textContent = text;
        body.appendChild(pre);
    });
}

// -- step sections --------------------------------------------------------------------------

/** The head of a section: title, state (or verdict), duration, cost; a click folds the section. */
function head(el: HTMLElement, step: string, collapsedNow: boolean): HTMLElement {
    const h = document.createElement('button');
    h.type = 'button';
    h.className = 'step-head';
    h.dataset.testid = 'step-head';
    h.setAttribute('aria-expanded', String(!collapsedNow));
    h.title = labels.collapse;
    const info = steps.get(step);
    h.dataset.state = info?.passed === true ? 'passed' : info?.passed === false ? 'failed' : (info?.state ?? 'done');
    const chevron = document.createElement('span');
    chevron.className = 'chevron';
    chevron.textContent = collapsedNow ? '▸' : '▾';
    const title = document.createElement('span');
    title.className = 'step-title';
    title.textContent = stepTitle(step, info, el.dataset.stepTitle ?? null);
    const facts = document.createElement('span');
    facts.className = 'step-facts';
    facts.dataset.testid = 'step-facts';
    facts.textContent = stepFacts(info, labels).join(' · ');
    h.append(chevron, title, facts);
    const id = el.dataset.key ?? '';
    h.addEventListener('click', () => {
        if (collapsed.has(id)) collapsed.delete(id);
        else collapsed.add(id);
        state.collapsed = [...collapsed];
        save();
        sections();
        subagents();
    });
    return h;
}

/**
 * Give the first row of each run of one step its section head, and fold the rows of
 * collapsed sections. Runs over the rows in the DOM (at most DOM_CAP) after every change.
 */
function sections(): void {
    let prev: string | null = null;
    let section = '';
    for (const child of Array.from(rowsEl.children)) {
        const el = child as HTMLElement;
        const step = el.dataset.step ?? '';
        const kind = el.dataset.kind;
        const inSection = step !== '' && kind !== 'banner' && kind !== 'notice' && kind !== 'handoff';
        const first = inSection && step !== prev;
        if (!inSection) prev = null;
        else prev = step;
        if (first) section = el.dataset.key ?? '';
        const old = el.querySelector(':scope > .step-head');
        if (first) {
            const isCollapsed = collapsed.has(section);
            const made = head(el, step, isCollapsed);
            const same = old instanceof HTMLElement && old.textContent === made.textContent && old.dataset.state === made.dataset.state;
            if (!same) {
                if (old !== null) old.replaceWith(made);
                else el.prepend(made);
            }
            el.classList.add('section-first');
            el.classList.toggle('collapsed', isCollapsed);
            el.classList.remove('folded');
        } else {
            old?.remove();
            el.classList.remove('section-first', 'collapsed');
            el.classList.toggle('folded', inSection && collapsed.has(section));
        }
    }
}

/**
 * A subagent's rows (issue 32) are a folded section nested under its `Agent` call: the call gets a head
 * (what it was asked, its tool calls so far) that opens and closes it; the rows are indented below it.
 * Runs over the rows in the DOM after every change, as `sections` does.
 */
function subagents(): void {
    const rows = Array.from(rowsEl.children) as HTMLElement[];
    const data = rows.map((el) => shown.get(el.dataset.key ?? '')?.row).filter((r): r is Row => r !== undefined);
    const groups = children(data);
    for (const el of rows) {
        const row = shown.get(el.dataset.key ?? '')?.row;
        if (row === undefined) continue;
        if (row.parent) {
            el.classList.add('subagent-row');
            el.classList.toggle('sub-folded', !opened.has(row.parent));
            continue;
        }
        if (!isAgentCall(row)) continue;
        const call = row.toolUseId ?? '';
        const s = section(row, groups.get(call) ?? []);
        const old = el.querySelector(':scope > .subagent-head');
        const made = subagentHead(call, sectionLine(s, labels), s.entries);
        if (!(old instanceof HTMLElement && old.textContent === made.textContent && old.getAttribute('aria-expanded') === made.getAttribute('aria-expanded'))) {
            if (old !== null) old.replaceWith(made);
            else el.appendChild(made);
        }
    }
}

/** The head of a subagent's section: a click opens or folds its rows. */
function subagentHead(call: string, line: string, entries: number): HTMLElement {
    const open = opened.has(call);
    const h = button('subagent-head', 'subagent-head', '');
    h.setAttribute('aria-expanded', String(open));
    h.title = labels.subagentFold;
    h.dataset.entries = String(entries);
    const chevron = document.createElement('span');
    chevron.className = 'chevron';
    chevron.textContent = open ? '▾' : '▸';
    const text = document.createElement('span');
    text.textContent = line;
    h.append(chevron, text);
    h.addEventListener('click', () => {
        if (opened.has(call)) opened.delete(call);
        else opened.add(call);
        state.opened = [...opened];
        save();
        subagents();
    });
    return h;
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
    sections();
    subagents();
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
    sections();
    subagents();
}

function setSteps(list: StepInfo[]): void {
    steps = new Map(list.map((s) => [s.step, s]));
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
            workspace = m.workspace;
            labels = m.labels;
            setSteps(m.steps);
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
            setSteps(m.steps);
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
        case 'steps':
            setSteps(m.steps);
            sections();
            subagents();
            break;
        case 'sync':
            send({ type: 'ready', epoch: state.epoch, op: state.op });
            break;
        case 'approvals':
            showApprovals(m);
            break;
        case 'chart': {
            // The chart takes its height from the rows' box: a reader at the bottom stays there (the newest rows).
            const stick = nearBottom();
            showChart(m.chart);
            if (stick) rowsEl.scrollTop = rowsEl.scrollHeight;
            break;
        }
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

/**
 * The whole placeholder where it fits the box's lines, else the short one (issue 34: at a 170 px side bar the whole
 * one needs four lines and the box shows two, so it read "Say something to flower (Enter sends, Shift+"). The box
 * measures its placeholder only while empty (Chromium counts it in scrollHeight), so it is fitted then.
 */
const wholePlaceholder = input.placeholder;
function fitPlaceholder(): void {
    if (input.value !== '') return;
    input.placeholder = wholePlaceholder;
    if (input.scrollHeight > input.clientHeight) input.placeholder = input.dataset.short ?? wholePlaceholder;
}
new ResizeObserver(fitPlaceholder).observe(input);
input.addEventListener('input', fitPlaceholder);

// A fresh page has nothing in its DOM: it asks for the newest rows (op null).
send({ type: 'ready', epoch: null, op: null });
