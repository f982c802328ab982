import assert from 'node:assert/strict';
import { test } from 'node:test';
import { Approvals, card, DENY_MIN_LINES, denyCompact, detailLines, KEEP_CLOSED, MESSAGE_MAX, parseAnswer, shownLines } from '../src/model/approvals';
import { approval, FOLDER, status } from './fixtures';

test("the page's answer is checked: only allow, allowAlways or deny for a named card; a message only with deny", () => {
    assert.deepEqual(parseAnswer({ type: 'decide', id: 't1', decision: 'allow', message: null }), { id: 't1', decision: 'allow', message: null });
    assert.deepEqual(parseAnswer({ id: 't1', decision: 'deny', message: '  not on main, please  ' }), { id: 't1', decision: 'deny', message: 'not on main, please' });
    assert.deepEqual(parseAnswer({ id: 't1', decision: 'deny', message: '   ' }), { id: 't1', decision: 'deny', message: null });
    assert.deepEqual(parseAnswer({ id: 't1', decision: 'allowAlways', message: 'ignored' }), { id: 't1', decision: 'allowAlways', message: null });
    for (const bad of [null, 'allow', 42, {}, { id: 't1' }, { id: '', decision: 'allow' }, { id: 't1', decision: 'yes' }, { id: 't1', decision: 'Allow' }, { id: 7, decision: 'allow' }]) {
        assert.equal(parseAnswer(bad), null, JSON.stringify(bad));
    }
    assert.equal(parseAnswer({ id: 't1', decision: 'deny', message: 'x'.repeat(MESSAGE_MAX + 50) })?.message?.length, MESSAGE_MAX);
});

test('a diff is marked line by line: added, removed, context, and its headers are neither', () => {
    const diff = '--- a/calc.py\n+++ b/calc.py\n@@ -1,2 +1,2 @@\n import sys\n-print(1 + 2)\n+print(int(sys.argv[1]) + int(sys.argv[3]))\n';
    assert.deepEqual(detailLines({ kind: 'diff', text: diff }, 'calc.py').map((l) => l.mark), ['hunk', 'hunk', 'hunk', 'ctx', 'del', 'add']);
    assert.equal(detailLines({ kind: 'diff', text: diff }, 'calc.py')[5].text, '+print(int(sys.argv[1]) + int(sys.argv[3]))');
});

test('a command is one code block unless the summary already says it all', () => {
    assert.deepEqual(detailLines({ kind: 'command', text: 'rm -rf build' }, 'rm -rf build'), []);
    assert.deepEqual(detailLines({ kind: 'command', text: 'for f in *; do\n  echo $f\ndone' }, 'for f in *; do'), [
        { mark: 'ctx', text: 'for f in *; do' },
        { mark: 'ctx', text: '  echo $f' },
        { mark: 'ctx', text: 'done' },
    ]);
    assert.deepEqual(detailLines({ kind: 'url', text: '' }, 'https://example.org'), []);
});

test("a card: one summary line, the CLI's first suggestion for Always, none without suggestions", () => {
    const c = card(approval({ summary: 'line one\nline two' }));
    assert.equal(c.summary, 'line one');
    assert.equal(c.always, 'Bash(rm:*)');
    assert.equal(c.state, 'open');
    assert.equal(card(approval({ suggestions: [] })).always, null);
    // Issue 32: a subagent's question names the subagent; the main agent's names none.
    assert.equal(card(approval({ agent: 'write the docs (general-purpose)' })).agent, 'write the docs (general-purpose)');
    assert.equal(card(approval()).agent, null);
});

test('a question opens one card; answering it sends once; flower/approved closes it with the decision that won', () => {
    const a = new Approvals();
    assert.equal(a.ask(approval()), true);
    assert.equal(a.ask(approval()), false, 'asked again: the same card');
    assert.deepEqual(a.open().map((c) => c.id), ['toolu_01']);
    assert.equal(a.answer({ id: 'toolu_01', decision: 'deny', message: 'use make clean' })?.state, 'sent');
    assert.equal(a.answer({ id: 'toolu_01', decision: 'allow', message: null }), null, 'a second click sends nothing');
    assert.equal(a.open().length, 0);
    assert.equal(a.closed({ folder: FOLDER, id: 'toolu_01', decision: 'deny', by: 'person' }), true);
    const c = a.get('toolu_01');
    assert.equal(c?.state, 'closed');
    assert.equal(c?.decision, 'deny');
    assert.equal(c?.message, 'use make clean');
});

test('another window answered first: the card closes with its decision, and cannot be answered here', () => {
    const a = new Approvals();
    a.ask(approval());
    a.closed({ folder: FOLDER, id: 'toolu_01', decision: 'allow', by: 'person' });
    assert.equal(a.get('toolu_01')?.decision, 'allow');
    assert.equal(a.answer({ id: 'toolu_01', decision: 'deny', message: null }), null);
    assert.equal(a.closed({ folder: FOLDER, id: 'unknown', decision: 'deny', by: 'unattended' }), false);
});

