import assert from 'node:assert/strict';
import { test } from 'node:test';
import { formatTokens, gauge, percent } from '../src/model/gauge';
import { status } from './fixtures';

test('the gauge reads tokens / window · percent from the server status', () => {
    const g = gauge({ status: status(), server: 'running' });
    assert.equal(g.text, 'flower 80.2K / 200K · 40%');
    assert.equal(g.colour, null);
    assert.equal(g.spinner, false);
});

test('the window is the one the server reports, not an assumed 200K', () => {
    const g = gauge({ status: status({ context: 500_000, window: 1_000_000, handoffAt: 600_000 }), server: 'running' });
    assert.equal(g.text, 'flower 500K / 1M · 50%');
});

test('a context over the window clamps at 100 %', () => {
    assert.equal(gauge({ status: status({ context: 250_000 }), server: 'running' }).text, 'flower 250K / 200K · 100%');
    assert.equal(percent(250_000, 200_000), 100);
    assert.equal(percent(-5, 200_000), 0);
});

test('an unknown window shows the tokens alone, an unknown context a dash', () => {
    assert.equal(gauge({ status: status({ window: 0 }), server: 'running' }).text, 'flower 80.2K');
    assert.equal(gauge({ status: status({ context: null }), server: 'running' }).text, 'flower — / 200K');
    assert.equal(gauge({ status: null, server: 'starting' }).text, 'flower');
});

test('warning from the handoff threshold on, not below it', () => {
    assert.equal(gauge({ status: status({ context: 119_999 }), server: 'running' }).colour, null);
    assert.equal(gauge({ status: status({ context: 120_000 }), server: 'running' }).colour, 'warning');
});

test('a stopped server says so, in the error colour, whatever the last status said', () => {
    const g = gauge({ status: status({ running: true }), server: 'stopped' });
    assert.equal(g.text, 'flower: stopped');
    assert.equal(g.colour, 'error');
    assert.equal(g.spinner, false);
});

test('offline: error colour and a countdown that the caller counts down', () => {
    const waiting = { reason: 'offline', seconds: 15, attempt: 2, maxAttempts: 6, until: 1e9, secondsLeft: 12.1 };
    const s = status({ running: true, waiting, context: 130_000 });
    assert.equal(gauge({ status: s, server: 'running' }).text, 'flower offline · retry in 13 s');
    const later = gauge({ status: s, server: 'running', waitLeft: 4.2 });
    assert.equal(later.text, 'flower offline · retry in 5 s');
    assert.equal(later.colour, 'error');
    assert.equal(gauge({ status: s, server: 'running', waitLeft: -3 }).text, 'flower offline · retry in 0 s');
});

test('a backoff wait keeps the size and adds the countdown', () => {
    const waiting = { reason: 'backoff', seconds: 4, attempt: 1, maxAttempts: 6, until: 1e9, secondsLeft: 3.5 };
    const g = gauge({ status: status({ running: true, waiting }), server: 'running' });
    assert.equal(g.text, 'flower 80.2K / 200K · 40% · retry in 4 s');
    assert.equal(g.colour, null);
});

test('a spinner while a step runs; the tooltip names folder, wake, step, goals, verdict, wait', () => {
    const g = gauge({
        status: status({
            running: true,
            step: '干活#round2',
            verdict: { round: 1, passed: false, reasons: 'subtraction is missing' },
            waiting: { reason: 'backoff', seconds: 4, attempt: 1, maxAttempts: 6, until: 1e9, secondsLeft: 4 },
        }),
        server: 'running',
    });
    assert.equal(g.spinner, true);
    const tip = g.tooltip.join('\n');
    for (const part of ['app', 'wake #3', 'step: 干活#round2', 'goals 1/2', 'round 1: not yet — subtraction is missing', 'waiting (backoff), attempt 1/6']) {
        assert.ok(tip.includes(part), `${part} missing in ${tip}`);
    }
});

test('tokens are written as people read them', () => {
    assert.deepEqual([812, 1000, 80213, 199_950, 1_234_567].map(formatTokens), ['812', '1K', '80.2K', '200K', '1.2M']);
});
