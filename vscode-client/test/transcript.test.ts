import assert from 'node:assert/strict';
import { test } from 'node:test';
import { rowView } from '../src/model/rows';
import { ENGLISH } from '../src/model/steps';
import { children, isAgentCall, section, sectionLine } from '../src/model/subagents';
import { TranscriptModel } from '../src/model/transcript';
import { entry, FOLDER, page } from './fixtures';

const keys = (m: TranscriptModel): string[] => m.all().map((r) => r.key);

test('live entries append in seq order; a seq not above the last is a duplicate', () => {
    const m = new TranscriptModel();
    assert.equal(m.appendTranscript(entry(10, 'a')).length, 1);
    assert.equal(m.appendTranscript(entry(11, 'b')).length, 1);
    assert.deepEqual(m.appendTranscript(entry(11, 'b')), []);
    assert.deepEqual(m.appendTranscript(entry(9, 'z')), []);
    assert.deepEqual(keys(m), ['a', 'b']);
});

test('live events without a seq (banner, header, verdict) keep their arrival order', () => {
    const m = new TranscriptModel();
    m.appendEvent({ kind: 'banner', n: { folder: FOLDER, text: '<- resumed', woke: 2 } });
    m.appendEvent({ kind: 'header', n: { folder: FOLDER, step: '干活', text: '== 干活 ==' } });
    m.appendTranscript(entry(50, 'a'));
    m.appendEvent({ kind: 'verdict', n: { folder: FOLDER, step: '干活·判定#1', round: 1, passed: false, reasons: 'subtraction is missing\nVERDICT: FAIL', costUsd: 0.02, durationS: 6, label: 'judge · round 1' } });
    assert.deepEqual(m.all().map((r) => r.kind), ['banner', 'header', 'assistant', 'verdict']);
    assert.equal(m.all()[3].passed, false);
    // The words (round, verdict) are the page's, in the window's language: the row keeps the reasons' first line.
    assert.equal(m.all()[3].text, 'subtraction is missing');
    assert.deepEqual(m.stepList(), [{ step: '干活·判定#1', title: 'judge · round 1', state: 'done', costUsd: 0.02, durationS: 6, passed: false }]);
});

test('section heads follow stepStart, stepEnd and the manifest steps of a history page', () => {
    const m = new TranscriptModel();
    m.mergeHistory({ ...page([entry(5, 'h5')], null), steps: [
        { step: '澄清', sessionId: 's0', ok: true, costUsd: 0.1, durationS: 12, startedAt: 1, passed: null, label: 'clarify' },
        { step: '干活', sessionId: 's1', ok: false, costUsd: 0.3, durationS: 80, startedAt: 2, passed: null, label: 'work' },
    ] });
    m.stepStarted({ folder: FOLDER, step: '干活', index: 3, total: 3, sessionId: 's1', woke: 2, progress: null, label: 'work', workSession: true });
    const byName = (): Record<string, string> => Object.fromEntries(m.stepList().map((s) => [s.step, s.state]));
    assert.deepEqual(byName(), { 澄清: 'done', 干活: 'running' });
    // A page read while the step runs does not turn it back into its last wake's run.
    m.mergeHistory({ ...page([], null), steps: [{ step: '干活', sessionId: 's1', ok: false, costUsd: 0.3, durationS: 80, startedAt: 2, passed: null, label: 'work' }] });
    assert.equal(byName()['干活'], 'running');
    m.stepEnded({ folder: FOLDER, step: '干活', ok: true, sessionId: 's1', error: null, context: null, costUsd: 0.5, durationS: 30, label: 'work' });
    assert.deepEqual(m.stepList().find((s) => s.step === '干活'), { step: '干活', title: 'work', state: 'done', costUsd: 0.5, durationS: 30, passed: null });
});

