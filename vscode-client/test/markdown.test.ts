import assert from 'node:assert/strict';
import { test } from 'node:test';
import { type Block, type Inline, parseInline, parseMarkdown } from '../src/model/markdown';

/** All text of a tree, in order; markup never survives as anything but text. */
function texts(blocks: Block[]): string[] {
    const out: string[] = [];
    const inl = (xs: Inline[]): void => xs.forEach((x) => ('s' in x ? out.push(x.s) : inl(x.c)));
    for (const b of blocks) {
        if (b.t === 'pre') out.push(b.s);
        else if (b.t === 'ul' || b.t === 'ol') b.items.forEach(inl);
        else inl(b.c);
    }
    return out;
}

test('headings, paragraphs, lists and fenced code', () => {
    const blocks = parseMarkdown('# Title\n\nsome **bold** and *it* `x`\n\n- one\n- two\n\n1. first\n\n```py\nprint(1)\n```');
    assert.deepEqual(blocks.map((b) => b.t), ['h', 'p', 'ul', 'ol', 'pre']);
    assert.deepEqual(blocks[1], {
        t: 'p',
        c: [{ t: 'text', s: 'some ' }, { t: 'strong', c: [{ t: 'text', s: 'bold' }] }, { t: 'text', s: ' and ' }, { t: 'em', c: [{ t: 'text', s: 'it' }] }, { t: 'text', s: ' ' }, { t: 'code', s: 'x' }],
    });
    assert.deepEqual(blocks[4], { t: 'pre', lang: 'py', s: 'print(1)' });
});

test('HTML in a reply stays text: there is no node kind for it', () => {
    const reply = '<img src=x onerror=alert(1)> and <script>alert(2)</script>';
    assert.deepEqual(texts(parseMarkdown(reply)), [reply]);
});

test('snake_case and lone stars are not emphasis', () => {
    assert.deepEqual(parseInline('call my_func_name now'), [{ t: 'text', s: 'call my_func_name now' }]);
    assert.deepEqual(parseInline('2 * 3 * 4'), [{ t: 'text', s: '2 * 3 * 4' }]);
});

test('an unclosed fence runs to the end without losing text', () => {
    assert.deepEqual(parseMarkdown('```\na\nb'), [{ t: 'pre', lang: '', s: 'a\nb' }]);
});

test('underscores inside code-like text stay text (window.__x, a__b__c)', () => {
    assert.deepEqual(parseInline('x="window.__p=1" and window.__p'), [{ t: 'text', s: 'x="window.__p=1" and window.__p' }]);
    assert.deepEqual(parseInline('a__b__c'), [{ t: 'text', s: 'a__b__c' }]);
    assert.deepEqual(parseInline('__bold__ and _it_'), [
        { t: 'strong', c: [{ t: 'text', s: 'bold' }] },
        { t: 'text', s: ' and ' },
        { t: 'em', c: [{ t: 'text', s: 'it' }] },
    ]);
});
