import assert from 'node:assert/strict';
import { test } from 'node:test';
import { INITIAL, type LifeEvent, Lifecycle, type LifeState, live, next, shown } from '../src/model/lifecycle';

/** One state of each name and transport. */
const STATES: Record<string, LifeState> = {
    'stopped (never started)': INITIAL,
    'stopped (gave up)': { name: 'stopped', mode: 'shared', reason: 'gaveUp', error: null },
    'stopped (asked)': { name: 'stopped', mode: 'window', reason: 'stopped', error: null },
    'starting shared': { name: 'starting', mode: 'shared' },
    'starting window': { name: 'starting', mode: 'window' },
    'running shared': { name: 'running', mode: 'shared' },
    'running window': { name: 'running', mode: 'window' },
    restarting: { name: 'restarting', mode: 'window' },
    reconnecting: { name: 'reconnecting', mode: 'shared', delay: 500 },
    stopping: { name: 'stopping', mode: 'shared', shows: 'running' },
    disposed: { name: 'disposed', mode: 'shared' },
};

const EVENTS: Record<string, LifeEvent> = {
    start: { type: 'start', mode: 'window' },
    missing: { type: 'missing' },
    failed: { type: 'failed', error: 'the engine refused' },
    running: { type: 'running' },
    crashed: { type: 'crashed' },
    lost: { type: 'lost', delay: 1000 },
    retry: { type: 'retry', delay: 2000 },
    gaveUp: { type: 'gaveUp' },
    stop: { type: 'stop' },
    stopped: { type: 'stopped' },
    dispose: { type: 'dispose' },
};

/** Every state's transitions: event → the state it leads to. An event not listed is refused. */
const TABLE: Record<string, Partial<Record<string, string>>> = {
    'stopped (never started)': { start: 'starting', stop: 'stopping', dispose: 'disposed' },
    'stopped (gave up)': { start: 'starting', failed: 'stopped', stop: 'stopping', dispose: 'disposed' },
    'stopped (asked)': { start: 'starting', stop: 'stopping', dispose: 'disposed' },
    'starting shared': { missing: 'stopped', failed: 'stopped', running: 'running', lost: 'reconnecting', gaveUp: 'stopped', stop: 'stopping', dispose: 'disposed' },
    'starting window': { missing: 'stopped', failed: 'stopped', running: 'running', crashed: 'restarting', gaveUp: 'stopped', stop: 'stopping', dispose: 'disposed' },
    'running shared': { lost: 'reconnecting', gaveUp: 'stopped', stop: 'stopping', dispose: 'disposed' },
    'running window': { crashed: 'restarting', gaveUp: 'stopped', stop: 'stopping', dispose: 'disposed' },
    restarting: { start: 'starting', running: 'running', crashed: 'restarting', gaveUp: 'stopped', stop: 'stopping', dispose: 'disposed' },
    reconnecting: { running: 'running', lost: 'reconnecting', retry: 'reconnecting', gaveUp: 'stopped', stop: 'stopping', dispose: 'disposed' },
    stopping: { stopped: 'stopped', dispose: 'disposed' },
    disposed: {},
};

test('every state takes exactly the events of the table, and refuses the others', () => {
    assert.deepEqual(Object.keys(TABLE), Object.keys(STATES));
    let taken = 0;
    let refused = 0;
    for (const [stateName, state] of Object.entries(STATES)) {
        for (const [eventName, event] of Object.entries(EVENTS)) {
            const expected = TABLE[stateName][eventName] ?? null;
            assert.equal(next(state, event)?.name ?? null, expected, `${stateName} --${eventName}-->`);
            if (expected === null) refused++;
            else taken++;
        }
    }
    assert.deepEqual([taken, refused], [46, 75]); // 11 states × 11 events
});

test('a refused event leaves the state as it was, and wakes no waiter', async () => {
    const life = new Lifecycle();
    let woke = false;
    void life.when((s) => s.name === 'running').then(() => (woke = true));
    assert.equal(life.fire({ type: 'running' }), false);
    assert.equal(life.fire({ type: 'stopped' }), false);
    assert.equal(life.state, INITIAL);
    await new Promise((r) => setImmediate(r));
    assert.equal(woke, false);
});

