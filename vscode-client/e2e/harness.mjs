// The editor end-to-end harness: a real VS Code (code-server) driven by headless Chromium, the
// extension installed from the built .vsix, the real `python -m flower.lsp` and Claude Code CLI
// against flower.testing's scripted model (EDITOR_E2E.md). Every process started here runs in
// its own process group and is stopped by that group's id, also when a test fails.
// @ts-check

import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as net from 'node:net';
import * as os from 'node:os';
import * as path from 'node:path';
import * as readline from 'node:readline';
import { fileURLToPath } from 'node:url';
import { chromium } from 'playwright-core';

export const E2E = path.dirname(fileURLToPath(import.meta.url));
export const CLIENT = path.dirname(E2E);
export const ROOT = path.dirname(CLIENT);
export const RESULTS = path.join(CLIENT, 'test-results');
export const PYTHON = process.env.FLOWER_E2E_PYTHON ?? path.join(ROOT, '.venv', 'bin', 'python');
export const CACHE = process.env.FLOWER_E2E_CACHE ?? path.join(os.homedir(), '.cache', 'flower-e2e');
export const CODE_SERVER = path.join(CACHE, 'node_modules', '.bin', 'code-server');
const pkg = JSON.parse(fs.readFileSync(path.join(CLIENT, 'package.json'), 'utf8'));
export const VSIX = path.join(CLIENT, `${pkg.name}-${pkg.version}.vsix`);
export const API_KEY = 'sk-ant-e2e-' + 'k3y'.repeat(8);

/** Seconds → milliseconds, scaled by FLOWER_E2E_SLOW (a slower machine) */
export const secs = (/** @type {number} */ n) => n * 1000 * Number(process.env.FLOWER_E2E_SLOW ?? 1);

/** @type {Set<number>} process groups still alive; killed on exit whatever happens */
const groups = new Set();
/** @type {Set<string>} the engine sockets (FLOWER_ENGINE) of the editors started here; their engines are killed on exit too */
const engineSockets = new Set();
function killAll() {
  for (const sock of engineSockets) {
    const pid = enginePid(sock);
    if (pid) groups.add(pid);
  }
  for (const pgid of groups) {
    try { process.kill(-pgid, 'SIGKILL'); } catch { /* already gone */ }
  }
}

/**
 * The pid of the flower engine serving `sock`, or 0: the engine writes its pid into the lock next to
 * its socket; it counts only while that process is alive and was started for this very socket (its
 * environment names it), so a pid reused by another process is never taken for it.
 */
export function enginePid(/** @type {string} */ sock) {
  let pid = 0;
  try { pid = Number(fs.readFileSync(`${sock}.lock`, 'utf8').trim()); } catch { return 0; }
  if (!Number.isInteger(pid) || pid <= 0) return 0;
  try {
    const environ = fs.readFileSync(`/proc/${pid}/environ`, 'utf8').split('\0');
    return environ.includes(`FLOWER_ENGINE=${sock}`) ? pid : 0;
  } catch {
    return 0;
  }
}

/** Stop the engine serving `sock` (it leads its own session and group: its CLI children go with it). */
export async function stopEngine(/** @type {string} */ sock) {
  const pid = enginePid(sock);
  if (pid) {
    groups.add(pid);
    await stopGroup(pid, 10_000);
  }
  engineSockets.delete(sock);
}
process.on('exit', killAll);
for (const signal of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])) {
  process.once(signal, () => { killAll(); process.exit(128 + (signal === 'SIGINT' ? 2 : signal === 'SIGTERM' ? 15 : 1)); });
}

/** Start a process as the leader of its own group (so its children can be stopped with it). */
function startGroup(/** @type {string} */ cmd, /** @type {string[]} */ args, /** @type {import('node:child_process').SpawnOptions} */ opts) {
  const child = spawn(cmd, args, { ...opts, detached: true });
  if (child.pid) groups.add(child.pid);
  return child;
}

