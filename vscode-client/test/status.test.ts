import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gauge } from '../src/model/gauge';
import { StatusKeeper } from '../src/model/status';
import { status } from './fixtures';

const text = (k: StatusKeeper): string => gauge({ status: k.status, server: 'running' }).text;

test('the window is the newest the server said: a context notification after a status wins', () => {
    const k = new StatusKeeper();
    k.answer(status({ context: 80_213, window: 200_000 }), k.asking());
    k.contextSize(500_000, 1_000_000);
    assert.equal(text(k), 'flower 500K / 1M · 50%');
});

test('an answer to a question asked before the newest context notification keeps that notification\'s size and window', () => {
    const k = new StatusKeeper();
    k.answer(status({ window: 200_000 }), k.asking());
    const asked = k.asking();
    k.contextSize(500_000, 1_000_000); // arrives while the flower/status question is under way
    k.answer(status({ context: 80_213, window: 200_000, woke: 4 }), asked);
    assert.equal(text(k), 'flower 500K / 1M · 50%');
    assert.equal(k.status?.woke, 4, 'the rest of the answer is taken');
});

test('an answer asked after the notification is newer: its window is taken, whatever it is', () => {
    const k = new StatusKeeper();
    k.contextSize(500_000, 1_000_000);
    k.answer(status({ context: 600_000, window: 2_000_000 }), k.asking());
    assert.equal(text(k), 'flower 600K / 2M · 30%');
    k.answer(status({ context: 90_000, window: 200_000 }), k.asking());
    assert.equal(text(k), 'flower 90K / 200K · 45%', 'no older value is kept once the server says otherwise');
});

test('after a reload (a new keeper) the first status\'s window is shown, not an assumed 200K', () => {
    const k = new StatusKeeper();
    k.answer(status({ context: 500_000, window: 1_000_000 }), k.asking());
    assert.equal(text(k), 'flower 500K / 1M · 50%');
});

test('a context notification before any status is not lost to an older answer', () => {
    const k = new StatusKeeper();
    const asked = k.asking();
    k.contextSize(500_000, 1_000_000);
    assert.equal(k.status, null);
    k.answer(status({ context: null, window: 200_000 }), asked);
    assert.equal(text(k), 'flower 500K / 1M · 50%');
});

test('other notifications change the status at once, once there is one', () => {
    const k = new StatusKeeper();
    assert.equal(k.patch({ running: true }), false);
    k.answer(status(), k.asking());
    assert.equal(k.patch({ running: true, step: '干活' }), true);
    assert.equal(k.status?.step, '干活');
});

// -- issue 33: the client renders what the server says ------------------------------------------

test('a context size drives the gauge only when the server says it is the work session\'s', () => {
    const k = new StatusKeeper();
    k.answer(status({ context: 80_213, window: 200_000 }), k.asking());
    const n = { folder: 'f', sessionId: 's', tokens: 150_000, window: 200_000 };
    // The judge's round (`干活·判定#1`) starts with 干活 too: no rule about names decides here.
    assert.equal(k.contextOf({ ...n, step: '干活·判定#1', workSession: false }), false);
    assert.equal(text(k), 'flower 80.2K / 200K · 40%');
    assert.equal(k.contextOf({ ...n, step: 'anything', workSession: true }), true);
    assert.equal(text(k), 'flower 150K / 200K · 75%');
});

test('a step start carries the server\'s label and work session into the status; the end clears them', () => {
    const k = new StatusKeeper();
    k.answer(status(), k.asking());
    k.patch(StatusKeeper.stepStarted({
        folder: 'f', step: '干活#round2', index: 3, total: 3, sessionId: 's', woke: 2, progress: null, label: '干活 · 第 2 轮', workSession: true,
    }));
    assert.deepEqual([k.status?.step, k.status?.stepLabel, k.status?.workSession, k.status?.running], ['干活#round2', '干活 · 第 2 轮', true, true]);
    k.patch(StatusKeeper.state({ folder: 'f', run: 1, running: false, ok: true, cancelled: false, error: null, woke: 5 }));
    assert.deepEqual([k.status?.step, k.status?.stepLabel, k.status?.workSession, k.status?.running, k.status?.woke], [null, null, false, false, 5]);
});

test('a server stopped for good leaves no step behind: its label and the work session go with it', () => {
    const k = new StatusKeeper();
    k.answer(status({ running: true }), k.asking());
    k.patch(StatusKeeper.stepStarted({ folder: 'f', step: '干活#round2', index: 3, total: 3, sessionId: 's', woke: 1, progress: null, label: 'work · round 2', workSession: true }));
    assert.equal(k.status?.stepLabel, 'work · round 2');
    k.patch(StatusKeeper.idle());
    const s = k.status;
    assert.deepEqual([s?.running, s?.step, s?.stepLabel, s?.workSession, s?.waiting, s?.waitingFor], [false, null, null, false, null, null]);
    assert.ok(gauge({ status: s, server: 'running' }).tooltip.includes('idle'), 'the tooltip no longer names the step');
    assert.equal(s?.woke, 3, 'the rest of the status stays');
});

test('a wake\'s end is the same idle status; its begin only says it runs', () => {
    const end = StatusKeeper.state({ folder: 'f', run: 1, running: false, ok: true, cancelled: false, error: null, woke: 4 });
    assert.deepEqual(end, { ...StatusKeeper.idle(), woke: 4 });
    assert.deepEqual(StatusKeeper.state({ folder: 'f', run: 2, running: true, ok: null, cancelled: false, error: null, woke: null }), { running: true });
});
