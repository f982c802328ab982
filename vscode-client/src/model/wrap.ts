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

/** Inside a name, the places that still read as a boundary: after `-`, `_`, `.` (`run_all_the_benchmarks.py`). */
const INSIDE = /[-_.]/;

/**
 * A piece cut further at its name's own boundaries, for a line narrower than the piece (VS Code's narrowest side bar,
 * 170 px, holds about 18 characters): the page lets the line break there, and anywhere only inside a part wider still.
 * A piece that fits its line is never broken at these (it moves to the next line whole). Joined they are `piece` again.
 */
export function nameParts(piece: string): string[] {
    const parts: string[] = [];
    let start = 0;
    let name = false; // the part so far holds more than boundaries
    for (let i = 0; i < piece.length - 1; i++) {
        const boundary = INSIDE.test(piece[i]);
        // Not before another boundary (`--`, `..`), nor after a part of boundaries alone (`--output`, `.git`).
        if (boundary && name && !INSIDE.test(piece[i + 1])) {
            parts.push(piece.slice(start, i + 1));
            start = i + 1;
            name = false;
        } else if (!boundary) {
            name = true;
        }
    }
    parts.push(piece.slice(start));
    return parts;
}

function tokenLength(text: string, from: number): number {
    let end = from;
    while (end < text.length && text[end] !== ' ' && text[end] !== '\n' && text[end] !== '\t') end++;
    return end - from;
}