/** SIGTERM a process group, SIGKILL what is left after `grace` ms; resolves when the group is gone. */
export async function stopGroup(/** @type {number | undefined} */ pgid, grace = 5000) {
  if (!pgid) return;
  const alive = () => { try { process.kill(-pgid, 0); return true; } catch { return false; } };
  try { process.kill(-pgid, 'SIGTERM'); } catch { /* gone */ }
  const end = Date.now() + grace;
  while (alive() && Date.now() < end) await sleep(100);
  if (alive()) {
    try { process.kill(-pgid, 'SIGKILL'); } catch { /* gone */ }
    const hard = Date.now() + 3000;
    while (alive() && Date.now() < hard) await sleep(50);
  }
  groups.delete(pgid);
  if (alive()) throw new Error(`process group ${pgid} survived SIGKILL`);
}

export const sleep = (/** @type {number} */ ms) => new Promise((r) => setTimeout(r, ms));

/** Poll `check` until it returns a truthy value; fail with `what` after `timeout` ms. */
export async function until(/** @type {() => any} */ check, /** @type {string} */ what, timeout = secs(30)) {
  const end = Date.now() + timeout;
  let last;
  for (;;) {
    try {
      const value = await check();
      if (value) return value;
    } catch (e) { last = e; }
    if (Date.now() > end) throw new Error(`timed out after ${timeout} ms waiting for ${what}${last ? `: ${last}` : ''}`);
    await sleep(150);
  }
}

export async function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.listen(0, '127.0.0.1', () => {
      const addr = srv.address();
      srv.close(() => (addr && typeof addr === 'object' ? resolve(addr.port) : reject(new Error('no port'))));
    });
  });
}

export function tempDir(/** @type {string} */ name) {
  return fs.mkdtempSync(path.join(os.tmpdir(), `flower-e2e-${name}-`));
}

/** Remove temp dirs of a scenario that passed (a failed one keeps them for a look). */
export function removeDirs(/** @type {string[]} */ dirs) {
  if (process.env.FLOWER_E2E_KEEP) return;
  for (const d of dirs) fs.rmSync(d, { recursive: true, force: true });
}

export const sha256 = (/** @type {string} */ s) => createHash('sha256').update(s).digest('hex');

/**
 * @typedef {{n: number, messages: number, text: string, system: string, keySha256: string | null, model: string | null}} ModelRequest
 */

/** The scripted model of one scenario (e2e/model.py), with what it received. */
export class Model {
  /** @type {ModelRequest[]} */ requests = [];
  url = '';
  /** @type {import('node:child_process').ChildProcess | undefined} */ proc;
  stderr = '';

  static async start(/** @type {string} */ scenario, /** @type {string[]} */ folders) {
    const model = new Model();
    const proc = startGroup(PYTHON, [path.join(E2E, 'model.py'), scenario, ...folders], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONUNBUFFERED: '1' },
    });
    model.proc = proc;
    proc.stderr?.on('data', (d) => { model.stderr += d; });
    readline.createInterface({ input: /** @type {NodeJS.ReadableStream} */ (proc.stdout) }).on('line', (line) => {
      const msg = JSON.parse(line);
      if (msg.event === 'listening') model.url = msg.url;
      if (msg.event === 'request') model.requests.push(msg);
    });
    await until(() => model.url || proc.exitCode !== null, 'the scripted model to listen', secs(20));
    if (!model.url) throw new Error(`scripted model did not start: ${model.stderr}`);
    return model;
  }

  /** Wait (bounded) until `count` model requests arrived; return the newest of them. */
  async request(/** @type {number} */ count, timeout = secs(60)) {
    await until(() => this.requests.length >= count, `model request #${count} (seen ${this.requests.length})`, timeout);
    return this.requests[count - 1];
  }

  release() { this.proc?.stdin?.write('release\n'); }

  async stop() {
    this.proc?.stdin?.end();
    await stopGroup(this.proc?.pid);
  }
}

/**
 * A real PostgreSQL of one scenario (e2e/postgres.py: tests/pg.py's PgServer on a Unix socket and
 * 127.0.0.1), with a database owned by a role that logs in with a password. The helper and the
 * postmaster (the leader of its own group) are both in the cleanup: nothing outlives the test.
 */
export class Postgres {
  url = '';
  password = '';
  pid = 0;
  stderr = '';
  /** @type {import('node:child_process').ChildProcess | undefined} */ proc;
  /** @type {{entries: number, projects: string[]} | null} */ counted = null;
  downed = false;

