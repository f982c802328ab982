import assert from 'node:assert/strict';
import { test } from 'node:test';
import { breakPieces, nameParts } from '../src/model/wrap';

test('a long path breaks only after its separators, and the pieces join back to the text', () => {
    const text = 'cat /home/me/projects/calculator/src/operations/subtraction.py';
    const pieces = breakPieces(text);
    assert.equal(pieces.join(''), text);
    assert.deepEqual(pieces, ['cat /home/', 'me/', 'projects/', 'calculator/', 'src/', 'operations/', 'subtraction.py']);
    // No piece ends inside a name: each ends with a separator, the last with the file name whole.
    for (const p of pieces.slice(0, -1)) assert.match(p, /\/$/);
});

test('arguments break after = , & ? and pipes; short tokens and doubled separators stay whole', () => {
    assert.deepEqual(breakPieces('a/b c:d'), ['a/b c:d']);
    assert.deepEqual(breakPieces('curl https://example.com/a?x=1&y=2'), ['curl https://', 'example.com/', 'a?', 'x=', '1&', 'y=', '2']);
    assert.deepEqual(breakPieces('--output=/tmp/result.json'), ['--output=/', 'tmp/', 'result.json']);
    assert.deepEqual(breakPieces(''), ['']);
});

test('spaces and newlines are left to the browser: nothing is cut at them', () => {
    const text = 'sh -c "echo APPROVED_$((6*7))"\nls -la';
    assert.deepEqual(breakPieces(text), [text]);
});

test('a piece wider than the narrowest line may break at its name\'s own boundaries: after - _ . (issue 34)', () => {
    assert.deepEqual(nameParts('run_all_the_benchmarks.py'), ['run_', 'all_', 'the_', 'benchmarks.', 'py']);
    assert.deepEqual(nameParts('flower-e2e-ws-reading-cpGqV3/'), ['flower-', 'e2e-', 'ws-', 'reading-', 'cpGqV3/']);
    // Leading and doubled boundaries stay with what follows them; a trailing one ends the last part.
    assert.deepEqual(nameParts('--output=/'), ['--output=/']);
    assert.deepEqual(nameParts('.git/'), ['.git/']);
    assert.deepEqual(nameParts('a..b_'), ['a..', 'b_']);
    assert.deepEqual(nameParts('results-2026-12-03.json'), ['results-', '2026-', '12-', '03.', 'json']);
    for (const piece of ['run_all_the_benchmarks.py', 'x', '', 'a-b']) assert.equal(nameParts(piece).join(''), piece);
});
