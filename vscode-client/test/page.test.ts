/**
 * The transcript page (dist/webview.js) in headless Chromium, outside VS Code: the DOM
 * contract, text-only rendering, the pruned view, the row cap, the say input. Messages are
 * posted to it as the extension would; a stub `acquireVsCodeApi` records what it sends.
 */
import assert from 'node:assert/strict';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { after, before, test } from 'node:test';
import { pathToFileURL } from 'node:url';
import { type Browser, chromium, type Page } from 'playwright-core';
import { cutWords, shownHeight } from '../e2e/dom.mjs';
import { type ApprovalCard, type ApprovalLabels, card } from '../src/model/approvals';
import { CHART_ENGLISH } from '../src/model/chart';
import type { Row, ToPage } from '../src/model/rows';
import { ENGLISH } from '../src/model/steps';
import type { ApproveParams } from '../src/protocol';
import { pageHtml } from '../src/webview/html';

const WS = '/home/me/app';

const CHROMIUM = process.env.FLOWER_CHROMIUM ?? '/usr/bin/chromium';
const skip = existsSync(CHROMIUM) ? false : `no Chromium at ${CHROMIUM}: apt-get install chromium (or set FLOWER_CHROMIUM)`;

let browser: Browser | undefined;
let dir = '';

before(async () => {
    if (skip) return;
    dir = mkdtempSync(join(tmpdir(), 'flower-page-'));
    browser = await chromium.launch({ executablePath: CHROMIUM, headless: true, args: ['--no-sandbox', '--disable-gpu', '--disable-dev-shm-usage'] });
});

after(async () => {
    await browser?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A fresh page with the stub API; returns it once the script has said `ready`. */
async function open(parts: Partial<Parameters<typeof pageHtml>[0]> = {}): Promise<Page> {
    const nonce = 'n0nce';
    const stub = `<script nonce="${nonce}">
        window.__sent = []; window.__state = undefined;
        window.acquireVsCodeApi = () => ({
            postMessage: (m) => window.__sent.push(m),
            getState: () => window.__state,
            setState: (s) => { window.__state = s; },
        });
    </script>`;
    const html = pageHtml({
        nonce,
        cspSource: 'file:',
        scriptUri: pathToFileURL(resolve('dist/webview.js')).href,
        styleUri: pathToFileURL(resolve('media/transcript.css')).href,
        lang: 'en',
        toggleLabel: 'what the model sees',
        placeholder: 'say',
        ...parts,
    }).replace('<script nonce', `${stub}<script nonce`);
    const file = join(dir, `page-${Math.random().toString(36).slice(2)}.html`);
    writeFileSync(file, html);
    const page = await browser!.newPage({ viewport: { width: 400, height: 700 } });
    await page.goto(pathToFileURL(file).href);
    await page.waitForFunction(() => (window as unknown as { __sent: unknown[] }).__sent.length > 0);
    return page;
}

async function post(page: Page, message: ToPage): Promise<void> {
    await page.evaluate((m: unknown) => window.postMessage(m, '*'), message as unknown);
}

async function sent(page: Page): Promise<unknown[]> {
    return page.evaluate(() => (window as unknown as { __sent: unknown[] }).__sent);
}

function row(pos: number, over: Partial<Row> = {}): Row {
    return {
        key: `k${pos}`,
        pos,
        kind: 'assistant',
        text: `row ${pos}`,
        uuid: `u${pos}`,
        step: '干活',
        sessionId: 's1',
        toolName: null,
        toolInput: null,
        result: false,
        pruned: null,
        prunedText: null,
        passed: null,
        ...over,
    };
}

function reset(rows: Row[], over: Partial<Extract<ToPage, { type: 'reset' }>> = {}): ToPage {
    return {
        type: 'reset', folder: 'file:///w', folderName: 'w', epoch: 1, op: rows.length, rows, hasOlder: false, message: null,
        enabled: true, running: false, workspace: WS, labels: ENGLISH, steps: [], ...over,
    };
}

test('a fresh page asks for the newest rows', { skip }, async () => {
    const page = await open();
    assert.deepEqual(await sent(page), [{ type: 'ready', epoch: null, op: null }]);
    await page.close();
});

test('rows follow the DOM contract; HTML in a reply is text, never markup', { skip }, async () => {
    const page = await open();
    const evil = '<img src=x onerror="window.__pwned=1"> and <script>window.__pwned=2</script> **bold**';
    await post(page, reset([
        row(1, { kind: 'banner', text: '<- resumed · wake #2', uuid: null }),
        row(2, { text: evil }),
        row(3, { kind: 'tool', text: 'Write(calc.py)', toolInput: { file_path: 'calc.py', content: '<b>x</b>' } }),
    ]));
    const rows = page.locator('[data-testid="row"]');
    await rows.nth(2).waitFor();
    assert.deepEqual(await rows.evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.kind)), ['banner', 'assistant', 'tool']);
    assert.equal(await rows.nth(0).getAttribute('data-uuid'), null);
    assert.equal(await rows.nth(1).getAttribute('data-uuid'), 'u2');
    assert.equal(await page.locator('#rows img, #rows script').count(), 0);
    assert.ok((await rows.nth(1).textContent())?.includes('<img src=x onerror="window.__pwned=1">'));
    assert.equal(await rows.nth(1).locator('strong').textContent(), 'bold');
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    // A tool row's raw input is one click away.
    assert.equal(await page.locator('[data-testid="tool-input"]').count(), 0);
    await rows.nth(2).locator('[data-testid="raw-toggle"]').click();
    assert.deepEqual(JSON.parse((await page.locator('[data-testid="tool-input"]').textContent()) ?? ''), { file_path: 'calc.py', content: '<b>x</b>' });
    await page.close();
});

