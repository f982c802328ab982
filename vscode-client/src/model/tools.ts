/**
 * A tool call as the transcript shows it, by kind (pure; the page turns it into DOM with
 * textContent only): Write/Edit/MultiEdit as a compact diff, Read/Glob/Grep as one
 * workspace-relative path that opens the file, Bash as its command, anything else as its
 * name and a summary. Paths are shown relative to the workspace everywhere.
 */
import type { Json } from '../protocol';

export interface DiffLine {
    /** `+` added, `-` removed, ` ` context. */
    t: '+' | '-' | ' ';
    s: string;
}

export type ToolView =
    | { kind: 'diff'; tool: string; path: string; absPath: string; lines: DiffLine[]; added: number; removed: number }
    | { kind: 'path'; tool: string; path: string; absPath: string | null; line: number | null; detail: string }
    | { kind: 'bash'; command: string; description: string }
    | { kind: 'other'; tool: string; summary: string };

type Input = { [key: string]: Json } | null;

function str(input: Input, key: string): string | null {
    const v = input?.[key];
    return typeof v === 'string' ? v : null;
}

/** `path` relative to `workspace` when inside it (`/`-separated), else as it is. */
export function relative(path: string, workspace: string): string {
    if (workspace === '') return path;
    const root = workspace.endsWith('/') ? workspace : `${workspace}/`;
    if (path === workspace || path === root) return '.';
    return path.startsWith(root) ? path.slice(root.length) : path;
}

/** Every absolute mention of the workspace in `text` made relative (`/ws/a/b.py` → `a/b.py`). */
export function relativeText(text: string, workspace: string): string {
    if (workspace === '' || !text.includes(workspace)) return text;
    const root = workspace.endsWith('/') ? workspace : `${workspace}/`;
    return text.split(root).join('').split(workspace).join('.');
}

/** The absolute path of a tool's path argument (relative ones are taken from the workspace). */
function absolute(path: string, workspace: string): string {
    return path.startsWith('/') || workspace === '' ? path : `${workspace.replace(/\/$/, '')}/${path}`;
}

function lines(s: string): string[] {
    const out = s.replace(/\r\n?/g, '\n').split('\n');
    if (out.length > 1 && out[out.length - 1] === '') out.pop();
    return out;
}

/**
 * `old` → `new` as removed and added lines, keeping the lines both share at the start and
 * the end as context (an edit's strings are short: no full diff needed).
 */
export function replacement(old: string, neu: string): DiffLine[] {
    const a = old === '' ? [] : lines(old);
    const b = neu === '' ? [] : lines(neu);
    let head = 0;
    while (head < a.length && head < b.length && a[head] === b[head]) head++;
    let tail = 0;
    while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
    return [
        ...a.slice(0, head).map((s): DiffLine => ({ t: ' ', s })),
        ...a.slice(head, a.length - tail).map((s): DiffLine => ({ t: '-', s })),
        ...b.slice(head, b.length - tail).map((s): DiffLine => ({ t: '+', s })),
        ...a.slice(a.length - tail).map((s): DiffLine => ({ t: ' ', s })),
    ];
}

