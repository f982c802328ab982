/**
 * The page's window onto a long transcript: at most `cap` rows in the DOM (~3000), the
 * farthest from where the person reads dropped first; rows come back from the extension
 * when scrolled to. Pure bookkeeping of positions; the page does the DOM work.
 */

export class RowWindow {
    /** Positions of the rows in the DOM, increasing. */
    private positions: number[] = [];
    /** Rows exist above the first one shown (dropped, or history not yet loaded). */
    moreAbove = false;
    /** Rows exist below the last one shown (dropped while reading older ones). */
    moreBelow = false;

    constructor(readonly cap: number) {}

    get size(): number {
        return this.positions.length;
    }

    get first(): number | null {
        return this.positions.length > 0 ? this.positions[0] : null;
    }

    get last(): number | null {
        return this.positions.length > 0 ? this.positions[this.positions.length - 1] : null;
    }

    clear(moreAbove: boolean): void {
        this.positions = [];
        this.moreAbove = moreAbove;
        this.moreBelow = false;
    }

    /** True when `pos` is already shown. */
    has(pos: number): boolean {
        const i = this.lowerBound(pos);
        return i < this.positions.length && this.positions[i] === pos;
    }

    /**
     * Where a new row goes (its index among the shown rows), or null when it falls in a part
     * of the transcript that is not shown (above a dropped top, below a dropped bottom).
     */
    place(pos: number): number | null {
        const first = this.first;
        const last = this.last;
        if (first !== null && pos < first && this.moreAbove) return null;
        if (last !== null && pos > last && this.moreBelow) return null;
        const i = this.lowerBound(pos);
        this.positions.splice(i, 0, pos);
        return i;
    }

    /**
     * Rows to drop to stay within the cap: from the top when the person reads the bottom
     * (`reading: 'bottom'`), from the bottom when they read older rows.
     */
    trim(reading: 'top' | 'bottom'): { top: number; bottom: number } {
        const over = this.positions.length - this.cap;
        if (over <= 0) return { top: 0, bottom: 0 };
        if (reading === 'bottom') {
            this.positions.splice(0, over);
            this.moreAbove = true;
            return { top: over, bottom: 0 };
        }
        this.positions.splice(this.positions.length - over, over);
        this.moreBelow = true;
        return { top: 0, bottom: over };
    }

    private lowerBound(pos: number): number {
        let lo = 0;
        let hi = this.positions.length;
        while (lo < hi) {
            const mid = (lo + hi) >> 1;
            if (this.positions[mid] < pos) lo = mid + 1;
            else hi = mid;
        }
        return lo;
    }
}