test('the pruned view marks hidden and rewritten rows and shows added ones only there', { skip }, async () => {
    const page = await open();
    await post(page, reset([
        row(1, { pruned: 'hidden', text: 'API Error: Connection error' }),
        row(2, { pruned: 'rewritten', prunedText: '[result trimmed]', text: 'a very long result' }),
        row(3),
        row(3.5, { kind: 'tool', result: true, pruned: 'added', prunedText: 'interrupted', text: '' }),
    ]));
    const rows = page.locator('[data-testid="row"]');
    await rows.nth(3).waitFor({ state: 'attached' });
    const verdicts = (): Promise<(string | null)[]> => rows.evaluateAll((els) => els.map((e) => e.getAttribute('data-verdict')));
    assert.deepEqual(await verdicts(), [null, null, null, null]);
    assert.equal(await rows.nth(3).isVisible(), false);
    await page.locator('#pruned-toggle').check();
    assert.deepEqual(await verdicts(), ['hidden', 'rewritten', null, 'added']);
    assert.ok((await rows.nth(1).textContent())?.includes('[result trimmed]'));
    assert.equal(await rows.nth(3).isVisible(), true);
    assert.match((await rows.nth(0).locator(".body").evaluate((e) => getComputedStyle(e).textDecorationLine)) ?? '', /line-through/);
    // A verdict arriving later updates the row in place.
    await post(page, { type: 'rows', epoch: 1, op: 9, rows: [row(3, { pruned: 'hidden' })], steps: [] });
    await page.waitForFunction(() => document.querySelectorAll('[data-verdict="hidden"]').length === 2);
    assert.equal(await rows.count(), 4);
    await page.close();
});

test('at most 3000 rows are in the DOM; the newest stay while reading the bottom', { skip }, async () => {
    const page = await open();
    await post(page, reset([]));
    for (let start = 1; start <= 5000; start += 500) {
        const batch = Array.from({ length: 500 }, (_, i) => row(start + i));
        await post(page, { type: 'rows', epoch: 1, op: start + 499, rows: batch, steps: [] });
    }
    await page.waitForFunction(() => document.querySelector('[data-uuid="u5000"]') !== null);
    assert.equal(await page.locator('[data-testid="row"]').count(), 3000);
    assert.equal(await page.locator('[data-uuid="u2000"]').count(), 0);
    assert.equal(await page.locator('[data-uuid="u2001"]').count(), 1);
    // Scrolled to the top, it asks the extension for the rows above the first one shown.
    await page.locator('#rows').evaluate((e) => (e.scrollTop = 0));
    await page.waitForFunction(() =>
        (window as unknown as { __sent: { type: string }[] }).__sent.some((m) => m.type === 'older'),
    );
    const older = (await sent(page)).find((m) => (m as { type: string }).type === 'older');
    assert.deepEqual(older, { type: 'older', beforePos: 2001 });
    await page.close();
});

test('Enter says the sentence; the view message explains an untrusted folder', { skip }, async () => {
    const page = await open();
    await post(page, reset([], { message: 'This folder is not trusted', enabled: true }));
    await page.locator('#view-message').waitFor();
    assert.equal(await page.locator('#view-message').textContent(), 'This folder is not trusted');
    await page.locator('#say-input').fill('also print in green');
    await page.locator('#say-input').press('Enter');
    assert.deepEqual((await sent(page)).at(-1), { type: 'say', text: 'also print in green' });
    assert.equal(await page.locator('#say-input').inputValue(), '');
    await post(page, reset([], { message: 'untrusted', enabled: false }));
    await page.waitForFunction(() => (document.getElementById('say-input') as HTMLTextAreaElement).disabled);
    await page.close();
});

const WHOLE = 'Say something to flower (Enter sends, Shift+Enter for a new line)';
const SHORT = 'Say something (Enter sends)';

for (const [width, shown] of [[400, WHOLE], [170, SHORT]] as const) test(`the say box at ${width} px: its placeholder whole in its lines (${shown === WHOLE ? 'the whole one' : 'the short one'}), nothing wider than the page`, { skip }, async () => {
    const page = await open({ placeholder: WHOLE, placeholderShort: SHORT });
    await page.setViewportSize({ width, height: 640 });
    const box = page.locator('#say-input');
    await page.waitForFunction((p) => (document.getElementById('say-input') as HTMLTextAreaElement).placeholder === p, shown);
    // Chromium counts the placeholder in an empty box's scrollHeight: more than it shows means lines cut off.
    const fit = await box.evaluate((el) => ({ scroll: el.scrollHeight, client: el.clientHeight }));
    assert.ok(fit.scroll <= fit.client, `the placeholder needs ${fit.scroll} px, the box shows ${fit.client}`);
    assert.equal(await box.getAttribute('title'), WHOLE, 'the whole hint on hover');
    const b = await box.boundingBox();
    assert.ok(b !== null && b.x >= 0 && b.x + b.width <= width, `the box inside the page: ${JSON.stringify(b)}`);
    assert.ok(await page.evaluate(() => document.documentElement.scrollWidth <= window.innerWidth), 'nothing wider than the page');
    // Typed text and emptied again at the other width: the placeholder follows the width it has now.
    await box.fill('x');
    await page.setViewportSize({ width: width === 170 ? 400 : 170, height: 640 });
    await box.fill('');
    await page.waitForFunction((p) => (document.getElementById('say-input') as HTMLTextAreaElement).placeholder === p, shown === WHOLE ? SHORT : WHOLE);
    await page.close();
});

