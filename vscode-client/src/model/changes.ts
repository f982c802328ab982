/** The Changes tree's words, pure (unit-tested in Node): counts, wake labels and file counts. */
import type { ChangedFile } from '../protocol';

/** `+3 −1`; `binary` when lines cannot be counted. */
export function countsLabel(file: Pick<ChangedFile, 'added' | 'removed'>): string {
    return file.added === null || file.removed === null ? 'binary' : `+${file.added} −${file.removed}`;
}

/** ` · by the subagent write the docs (general-purpose)` for a subagent's write (issue 32), else ''; `{0}` = the subagent. */
export function byLabel(file: Pick<ChangedFile, 'agent'>, template: string): string {
    return file.agent ? ` · ${template.replace('{0}', file.agent)}` : '';
}

/** `wake #2`, from the localized template (`{0}` = the wake). */
export function wakeLabel(wake: number, template: string): string {
    return template.replace('{0}', String(wake));
}

/** `1 file` or `3 files`: the singular's own template, else the plural's (`{0}` = the count); both localized (issue 34). */
export function countLabel(n: number, one: string, many: string): string {
    return n === 1 ? one : many.replace('{0}', String(n));
}
