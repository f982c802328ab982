import assert from 'node:assert/strict';
import { test } from 'node:test';
import { mayHaveTask, namesRunDir, type TaskFacts } from '../src/model/task';

const none: TaskFacts = { remembered: undefined, lineage: false, runDirVariable: false, settings: '', sharedStore: false };

test('a folder with nothing of flower: no server starts for it', () => {
    assert.equal(mayHaveTask(none), false);
    assert.equal(mayHaveTask({ ...none, remembered: false }), false);
    assert.equal(mayHaveTask({ ...none, settings: 'model = "claude-haiku-4-5"\nrounds = 3\n' }), false);
});

test('the server said the folder has a task: its run dir may be anywhere, the window starts it again', () => {
    assert.equal(mayHaveTask({ ...none, remembered: true }), true);
});

test('runs/lineage.json, a run dir only the server resolves, or a shared store: start it and ask', () => {
    assert.equal(mayHaveTask({ ...none, lineage: true }), true);
    // An earlier "no" is not the last word once a fact says otherwise (a terminal started a task since).
    assert.equal(mayHaveTask({ ...none, remembered: false, lineage: true }), true);
    assert.equal(mayHaveTask({ ...none, runDirVariable: true }), true);
    assert.equal(mayHaveTask({ ...none, settings: '[tool.flower]\nrun_dir = ".flower-runs"\n' }), true);
    assert.equal(mayHaveTask({ ...none, sharedStore: true }), true);
});

test('run_dir is recognised as a TOML key, not as a word in a value or a comment', () => {
    assert.equal(namesRunDir('run_dir = "out/runs"'), true);
    assert.equal(namesRunDir('  "run_dir"="x"'), true);
    assert.equal(namesRunDir('model = "run_dir"'), false);
    assert.equal(namesRunDir('# run_dir = "x"'), false);
    assert.equal(namesRunDir('run_directory = "x"'), false);
});