// -- approval cards (issue 24) ------------------------------------------------------------------

const LABELS: ApprovalLabels = {
    asks: 'flower asks to use', allow: 'Allow', always: 'Always', deny: 'Deny…', denyPlaceholder: 'why not',
    denySend: 'Deny', cancel: 'Cancel', alwaysRule: 'Always keeps the rule', sent: 'Answered; waiting for flower…',
    allowed: 'Allowed', allowedAlways: 'Allowed from now on:', denied: 'Denied', deniedUnattended: 'Denied: nobody answered in time', closed: 'Closed',
};

function asked(over: Partial<ApproveParams> = {}): ApprovalCard {
    return card({
        folder: 'file:///w', id: 'toolu_01', step: '干活', tool: 'Bash', input: { command: 'npm test' }, summary: 'npm test',
        detail: { kind: 'command', text: 'npm test -- --grep "<b>calc</b>"' }, suggestions: ['Bash(npm test:*)'], since: 1, ...over,
    });
}

async function cards(page: Page, list: ApprovalCard[]): Promise<void> {
    await post(page, { type: 'approvals', cards: list, labels: LABELS });
}

const decided = async (page: Page): Promise<unknown[]> => (await sent(page)).filter((m) => (m as { type: string }).type === 'decide');

test('an approval card shows the command as a code block, as text; Allow and Always answer it', { skip }, async () => {
    const page = await open();
    await post(page, reset([row(1)]));
    const evil = '<img src=x onerror="window.__pwned=1">';
    await cards(page, [asked({ summary: `curl ${evil}`, detail: { kind: 'command', text: `curl ${evil}\n<script>window.__pwned=2</script>` } })]);
    const c = page.locator('[data-testid="approval"]');
    await c.waitFor();
    assert.equal(await c.getAttribute('data-state'), 'open');
    assert.equal(await c.getAttribute('data-tool'), 'Bash');
    assert.equal(await page.locator('#approvals img, #approvals script').count(), 0);
    assert.ok((await c.locator('[data-testid="approval-summary"]').textContent())?.includes(evil));
    assert.match((await c.locator('pre[data-testid="approval-detail"] code').innerText()) ?? '', /<script>window.__pwned=2<\/script>/);
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    assert.match((await c.innerText()) ?? '', /Always keeps the rule Bash\(npm test:\*\)/);
    await c.locator('[data-testid="approval-always"]').click();
    assert.deepEqual(await decided(page), [{ type: 'decide', id: 'toolu_01', decision: 'allowAlways', message: null }]);
    // The answer went; the extension says so (sent), then flower/approved closes the card with the decision.
    await cards(page, [{ ...asked(), state: 'sent', decision: 'allowAlways' }]);
    await page.locator('[data-testid="approval"][data-state="sent"]').waitFor();
    assert.equal(await page.locator('[data-testid="approval-allow"]').count(), 0, 'no second answer from a card already answered');
    await cards(page, [{ ...asked(), state: 'closed', decision: 'allowAlways', by: 'person' }]);
    const closed = page.locator('[data-testid="approval"][data-state="closed"]');
    await closed.waitFor();
    assert.equal(await closed.getAttribute('data-decision'), 'allowAlways');
    assert.equal(await closed.locator('[data-testid="approval-outcome"]').textContent(), 'Allowed from now on: Bash(npm test:*)');
    // Allow on a second question; without suggestions there is no Always.
    await cards(page, [{ ...asked(), state: 'closed', decision: 'allowAlways', by: 'person' }, asked({ id: 'toolu_02', since: 2, suggestions: [] })]);
    const second = page.locator('[data-testid="approval"][data-id="toolu_02"]');
    await second.waitFor();
    assert.equal(await second.locator('[data-testid="approval-always"]').count(), 0);
    await second.locator('[data-testid="approval-allow"]').click();
    assert.deepEqual((await decided(page)).at(-1), { type: 'decide', id: 'toolu_02', decision: 'allow', message: null });
    await page.close();
});

test('a diff card marks added and removed lines', { skip }, async () => {
    const page = await open();
    await post(page, reset([]));
    const diff = '--- a/calc.py\n+++ b/calc.py\n@@ -1 +1 @@\n-print(1 + 2)\n+print(sum(map(int, sys.argv[1:])))\n';
    await cards(page, [asked({ tool: 'Edit', summary: 'calc.py', detail: { kind: 'diff', text: diff }, suggestions: [] })]);
    const lines = page.locator('[data-testid="approval-detail"][data-kind="diff"] .line');
    await lines.first().waitFor();
    assert.deepEqual(await lines.evaluateAll((els) => els.map((e) => (e as HTMLElement).dataset.mark)), ['hunk', 'hunk', 'hunk', 'del', 'add']);
    const [add, del] = await Promise.all(['add', 'del'].map((m) => page.locator(`.line[data-mark="${m}"]`).evaluate((e) => getComputedStyle(e).color)));
    assert.notEqual(add, del, 'added and removed lines look different');
    await page.close();
});

