// Temporary check by the ext helper (not committed): a server killed 4 times → "flower: stopped".
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { after, test } from 'node:test';
import { Editor, Model, closeBrowser, secs, tempDir, until } from './harness.mjs';
after(closeBrowser);

/** Pids of `-m flower.lsp` processes descending from `root`. */
function servers(root) {
  const out = [];
  for (const d of fs.readdirSync('/proc')) {
    if (!/^\d+$/.test(d)) continue;
    let cmd = '';
    try { cmd = fs.readFileSync(`/proc/${d}/cmdline`, 'utf8'); } catch { continue; }
    if (!cmd.includes('flower.lsp')) continue;
    let p = Number(d);
    for (let i = 0; i < 30 && p > 1; i++) {
      if (p === root) { out.push(Number(d)); break; }
      try { p = Number(fs.readFileSync(`/proc/${p}/stat`, 'utf8').split(') ')[1].split(' ')[1]); } catch { break; }
    }
  }
  return out;
}

test('crash loop', { timeout: secs(240) }, async () => {
  const ws = tempDir('ws-crash');
  fs.mkdirSync(`${ws}/runs`);
  fs.writeFileSync(`${ws}/runs/lineage.json`, JSON.stringify({ woke: 0, steps: {} }));
  const model = await Model.start('start', [ws]);
  let ed;
  try {
    ed = await Editor.start({ model, open: ws, name: 'x-crash' });
    const root = ed.proc.pid;
    let last = [];
    for (let i = 1; i <= 4; i++) {
      const pids = await until(() => { const s = servers(root).filter((p) => !last.includes(p)); return s.length ? s : null; }, `server #${i}`, secs(40));
      console.log('# killing', pids);
      for (const p of pids) process.kill(p, 'SIGKILL');
      last = [...last, ...pids];
    }
    await until(async () => (await ed.gauge().textContent())?.includes('flower: stopped'), 'flower: stopped', secs(30));
    await ed.shot('x-crash-stopped');
    await new Promise((r) => setTimeout(r, 3000));
    assert.deepEqual(servers(root), [], 'no fifth server');
  } finally {
    await ed?.close();
    await model.stop();
  }
});