test('a history page goes above the live rows; older pages above it', () => {
    const m = new TranscriptModel();
    m.appendTranscript(entry(1000, 'live1'));
    m.mergeHistory(page([entry(5, 'h5'), entry(6, 'h6')], 5));
    assert.equal(m.nextBefore, 5);
    m.mergeHistory(page([entry(3, 'h3'), entry(4, 'h4')], null));
    assert.equal(m.hasOlderHistory, false);
    assert.deepEqual(keys(m), ['h3', 'h4', 'h5', 'h6', 'live1']);
});

test('an entry both live and in history is shown once, in its live place, with the history verdict', () => {
    const m = new TranscriptModel();
    m.appendEvent({ kind: 'header', n: { folder: FOLDER, step: '干活', text: '== 干活 ==' } });
    m.appendTranscript(entry(1000, 'a', { kind: 'tool', text: 'WebFetch(x)' }));
    m.appendTranscript(entry(1001, 'b'));
    const changed = m.mergeHistory(
        page(
            [
                entry(7, 'old'),
                entry(8, 'a', { kind: 'tool', text: 'WebFetch(x)' }),
                entry(9, 'r', { role: 'user', kind: 'result', text: 'denied', pruned: 'hidden' }),
                entry(10, 'b', { pruned: 'rewritten', prunedText: 'shorter' }),
            ],
            7,
        ),
    );
    // The tool result sits between its call and the next live entry, the older entry above all.
    assert.deepEqual(keys(m), ['old', m.all()[1].key, 'a', 'r', 'b']);
    assert.equal(m.all()[1].kind, 'header');
    const b = m.all()[4];
    assert.equal(b.pruned, 'rewritten');
    assert.equal(b.prunedText, 'shorter');
    assert.equal(m.all()[3].result, true);
    assert.deepEqual(changed.map((r) => r.key).sort(), ['b', 'old', 'r']);
    // A live notification for an entry history already gave is a duplicate.
    assert.deepEqual(m.appendTranscript(entry(1002, 'r')), []);
    assert.equal(m.size, 5);
});

test('a sentence said live is the stored user entry of the first page, not a second row', () => {
    const m = new TranscriptModel();
    m.appendTranscript(entry(1000, null, { role: 'user', text: 'build a calculator', step: null, sessionId: null }));
    m.mergeHistory(page([entry(3, 'u1', { role: 'user', text: 'build a calculator' }), entry(4, 'x')], null));
    assert.deepEqual(keys(m), ['u1', 'x']);
});

test('flower/pruned sets the session verdicts and clears entries no longer listed', () => {
    const m = new TranscriptModel();
    m.appendTranscript(entry(1, 'a'));
    m.appendTranscript(entry(2, 'b'));
    m.appendTranscript(entry(3, 'c', { sessionId: 'other' }));
    assert.equal(m.applyVerdicts('s1', { a: 'hidden', c: 'hidden' }).length, 1);
    assert.deepEqual(m.all().map((r) => r.pruned), ['hidden', null, null]);
    m.applyVerdicts('s1', { b: 'rewritten' });
    assert.deepEqual(m.all().map((r) => r.pruned), [null, 'rewritten', null]);
});

test('a second block of one stored entry (<uuid>#1) takes its entry verdict', () => {
    const m = new TranscriptModel();
    m.appendTranscript(entry(1, 'a'));
    m.appendTranscript(entry(2, 'a#1', { kind: 'tool', text: 'Bash(ls)' }));
    m.applyVerdicts('s1', { a: 'hidden' });
    assert.deepEqual(m.all().map((r) => r.pruned), ['hidden', 'hidden']);
});

test('the pruned view: hidden marked, rewritten shows its new text, added only there', () => {
    const m = new TranscriptModel();
    m.mergeHistory(
        page(
            [
                entry(1, 'h', { pruned: 'hidden' }),
                entry(2, 'w', { pruned: 'rewritten', prunedText: '[trimmed]' }),
                entry(3, 'k'),
                entry(3, 'ad', { role: 'user', kind: 'result', pruned: 'added', prunedText: 'interrupted', text: '' }),
            ],
            null,
        ),
    );
    const [h, w, k, ad] = m.all();
    assert.deepEqual(rowView(h, false), { visible: true, verdict: null, text: 'text h' });
    assert.deepEqual(rowView(h, true), { visible: true, verdict: 'hidden', text: 'text h' });
    assert.deepEqual(rowView(w, true), { visible: true, verdict: 'rewritten', text: '[trimmed]' });
    assert.deepEqual(rowView(k, true), { visible: true, verdict: null, text: 'text k' });
    assert.equal(rowView(ad, false).visible, false);
    assert.deepEqual(rowView(ad, true), { visible: true, verdict: 'added', text: 'interrupted' });
});