test('Deny… asks for an optional sentence: Enter denies with it, Cancel goes back, an empty one denies without', { skip }, async () => {
    const page = await open();
    await post(page, reset([]));
    await cards(page, [asked()]);
    await page.locator('[data-testid="approval-deny"]').click();
    const text = page.locator('[data-testid="approval-deny-text"]');
    await text.waitFor();
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.testid), 'approval-deny-text', 'the sentence box has the focus');
    assert.deepEqual(await decided(page), [], 'Deny… alone sends nothing');
    await page.locator('[data-testid="approval-deny-cancel"]').click();
    assert.equal(await text.count(), 0);
    await page.locator('[data-testid="approval-deny"]').click();
    await text.fill('run the unit tests only');
    // Another card arriving meanwhile keeps what is being typed.
    await cards(page, [asked(), asked({ id: 'toolu_02', since: 2 })]);
    await page.locator('[data-testid="approval"][data-id="toolu_02"]').waitFor();
    assert.equal(await page.locator('[data-id="toolu_01"] [data-testid="approval-deny-text"]').inputValue(), 'run the unit tests only');
    await page.locator('[data-id="toolu_01"] [data-testid="approval-deny-text"]').press('Enter');
    assert.deepEqual((await decided(page)).at(-1), { type: 'decide', id: 'toolu_01', decision: 'deny', message: 'run the unit tests only' });
    await page.locator('[data-id="toolu_02"] [data-testid="approval-deny"]').click();
    await page.locator('[data-id="toolu_02"] [data-testid="approval-deny-send"]').click();
    assert.deepEqual((await decided(page)).at(-1), { type: 'decide', id: 'toolu_02', decision: 'deny', message: null });
    // Closed by the unattended rule: the card says so; no cards, no area.
    await cards(page, [{ ...asked(), state: 'closed', decision: 'deny', by: 'unattended' }]);
    assert.equal(await page.locator('[data-testid="approval-outcome"]').textContent(), 'Denied: nobody answered in time');
    await cards(page, []);
    await page.waitForFunction(() => (document.getElementById('approvals') as HTMLElement).hidden);
    await page.close();
});

// -- a sidebar laid out for reading (issue 34) ------------------------------------------------

const LONG = 'python3 /tmp/flower-e2e-ws-reading-cpGqV3/tools/benchmarks/run_all_the_benchmarks.py --output=/tmp/flower-e2e-ws-reading-cpGqV3/runs/benchmarks/results-2026-12-03.json --repeat 5';

/** The words and paths of `selector` cut in the middle (the check the e2e runs too, ../e2e/dom.mjs). */
async function cutInside(page: Page, selector: string): Promise<string[]> {
    return page.locator(selector).evaluate(cutWords);
}

// 300 px, and VS Code's narrowest side bar (170 px; the webview in it is as wide): the buttons never leave the view.
for (const width of [300, 170]) test(`a long command card at a sidebar's width (${width} px): wrapped at path boundaries, its buttons and the Deny form in view, the rows keep the room`, { skip }, async () => {
    const page = await open();
    await page.setViewportSize({ width, height: 640 });
    await post(page, reset(Array.from({ length: 40 }, (_, i) => row(i + 1)), {
        steps: [{ step: '干活', title: 'clarify', state: 'done', costUsd: 0.02, durationS: 6, passed: null }],
    }));
    // The section's head keeps its title whole (at 170 px it was cut a letter or two a line beside its facts).
    await page.locator('[data-testid="step-head"]').first().waitFor();
    assert.deepEqual(await cutInside(page, '[data-testid="step-head"]'), [], 'the step title is not cut');
    await cards(page, [asked({ summary: LONG.slice(0, 100) + '…', input: { command: LONG }, detail: { kind: 'command', text: LONG } })]);
    const c = page.locator('[data-testid="approval"]');
    await c.waitFor();
    assert.deepEqual(await cutInside(page, '[data-testid="approval-detail"]'), [], 'no name is cut in the middle');
    assert.ok((await page.locator('[data-testid="approval-detail"] .seg').count()) > 5, 'pieces between the separators');
    const inView = async (testid: string): Promise<boolean> => {
        const box = await page.locator(`[data-testid="${testid}"]`).boundingBox();
        return box !== null && box.y >= 0 && box.y + box.height <= 640 && box.x >= 0 && box.x + box.width <= width;
    };
    assert.ok(await inView('approval-allow'), 'Allow in view');
    assert.ok(await inView('approval-deny'), 'Deny… in view');
    await page.locator('[data-testid="approval-deny"]').click();
    for (const id of ['approval-deny-text', 'approval-deny-send', 'approval-deny-cancel']) assert.ok(await inView(id), `${id} in view`);
    // And the command being denied: its first lines in sight, not under the card's buttons (at 170 px the sticky
    // buttons, the rule and the form covered all but a sliver of it).
    const lineH = (await page.locator('[data-testid="approval-detail"] .seg').first().boundingBox())?.height ?? 0;
    const seen = await page.locator('[data-testid="approval-detail"]').evaluate(shownHeight);
    assert.ok(lineH > 0 && seen.shown >= 2 * lineH && seen.top <= 2, `the command in view with the Deny form open: ${JSON.stringify(seen)}, a line ${lineH} px`);
    // Cancel brings Allow, Always and Deny… back (the form may have hidden them to make room), with the keyboard on Deny….
    await page.locator('[data-testid="approval-deny-cancel"]').click();
    assert.ok(await inView('approval-allow'), 'Allow in view after Cancel');
    assert.equal(await page.evaluate(() => (document.activeElement as HTMLElement | null)?.dataset.testid), 'approval-deny');
    await page.locator('[data-testid="approval-deny"]').click();
    const rows = await page.locator('#rows').boundingBox();
    assert.ok(rows !== null && rows.height >= 640 / 2, `the rows keep half the view: ${rows?.height}`);
    // Answered, the card is one line.
    await cards(page, [{ ...asked({ summary: LONG.slice(0, 100) + '…' }), state: 'closed', decision: 'deny', by: 'person', message: 'not now' }]);
    const closed = await page.locator('[data-testid="approval"][data-state="closed"]').boundingBox();
    const line = await page.locator('[data-testid="approval-outcome"]').boundingBox();
    assert.ok(closed !== null && line !== null && closed.height < line.height * 2, `one line: ${closed?.height} vs ${line?.height}`);
    assert.equal(await page.locator('[data-testid="approval-outcome"]').textContent(), 'Denied — not now');
    await page.close();
});

