import assert from 'node:assert/strict';
import { test } from 'node:test';
import { cutOff } from '../src/model/resume';
import { status } from './fixtures';

test('a wake the server reports interrupted is offered to continue', () => {
    assert.equal(cutOff(status({ interrupted: true })), 'cut-off');
});

test('a wake under way in another process (a closing window, another machine): wait and ask again', () => {
    assert.equal(cutOff(status({ elsewhere: true })), 'wait');
});

test('nothing to continue: none cut off, a wake running here, or no status', () => {
    assert.equal(cutOff(status()), 'no');
    assert.equal(cutOff(status({ running: true, elsewhere: true })), 'no');
    assert.equal(cutOff(null), 'no');
});