test('a start takes the transport it read; a restart or reconnect keeps it', () => {
    const started = next(INITIAL, { type: 'start', mode: 'window' });
    assert.deepEqual(started, { name: 'starting', mode: 'window' });
    assert.deepEqual(next({ name: 'running', mode: 'window' }, { type: 'crashed' }), { name: 'restarting', mode: 'window' });
    assert.deepEqual(next({ name: 'restarting', mode: 'window' }, { type: 'running' }), { name: 'running', mode: 'window' });
    assert.deepEqual(next({ name: 'running', mode: 'shared' }, { type: 'stop' }), { name: 'stopping', mode: 'shared', shows: 'running' });
    // The transport outlives the client: a stopped server still says which one it used (wakeEnv, useCurrentKey).
    assert.equal(next({ name: 'stopping', mode: 'window', shows: 'running' }, { type: 'stopped' })?.mode, 'window');
});

test('a reconnect carries its delay; each failed attempt the next one', () => {
    assert.deepEqual(next({ name: 'running', mode: 'shared' }, { type: 'lost', delay: 500 }), { name: 'reconnecting', mode: 'shared', delay: 500 });
    assert.deepEqual(next({ name: 'reconnecting', mode: 'shared', delay: 500 }, { type: 'retry', delay: 1000 }), { name: 'reconnecting', mode: 'shared', delay: 1000 });
});

test('why a server stopped: flower missing, a failed start with its line, a budget used up, or asked', () => {
    const starting: LifeState = { name: 'starting', mode: 'shared' };
    assert.deepEqual(next(starting, { type: 'missing' }), { name: 'stopped', mode: 'shared', reason: 'missing', error: null });
    assert.deepEqual(next(starting, { type: 'failed', error: 'no engine' }), { name: 'stopped', mode: 'shared', reason: 'failed', error: 'no engine' });
    assert.deepEqual(next({ name: 'reconnecting', mode: 'shared', delay: 8000 }, { type: 'gaveUp' }), { name: 'stopped', mode: 'shared', reason: 'gaveUp', error: null });
    assert.deepEqual(next({ name: 'stopping', mode: 'shared', shows: 'starting' }, { type: 'stopped' }), { name: 'stopped', mode: 'shared', reason: 'stopped', error: null });
});

test('the gauge: starting while a client is made or made again, stopped when none runs, unchanged while stopping', () => {
    const expected: Record<string, string> = {
        'stopped (never started)': 'stopped', 'stopped (gave up)': 'stopped', 'stopped (asked)': 'stopped',
        'starting shared': 'starting', 'starting window': 'starting', 'running shared': 'running', 'running window': 'running',
        restarting: 'starting', reconnecting: 'starting', stopping: 'running', disposed: 'stopped',
    };
    for (const [name, state] of Object.entries(STATES)) assert.equal(shown(state), expected[name], name);
    assert.deepEqual(Object.entries(STATES).filter(([, s]) => live(s)).map(([n]) => n),
        ['starting shared', 'starting window', 'running shared', 'running window', 'restarting', 'reconnecting']);
});

test('outcome: true once running, false once stopped, stopping or disposed; a retry or a crash is not the end', async () => {
    const life = new Lifecycle();
    life.fire({ type: 'start', mode: 'shared' });
    life.fire({ type: 'lost', delay: 500 });
    const rejoined = life.outcome();
    life.fire({ type: 'retry', delay: 1000 });
    life.fire({ type: 'running' });
    assert.equal(await rejoined, true);
    assert.equal(await life.outcome(), true); // already running: at once

    life.fire({ type: 'lost', delay: 500 });
    const given = life.outcome();
    life.fire({ type: 'gaveUp' });
    assert.equal(await given, false);

    const window = new Lifecycle();
    window.fire({ type: 'start', mode: 'window' });
    window.fire({ type: 'crashed' });
    const cut = window.outcome();
    window.fire({ type: 'crashed' });
    window.fire({ type: 'stop' });
    assert.equal(await cut, false);
    const stopped = window.when((s) => s.name !== 'stopping');
    window.fire({ type: 'stopped' });
    assert.equal((await stopped).name, 'stopped');
    window.fire({ type: 'dispose' });
    assert.equal(await window.outcome(), false);
    assert.equal(window.fire({ type: 'start', mode: 'window' }), false); // disposed: nothing moves
});
