import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { byLabel, countLabel, countsLabel } from '../src/model/changes';
import { cost, duration, ENGLISH, stepFacts, stepTitle } from '../src/model/steps';
import { relative, relativeText, replacement, tokens, toolView } from '../src/model/tools';

const WS = '/home/me/app';

test('paths are shown relative to the workspace, others as they are', () => {
    assert.equal(relative('/home/me/app/src/a.py', WS), 'src/a.py');
    assert.equal(relative('/home/me/application/a.py', WS), '/home/me/application/a.py');
    assert.equal(relative('/home/me/app', WS), '.');
    assert.equal(relativeText('archived to /home/me/app/notes/archive/1 (in /home/me/app)', WS), 'archived to notes/archive/1 (in .)');
});

test('an edit keeps the lines both strings share as context', () => {
    assert.deepEqual(replacement('a\nb\nc\n', 'a\nB\nc\n'), [
        { t: ' ', s: 'a' }, { t: '-', s: 'b' }, { t: '+', s: 'B' }, { t: ' ', s: 'c' },
    ]);
    assert.deepEqual(replacement('', 'x'), [{ t: '+', s: 'x' }]);
    assert.deepEqual(replacement('same', 'same'), [{ t: ' ', s: 'same' }]);
});

test('tool calls by kind', () => {
    const write = toolView('Write', { file_path: `${WS}/a.py`, content: 'x\ny\n' }, 'Write(/home/me/app/a.py)', WS);
    assert.deepEqual(write.kind === 'diff' && [write.path, write.added, write.removed], ['a.py', 2, 0]);
    const read = toolView('Read', { file_path: 'rel/b.py', offset: 5 }, 'Read(rel/b.py)', WS);
    assert.deepEqual(read, { kind: 'path', tool: 'Read', path: 'rel/b.py', absPath: `${WS}/rel/b.py`, line: 5, detail: '' });
    assert.deepEqual(toolView('Bash', { command: 'ls' }, 'Bash(ls)', WS), { kind: 'bash', command: 'ls', description: '' });
    assert.deepEqual(toolView('WebSearch', { query: 'q' }, `WebSearch(${WS}/x)`, WS), { kind: 'other', tool: 'WebSearch', summary: 'WebSearch(x)' });
    // A live entry without toolName (an older server): the name comes from the summary.
    assert.equal(toolView(null, { command: 'ls' }, 'Bash(ls)', WS).kind, 'bash');
});

test('a light tokenizer colours keywords, strings, numbers and comments, and keeps every character', () => {
    const line = 'def add(a, b):  return "sum" + 1  # adds';
    const got = tokens(line, 'python');
    assert.equal(got.map((t) => t.s).join(''), line);
    assert.deepEqual(got.filter((t) => t.c !== '').map((t) => `${t.c}:${t.s}`), ['kw:def', 'kw:return', 'str:"sum"', 'num:1', 'com:# adds']);
    assert.deepEqual(tokens('plain', 'plaintext'), [{ c: '', s: 'plain' }]);
});

test('step heads and facts: the title is the server\'s (names are put into words there: tests/unit/test_status_one.py)', () => {
    const run = { step: '干活#round2', title: 'work · round 2', state: 'running' as const, costUsd: null, durationS: null, passed: null };
    assert.equal(stepTitle('干活#round2', run), 'work · round 2');
    assert.equal(stepTitle('custom', undefined), 'custom', 'a step the server never described shows its name');
    // A judge's round has no stepStart: its rows carry the server's words for it.
    assert.equal(stepTitle('干活·判定#1', undefined, 'judge · round 1'), 'judge · round 1');
    assert.deepEqual([duration(42), duration(185), duration(3725)], ['42 s', '3 min 5 s', '1 h 2 min']);
    assert.deepEqual([cost(0.41), cost(0.004)], ['$0.41', '$0.004']);
    assert.deepEqual(stepFacts({ step: 'x', title: 'x', state: 'failed', costUsd: 0, durationS: 1, passed: null }, ENGLISH), ['failed', '1 s']);
    assert.deepEqual(stepFacts(undefined, ENGLISH), []);
});

test('the Changes tree counts', () => {
    assert.equal(countsLabel({ added: 3, removed: 1 }), '+3 −1');
    assert.equal(countsLabel({ added: null, removed: null }), 'binary');
    // Issue 32: a subagent's write names it; the main agent's says nothing more.
    assert.equal(byLabel({ agent: 'write the docs (general-purpose)' }, 'by the subagent {0}'), ' · by the subagent write the docs (general-purpose)');
    assert.equal(byLabel({ agent: null }, 'by the subagent {0}'), '');
});

test('the Changes view, the Revert Wake picker and its question count files with a singular, in English and zh-cn (issue 34)', () => {
    for (const lang of ['', '.zh-cn']) {
        const bundle = JSON.parse(readFileSync(`l10n/bundle.l10n${lang}.json`, 'utf8')) as Record<string, string>;
        const files = (n: number): string => countLabel(n, bundle['1 file'], bundle['{0} files']);
        const question = (n: number, wake: number): string => countLabel(
            n,
            bundle['Put the file of wake #{0} back as it was before it?'].replace('{0}', String(wake)),
            bundle['Put the {0} files of wake #{1} back as they were before it?'].replace('{1}', String(wake)),
        );
        if (lang === '') {
            assert.deepEqual([files(1), files(2), files(0)], ['1 file', '2 files', '0 files']);
            assert.equal(question(1, 3), 'Put the file of wake #3 back as it was before it?');
            assert.equal(question(4, 3), 'Put the 4 files of wake #3 back as they were before it?');
        } else {
            assert.deepEqual([files(1), files(2)], ['1 个文件', '2 个文件']);
            assert.equal(question(1, 3), '把第 3 次唤醒改过的那个文件恢复到它之前的样子?');
            assert.equal(question(4, 3), '把第 3 次唤醒改过的 4 个文件恢复到它之前的样子?');
        }
    }
});
