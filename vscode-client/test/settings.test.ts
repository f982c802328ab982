import assert from 'node:assert/strict';
import { test } from 'node:test';
import { initializationOptions, resumeOnStartup } from '../src/model/settings';

test('settings become the server options protocol.md lists', () => {
    assert.deepEqual(initializationOptions({ rounds: 4, trim: false, handoffAt: 90_000 }), { rounds: 4, trim: false, handoffAt: 90_000 });
});

test('an unset handoffAt is left to the server default (60 % of the window)', () => {
    assert.deepEqual(initializationOptions({ rounds: 10, trim: true, handoffAt: null }), { rounds: 10, trim: true });
});

test('invalid values are dropped, never sent', () => {
    assert.deepEqual(initializationOptions({ rounds: 0, trim: 'yes', handoffAt: 1.5 }), {});
    assert.deepEqual(initializationOptions({ rounds: '3', trim: undefined, handoffAt: -1 }), {});
});

test('resumeOnStartup falls back to ask', () => {
    assert.equal(resumeOnStartup('always'), 'always');
    assert.equal(resumeOnStartup('never'), 'never');
    assert.equal(resumeOnStartup('sometimes'), 'ask');
    assert.equal(resumeOnStartup(undefined), 'ask');
});
