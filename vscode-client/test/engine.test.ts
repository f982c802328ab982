import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import { test } from 'node:test';
import { connectEngine, ensureEngine } from '../src/engine';
import { engineMode, ReconnectPolicy, redactEnv, requestEnv, serveAnswer } from '../src/model/engine';

test('flower.engine: shared unless it says window', () => {
    assert.equal(engineMode('window'), 'window');
    assert.equal(engineMode('shared'), 'shared');
    for (const odd of [undefined, null, '', 'Window', 3]) assert.equal(engineMode(odd), 'shared');
});

test('a wake carries the window\'s whole environment: the engine decides what travels (issue 33)', () => {
    const env = { PATH: '/usr/bin', VSCODE_PID: '1', SSH_AUTH_SOCK: '/tmp/agent', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9', UNSET: undefined };
    assert.deepEqual(requestEnv(env), { PATH: '/usr/bin', VSCODE_PID: '1', SSH_AUTH_SOCK: '/tmp/agent', ANTHROPIC_BASE_URL: 'http://127.0.0.1:9' });
});

test('the key from SecretStorage wins over the window\'s own, and an empty one is no key', () => {
    assert.equal(requestEnv({ ANTHROPIC_API_KEY: 'shell' }, 'secret').ANTHROPIC_API_KEY, 'secret');
    assert.equal(requestEnv({ ANTHROPIC_API_KEY: 'shell' }, '').ANTHROPIC_API_KEY, 'shell');
    assert.equal('ANTHROPIC_API_KEY' in requestEnv({}, undefined), false);
});

test('the trace of a wake never shows its env, verbose or compact', () => {
    const params = { folder: 'file:///w', text: 'go {on}', env: { ANTHROPIC_API_KEY: 'sk-secret', ODD: 'a "}" and \\ {', PATH: '/bin' } };
    for (const json of [JSON.stringify(params, null, 4), JSON.stringify(params)]) {
        const line = redactEnv(`Sending request 'flower/wake - (3)'.\nParams: ${json}\n\n`);
        assert.ok(!line.includes('sk-secret') && !line.includes('/bin') && !line.includes('ODD'), line);
        // The rest of the line stays, and parses back with env replaced.
        const back = JSON.parse(line.slice(line.indexOf('{'), line.lastIndexOf('}') + 1)) as Record<string, unknown>;
        assert.deepEqual(back, { folder: 'file:///w', text: 'go {on}', env: '[not logged]' });
    }
    assert.equal(redactEnv('"env": null, "env": {"A": "1"}, "b": 2'), '"env": null, "env": "[not logged]", "b": 2');
    // Cut off by the end of the line: replaced up to the end.
    assert.equal(redactEnv('Params: {"env": {"ANTHROPIC_API_KEY": "sk-'), 'Params: {"env": "[not logged]"');
    assert.equal(redactEnv('no env here'), 'no env here');
});

test('serve --background: the socket path is its last stdout line; a failure is its one line', () => {
    assert.deepEqual(serveAnswer(0, 'starting…\n/run/user/0/flower/engine.sock\n', ''), { path: '/run/user/0/flower/engine.sock', note: null });
    // A note for the person on stderr (the engine runs another version and finishes its task first).
    assert.deepEqual(serveAnswer(0, '/s/engine.sock\n', 'flower: flower engine 0.1.0 is running a task; it will update when the task ends\n'), {
        path: '/s/engine.sock',
        note: 'flower engine 0.1.0 is running a task; it will update when the task ends',
    });
    assert.deepEqual(serveAnswer(1, 'flower engine 0.1.0 is running a task; it will update when the task ends\n', 'Traceback…\nError'), {
        error: 'flower engine 0.1.0 is running a task; it will update when the task ends',
    });
    assert.deepEqual(serveAnswer(2, '', 'No module named flower.cli\n'), { error: 'No module named flower.cli' });
    assert.deepEqual(serveAnswer(1, '', 'flower: /run/x belongs to uid 7, not to you\n'), { error: '/run/x belongs to uid 7, not to you' });
    assert.deepEqual(serveAnswer(null, '', ''), { error: 'flower serve --background exited with a signal' });
    // Exit 0 without a path is no answer either.
    assert.deepEqual(serveAnswer(0, 'ok\n', ''), { error: 'ok' });
});

test('reconnecting: growing delays, bounded, and a fresh start after a healthy connection', () => {
    const policy = new ReconnectPolicy(5, 500, 60_000);
    policy.connected(0);
    const delays = [1, 2, 3, 4, 5, 6].map((i) => policy.lost(1000 * i));
    assert.deepEqual(delays, [500, 1000, 2000, 4000, 8000, null]);
    // Still giving up while the engine cannot be reached…
    assert.equal(policy.lost(10_000), null);
    // …until the person restarts, or a connection stays up for a minute.
    policy.reset();
    assert.equal(policy.lost(11_000), 500);
    policy.connected(20_000);
    assert.equal(policy.lost(30_000), 1000, 'a connection up for 10 s was not healthy: the delays go on growing');
    policy.connected(40_000);
    assert.equal(policy.lost(100_000), 500, 'up for a minute: the next loss starts over');
    assert.equal(policy.count, 1);
});

test('connectEngine opens a Unix socket, and says which one when nothing listens', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flower-engine-test-'));
    const sock = path.join(dir, 'engine.sock');
    try {
        await assert.rejects(connectEngine(sock, 2000), (e: Error) => e.message.includes(sock));
        const got: string[] = [];
        const server = net.createServer((c) => c.on('data', (d) => got.push(String(d))));
        await new Promise<void>((resolve) => server.listen(sock, resolve));
        try {
            const socket = await connectEngine(sock, 2000);
            socket.end('hello');
            await new Promise<void>((resolve) => socket.on('close', () => resolve()));
            await waitFor(() => got.join('') === 'hello');
        } finally {
            await new Promise<void>((resolve) => server.close(() => resolve()));
        }
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

test('ensureEngine runs `-m flower.cli serve --background` and reads the path it prints', async () => {
    // A stand-in interpreter that prints what it was asked to do as the "socket path".
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'flower-engine-test-'));
    const python = path.join(dir, 'python');
    fs.writeFileSync(python, '#!/bin/sh\nif [ "$FAIL" = 1 ]; then echo "flower: the engine log $HOME/x is not writable"; exit 3; fi\necho "/$*"\n', { mode: 0o755 });
    try {
        assert.deepEqual(await ensureEngine(python, { PATH: process.env.PATH }, dir), { path: '/-m flower.cli serve --background', note: null });
        await assert.rejects(ensureEngine(python, { PATH: process.env.PATH, FAIL: '1', HOME: '/h' }, dir), { message: 'flower: the engine log /h/x is not writable' });
    } finally {
        fs.rmSync(dir, { recursive: true, force: true });
    }
});

async function waitFor(check: () => boolean): Promise<void> {
    const end = Date.now() + 2000;
    while (!check()) {
        if (Date.now() > end) throw new Error('timed out');
        await new Promise((r) => setTimeout(r, 10));
    }
}