test('after a reload the status brings the question back; a status asked before an answer or a close does not', () => {
    const waiting = status({ running: true, waitingFor: { what: 'approval', since: 1_764_600_000, approval: approval() } });
    const a = new Approvals();
    assert.equal(a.fromStatus(waiting), true);
    assert.equal(a.get('toolu_01')?.state, 'open');
    assert.equal(a.fromStatus(waiting), false, 'already shown');
    a.answer({ id: 'toolu_01', decision: 'allow', message: null });
    a.closed({ folder: FOLDER, id: 'toolu_01', decision: 'allow', by: 'person' });
    assert.equal(a.fromStatus(waiting), false, 'a stale status does not reopen a closed question');
    assert.equal(a.get('toolu_01')?.state, 'closed');
    assert.equal(new Approvals().fromStatus(status({ waitingFor: { what: 'question', since: 1, approval: null } })), false);
    assert.equal(new Approvals().fromStatus(status({ waitingFor: null })), false);
    assert.equal(new Approvals().fromStatus(null), false);
});

test('an answer that could not be delivered opens the card again', () => {
    const a = new Approvals();
    a.ask(approval());
    a.answer({ id: 'toolu_01', decision: 'allow', message: null });
    a.reopen('toolu_01');
    assert.equal(a.get('toolu_01')?.state, 'open');
    assert.equal(a.get('toolu_01')?.decision, null);
});

test('a new connection forgets open and sent cards but lets the next status bring them back; a wake that ended closes them for good', () => {
    const a = new Approvals();
    a.ask(approval());
    a.answer({ id: 'toolu_01', decision: 'allow', message: null });
    a.reconnect();
    assert.equal(a.get('toolu_01'), undefined);
    assert.equal(a.ask(approval()), true, 'the answer may have been lost with the connection: asked again');
    a.end();
    assert.equal(a.all().length, 0);
    assert.equal(a.ask(approval()), false, 'the wake is over: nothing of it is pending');
});

test(`closed cards are kept compact, the newest ${KEEP_CLOSED}, in the order asked`, () => {
    const a = new Approvals();
    for (let i = 0; i < KEEP_CLOSED + 2; i++) {
        a.ask(approval({ id: `t${i}`, since: 100 + i }));
        a.closed({ folder: FOLDER, id: `t${i}`, decision: 'allow', by: 'person' });
    }
    a.ask(approval({ id: 'open', since: 200 }));
    assert.deepEqual(a.all().map((c) => c.id), ['t2', 't3', 't4', 'open']);
});

test('an answer the server did not accept (not open any more) closes the card undecided; a close that came first stands', () => {
    const a = new Approvals();
    a.ask(approval());
    a.answer({ id: 'toolu_01', decision: 'allow', message: null });
    a.gone('toolu_01');
    assert.equal(a.get('toolu_01')?.state, 'closed');
    assert.equal(a.get('toolu_01')?.decision, null);
    assert.equal(a.ask(approval()), false);
    const b = new Approvals();
    b.ask(approval());
    b.closed({ folder: FOLDER, id: 'toolu_01', decision: 'deny', by: 'unattended' });
    b.gone('toolu_01');
    assert.equal(b.get('toolu_01')?.decision, 'deny');
});

test('the Deny form hides the Allow row only when the command would show fewer than three lines (issue 34)', () => {
    const area = { top: 400, bottom: 600 };
    // 300 px wide (as in e2e scenario 19): the box from 450, the buttons from 540: three whole 18 px lines and a part.
    assert.equal(shownLines({ top: 450, bottom: 578 }, area, 540, 18), 5);
    assert.equal(shownLines({ top: 450, bottom: 578 }, area, 520, 18), 3);
    assert.equal(denyCompact({ top: 450, bottom: 578 }, area, 520, 18), false);
    // 170 px: the buttons, the rule and the form start 2 px below the box's top: a sliver.
    assert.equal(shownLines({ top: 468, bottom: 596 }, area, 470, 18), 0);
    assert.equal(denyCompact({ top: 468, bottom: 596 }, area, 470, 18), true);
    // Scrolled: what lies above the area is not seen; the area's bottom clips too.
    assert.equal(shownLines({ top: 380, bottom: 440 }, area, 700, 10), 4);
    assert.equal(shownLines({ top: 560, bottom: 700 }, area, 700, 10), 4);
    assert.equal(denyCompact({ top: 380, bottom: 429 }, area, 700, 10), true, `29 px: two lines, fewer than ${DENY_MIN_LINES}`);
    // No command box (a one-line command said by its summary): nothing to uncover.
    assert.equal(denyCompact(null, area, 401, 18), false);
    assert.equal(shownLines({ top: 450, bottom: 578 }, area, 540, 0), 0);
});