test('a view that comes back gets only the changes it missed, newest version of each row', () => {
    const m = new TranscriptModel();
    m.appendTranscript(entry(1, 'a'));
    const seen = m.op;
    m.appendTranscript(entry(2, 'b'));
    m.applyVerdicts('s1', { b: 'hidden' });
    const missed = m.since(seen);
    assert.ok(missed !== null);
    assert.deepEqual(missed.map((r) => [r.key, r.pruned]), [['b', 'hidden']]);
    assert.deepEqual(m.since(m.op), []);
    assert.equal(m.since(m.op + 1), null);
});

test('the change log is bounded: a view too far behind is told to reset', () => {
    const m = new TranscriptModel();
    for (let i = 1; i <= 6000; i++) m.appendTranscript(entry(i, `u${i}`));
    assert.equal(m.since(0), null);
    assert.equal(m.since(m.op - 10)?.length, 10);
});

test('rows before and after a position page through the model', () => {
    const m = new TranscriptModel();
    for (let i = 1; i <= 10; i++) m.appendTranscript(entry(i, `u${i}`));
    const pos = m.all()[5].pos;
    assert.deepEqual(m.before(pos, 2).map((r) => r.key), ['u4', 'u5']);
    assert.deepEqual(m.after(pos, 2).map((r) => r.key), ['u7', 'u8']);
    assert.deepEqual(m.tail(3).map((r) => r.key), ['u8', 'u9', 'u10']);
});

test('attached mid-wake (flower/attach): recent entries, then history adds what they lack, then live only above the cursor', () => {
    const m = new TranscriptModel();
    const sentence = { ...entry(40, 'x'), uuid: null, role: 'user' as const, text: 'also divide' };
    const shown = m.attached([entry(41, 'r41'), sentence, entry(42, 'r42')], 42);
    assert.deepEqual(shown.map((r) => r.key), ['r41', 'r42'], 'a sentence said (no uuid) comes from history, not from recent');
    m.appendTranscript(entry(43, 'live43'));
    // History: older entries, one recent entry already stored (r41), and the stored sentence.
    m.mergeHistory(page([entry(7, 'h7'), entry(8, 'r41'), { ...entry(9, 'said'), role: 'user', text: 'also divide' }], null));
    assert.deepEqual(m.appendTranscript(entry(42, 'again')), [], 'sent before the attach: not appended again');
    assert.equal(m.appendTranscript(entry(44, 'live44')).length, 1);
    assert.deepEqual(keys(m), ['h7', 'r41', 'said', 'r42', 'live43', 'live44']);
    assert.equal(m.all().filter((r) => r.text === 'also divide').length, 1, 'the sentence once');
    // A later, lower cursor never lets an old notification in again.
    m.attached([], 10);
    assert.deepEqual(m.appendTranscript(entry(44, 'live44')), []);
});

test('a subagent\'s live entries go under its Agent call, after what it showed, above the main agent\'s newer rows', () => {
    // Issue 32: a background subagent works while the main agent goes on; its rows still nest under the call.
    const m = new TranscriptModel();
    const call = { kind: 'tool' as const, toolName: 'Agent', toolUseId: 'ag1', toolInput: { description: 'write the docs', prompt: 'write docs' } };
    m.appendTranscript(entry(1, 'call', call));
    m.appendTranscript(entry(2, 'main-goes-on'));
    m.appendTranscript(entry(3, 'sub-1', { parent: 'ag1', kind: 'tool', toolName: 'Write', toolUseId: 'w1' }));
    m.appendTranscript(entry(4, 'main-more'));
    m.appendTranscript(entry(5, 'sub-2', { parent: 'ag1' }));
    assert.deepEqual(keys(m), ['call', 'sub-1', 'sub-2', 'main-goes-on', 'main-more']);
    assert.equal(m.all()[1].parent, 'ag1');
    // An entry of a call the client has not seen (an older page not loaded) is appended as it comes.
    m.appendTranscript(entry(6, 'orphan', { parent: 'elsewhere' }));
    assert.equal(keys(m).at(-1), 'orphan');
});

