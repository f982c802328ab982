import assert from 'node:assert/strict';
import { test } from 'node:test';
import { RowWindow } from '../src/model/window';

test('the DOM window never holds more than its cap: reading the bottom drops the top', () => {
    const w = new RowWindow(3000);
    for (let i = 0; i < 5000; i++) {
        assert.equal(w.place(i), w.size - 1);
        w.trim('bottom');
        assert.ok(w.size <= 3000);
    }
    assert.equal(w.first, 2000);
    assert.equal(w.moreAbove, true);
    assert.equal(w.place(10), null, 'a row above the dropped top is not shown');
});

test('reading older rows drops the bottom, and live rows below are not shown until scrolled to', () => {
    const w = new RowWindow(3);
    [10, 11, 12].forEach((p) => w.place(p));
    assert.equal(w.place(9), 0);
    assert.deepEqual(w.trim('top'), { top: 0, bottom: 1 });
    assert.equal(w.last, 11);
    assert.equal(w.moreBelow, true);
    assert.equal(w.place(13), null);
    assert.equal(w.place(10.5), 2, 'a row inside the window still goes in its place');
});