test('a denial is marked as one with its reason: live on the call, in history on the result; an output is not', { skip }, async () => {
    const page = await open();
    await post(page, reset([
        row(1, { kind: 'tool', toolName: 'Bash', toolInput: { command: 'rm -rf build' }, toolUseId: 't1', denied: 'keep the build dir' }),
        row(2, { kind: 'tool', toolName: 'Bash', toolInput: { command: 'ls' }, toolUseId: 't2' }),
        row(3, { kind: 'tool', result: true, text: 'The person denied this Bash call.', toolUseId: 't3', denied: 'The person denied this Bash call.' }),
        row(4, { kind: 'tool', result: true, text: 'APPROVED_42', toolUseId: 't2' }),
    ]));
    const rows = page.locator('[data-testid="row"]');
    await rows.nth(3).waitFor();
    assert.equal(await rows.nth(0).getAttribute('data-denied'), 'true');
    assert.equal(await rows.nth(0).locator('[data-testid="denial"]').textContent(), '✕ denied — keep the build dir');
    assert.equal(await rows.nth(1).locator('[data-testid="denial"]').count(), 0);
    assert.equal(await rows.nth(2).locator('[data-testid="denial"]').textContent(), '✕ denied — The person denied this Bash call.');
    assert.equal(await rows.nth(2).locator('[data-testid="result-toggle"]').count(), 0, 'not shown as an output');
    assert.equal(await rows.nth(3).locator('[data-testid="result-toggle"]').textContent(), '← output · 1 line');
    await page.close();
});

test("the judge's prompt is folded to one line that opens it as Markdown; other prompts are as they were", { skip }, async () => {
    const page = await open();
    const prompt = '## Checklist\n- adds\n- subtracts\n\n## Requirements\nbuild a calculator';
    await post(page, reset([
        row(1, { kind: 'user', text: prompt, step: '干活·判定#1' }),
        row(2, { text: 'VERDICT: PASS', step: '干活·判定#1' }),
        row(3, { kind: 'user', text: 'build a calculator', step: null, uuid: null }),
    ]));
    const judge = page.locator('[data-testid="row"]').nth(0);
    await judge.waitFor();
    assert.equal(await judge.locator('[data-testid="prompt-toggle"]').textContent(), '▸ prompt for the judge · 6 lines');
    assert.equal(await judge.locator('h2').count(), 0, 'folded');
    assert.ok(!((await judge.innerText()).includes('Checklist')));
    await judge.locator('[data-testid="prompt-toggle"]').click();
    assert.deepEqual(await judge.locator('[data-testid="prompt-body"] h2').allTextContents(), ['Checklist', 'Requirements']);
    assert.equal(await page.locator('[data-testid="row"]').nth(2).textContent(), 'build a calculator');
    await page.close();
});

test("a heading inside a message is a bold line at the message's size: a handoff note's Next steps is not a title", { skip }, async () => {
    // Issue 34: a note's Markdown headings (`## Next steps`) showed at the browser's h1/h2 sizes, larger than the step
    // sections that structure the transcript. Every heading level, in a reply and in the judge's opened prompt.
    const page = await open();
    const note = '# Handoff\n## State of the work\nAddition works.\n### Next steps\nFinish subtract() in calc.py.\n###### Aside\nnone';
    await post(page, reset([
        row(1, { text: note }),
        row(2, { kind: 'user', text: '## Checklist\n- adds', step: '干活·判定#1' }),
    ]));
    const reply = page.locator('[data-testid="row"]').nth(0);
    await reply.waitFor();
    assert.deepEqual(await reply.locator('h1, h2, h3, h6').allTextContents(), ['Handoff', 'State of the work', 'Next steps', 'Aside']);
    const size = async (css: string): Promise<string[]> => page.locator(css).evaluateAll((els) => els.map((e) => getComputedStyle(e).fontSize));
    const [text] = await size('[data-testid="row"] p');
    assert.deepEqual(await size('[data-testid="row"] :is(h1, h2, h3, h6)'), [text, text, text, text]);
    const weights = await reply.locator('h1, h2, h3, h6').evaluateAll((els) => els.map((e) => Number(getComputedStyle(e).fontWeight)));
    assert.ok(weights.every((w) => w >= 600), `headings are bold: ${weights.join(', ')}`);
    await page.locator('[data-testid="prompt-toggle"]').click();
    assert.deepEqual(await size('[data-testid="prompt-body"] h2'), [text]);
    await page.close();
});

