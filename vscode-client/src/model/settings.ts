/** flower's settings → the server's `initializationOptions` (protocol.md), and the settings a server restarts for. */
import type { InitializationOptions, SettingsProblem } from '../protocol';

/** Every server option, as `initializationOptions` names it; its setting is `flower.<option>`. */
const EVERY_OPTION: Record<keyof InitializationOptions, true> = {
    rounds: true,
    trim: true,
    handoffAt: true,
    model: true,
    fallbackModel: true,
    maxCost: true,
    isolated: true,
    store: true,
    project: true,
    allow: true,
    mode: true,
    approvalsWait: true,
    approvalsUnattended: true,
    retentionDays: true,
};
export type Option = keyof InitializationOptions;
export const OPTIONS = Object.keys(EVERY_OPTION) as Option[];

/** The settings read at a server's start (initializationOptions, the interpreter): a change restarts an idle server. */
export const SERVER_SETTINGS: readonly string[] = ['flower.python', 'flower.engine', ...OPTIONS.map((o) => `flower.${o}`)];

/** The files at a folder's root whose flower settings the server reads when it starts. */
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
        inside = flowerTable(line) ?? inside;
        if (inside) kept.push(line);
    }
    return kept.join('\n');
}

/** For a TOML table header, whether it opens `[tool.flower]` or one of its sub-tables; undefined for any other line. */
function flowerTable(line: string): boolean | undefined {
    const header = /^\s*\[\[?([^\]]+)\]/.exec(line);
    return header ? /^tool\.flower(\.|$)/.test((header[1] ?? '').replace(/["'\s]/g, '')) : undefined;
}

/** Where the person fixes a setting the server cannot use (FolderStatus.settings). */
export type SettingsFix =
    | { kind: 'setting'; id: string; scope: SettingScope }
    | { kind: 'file'; path: string; key: string }
    | null;

/** The settings editor's scope holding a value: the one whose value the server got (folder > workspace > user). */
export type SettingScope = 'folder' | 'workspace' | 'user';

/**
 * What "Open Settings" opens for a problem: its setting `flower.<option>`, at the scope the
 * value came from; else its settings file; null for an environment variable (the line names it).
 */
export function settingsFix(problem: SettingsProblem, inspected: Inspected | undefined, multiRoot: boolean): SettingsFix {
    if (problem.option !== null) {
        // The scope `explicit` took the value from (null counts as unset there too).
        const has = (value: unknown): boolean => value !== undefined && value !== null;
        const scope: SettingScope = has(inspected?.workspaceFolderValue)
            ? (multiRoot ? 'folder' : 'workspace')
            : has(inspected?.workspaceValue) ? 'workspace' : 'user';
        return { kind: 'setting', id: `flower.${problem.option}`, scope };
    }
    return problem.file !== null ? { kind: 'file', path: problem.file, key: problem.key } : null;
}

/** The 0-based line that sets `key` in a settings file (in `pyproject.toml`, inside `[tool.flower]`); 0 if none does. */
export function keyLine(name: string, text: string, key: string): number {
    const sets = new RegExp(`^\\s*["']?${key.replace(/[^\w-]/g, '\\$&')}["']?\\s*=`);
    let inside = name !== 'pyproject.toml';
    for (const [i, line] of text.split(/\r?\n/).entries()) {
        if (name === 'pyproject.toml') inside = flowerTable(line) ?? inside;
        if (inside && sets.test(line)) return i;
    }
    return 0;
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
 * the environment (option > environment > file > default).
 */
export function explicit(inspected: Inspected | undefined): unknown {
    return inspected?.workspaceFolderValue ?? inspected?.workspaceValue ?? inspected?.globalValue;
}

/**
 * The options sent at `initialize`: each setting's value as the person set it (`read`, undefined for
 * unset), unchecked. The server is the one validator: a bad value comes back as its one-line error
 * (FolderStatus.settings), never silently dropped here.
 */
export function initializationOptions(read: (option: Option) => unknown): InitializationOptions {
    const options: InitializationOptions = {};
    for (const option of OPTIONS) {
        const value = read(option);
        if (value !== undefined) options[option] = value;
    }
    return options;
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
 * leaves no `runs/lineage.json` in the folder (D9).
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
