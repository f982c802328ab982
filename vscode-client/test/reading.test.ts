import assert from 'node:assert/strict';
import { test } from 'node:test';
import { isJudgeRound } from '../src/model/reading';

test("the judge's rounds are the steps named <step>·判定#N; work, clarify, handoffs and no step are not", () => {
    assert.ok(isJudgeRound('干活·判定#1'));
    assert.ok(isJudgeRound('干活·判定#12'));
    for (const step of ['干活', '干活#round2', '澄清#retry1', '干活·交接#1', '判定', '', null, undefined]) assert.ok(!isJudgeRound(step), String(step));
});