// -- tool calls by kind, step sections (issue #25) ------------------------------------------

function tool(pos: number, name: string, input: Row['toolInput'], over: Partial<Row> = {}): Row {
    return row(pos, { kind: 'tool', toolName: name, toolInput: input, text: `${name}(…)`, ...over });
}

test('a Write is a compact diff of added lines, folded after 12, with a clickable relative path; HTML stays text', { skip }, async () => {
    const page = await open();
    const content = ['<b>x</b> = 1', ...Array.from({ length: 14 }, (_, i) => `print(${i})  # line ${i}`)].join('\n') + '\n';
    await post(page, reset([tool(1, 'Write', { file_path: `${WS}/src/calc.py`, content })]));
    const diff = page.locator('[data-testid="tool-diff"]');
    await diff.waitFor();
    assert.equal(await page.locator('[data-testid="open-path"]').textContent(), 'src/calc.py');
    assert.equal(await page.locator('[data-testid="diff-counts"]').textContent(), '+15 −0');
    assert.equal(await diff.locator('.line.add').count(), 12);
    assert.equal(await diff.locator('[data-testid="more-lines"]').textContent(), '3 more lines');
    assert.equal(await page.locator('#rows b').count(), 0);
    assert.ok((await diff.locator('.line').first().textContent())?.includes('<b>x</b> = 1'));
    // Python is coloured by token: a keyword-free line still has its number and comment spans.
    assert.ok((await diff.locator('.line').nth(1).locator('.tok-num, .tok-com').count()) >= 2);
    await diff.locator('[data-testid="more-lines"]').click();
    assert.equal(await diff.locator('.line.add').count(), 15);
    // The path opens the file in the editor (the extension is asked, with the absolute path).
    await page.locator('[data-testid="open-path"]').click();
    assert.deepEqual((await sent(page)).at(-1), { type: 'open', path: `${WS}/src/calc.py`, line: null });
    await page.close();
});

test('an Edit shows its removed and added lines between the lines they share; MultiEdit every edit', { skip }, async () => {
    const page = await open();
    await post(page, reset([
        tool(1, 'Edit', { file_path: `${WS}/calc.py`, old_string: 'a = 1\nb = 2\nc = 3', new_string: 'a = 1\nb = 20\nb2 = 21\nc = 3' }),
        tool(2, 'MultiEdit', { file_path: `${WS}/m.py`, edits: [{ old_string: 'x', new_string: 'y' }, { old_string: '<i>', new_string: '' }] }),
    ]));
    const edit = page.locator('[data-testid="row"]').nth(0).locator('[data-testid="tool-diff"] .line');
    await edit.first().waitFor();
    const lines = await edit.evaluateAll((els) => els.map((e) => `${e.className.replace('line ', '')}:${e.textContent}`));
    assert.deepEqual(lines, ['ctx: a = 1', 'del:−b = 2', 'add:+b = 20', 'add:+b2 = 21', 'ctx: c = 3']);
    assert.equal(await page.locator('[data-testid="diff-counts"]').first().textContent(), '+2 −1');
    const multi = page.locator('[data-testid="row"]').nth(1).locator('[data-testid="tool-diff"] .line');
    assert.deepEqual(await multi.evaluateAll((els) => els.map((e) => e.textContent)), ['−x', '+y', ' …', '−<i>']);
    assert.equal(await page.locator('#rows i').count(), 0);
    await page.close();
});

test('Bash is its command in a code block, its output folded; HTML in a command is text', { skip }, async () => {
    const page = await open();
    await post(page, reset([
        tool(1, 'Bash', { command: `echo "<script>window.__pwned=1</script>" && ls ${WS}/src`, description: 'List the sources' }),
        row(2, { kind: 'tool', result: true, text: 'calc.py\ntest_calc.py', uuid: 'r2' }),
    ]));
    const block = page.locator('[data-testid="tool-bash"]');
    await block.waitFor();
    assert.equal(await block.textContent(), '$ echo "<script>window.__pwned=1</script>" && ls src');
    assert.equal(await page.locator('#rows script').count(), 0);
    assert.ok((await page.locator('[data-testid="row"]').nth(0).textContent())?.includes('List the sources'));
    const output = page.locator('[data-testid="result-toggle"]');
    assert.equal(await output.textContent(), '← output · 2 lines');
    assert.equal(await page.locator('[data-testid="row"]').nth(1).locator('[data-testid="tool-input"]').count(), 0);
    await output.click();
    assert.equal(await page.locator('[data-testid="row"]').nth(1).locator('[data-testid="tool-input"]').textContent(), 'calc.py\ntest_calc.py');
    assert.equal(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned), undefined);
    await page.close();
});