  static async start() {
    const pg = new Postgres();
    const proc = startGroup(PYTHON, [path.join(E2E, 'postgres.py')], {
      stdio: ['pipe', 'pipe', 'pipe'],
      env: { ...process.env, PYTHONUNBUFFERED: '1' },
    });
    pg.proc = proc;
    proc.stderr?.on('data', (d) => { pg.stderr += d; });
    readline.createInterface({ input: /** @type {NodeJS.ReadableStream} */ (proc.stdout) }).on('line', (line) => {
      const msg = JSON.parse(line);
      if (msg.event === 'listening') {
        Object.assign(pg, { url: msg.url, password: msg.password, pid: msg.pid });
        groups.add(msg.pid); // postgres runs in a session of its own: killed by group with the rest
      } else if (msg.event === 'count') pg.counted = msg;
      else if (msg.event === 'down') pg.downed = true;
    });
    await until(() => pg.url || proc.exitCode !== null, 'PostgreSQL to accept connections', secs(60));
    if (!pg.url) throw new Error(`postgres.py did not start: ${pg.stderr}`);
    return pg;
  }

  /** @returns {Promise<{entries: number, projects: string[]}>} what the store holds, asked as the superuser */
  async count() {
    this.counted = null;
    this.proc?.stdin?.write('count\n');
    return until(() => this.counted, 'postgres.py to count the entries', secs(20));
  }

  /** Stop the database under the running editor (an outage); `stop()` still cleans up after it. */
  async down() {
    this.downed = false;
    this.proc?.stdin?.write('down\n');
    return until(() => this.downed, 'postgres.py to stop the database', secs(30));
  }

  /** End of input: the helper stops the server by pid and removes its dir; then both groups are gone. */
  async stop() {
    this.proc?.stdin?.end();
    // Bounded: should the helper hang, the group is stopped below all the same.
    await until(() => !this.proc || this.proc.exitCode !== null || this.proc.signalCode !== null, 'postgres.py to stop the server', secs(30)).catch(() => {});
    await stopGroup(this.proc?.pid);
    await stopGroup(this.pid || undefined);
  }
}

/** Install the .vsix once per test process into one extensions dir (17 s for a big one: do it once). */
let extensionsDir = '';
export function installExtension() {
  if (extensionsDir) return extensionsDir;
  if (!fs.existsSync(VSIX)) throw new Error(`${VSIX} is missing: run (cd vscode-client && npm run package)`);
  const dir = tempDir('extensions');
  const xdg = tempDir('xdg-install');
  const out = spawnSync(CODE_SERVER, ['--user-data-dir', path.join(xdg, 'user'), '--extensions-dir', dir,
    '--install-extension', VSIX, '--force'], {
    env: { ...process.env, XDG_CONFIG_HOME: path.join(xdg, 'config'), XDG_DATA_HOME: path.join(xdg, 'data') },
    encoding: 'utf8', timeout: secs(120),
  });
  removeDirs([xdg]);
  if (out.status !== 0) throw new Error(`installing ${VSIX} failed: ${out.stderr || out.stdout}`);
  extensionsDir = dir;
  return dir;
}

/** The browser, one per test process. */
/** @type {import('playwright-core').Browser | undefined} */
let browser;
export async function getBrowser() {
  browser ??= await chromium.launch({
    executablePath: process.env.FLOWER_E2E_CHROMIUM ?? '/usr/bin/chromium',
    headless: true,
    timeout: secs(30),
    args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update',
      '--disable-sync', '--no-first-run', '--disable-dev-shm-usage'],
  });
  return browser;
}
export async function closeBrowser() {
  await browser?.close();
  browser = undefined;
  if (extensionsDir) removeDirs([extensionsDir]);
  extensionsDir = '';
}