/** How a tool call is shown. `summary` is the server's one-line label (`Name(argument)`). */
export function toolView(name: string | null, input: Input, summary: string, workspace: string): ToolView {
    const tool = name ?? summary.replace(/\(.*$/s, '');
    const file = str(input, 'file_path') ?? str(input, 'notebook_path');
    if (file !== null && (tool === 'Write' || tool === 'Edit' || tool === 'MultiEdit' || tool === 'NotebookEdit')) {
        let diff: DiffLine[] = [];
        if (tool === 'Write') diff = lines(str(input, 'content') ?? '').map((s) => ({ t: '+', s }));
        else if (tool === 'Edit') diff = replacement(str(input, 'old_string') ?? '', str(input, 'new_string') ?? '');
        else if (tool === 'NotebookEdit') diff = lines(str(input, 'new_source') ?? '').map((s) => ({ t: '+', s }));
        else {
            const edits = input?.edits;
            for (const edit of Array.isArray(edits) ? edits : []) {
                if (edit === null || typeof edit !== 'object' || Array.isArray(edit)) continue;
                if (diff.length > 0) diff.push({ t: ' ', s: '…' });
                diff.push(...replacement(str(edit, 'old_string') ?? '', str(edit, 'new_string') ?? ''));
            }
        }
        return {
            kind: 'diff',
            tool,
            path: relative(file, workspace),
            absPath: absolute(file, workspace),
            lines: diff,
            added: diff.filter((l) => l.t === '+').length,
            removed: diff.filter((l) => l.t === '-').length,
        };
    }
    if (tool === 'Read' && file !== null) {
        const offset = input?.offset;
        return {
            kind: 'path',
            tool,
            path: relative(file, workspace),
            absPath: absolute(file, workspace),
            line: typeof offset === 'number' && offset > 0 ? offset : null,
            detail: '',
        };
    }
    if (tool === 'Glob' || tool === 'Grep') {
        const where = str(input, 'path');
        const pattern = str(input, 'pattern') ?? '';
        return {
            kind: 'path',
            tool,
            path: where !== null ? relative(where, workspace) : pattern,
            absPath: where !== null ? absolute(where, workspace) : null,
            line: null,
            detail: where !== null ? pattern : '',
        };
    }
    if (tool === 'Bash') return { kind: 'bash', command: str(input, 'command') ?? '', description: str(input, 'description') ?? '' };
    return { kind: 'other', tool, summary: relativeText(summary, workspace) };
}

/** The language id VS Code would give a file, by its extension (for the diff's code colouring). */
export function languageOf(path: string): string {
    const ext = path.toLowerCase().replace(/^.*\./s, '');
    const known: Record<string, string> = {
        py: 'python', ts: 'typescript', tsx: 'typescript', js: 'javascript', mjs: 'javascript', jsx: 'javascript',
        json: 'json', md: 'markdown', sh: 'shell', bash: 'shell', rs: 'rust', go: 'go', java: 'java', c: 'c', h: 'c',
        cpp: 'cpp', css: 'css', html: 'html', toml: 'toml', yaml: 'yaml', yml: 'yaml', rb: 'ruby',
    };
    return known[ext] ?? 'plaintext';
}

export interface Token {
    /** `kw` keyword, `str` string, `com` comment, `num` number, `` plain. */
    c: 'kw' | 'str' | 'com' | 'num' | '';
    s: string;
}

const KEYWORDS: Record<string, Set<string>> = {
    python: new Set('def class return if elif else for while in import from as with try except finally raise yield lambda not and or is None True False pass break continue async await global nonlocal'.split(' ')),
    typescript: new Set('function class return if else for while of in import from export as const let var new try catch finally throw yield async await interface type extends implements null undefined true false typeof instanceof switch case break continue default'.split(' ')),
    shell: new Set('if then else elif fi for do done while case esac function in echo export local return'.split(' ')),
    rust: new Set('fn let mut pub struct enum impl trait use mod match if else for while loop return self Self true false as in where'.split(' ')),
    go: new Set('func package import var const type struct interface return if else for range switch case go defer map chan nil true false'.split(' ')),
};
KEYWORDS.javascript = KEYWORDS.typescript;

/** One line cut into coloured tokens: keywords, strings, comments, numbers (a light tokenizer, not a grammar). */
export function tokens(line: string, language: string): Token[] {
    const words = KEYWORDS[language];
    if (words === undefined) return [{ c: '', s: line }];
    const comment = language === 'python' || language === 'shell' ? '#' : '//';
    const out: Token[] = [];
    const re = /("(?:[^"\\]|\\.)*"?|'(?:[^'\\]|\\.)*'?|`(?:[^`\\]|\\.)*`?)|(\b\d[\d_.]*\b)|([A-Za-z_]\w*)/g;
    let last = 0;
    const at = commentAt(line, comment);
    const code = at >= 0 ? line.slice(0, at) : line;
    let m: RegExpExecArray | null;
    while ((m = re.exec(code)) !== null) {
        const kind: Token['c'] = m[1] !== undefined ? 'str' : m[2] !== undefined ? 'num' : words.has(m[3]) ? 'kw' : '';
        if (kind === '') continue;
        if (m.index > last) out.push({ c: '', s: code.slice(last, m.index) });
        out.push({ c: kind, s: m[0] });
        last = m.index + m[0].length;
    }
    if (last < code.length) out.push({ c: '', s: code.slice(last) });
    if (code.length < line.length) out.push({ c: 'com', s: line.slice(code.length) });
    return out;
}

/** Where a line comment starts outside any string, or -1. */
function commentAt(line: string, mark: string): number {
    let quote: string | null = null;
    for (let i = 0; i < line.length; i++) {
        const ch = line[i];
        if (quote !== null) {
            if (ch === '\\') i++;
            else if (ch === quote) quote = null;
        } else if (ch === '"' || ch === "'" || ch === '`') quote = ch;
        else if (line.startsWith(mark, i)) return i;
    }
    return -1;
}