test('Read, Glob and Grep are one clickable workspace-relative line (Read at its line); other tools a wrapped summary', { skip }, async () => {
    const page = await open();
    const long = `https://example.com/${'a'.repeat(400)}`;
    await post(page, reset([
        tool(1, 'Read', { file_path: `${WS}/src/calc.py`, offset: 40, limit: 20 }),
        tool(2, 'Grep', { pattern: 'def add', path: `${WS}/src` }),
        tool(3, 'Glob', { pattern: '**/*.py' }),
        tool(4, 'WebFetch', { url: long, prompt: 'read it' }, { text: `WebFetch(${long.slice(0, 80)}…)` }),
    ]));
    const links = page.locator('[data-testid="open-path"]');
    await links.first().waitFor();
    assert.deepEqual(await links.allTextContents(), ['src/calc.py:40', 'src']);
    await links.first().click();
    assert.deepEqual((await sent(page)).at(-1), { type: 'open', path: `${WS}/src/calc.py`, line: 40 });
    assert.ok((await page.locator('[data-testid="row"]').nth(1).textContent())?.includes('def add'));
    assert.ok((await page.locator('[data-testid="row"]').nth(2).textContent())?.includes('**/*.py'));
    const other = page.locator('[data-testid="row"]').nth(3);
    assert.ok((await other.textContent())?.startsWith('WebFetch'));
    await other.locator('[data-testid="raw-toggle"]').click();
    const raw = other.locator('[data-testid="tool-input"]');
    assert.deepEqual(JSON.parse((await raw.textContent()) ?? ''), { url: long, prompt: 'read it' });
    // Wrapped, never cut at the panel's edge.
    assert.ok(await raw.evaluate((e) => e.scrollWidth <= e.clientWidth + 1), 'the raw input wraps');
    await page.close();
});

test('steps are sections with name, round, state, duration and cost; a judge round shows its verdict; a head folds its rows', { skip }, async () => {
    const page = await open();
    // The steps' titles come from the server in the window's language (issue 33); the other words are the window's.
    const zh = { ...ENGLISH, done: '完成', notPassed: '未通过', passed: '通过' };
    await post(page, reset([
        row(1, { step: '澄清', text: 'questions?' }),
        row(2, { step: '澄清', text: 'requirements written' }),
        row(3, { step: '干活#round2', text: 'calc.py written' }),
        row(4, { step: '干活·判定#2', text: 'VERDICT: FAIL subtraction' }),
        row(5, { kind: 'verdict', step: '干活·判定#2', passed: false, text: 'subtraction is missing', uuid: null }),
    ], {
        labels: zh,
        steps: [
            { step: '澄清', title: '澄清', state: 'done', costUsd: 0.1, durationS: 12, passed: null },
            { step: '干活#round2', title: '干活 · 第 2 轮', state: 'running', costUsd: null, durationS: null, passed: null },
            { step: '干活·判定#2', title: '判定 · 第 2 轮', state: 'done', costUsd: 0.004, durationS: 75, passed: false },
        ],
    }));
    const heads = page.locator('[data-testid="step-head"]');
    await heads.nth(2).waitFor();
    assert.deepEqual(await heads.locator('.step-title').allTextContents(), ['澄清', '干活 · 第 2 轮', '判定 · 第 2 轮']);
    assert.deepEqual(await heads.locator('[data-testid="step-facts"]').allTextContents(), ['完成 · 12 s · $0.10', 'running', '未通过 · 1 min 15 s · $0.004']);
    // The verdict line is in the window's language (it said `round 1: PASS` in a zh-cn window).
    assert.equal(await page.locator('[data-kind="verdict"] .body').textContent(), '判定 · 第 2 轮: 未通过 — subtraction is missing');
    // Folding the first section hides its second row, not the next section.
    await heads.first().click();
    assert.equal(await page.locator('[data-key="k2"]').isVisible(), false);
    assert.equal(await page.locator('[data-key="k3"]').isVisible(), true);
    assert.equal(await heads.first().getAttribute('aria-expanded'), 'false');
    // A step that ends updates its head in place.
    await post(page, { type: 'steps', steps: [{ step: '干活#round2', title: '干活 · 第 2 轮', state: 'done', costUsd: 0.5, durationS: 30, passed: null }] });
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="step-facts"]')[1]?.textContent === '完成 · 30 s · $0.50');
    await heads.first().click();
    assert.equal(await page.locator('[data-key="k2"]').isVisible(), true);
    await page.close();
});

test('the hidden badge sits above the text it marks, never over it', { skip }, async () => {
    const page = await open();
    await post(page, reset([row(1, { pruned: 'hidden', text: 'API Error: 529 overloaded — a long line that wraps in a narrow sidebar panel' })]));
    await page.locator('#pruned-toggle').check();
    const mark = page.locator('[data-testid="verdict-mark"]');
    await mark.waitFor();
    const m = await mark.boundingBox();
    const b = await page.locator('[data-testid="row"] .body').boundingBox();
    assert.ok(m !== null && b !== null);
    assert.ok(m.y + m.height <= b.y + 0.5, `badge ${JSON.stringify(m)} overlaps the text ${JSON.stringify(b)}`);
    await page.close();
});

