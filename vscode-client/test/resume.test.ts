import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cutOff } from '../src/model/resume';
import { status } from './fixtures';

test('a wake the server reports interrupted is offered to continue', () => {
    assert.equal(cutOff(status({ interrupted: true }), true), 'cut-off');
    assert.equal(cutOff(status({ interrupted: true }), false), 'cut-off', 'the server\'s word decides, not the file');
});

test('the marker left while another process still holds the folder: wait and ask again', () => {
    assert.equal(cutOff(status({ interrupted: false }), true), 'wait');
});

test('nothing to continue: no marker, a wake running here, or no status', () => {
    assert.equal(cutOff(status(), false), 'no');
    assert.equal(cutOff(status({ running: true, interrupted: false }), true), 'no');
    assert.equal(cutOff(null, true), 'no');
});