/** Environment of code-server: nothing of the person's credentials, the CLI pointed at the scripted model. */
function editorEnv(/** @type {Model} */ model, /** @type {Record<string, string>} */ dirs, /** @type {boolean} */ withKey, /** @type {Record<string, string>} */ extra = {}) {
  /** @type {Record<string, string>} */
  const env = {};
  for (const [k, v] of Object.entries(process.env)) {
    if (v !== undefined && !/^(ANTHROPIC_|CLAUDE_|VSCODE_|CODE_SERVER_)/.test(k)) env[k] = v;
  }
  Object.assign(env, {
    ANTHROPIC_BASE_URL: model.url,
    CLAUDE_CONFIG_DIR: dirs.claude,
    CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
    DISABLE_TELEMETRY: '1',
    DISABLE_AUTOUPDATER: '1',
    CLAUDE_CODE_MAX_RETRIES: '0',
    XDG_CONFIG_HOME: dirs.config,
    XDG_DATA_HOME: dirs.data,
    XDG_CACHE_HOME: dirs.cache,
    // The engine's log; and its socket, this editor's own: a test never reaches a person's engine.
    XDG_STATE_HOME: dirs.state,
    FLOWER_ENGINE: dirs.engine,
  });
  if (withKey) env.ANTHROPIC_API_KEY = API_KEY;
  // The extension host otherwise takes a login shell's environment (VS Code's resolveShellEnv), whose
  // PATH Debian's /etc/profile resets: a scenario's own variables (a PATH first with its tools) would
  // never reach the extension. VSCODE_CLI=1 is what makes VS Code skip that resolution.
  return Object.keys(extra).length === 0 ? env : { ...env, ...extra, VSCODE_CLI: '1' };
}

/**
 * A request error a scenario causes on purpose: the request (`flower/status`, `wake`, …) and what its
 * logged error says, exactly (a string) or matching. Anything else a request answered with fails the scenario.
 * @typedef {{ method: string, says: string | RegExp }} ExpectedError
 */

/**
 * @typedef {{
 *   model: Model, open: string, name: string, withKey?: boolean, locale?: string,
 *   settings?: Record<string, unknown>, env?: Record<string, string>,
 *   expectedErrors?: ExpectedError[],
 * }} EditorOptions
 */

/**
 * A line of the extension's log (its output channel) where a flower request was answered with an error:
 * the client logs those as `<folder>: <method>: <error>` at warning or error level (server.ts, commands.ts,
 * views/*.ts), `<method>` a flower/* request (`flower/answer <id>` with the question's id) or the palette's
 * `wake`, `say` and `new`; the language client's own `[Error - …] Request flower/… failed.` too.
 * Groups: the method, then what the error says.
 */
const REQUEST_ERROR = /^\S+ \S+ \[(?:warning|error)\] [^:]*: (flower\/[a-zA-Z]+|wake|say|new)(?: \S+)?: (.*)$|^\S+ \S+ \[\w+\] \[Error +- [^\]]*\] Request (flower\/[a-zA-Z]+) failed\.(.*)$/;

/**
 * The client's own words for a request its connection took with it as it ended (a killed engine, a reload): no answer
 * from flower at all, so not what the check looks for (scenario 14 logged one for a status in flight at the kill).
 */
const CUT_OFF = 'Error: Pending response rejected since connection got disposed';

/**
 * The request errors in the flower logs under `userDir` (every window's extension host) that no entry of
 * `expected` allows, as `file: line`. A bad parameter (issue 34: `fresh` refused in every session) shows
 * only there; nothing on screen says it.
 */
export function requestErrors(/** @type {string} */ userDir, /** @type {ExpectedError[]} */ expected = []) {
  const logs = path.join(userDir, 'logs');
  if (!fs.existsSync(logs)) return [];
  /** @type {string[]} */
  const found = [];
  for (const file of fs.readdirSync(logs, { recursive: true, encoding: 'utf8' })) {
    if (!file.endsWith(path.join('flower.flower', 'flower.log'))) continue;
    for (const line of fs.readFileSync(path.join(logs, file), 'utf8').split('\n')) {
      const m = REQUEST_ERROR.exec(line);
      if (m === null) continue;
      const method = m[1] ?? m[3];
      const says = m[2] ?? m[4];
      if (says === CUT_OFF) continue;
      const allowed = expected.some((e) => e.method === method && (typeof e.says === 'string' ? e.says === says : e.says.test(says)));
      if (!allowed) found.push(`${file}: ${line}`);
    }
  }
  return found;
}

/** One code-server + one browser page on it; `close()` stops both (call it in `finally`). */
export class Editor {
  /** @type {import('playwright-core').Page} */ page;
  /** @type {import('playwright-core').BrowserContext} */ context;
  /** @type {import('node:child_process').ChildProcess | undefined} */ proc;
  /** @type {Record<string, string>} */ dirs = {};
  output = '';
  url = '';
  shots = 0;
  /** @type {string[]} */ dialogs = [];

