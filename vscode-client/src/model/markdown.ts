/**
 * A tiny Markdown reader for the model's replies: headings, paragraphs, fenced code, inline
 * code, bold, italic, lists. It yields a tree of text nodes that the page turns into DOM
 * nodes with `textContent` only — no HTML is ever parsed, so `<script>` stays text.
 */

export type Inline =
    | { t: 'text'; s: string }
    | { t: 'code'; s: string }
    | { t: 'strong'; c: Inline[] }
    | { t: 'em'; c: Inline[] };

export type Block =
    | { t: 'h'; level: number; c: Inline[] }
    | { t: 'p'; c: Inline[] }
    | { t: 'pre'; lang: string; s: string }
    | { t: 'ul'; items: Inline[][] }
    | { t: 'ol'; items: Inline[][] };

const FENCE = /^\s*(```|~~~)\s*([\w+-]*)\s*$/;
const HEADING = /^(#{1,6})\s+(.*)$/;
const BULLET = /^\s*[-*+]\s+(.*)$/;
const NUMBERED = /^\s*\d+[.)]\s+(.*)$/;

/** The blocks of a Markdown text. */
export function parseMarkdown(text: string): Block[] {
    const lines = text.replace(/\r\n?/g, '\n').split('\n');
    const blocks: Block[] = [];
    let para: string[] = [];
    const flush = (): void => {
        if (para.length > 0) blocks.push({ t: 'p', c: parseInline(para.join('\n')) });
        para = [];
    };
    for (let i = 0; i < lines.length; i++) {
        const line = lines[i];
        const fence = FENCE.exec(line);
        if (fence !== null) {
            flush();
            const body: string[] = [];
            i++;
            while (i < lines.length && !(lines[i].trim() === fence[1])) body.push(lines[i++]);
            blocks.push({ t: 'pre', lang: fence[2], s: body.join('\n') });
            continue;
        }
        const heading = HEADING.exec(line);
        if (heading !== null) {
            flush();
            blocks.push({ t: 'h', level: heading[1].length, c: parseInline(heading[2]) });
            continue;
        }
        const bullet = BULLET.exec(line);
        const numbered = bullet === null ? NUMBERED.exec(line) : null;
        if (bullet !== null || numbered !== null) {
            flush();
            const kind = bullet !== null ? 'ul' : 'ol';
            const items: Inline[][] = [];
            const re = kind === 'ul' ? BULLET : NUMBERED;
            let m: RegExpExecArray | null;
            while (i < lines.length && (m = re.exec(lines[i])) !== null) {
                items.push(parseInline(m[1]));
                i++;
            }
            i--;
            blocks.push({ t: kind, items });
            continue;
        }
        if (line.trim() === '') flush();
        else para.push(line);
    }
    flush();
    return blocks;
}

/** Inline code, then bold (`**`/`__`), then italic (`*`/`_`); everything else is text. */
export function parseInline(s: string): Inline[] {
    const out: Inline[] = [];
    let text = '';
    const push = (node: Inline): void => {
        if (text !== '') out.push({ t: 'text', s: text });
        text = '';
        out.push(node);
    };
    let i = 0;
    while (i < s.length) {
        const ch = s[i];
        if (ch === '`') {
            const end = s.indexOf('`', i + 1);
            if (end > i + 1) {
                push({ t: 'code', s: s.slice(i + 1, end) });
                i = end + 1;
                continue;
            }
        }
        if ((ch === '*' || ch === '_') && s[i + 1] === ch) {
            const end = closing(s, ch + ch, i + 2);
            if (end > i + 2 && opens(s, i, ch)) {
                push({ t: 'strong', c: parseInline(s.slice(i + 2, end)) });
                i = end + 2;
                continue;
            }
        }
        if ((ch === '*' || ch === '_') && s[i + 1] !== undefined && s[i + 1] !== ' ' && s[i + 1] !== ch) {
            const end = closing(s, ch, i + 1);
            if (end > i + 1 && s[end - 1] !== ' ' && opens(s, i, ch)) {
                push({ t: 'em', c: parseInline(s.slice(i + 1, end)) });
                i = end + 1;
                continue;
            }
        }
        text += ch;
        i++;
    }
    if (text !== '') out.push({ t: 'text', s: text });
    return out;
}

/** `_` emphasis does not start inside a word (snake_case, `window.__x` after a letter). */
function opens(s: string, i: number, ch: string): boolean {
    return ch !== '_' || i === 0 || !/\w/.test(s[i - 1]);
}

/** The first closing `mark` from `from`; for `_`, one not followed by a word character. */
function closing(s: string, mark: string, from: number): number {
    let end = s.indexOf(mark, from);
    while (end !== -1 && mark[0] === '_' && /\w/.test(s[end + mark.length] ?? '')) end = s.indexOf(mark, end + 1);
    return end;
}
