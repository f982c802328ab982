// Benchmark: opening the transcript sidebar on a folder whose work session holds 20k entries in
// sessions.db, in a real VS Code (code-server + headless Chromium). Prints the time from the click
// on the flower activity-bar icon to the first transcript rows painted, against the same on a
// 20-entry session in the same run (D7), and how many rows the DOM holds after paging back
// through older history (bounded by the view's window). Targets: first rows < 1 s; DOM rows bounded.
//
//   node e2e/bench.mjs [--entries 20000] [--pages 20]
// @ts-check

import { spawnSync } from 'node:child_process';
import * as path from 'node:path';
import { parseArgs } from 'node:util';
import { E2E, Editor, Model, PYTHON, closeBrowser, removeDirs, secs, sleep, tempDir, until } from './harness.mjs';

const { values } = parseArgs({ options: { entries: { type: 'string', default: '20000' }, pages: { type: 'string', default: '20' } } });
const ENTRIES = Number(values.entries);
const PAGES = Number(values.pages);
const TARGET_MS = 1000;

/** A used folder with an `n`-entry work session. */
function folder(/** @type {number} */ n) {
  const ws = tempDir(`bench-${n}`);
  const out = spawnSync(PYTHON, [path.join(E2E, 'bigsession.py'), ws, String(n)], { encoding: 'utf8', timeout: secs(180) });
  if (out.status !== 0) throw new Error(`bigsession.py failed: ${out.stderr}`);
  return ws;
}

/** Open the sidebar on `ws`; the ms to the first painted row and the DOM rows after paging back. */
async function measure(/** @type {string} */ ws, /** @type {string} */ name) {
  const model = await Model.start('bench', [ws]);
  const ed = await Editor.start({ model, open: ws, name });
  try {
    // The folder has runs/lineage.json: the extension starts its server at once; wait for its
    // gauge, so the time below is the view's (history page + paint), not the server's start.
    await until(async () => /\d/.test((await ed.gauge().textContent()) ?? ''), 'the gauge', secs(60));
    const icon = ed.page.locator('.activitybar .action-item a[aria-label^="flower"]').first();
    const first = ed.rows().first();
    const t0 = performance.now();
    await icon.click();
    await first.waitFor({ state: 'visible', timeout: secs(30) });
    const ms = performance.now() - t0;
    await ed.shot(`bench-${name}`);
    const initial = await ed.rows().count();
    let rows = initial;
    for (let i = 0; i < PAGES; i++) {
      await ed.view().locator('#rows').evaluate((el) => { el.scrollTop = 0; el.dispatchEvent(new Event('scroll')); });
      const before = rows;
      try {
        await until(async () => (await ed.rows().count()) !== before, 'an older page', secs(5));
      } catch { /* no older page came: the whole history is shown or the window is full */ }
      rows = await ed.rows().count();
      await sleep(100);
    }
    return { ms, initial, rows, requests: model.requests.length };
  } finally {
    await ed.close();
    await model.stop();
    removeDirs([ed.dirs.root, ws]);
  }
}

try {
  const small = await measure(folder(20), 'baseline-20');
  const big = await measure(folder(ENTRIES), `session-${ENTRIES}`);
  const line = (/** @type {string} */ label, /** @type {typeof big} */ r) =>
    `${label.padEnd(22)} first rows painted ${r.ms.toFixed(0).padStart(6)} ms   DOM rows: ${r.initial} at first, ${r.rows} after ${PAGES} older pages   model requests: ${r.requests}`;
  console.log(line('20 entries (baseline)', small));
  console.log(line(`${ENTRIES} entries`, big));
  console.log(`ratio ${ENTRIES}/20: ${(big.ms / small.ms).toFixed(2)}x   target first rows < ${TARGET_MS} ms: ${big.ms < TARGET_MS ? 'met' : 'MISSED'}`);
  process.exitCode = big.ms < TARGET_MS && big.rows <= 5000 && big.requests === 0 ? 0 : 1;
} finally {
  await closeBrowser();
}
