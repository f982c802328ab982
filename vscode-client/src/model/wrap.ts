/**
 * Where a long command or path may wrap (issue 34): after a path separator and the punctuation
 * between a command's arguments, never inside a name. The page makes each piece an inline block,
 * so a line breaks between pieces (not after the `-` of `flower-e2e-ws`, nor anywhere in a name as
 * `overflow-wrap: anywhere` on the whole text did); spaces wrap by themselves. Pure: no DOM,
 * unit-tested in Node.
 */

/** Characters after which a line may break: path separators, `=`, `&`, `?`, `,`, `;`, `|`, `:`. */
const AFTER = /[/\\=&?,;|:]/;
/** Pieces shorter than this are not split further (`a/b` stays whole: no break is worth it there). */
const MIN_TOKEN = 12;

/** `text` cut into pieces, each ending at a break opportunity; joined they are `text` again. */
export function breakPieces(text: string): string[] {
    const pieces: string[] = [];
    let start = 0;
    let tokenStart = 0;
    for (let i = 0; i < text.length; i++) {
        const c = text[i];
        if (c === ' ' || c === '\n' || c === '\t') {
            tokenStart = i + 1;
            continue;
        }
        // Break after a separator inside a long enough token, and not right before another separator (`//`, `:/`).
        const next = text[i + 1];
        if (AFTER.test(c) && next !== undefined && !AFTER.test(next) && next !== ' ' && i + 1 - tokenStart >= 2 && tokenLength(text, tokenStart) >= MIN_TOKEN) {
            pieces.push(text.slice(start, i + 1));
            start = i + 1;
        }
    }
    pieces.push(text.slice(start));
    return pieces;
}

function tokenLength(text: string, from: number): number {
    let end = from;
    while (end < text.length && text[end] !== ' ' && text[end] !== '\n' && text[end] !== '\t') end++;
    return end - from;
}
