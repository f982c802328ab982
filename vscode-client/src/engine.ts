/**
 * Reaching the shared engine (D11): `<python> -m flower.cli serve --background` makes sure
 * exactly one runs (starting it detached when none answers) and prints its socket; the folder's
 * language client then speaks protocol.md over a connection to that socket. No `vscode` import.
 */
import { execFile } from 'node:child_process';
import * as net from 'node:net';
import { serveAnswer } from './model/engine';

/** How long `serve --background` may take (it waits for the socket to accept connections). */
const SERVE_TIMEOUT_MS = 45_000;

/**
 * Run `serve --background` with `python` in `env` (the engine's own, fallback environment) and
 * return the socket path it printed, with its note for the person if any; rejects with its
 * one-line reason.
 */
export function ensureEngine(python: string, env: NodeJS.ProcessEnv, cwd: string): Promise<{ path: string; note: string | null }> {
    return new Promise((resolve, reject) => {
        execFile(
            python,
            ['-m', 'flower.cli', 'serve', '--background'],
            { env, cwd, timeout: SERVE_TIMEOUT_MS, maxBuffer: 1 << 20 },
            (error, stdout, stderr) => {
                const code = error === null ? 0 : typeof error.code === 'number' ? error.code : null;
                const answer = serveAnswer(code, stdout, stderr);
                if ('path' in answer) resolve(answer);
                else reject(new Error(error?.killed === true ? `the flower engine did not answer within ${SERVE_TIMEOUT_MS / 1000} s` : answer.error));
            },
        );
    });
}

/** A connection to the engine's socket, once it is open (bounded by `timeoutMs`). */
export function connectEngine(socketPath: string, timeoutMs = 10_000): Promise<net.Socket> {
    return new Promise((resolve, reject) => {
        const socket = net.createConnection(socketPath);
        const timer = setTimeout(() => {
            socket.destroy();
            reject(new Error(`the flower engine at ${socketPath} did not accept a connection within ${timeoutMs / 1000} s`));
        }, timeoutMs);
        const refused = (e: Error): void => {
            clearTimeout(timer);
            reject(new Error(`cannot connect to the flower engine at ${socketPath}: ${e.message}`));
        };
        socket.once('error', refused);
        socket.once('connect', () => {
            clearTimeout(timer);
            socket.off('error', refused);
            // A later error ends the connection; the language client sees it close and reconnects.
            socket.on('error', () => undefined);
            resolve(socket);
        });
    });
}