  constructor(/** @type {EditorOptions} */ opts) {
    this.opts = opts;
    this.page = /** @type {any} */ (undefined);
    this.context = /** @type {any} */ (undefined);
  }

  static async start(/** @type {EditorOptions} */ opts) {
    const ed = new Editor(opts);
    try {
      await ed.launch();
      return ed;
    } catch (e) {
      await ed.close();
      throw e;
    }
  }

  async launch() {
    const { model, open, withKey = true, locale, settings = {} } = this.opts;
    const root = tempDir(this.opts.name);
    for (const d of ['user', 'config', 'data', 'cache', 'claude', 'state']) {
      this.dirs[d] = path.join(root, d);
      fs.mkdirSync(this.dirs[d], { recursive: true });
    }
    this.dirs.root = root;
    // The engine makes its directory (0700) itself; the path stays short (a Unix socket path has ~107 bytes).
    this.dirs.engine = path.join(root, 'engine', 'engine.sock');
    engineSockets.add(this.dirs.engine);
    this.dirs.extensions ??= installExtension();
    this.writeSettings({
      'workbench.startupEditor': 'none',
      'telemetry.telemetryLevel': 'off',
      'update.mode': 'none',
      'extensions.autoUpdate': false,
      'extensions.autoCheckUpdates': false,
      'workbench.enableExperiments': false,
      'workbench.tips.enabled': false,
      'security.workspace.trust.enabled': false,
      'window.restoreWindows': 'none',
      'flower.python': PYTHON,
      ...settings,
    });
    // `flower.python` is machine-overridable: a remote window (code-server's) takes machine settings from
    // the remote's Machine settings and may ignore the User value (seen: a window reloaded within seconds
    // of loading started "python3 (PATH)" while it read the application-scoped flower.store).
    const machine = path.join(this.dirs.user, 'Machine', 'settings.json');
    fs.mkdirSync(path.dirname(machine), { recursive: true });
    fs.writeFileSync(machine, JSON.stringify({ 'flower.python': PYTHON }, null, 2));
    if (locale) this.languagePack(locale);
    await this.serve();
  }

  /** Start code-server on this editor's dirs and open the workspace in a new page. */
  async serve() {
    const { model, open, withKey = true, locale, env = {} } = this.opts;
    const root = this.dirs.root;
    const port = await freePort();
    const config = path.join(root, 'code-server.yaml');
    fs.writeFileSync(config, `bind-addr: 127.0.0.1:${port}\nauth: none\ncert: false\n`);
    const args = ['--config', config, '--user-data-dir', this.dirs.user, '--extensions-dir', this.dirs.extensions,
      '--disable-telemetry', '--disable-update-check', '--disable-workspace-trust',
      '--disable-getting-started-override', '--ignore-last-opened'];
    if (locale) args.push('--locale', locale);
    args.push(open);
    this.proc = startGroup(CODE_SERVER, args, { stdio: ['ignore', 'pipe', 'pipe'], env: editorEnv(model, this.dirs, withKey, env) });
    this.proc.stdout?.on('data', (d) => { this.output += d; });
    this.proc.stderr?.on('data', (d) => { this.output += d; });
    const base = `http://127.0.0.1:${port}`;
    await until(async () => {
      if (this.proc?.exitCode !== null) throw new Error(`code-server exited: ${this.output}`);
      const res = await fetch(`${base}/healthz`);
      return res.ok;
    }, 'code-server /healthz', secs(30));
    const query = open.endsWith('.code-workspace') ? `workspace=${encodeURIComponent(open)}` : `folder=${encodeURIComponent(open)}`;
    this.url = `${base}/?${query}`;
    const b = await getBrowser();
    this.context = await b.newContext({ viewport: { width: 1400, height: 900 } });
    this.page = await this.context.newPage();
    this.page.on('dialog', (d) => { this.dialogs.push(d.message()); void d.dismiss(); });
    await this.page.goto(this.url, { timeout: secs(30) });
    await this.page.locator('.monaco-workbench').waitFor({ timeout: secs(30) });
  }

