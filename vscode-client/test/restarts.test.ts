import assert from 'node:assert/strict';
import { test } from 'node:test';
import { gauge } from '../src/model/gauge';
import { RestartBudget } from '../src/model/restarts';

test('a crashing server is restarted three times, then left stopped', () => {
    const budget = new RestartBudget();
    assert.deepEqual([1, 2, 3, 4, 5].map(() => budget.crashed()), [true, true, true, false, false]);
    assert.equal(budget.count, 3);
    // What the gauge then says, whatever the last status was.
    assert.equal(gauge({ status: null, server: 'stopped' }).text, 'flower: stopped');
});

test('Restart Server gives a fresh budget', () => {
    const budget = new RestartBudget(1);
    assert.equal(budget.crashed(), true);
    assert.equal(budget.crashed(), false);
    budget.reset();
    assert.equal(budget.crashed(), true);
});
