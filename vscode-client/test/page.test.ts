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
import { type ApprovalCard, type ApprovalLabels, card } from '../src/model/approvals';
import type { Row, ToPage } from '../src/model/rows';
import type { ApproveParams } from '../src/protocol';
import { pageHtml } from '../src/webview/html';

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
async function open(): Promise<Page> {
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
        toolInput: null,
        result: false,
        pruned: null,
        prunedText: null,
        passed: null,
        ...over,
    };
}

function reset(rows: Row[], over: Partial<Extract<ToPage, { type: 'reset' }>> = {}): ToPage {
    return { type: 'reset', folder: 'file:///w', folderName: 'w', epoch: 1, op: rows.length, rows, hasOlder: false, message: null, enabled: true, running: false, ...over };
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
    // A tool row is one line that expands to its input.
    assert.equal(await page.locator('[data-testid="tool-input"]').count(), 0);
    await rows.nth(2).locator('button').click();
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
    assert.match((await rows.nth(0).evaluate((e) => getComputedStyle(e).textDecorationLine)) ?? '', /line-through/);
    // A verdict arriving later updates the row in place.
    await post(page, { type: 'rows', epoch: 1, op: 9, rows: [row(3, { pruned: 'hidden' })] });
    await page.waitForFunction(() => document.querySelectorAll('[data-verdict="hidden"]').length === 2);
    assert.equal(await rows.count(), 4);
    await page.close();
});

test('at most 3000 rows are in the DOM; the newest stay while reading the bottom', { skip }, async () => {
    const page = await open();
    await post(page, reset([]));
    for (let start = 1; start <= 5000; start += 500) {
        const batch = Array.from({ length: 500 }, (_, i) => row(start + i));
        await post(page, { type: 'rows', epoch: 1, op: start + 499, rows: batch });
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
