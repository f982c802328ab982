import assert from 'node:assert/strict';
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { test } from 'node:test';

/** Every source file of the extension (not the pure model, which has no UI strings). */
function sources(dir: string): string[] {
    return readdirSync(dir).flatMap((name) => {
        const p = join(dir, name);
        return statSync(p).isDirectory() ? sources(p) : p.endsWith('.ts') ? [p] : [];
    });
}

/** The strings passed to vscode.l10n.t (and the page's t()), as they are at run time. */
function runtimeStrings(): Set<string> {
    const found = new Set<string>();
    for (const file of sources('src')) {
        const text = readFileSync(file, 'utf8');
        for (const m of text.matchAll(/\b(?:l10n\.)?t\(\s*'((?:[^'\\]|\\.)*)'/g)) found.add(m[1].replace(/\\'/g, "'"));
    }
    return found;
}

test('every runtime string has a zh-cn translation, and the bundle holds no stale ones', () => {
    const bundle = JSON.parse(readFileSync('l10n/bundle.l10n.zh-cn.json', 'utf8')) as Record<string, string>;
    const used = runtimeStrings();
    assert.ok(used.size > 30, `only ${used.size} strings found`);
    assert.deepEqual([...used].filter((s) => !(s in bundle)), []);
    assert.deepEqual(Object.keys(bundle).filter((s) => !used.has(s)), []);
});

test('package.json titles all resolve in both nls files', () => {
    const pkg = readFileSync('package.json', 'utf8');
    const keys = [...pkg.matchAll(/"%([^%]+)%"/g)].map((m) => m[1]);
    for (const nls of ['package.nls.json', 'package.nls.zh-cn.json']) {
        const table = JSON.parse(readFileSync(nls, 'utf8')) as Record<string, string>;
        assert.deepEqual(keys.filter((k) => !(k in table)), [], nls);
    }
});

test('the contributed commands are exactly the registered ones (issue 11 and 25 ids)', () => {
    const pkg = JSON.parse(readFileSync('package.json', 'utf8')) as { contributes: { commands: { command: string; category: string }[] } };
    const contributed = pkg.contributes.commands.map((c) => c.command);
    const registered = [...readFileSync('src/commands.ts', 'utf8').matchAll(/\bc\('(flower\.\w+)'/g)].map((m) => m[1]);
    const issue = [
        ...['start', 'wake', 'say', 'new', 'cancel', 'status', 'showTranscript', 'openRequirements', 'openGoals', 'restartServer', 'showLog', 'setApiKey'],
        ...['openTranscriptInEditor', 'openChange', 'revertFile', 'revertWake', 'refreshChanges'], // issue 25
    ].map((id) => `flower.${id}`);
    assert.deepEqual(contributed, issue);
    assert.deepEqual(registered, issue);
    assert.ok(pkg.contributes.commands.every((c) => c.category === 'flower'));
});