test('a subagent is a folded section nested under its Agent call; its head opens it', { skip }, async () => {
    const page = await open();
    await post(page, reset([
        row(1, { kind: 'tool', text: 'Agent(write the docs)', toolName: 'Agent', toolUseId: 'ag1', toolInput: { description: 'write the docs', prompt: 'write docs' } }),
        row(1.2, { kind: 'user', text: 'write docs', parent: 'ag1' }),
        row(1.4, { kind: 'tool', text: 'Write(docs.md)', toolName: 'Write', toolUseId: 'w1', toolInput: { file_path: 'docs.md', content: 'x' }, parent: 'ag1' }),
        row(2, { text: 'the main agent goes on' }),
    ]));
    const head = page.locator('[data-testid="subagent-head"]');
    await head.waitFor();
    assert.equal(await head.textContent(), '▸subagent · write the docs · 1 tool call');
    const nested = page.locator('[data-testid="row"][data-parent="ag1"]');
    assert.equal(await nested.count(), 2);
    assert.deepEqual(await nested.evaluateAll((els) => els.map((e) => getComputedStyle(e).display)), ['none', 'none']);
    await head.click();
    assert.equal(await head.getAttribute('aria-expanded'), 'true');
    assert.deepEqual(await nested.evaluateAll((els) => els.map((e) => getComputedStyle(e).display === 'none')), [false, false]);
    assert.equal(await page.locator('[data-testid="row"]').nth(3).textContent(), 'the main agent goes on'); // the main agent's rows stay where they are
    await page.close();
});

test('the context chart (issue 34): its points, one handoff marker, the threshold line, the numbers in words; folded it stays folded', { skip }, async () => {
    const page = await open();
    const section = page.locator('[data-testid="chart-section"]');
    assert.equal(await section.isHidden(), true, 'no chart before a work round');
    const points = [
        { round: 1, context: 30_000, handoff: false }, { round: 2, context: 55_000, handoff: false },
        { round: 3, context: 12_000, handoff: true }, { round: 4, context: 20_000, handoff: false },
    ];
    await post(page, { type: 'chart', chart: { points, handoffAt: 50_000, window: 200_000, toHandoff: 4, words: CHART_ENGLISH } });
    const svg = section.locator('svg[data-testid="chart"]');
    await svg.waitFor();
    assert.equal(await section.locator('[data-testid="chart-point"]').count(), 4);
    assert.deepEqual(await section.locator('[data-testid="chart-handoff"]').evaluateAll((els) => els.map((e) => (e as SVGElement).dataset.round)), ['3']);
    assert.equal(await section.locator('[data-testid="chart-threshold"]').count(), 1);
    assert.equal(await section.locator('[data-testid="chart-line"]').count(), 2, 'one line per session');
    assert.equal(await svg.getAttribute('role'), 'img');
    assert.match((await svg.getAttribute('aria-label')) ?? '', /rounds 1–4; last 20K \(round 4\); highest 55K \(round 2\); handoff before round 3; handoff at 50K; window 200K/);
    assert.equal(await section.locator('[data-testid="chart-caption"]').innerText(), 'context 20K of 200K · handoff in 4 rounds');
    // As wide as the view (400 px less the padding), never wider.
    const box = await svg.boundingBox();
    assert.ok(box !== null && box.width > 300 && box.width <= 400, `width ${box?.width}`);
    // The point above the threshold is above its line (SVG y grows downwards).
    const y = (sel: string, attr: string): Promise<number> => section.locator(sel).first().evaluate((e, a) => Number(e.getAttribute(a)), attr);
    assert.ok((await y('[data-testid="chart-point"][data-round="2"]', 'cy')) < (await y('[data-testid="chart-threshold"]', 'y1')));
    // A round later (live): five points; folded by the person, it stays folded across the page's state.
    await post(page, { type: 'chart', chart: { points: [...points, { round: 5, context: 22_000, handoff: false }], handoffAt: 50_000, window: 200_000, toHandoff: 14, words: CHART_ENGLISH } });
    await page.waitForFunction(() => document.querySelectorAll('[data-testid="chart-point"]').length === 5);
    await section.locator('summary').click();
    await page.waitForFunction(() => (window as unknown as { __state?: { chartFolded?: boolean } }).__state?.chartFolded === true);
    assert.equal(await section.evaluate((e) => (e as HTMLDetailsElement).open), false);
    await post(page, { type: 'chart', chart: null });
    await page.waitForFunction(() => (document.getElementById('chart') as HTMLElement).hidden);
    await page.close();
});

test('the chart appearing above the rows keeps a reader at the bottom there', { skip }, async () => {
    const page = await open();
    await post(page, reset(Array.from({ length: 80 }, (_, i) => row(i + 1))));
    await page.locator('[data-testid="row"]').nth(79).waitFor();
    const gap = (): Promise<number> => page.evaluate(() => {
        const el = document.getElementById('rows') as HTMLElement;
        return el.scrollHeight - el.scrollTop - el.clientHeight;
    });
    assert.ok((await gap()) < 2, 'at the bottom');
    await post(page, { type: 'chart', chart: { points: [{ round: 1, context: 9000, handoff: false }], handoffAt: 50_000, window: 200_000, toHandoff: null, words: CHART_ENGLISH } });
    await page.locator('svg[data-testid="chart"]').waitFor();
    assert.ok((await gap()) < 2, `still at the bottom: ${await gap()}`);
    await page.close();
});
