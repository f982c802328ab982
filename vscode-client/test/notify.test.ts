import assert from 'node:assert/strict';
import { test } from 'node:test';
import { desktopCommand, findProgram, notifyMode, oneLine, OUTAGE_SECONDS, OutageWatch, wakeEnded } from '../src/model/notify';
import type { StateNotification } from '../src/protocol';
import { FOLDER, status } from './fixtures';

const end = (over: Partial<StateNotification> = {}): StateNotification => ({
    folder: FOLDER, run: 1, running: false, ok: true, cancelled: false, error: null, woke: 3, ...over,
});

test('a wake that ends is told: done (passed or not), failed, stopped at the cap; a cancel the person made is not; a start is not', () => {
    assert.deepEqual(wakeEnded(end(), false), { kind: 'done', woke: 3, passed: true });
    assert.deepEqual(wakeEnded(end({ ok: false }), false), { kind: 'done', woke: 3, passed: false });
    assert.deepEqual(wakeEnded(end({ ok: false, error: 'the CLI exited' }), false), { kind: 'failed', error: 'the CLI exited' });
    assert.deepEqual(wakeEnded(end({ ok: false, error: 'spent $0.33 of $0.25' }), true), { kind: 'cap', error: 'spent $0.33 of $0.25' });
    assert.equal(wakeEnded(end({ cancelled: true, ok: false }), false), null);
    assert.equal(wakeEnded(end({ running: true, ok: null, woke: null }), false), null);
});

const waiting = (secondsLeft: number, since: number | null) =>
    status({
        running: true,
        waiting: { reason: 'offline', seconds: secondsLeft, attempt: 2, maxAttempts: 0, until: 0, secondsLeft },
        waitingFor: since === null ? null : { what: 'outage', since, approval: null },
    });

test('an outage is told once it has lasted a minute (the server says since when), once per outage', () => {
    const w = new OutageWatch();
    assert.equal(w.update(waiting(10, 1000), 1020), null, '30 s so far');
    assert.deepEqual(w.update(waiting(20, 1000), 1045), { kind: 'outage', minutes: 1 });
    assert.equal(w.update(waiting(30, 1000), 1200), null, 'told already');
    assert.equal(w.update(status({ running: true }), 1210), null, 'the run went on');
    assert.deepEqual(w.update(waiting(300, 1300), 1301), { kind: 'outage', minutes: 5 }, 'a new outage whose wait alone is over a minute');
});

test('from a flower that sends no waitingFor, the retry wait counts from when the client first saw it', () => {
    const w = new OutageWatch();
    assert.equal(w.update(waiting(5, null), 500), null);
    assert.equal(w.update(waiting(5, null), 500 + OUTAGE_SECONDS - 10), null);
    assert.deepEqual(w.update(waiting(5, null), 500 + OUTAGE_SECONDS - 4), { kind: 'outage', minutes: 1 });
    assert.equal(new OutageWatch().update(status({ waitingFor: { what: 'approval', since: 1, approval: null } }), 99999), null, 'an approval is no outage');
});

test('flower.notify is off unless it says os', () => {
    assert.equal(notifyMode('os'), 'os');
    for (const raw of ['off', 'OS', undefined, null, true]) assert.equal(notifyMode(raw), 'off');
});

test('the desktop notification: notify-send on Linux, osascript on macOS, the texts as arguments; none where the program is missing', () => {
    const on = (...programs: string[]) => (p: string) => (programs.includes(p) ? `/usr/bin/${p}` : null);
    const evil = 'rm "$(x)" `y` \' end';
    assert.deepEqual(desktopCommand('linux', 'flower · app', evil, on('notify-send')), {
        command: '/usr/bin/notify-send',
        args: ['--app-name=flower', '--', 'flower · app', evil],
    });
    const mac = desktopCommand('darwin', 'flower · app', evil, on('osascript'));
    assert.equal(mac?.command, '/usr/bin/osascript');
    assert.deepEqual(mac?.args.slice(-2), ['flower · app', evil], 'the texts are argv items, never AppleScript source');
    assert.ok(mac?.args.filter((a, i) => mac.args[i - 1] === '-e').every((line) => !line.includes(evil)));
    assert.equal(desktopCommand('linux', 't', 'b', on()), null);
    assert.equal(desktopCommand('darwin', 't', 'b', on('notify-send')), null);
    assert.equal(desktopCommand('win32', 't', 'b', on('notify-send', 'osascript')), null);
});

test('a program is found in the first PATH dir that has it executable', () => {
    const files = new Set(['/opt/bin/notify-send', '/usr/bin/notify-send']);
    assert.equal(findProgram('notify-send', '/nope::/opt/bin/:/usr/bin', (f) => files.has(f)), '/opt/bin/notify-send');
    assert.equal(findProgram('osascript', '/opt/bin:/usr/bin', (f) => files.has(f)), null);
    assert.equal(findProgram('notify-send', undefined, () => true), null);
});

test('a notification text is one line, cut at 200 characters', () => {
    assert.equal(oneLine('  a\n  b\tc '), 'a b c');
    assert.equal(oneLine('x'.repeat(300)).length, 200);
    assert.ok(oneLine('x'.repeat(300)).endsWith('…'));
});