  /**
   * Make the workbench resolve `locale` offline. A real language pack comes from the marketplace;
   * without one VS Code falls back to `en` and extensions see `env.language === 'en'`. An entry in
   * the user-data dir's languagepacks.json whose translations are empty resolves the locale (the
   * workbench's own strings stay English, the extension gets its zh-cn bundles and hands the
   * locale to the server).
   */
  languagePack(/** @type {string} */ locale) {
    const translations = path.join(this.dirs.root, `${locale}.i18n.json`);
    fs.writeFileSync(translations, JSON.stringify({ version: '1.0.0', contents: {} }));
    fs.writeFileSync(path.join(this.dirs.user, 'languagepacks.json'), JSON.stringify({
      [locale]: {
        hash: 'flower-e2e', label: locale, translations: { vscode: translations },
        extensions: [{ extensionIdentifier: { id: 'flower-e2e.language-pack' }, version: '0.0.0' }],
      },
    }));
    fs.writeFileSync(path.join(this.dirs.user, 'argv.json'), JSON.stringify({ locale }));
  }

  writeSettings(/** @type {Record<string, unknown>} */ settings) {
    const file = path.join(this.dirs.user, 'User', 'settings.json');
    fs.mkdirSync(path.dirname(file), { recursive: true });
    let old = {};
    try { old = JSON.parse(fs.readFileSync(file, 'utf8')); } catch { /* first write */ }
    fs.writeFileSync(file, JSON.stringify({ ...old, ...settings }, null, 2));
  }

  /** Save `test-results/<n>-<name>.png` (after toasts have slid in); `clip`: only that part of the window. */
  async shot(/** @type {string} */ name, /** @type {{x: number, y: number, width: number, height: number} | undefined} */ clip = undefined) {
    fs.mkdirSync(RESULTS, { recursive: true });
    await sleep(800);
    const file = path.join(RESULTS, `${name}.png`);
    await this.page.screenshot({ path: file, timeout: secs(15), ...(clip ? { clip } : {}) });
    return file;
  }

  /**
   * Run a palette command by its shown title (`flower: Start a Task…`). F1 must open the palette
   * and the palette must stay open while it lists: the extension never takes the focus uninvited
   * (a webview that did would swallow F1 or close the palette), so neither is tolerated here.
   */
  async command(/** @type {string} */ title, timeout = secs(30)) {
    const { page } = this;
    const input = page.locator('.quick-input-widget input');
    const row = page.locator('.quick-input-widget:visible .monaco-list-row.focused', { hasText: title });
    /** @type {string | null} */
    let broken = null;
    // Right after load the palette may not list extension commands yet, and an open palette
    // does not learn new ones: reopen it until it lists the title.
    await until(async () => {
      await page.keyboard.press('Escape');
      await page.keyboard.press('F1');
      if (!(await input.waitFor({ state: 'visible', timeout: secs(5) }).then(() => true, () => false))) {
        broken = 'F1 did not open the palette (something holds the focus and swallows it)';
        return true;
      }
      await input.fill(`>${title}`);
      if (await row.waitFor({ timeout: secs(2) }).then(() => true, () => false)) return true;
      if (!(await input.isVisible())) broken = 'the palette closed by itself (something took the focus)';
      return broken !== null;
    }, `the palette to offer "${title}"`, timeout);
    if (broken !== null) throw new Error(`${broken}, looking for "${title}"`);
    await row.click({ timeout: secs(5) });
  }

  /** Developer: Reload Window, then wait for the new workbench. */
  async reload() {
    const loaded = this.page.waitForEvent('load', { timeout: secs(30) });
    await this.command('Developer: Reload Window');
    await loaded;
    await this.page.locator('.monaco-workbench').waitFor({ timeout: secs(30) });
  }

  /** Open a file by its absolute path through Quick Open (it becomes the active editor). */
  async openFile(/** @type {string} */ file, timeout = secs(30)) {
    const { page } = this;
    const name = path.basename(file);
    const folder = path.basename(path.dirname(file));
    await page.keyboard.press('Escape');
    await page.keyboard.press('Control+P');
    const input = page.locator('.quick-input-widget input');
    await input.waitFor({ state: 'visible', timeout: secs(5) });
    await input.fill(file);
    // The row of this folder's file: while the list still shows the previous query's results (a
    // loaded machine), the first row named `name` may be another folder's.
    await page.locator('.quick-input-widget:visible .monaco-list-row', { hasText: name }).filter({ hasText: folder }).first().click({ timeout });
    // The active tab's breadcrumbs name the folder: the file of *this* folder is open.
    await page.locator('.tabs-and-actions-container .tab.active', { hasText: name }).waitFor({ timeout: secs(10) });
    await page.locator('.breadcrumbs-control .monaco-breadcrumb-item', { hasText: folder }).first().waitFor({ timeout: secs(10) });
  }

