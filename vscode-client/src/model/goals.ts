/** 目标.md's checklist read on the client side, as core/goals.py reads it (the Goals tree before any status). */
import type { Goal } from '../protocol';

const ITEM = /^\s*[-*+]\s+\[([ xX])\]\s+(.+?)\s*$/;

/** The `- [ ]` / `- [x]` items of a checklist, in order. */
export function parseGoals(markdown: string): Goal[] {
    const out: Goal[] = [];
    for (const line of markdown.split(/\r?\n/)) {
        const m = ITEM.exec(line);
        if (m !== null) out.push({ text: m[2], done: m[1] !== ' ' });
    }
    return out;
}
