/** flower's settings → the server's `initializationOptions` (protocol.md), and the settings a server restarts for. */
import type { InitializationOptions } from '../protocol';

/** The raw values of the `flower.*` server settings as the configuration holds them. */
export interface RawSettings {
    rounds: unknown;
    trim: unknown;
    handoffAt: unknown;
    model?: unknown;
    fallbackModel?: unknown;
    maxCost?: unknown;
    isolated?: unknown;
    store?: unknown;
    project?: unknown;
}

/** The settings read at a server's start (initializationOptions, the interpreter): a change restarts an idle server. */
export const SERVER_SETTINGS = [
    'flower.python',
    'flower.engine',
    'flower.rounds',
    'flower.trim',
    'flower.handoffAt',
    'flower.model',
    'flower.fallbackModel',
    'flower.maxCost',
    'flower.isolated',
    'flower.store',
    'flower.project',
] as const;

/** The files at a folder's root whose flower settings the server reads when it starts (issue 15). */
export const SETTINGS_FILES = ['.flower.toml', 'pyproject.toml'] as const;

/**
 * The part of a settings file the server reads: all of `.flower.toml`; of `pyproject.toml`, the
 * `[tool.flower]` table and its sub-tables ('' without them), so that editing its dependencies
 * restarts nothing. `undefined` (no file) reads as ''.
 */
export function flowerPart(name: string, text: string | undefined): string {
    if (text === undefined) return '';
    if (name !== 'pyproject.toml') return text;
    const kept: string[] = [];
    let inside = false;
    for (const line of text.split(/\r?\n/)) {
        const header = /^\s*\[\[?([^\]]+)\]/.exec(line);
        if (header) inside = /^tool\.flower(\.|$)/.test((header[1] ?? '').replace(/["'\s]/g, ''));
        if (inside) kept.push(line);
    }
    return kept.join('\n');
}

/** What `WorkspaceConfiguration.inspect` reports of one setting (the parts read here). */
export interface Inspected {
    globalValue?: unknown;
    workspaceValue?: unknown;
    workspaceFolderValue?: unknown;
}

/**
 * The value the person set (folder > workspace > user), undefined when only the default applies:
 * a default sent as an option would outrank the workspace's `.flower.toml` / `[tool.flower]` and
 * the environment (issue 15: option > environment > file > default).
 */
export function explicit(inspected: Inspected | undefined): unknown {
    return inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
}

/** Only the server options, only valid values: anything else is left to the server's default. */
export function initializationOptions(raw: RawSettings): InitializationOptions {
    const options: InitializationOptions = {};
    if (isPositiveInt(raw.rounds)) options.rounds = raw.rounds;
    if (typeof raw.trim === 'boolean') options.trim = raw.trim;
    if (isPositiveInt(raw.handoffAt)) options.handoffAt = raw.handoffAt;
    const model = text(raw.model);
    if (model !== undefined) options.model = model;
    const fallback = text(raw.fallbackModel);
    if (fallback !== undefined) options.fallbackModel = fallback;
    // Empty (null) is no cap; a cap of 0 or less would refuse every run, so it is no setting either.
    if (typeof raw.maxCost === 'number' && Number.isFinite(raw.maxCost) && raw.maxCost > 0) options.maxCost = raw.maxCost;
    if (typeof raw.isolated === 'boolean') options.isolated = raw.isolated;
    const store = text(raw.store);
    if (store !== undefined) options.store = store;
    const project = text(raw.project);
    if (project !== undefined) options.project = project;
    return options;
}

function isPositiveInt(x: unknown): x is number {
    return typeof x === 'number' && Number.isInteger(x) && x > 0;
}

/** A non-empty string setting, trimmed; undefined for empty or anything else. */
function text(x: unknown): string | undefined {
    if (typeof x !== 'string') return undefined;
    const t = x.trim();
    return t === '' ? undefined : t;
}

/**
 * Whether a folder's store is shared: a `postgresql://` (or `postgres://`) URL in its `flower.store` setting (as set
 * explicitly) or, the setting unset, in `FLOWER_STORE`. The task then lives in the database and
 * leaves no `runs/lineage.json` in the folder (issue 14).
 */
export function sharedStore(setting: unknown, env: string | undefined): boolean {
    const store = text(setting) ?? text(env);
    return store !== undefined && /^postgres(ql)?:\/\//i.test(store);
}

/**
 * A line with every URL's password replaced by `***` (`postgresql://me:***@host/db`): what the
 * client writes to its log, the JSON-RPC trace included (it carries `initializationOptions.store`).
 */
export function redactUrls(line: string): string {
    return line.replace(/\b([a-z][a-z0-9+.-]*:\/\/[^\s:/@"']*:)[^\s"']*@/gi, '$1***@');
}

/** `flower.resumeOnStartup`: what to do at activation with a wake the window cut off. */
export type ResumeOnStartup = 'ask' | 'always' | 'never';

/** The setting's value, `ask` for anything unexpected. */
export function resumeOnStartup(raw: unknown): ResumeOnStartup {
    return raw === 'always' || raw === 'never' ? raw : 'ask';
}