  /** Pick an item of an open quick pick by its label. */
  async pick(/** @type {string} */ label) {
    const row = this.page.locator('.quick-input-widget:visible .quick-input-list .monaco-list-row', { hasText: label }).first();
    await row.waitFor({ timeout: secs(15) });
    await row.click();
  }

  /** Answer an input box (`showInputBox`) with `text`. */
  async answer(/** @type {string} */ text, timeout = secs(15)) {
    const input = this.page.locator('.quick-input-widget:visible input');
    await input.waitFor({ timeout });
    await input.fill(text);
    await input.press('Enter');
  }

  /** The status-bar gauge (created with id flower.gauge). */
  gauge() {
    return this.page.locator('.statusbar-item[id$="flower.gauge"]');
  }

  /**
   * The tooltip of the status-bar gauge, as shown on hover: hovers until the hover's text
   * satisfies `check` (a tooltip shown does not update: the mouse leaves and comes back).
   */
  async gaugeTooltip(/** @type {(text: string) => boolean} */ check, /** @type {string} */ what, timeout = secs(20)) {
    const hover = this.page.locator('.workbench-hover:visible, .monaco-hover:visible').last();
    return until(async () => {
      await this.page.mouse.move(700, 300);
      await this.gauge().hover({ timeout: secs(5) });
      const text = await hover.innerText({ timeout: secs(3) });
      return check(text) ? text : null;
    }, `the gauge's tooltip to show ${what}`, timeout);
  }

  /** The transcript webview's document. */
  view() {
    return this.page.frameLocator('iframe.webview.ready').frameLocator('#active-frame');
  }

  rows() {
    return this.view().locator('[data-testid="row"]');
  }

  toast(/** @type {string | RegExp} */ text) {
    return this.page.locator('.notification-toast', { hasText: text });
  }

  /**
   * Click `button` of the notification saying `text`: on its toast, or — when the toast has been
   * hidden (Escape, its timeout) — in the notification center.
   */
  async notificationAction(/** @type {string | RegExp} */ text, /** @type {string | RegExp} */ button) {
    const toast = this.toast(text);
    if (await toast.isVisible()) {
      await toast.locator('.monaco-button', { hasText: button }).click({ timeout: secs(10) });
      return;
    }
    await this.command('Notifications: Show Notifications');
    const item = this.page.locator('.notifications-center .notification-list-item', { hasText: text }).first();
    await item.locator('.monaco-button', { hasText: button }).click({ timeout: secs(10) });
  }

  /** A new browser page on the same code-server (a second window), with its own extension host. */
  async window() {
    const context = await (await getBrowser()).newContext({ viewport: { width: 1400, height: 900 } });
    const page = await context.newPage();
    page.on('dialog', (d) => { this.dialogs.push(d.message()); void d.dismiss(); });
    await page.goto(this.url, { timeout: secs(30) });
    await page.locator('.monaco-workbench').waitFor({ timeout: secs(30) });
    const other = new Editor(this.opts);
    Object.assign(other, { page, context, dirs: this.dirs, url: this.url, proc: undefined });
    // Closing this window ends its page only: code-server and the engine are the first editor's.
    other.close = async () => { try { await context.close(); } catch { /* browser gone */ } };
    return other;
  }

  /** Close VS Code: the browser page and code-server (with its extension hosts) end; the engine is not theirs to end. */
  async quit() {
    try { await this.context?.close(); } catch { /* browser gone */ }
    await stopGroup(this.proc?.pid);
    this.proc = undefined;
  }

  /** The pid of this editor's flower engine (0: none runs). */
  engine() {
    return enginePid(this.dirs.engine);
  }

  /** The unexpected request errors in this editor's flower logs (see requestErrors); read them after close(). */
  requestErrors() {
    return requestErrors(this.dirs.user, this.opts.expectedErrors);
  }

  /** Stop everything this editor started: the page, code-server, and its flower engine (by pid). */
  async close() {
    try { await this.context?.close(); } catch { /* browser gone */ }
    await stopGroup(this.proc?.pid);
    if (this.dirs.engine) await stopEngine(this.dirs.engine);
  }
}