test('a subagent section says what it was asked to do and how many tool calls it made', () => {
    const m = new TranscriptModel();
    m.appendTranscript(entry(1, 'call', { kind: 'tool', toolName: 'Agent', toolUseId: 'ag1', toolInput: { description: 'write the docs', prompt: 'p', run_in_background: false } }));
    m.appendTranscript(entry(2, 's1', { parent: 'ag1', kind: 'tool', toolName: 'Write', toolUseId: 'w1' }));
    m.appendTranscript(entry(3, 's2', { parent: 'ag1' }));
    const rows = m.all();
    assert.ok(isAgentCall(rows[0]) && !isAgentCall(rows[1]));
    const s = section(rows[0], children(rows).get('ag1') ?? []);
    assert.deepEqual(s, { call: 'ag1', description: 'write the docs', entries: 2, tools: 1, background: false });
    assert.equal(sectionLine(s, ENGLISH), 'subagent · write the docs · 1 tool call');
    assert.equal(sectionLine({ ...s, tools: 3, description: '' }, ENGLISH), 'subagent · 3 tool calls');
    const prompted = { ...rows[0], toolInput: { prompt: 'find the bug\nin detail' } };
    assert.equal(section(prompted, []).description, 'find the bug');
    assert.equal(section(prompted, []).background, true); // the CLI's default
});

test('a denial marks the live call row with its reason, once; history marks the denied result with what the model was told (issue 34)', () => {
    const m = new TranscriptModel();
    m.appendTranscript(entry(1, 'c1', { kind: 'tool', toolName: 'Bash', toolUseId: 'toolu_1', text: 'Bash(rm -rf build)' }));
    m.appendTranscript(entry(2, 'c2', { kind: 'tool', toolName: 'Bash', toolUseId: 'toolu_2', text: 'Bash(ls)' }));
    const [changed] = m.denied('toolu_1', 'not the build dir');
    assert.equal(changed.key, 'c1');
    assert.equal(changed.denied, 'not the build dir');
    assert.deepEqual(m.denied('toolu_1', 'not the build dir'), [], 'the same denial again changes nothing');
    assert.deepEqual(m.denied('toolu_unknown', null), [], 'a call not shown is not invented');
    assert.equal(m.all().find((r) => r.key === 'c2')?.denied ?? null, null, 'the other call is untouched');

    const h = new TranscriptModel();
    h.mergeHistory(page([
        entry(10, 'c1', { kind: 'tool', toolName: 'Bash', toolUseId: 'toolu_1', text: 'Bash(rm -rf build)' }),
        entry(11, 'r1', { role: 'user', kind: 'result', toolUseId: 'toolu_1', text: 'not the build dir', denied: true }),
        entry(12, 'r2', { role: 'user', kind: 'result', toolUseId: 'toolu_2', text: 'APPROVED_42' }),
    ], null));
    const rows = h.all();
    assert.equal(rows.find((r) => r.key === 'r1')?.denied, 'not the build dir');
    assert.equal(rows.find((r) => r.key === 'r2')?.denied ?? null, null, 'an output is not a denial');
});

test('an entry keeps the server\'s words for its step (a judge\'s round has no stepStart; issue 33)', () => {
    const m = new TranscriptModel();
    m.appendTranscript(entry(1, 'j1', { step: '干活·判定#1', stepLabel: 'judge · round 1' }));
    m.appendTranscript(entry(2, 'w1'));
    assert.deepEqual(m.all().map((r) => r.stepTitle), ['judge · round 1', null]);
});
