/**
 * One folder's transcript as the client has seen it (D8): live notifications appended by
 * their per-folder `seq`, history pages (flower/history) merged in by `uuid`, pruner verdicts
 * applied. Every change is an upsert of a row with a position, numbered by `op`, so a view
 * receives only what changed and can ask for what it missed.
 */
import type {
    BannerNotification,
    HandoffNotification,
    HeaderNotification,
    HistoryResult,
    NoticeNotification,
    PrunedVerdict,
    QuestionNotification,
    StepEndNotification,
    StepStartNotification,
    TranscriptNotification,
    VerdictNotification,
    WaitNotification,
} from '../protocol';
import type { Row, RowKind } from './rows';
import type { StepInfo } from './steps';

/** How many changes are kept for a view that comes back. */
export const OP_LOG = 5000;

/** A live event that is not a transcript entry (it has no seq and no history). */
export type LiveEvent =
    | { kind: 'banner'; n: BannerNotification }
    | { kind: 'header'; n: HeaderNotification }
    | { kind: 'verdict'; n: VerdictNotification }
    | { kind: 'wait'; n: WaitNotification }
    | { kind: 'handoff'; n: HandoffNotification }
    | { kind: 'notice'; n: NoticeNotification }
    | { kind: 'question'; n: QuestionNotification };

export class TranscriptModel {
    /** Rows in increasing `pos`. */
    private rows: Row[] = [];
    private byKey = new Map<string, Row>();
    private lastLiveSeq = 0;
    private counter = 0;
    /** The changes since op `firstOp`; `op` is the number of the last one. */
    private log: Row[] = [];
    private firstOp = 1;
    op = 0;
    /**
     * `before` for the next older history page: undefined before the first page, null when
     * the oldest entry has been merged.
     */
    nextBefore: number | null | undefined = undefined;
    /** Each step run's section head facts, by manifest name (the newest run of a name wins). */
    private steps = new Map<string, StepInfo>();

    /** The section heads' facts, for the page. */
    stepList(): StepInfo[] {
        return [...this.steps.values()];
    }

    /** `flower/stepStart`: the step's head says `running`. */
    stepStarted(n: StepStartNotification): void {
        if (n.step !== null) {
            this.steps.set(n.step, { step: n.step, title: n.label ?? n.step, state: 'running', costUsd: null, durationS: null, passed: null });
        }
    }

    /** `flower/stepEnd`: done or failed, with its duration and cost. */
    stepEnded(n: StepEndNotification): void {
        if (n.step === null) return;
        this.steps.set(n.step, {
            step: n.step,
            title: n.label ?? n.step,
            state: n.ok ? 'done' : 'failed',
            costUsd: n.costUsd,
            durationS: n.durationS,
            passed: null,
        });
    }

    /** Rows in order (a copy). */
    all(): Row[] {
        return [...this.rows];
    }

    get size(): number {
        return this.rows.length;
    }

    /** True while older entries may exist in the server's history. */
    get hasOlderHistory(): boolean {
        return this.nextBefore !== null;
    }

    /**
     * Attached to the engine's folder (flower/attach): the running wake's `recent` entries, which
     * may not be in sessions.db yet (each uuid is shown once, so history merged later adds only
     * what they lack; a sentence said, uuid null, is in history as the stored user entry), and
     * from now on live entries only above `cursor` (those up to it are in history or `recent`).
     */
    attached(recent: readonly TranscriptNotification[], cursor: number): Row[] {
        const changed: Row[] = [];
        for (const n of recent) {
            if (n.uuid === null || this.byKey.has(n.uuid)) continue;
            const row = this.fromEntry(n, this.livePos(n));
            this.insert(row);
            changed.push(row);
        }
        this.lastLiveSeq = Math.max(this.lastLiveSeq, cursor);
        return this.commit(changed, true);
    }

    /** A live `flower/transcript`; returns the changed rows (none for a duplicate). */
    appendTranscript(n: TranscriptNotification): Row[] {
        if (n.seq <= this.lastLiveSeq) return [];
        this.lastLiveSeq = n.seq;
        if (n.uuid !== null && this.byKey.has(n.uuid)) return [];
        return this.commit([this.fromEntry(n, this.livePos(n))]);
    }

    /** A live event other than a transcript entry, appended at the end. */
    appendEvent(e: LiveEvent): Row[] {
        const row = this.blank(e.kind, this.endPos());
        switch (e.kind) {
            case 'banner':
            case 'notice':
            case 'question':
                row.text = e.n.text;
                break;
            case 'header':
                row.text = e.n.text;
                row.step = e.n.step;
                break;
            case 'verdict':
                // The judge's own words are already a row above: the verdict line keeps their first line; the page
                // puts the round and the verdict into words in the window's language (issue #25).
                row.text = e.n.reasons.split('\n', 1)[0];
                row.step = e.n.step;
                row.stepTitle = e.n.label;
                row.passed = e.n.passed;
                if (e.n.step !== null) {
                    this.steps.set(e.n.step, {
                        step: e.n.step,
                        title: e.n.label ?? e.n.step,
                        state: 'done',
                        costUsd: e.n.costUsd,
                        durationS: e.n.durationS,
                        passed: e.n.passed,
                    });
                }
                break;
            case 'wait':
                row.text =
                    e.n.reason === 'offline'
                        ? `offline — next probe in ${Math.round(e.n.seconds)} s (${e.n.error})`
                        : `${e.n.reason}: waiting ${Math.round(e.n.seconds)} s (attempt ${e.n.attempt}/${e.n.maxAttempts}) — ${e.n.error}`;
                row.step = e.n.step;
                break;
            case 'handoff':
                row.text = `handoff → ${e.n.path}`;
                row.sessionId = e.n.newSession;
                break;
        }
        return this.commit([row]);
    }

    /**
     * Merge a history page (protocol.md: oldest first). An entry already shown keeps its place
     * and takes the page's verdict; a new one goes right after the last known entry before it
     * in the page, or above everything when none is (an older page).
     */
    mergeHistory(page: HistoryResult): Row[] {
        const first = this.nextBefore === undefined;
        this.nextBefore = page.nextBefore;
        for (const s of page.steps ?? []) {
            // A step running live is newer than any run of that name the manifest recorded.
            if (this.steps.get(s.step)?.state === 'running') continue;
            this.steps.set(s.step, {
                step: s.step,
                title: s.label,
                state: s.ok ? 'done' : 'failed',
                costUsd: s.costUsd,
                durationS: s.durationS,
                passed: s.passed,
            });
        }
        const changed: Row[] = [];
        // Runs of new entries, each after an anchor row (null: above everything).
        const runs: { anchor: Row | null; rows: TranscriptNotification[] }[] = [];
        let current: { anchor: Row | null; rows: TranscriptNotification[] } = { anchor: null, rows: [] };
        page.entries.forEach((entry, i) => {
            const key = entryKey(entry, i);
            const known = this.byKey.get(key) ?? (first ? this.liveSentence(entry) : undefined);
            if (known !== undefined) {
                if (known.pruned !== entry.pruned || known.prunedText !== entry.prunedText || known.key !== key) {
                    known.pruned = entry.pruned;
                    known.prunedText = entry.prunedText;
                    changed.push(known);
                }
                runs.push(current);
                current = { anchor: known, rows: [] };
            } else {
                current.rows.push(entry);
            }
        });
        runs.push(current);
        for (const run of runs) {
            if (run.rows.length === 0) continue;
            const lo = run.anchor === null ? this.startPos() - run.rows.length - 1 : run.anchor.pos;
            const hi = run.anchor === null ? this.startPos() : this.posAfter(run.anchor);
            const step = (hi - lo) / (run.rows.length + 1);
            run.rows.forEach((entry, i) => {
                const row = this.fromEntry(entry, lo + step * (i + 1));
                if (entry.uuid === null) row.key = `h:${entry.seq}:${i}`;
                this.insert(row);
                changed.push(row);
            });
        }
        return this.commit(changed, true);
    }

    /**
     * `flower/approved` with a denial (issue 34): the call's row says it was denied and why, since no result follows
     * it live. Returns the changed row (none when the call is not shown, or is shown denied already).
     */
    denied(toolUseId: string, reason: string | null): Row[] {
        const row = this.rows.find((r) => r.toolUseId === toolUseId && r.kind === 'tool' && !r.result);
        const said = reason ?? '';
        if (row === undefined || row.denied === said) return [];
        row.denied = said;
        return this.commit([row], true);
    }

    /** `flower/pruned`: the session's verdicts, replacing earlier ones; entries not listed are kept as they are. */
    applyVerdicts(sessionId: string, verdicts: Record<string, PrunedVerdict>): Row[] {
        const changed: Row[] = [];
        for (const row of this.rows) {
            if (row.sessionId !== sessionId || row.uuid === null) continue;
            // A second content block of one stored entry (`<uuid>#N`) takes its entry's verdict.
            const verdict = verdicts[row.uuid] ?? verdicts[row.uuid.replace(/#\d+$/, '')] ?? null;
            if (row.pruned === verdict || row.pruned === 'added') continue;
            row.pruned = verdict;
            if (verdict !== 'rewritten') row.prunedText = null;
            changed.push(row);
        }
        return this.commit(changed, true);
    }

    /** The last `limit` rows. */
    tail(limit: number): Row[] {
        return this.rows.slice(Math.max(0, this.rows.length - limit));
    }

    /** Up to `limit` rows just above `pos`. */
    before(pos: number, limit: number): Row[] {
        const end = this.indexOf(pos);
        return this.rows.slice(Math.max(0, end - limit), end);
    }

    /** Up to `limit` rows just below `pos`. */
    after(pos: number, limit: number): Row[] {
        let start = this.indexOf(pos);
        while (start < this.rows.length && this.rows[start].pos <= pos) start++;
        return this.rows.slice(start, start + limit);
    }

    /** The changes after op `op` (latest version of each row), or null when the log no longer reaches back. */
    since(op: number): Row[] | null {
        if (op > this.op) return null;
        if (op + 1 < this.firstOp) return null;
        const seen = new Set<string>();
        const out: Row[] = [];
        for (const row of this.log.slice(op + 1 - this.firstOp)) {
            if (seen.has(row.key)) continue;
            seen.add(row.key);
            out.push(this.byKey.get(row.key) ?? row);
        }
        return out.sort((a, b) => a.pos - b.pos);
    }

    // -- internals ----------------------------------------------------------------------

    private commit(rows: Row[], inserted = false): Row[] {
        for (const row of rows) {
            if (!inserted && !this.byKey.has(row.key)) this.insert(row);
            this.log.push(row);
            this.op++;
        }
        const over = this.log.length - OP_LOG;
        if (over > 0) {
            this.log.splice(0, over);
            this.firstOp += over;
        }
        return rows.map((r) => ({ ...r }));
    }

    private insert(row: Row): void {
        const i = this.indexOf(row.pos);
        let at = i;
        while (at < this.rows.length && this.rows[at].pos <= row.pos) at++;
        this.rows.splice(at, 0, row);
        this.byKey.set(row.key, row);
    }

    /** The first index whose pos is ≥ `pos`. */
    private indexOf(pos: number): number {
        let lo = 0;
        let hi = this.rows.length;
        while (lo < hi) {
            const mid = (lo + hi) >> 1;
            if (this.rows[mid].pos < pos) lo = mid + 1;
            else hi = mid;
        }
        return lo;
    }

    /**
     * Where a live entry goes: at the end, or a subagent's (issue 32) right after what its `Agent` call's subagent
     * showed so far (a background one works while the main agent goes on below).
     */
    private livePos(n: TranscriptNotification): number {
        if (!n.parent) return this.endPos();
        let last = -1;
        this.rows.forEach((r, i) => {
            if ((r.toolUseId === n.parent && !r.parent && !r.result) || (r.parent === n.parent && last >= 0)) last = i;
        });
        if (last < 0) return this.endPos();
        const next = this.rows[last + 1];
        return next === undefined ? this.rows[last].pos + 1 : (this.rows[last].pos + next.pos) / 2;
    }

    private endPos(): number {
        return this.rows.length === 0 ? 0 : this.rows[this.rows.length - 1].pos + 1;
    }

    private startPos(): number {
        return this.rows.length === 0 ? 0 : this.rows[0].pos;
    }

    private posAfter(anchor: Row): number {
        const i = this.rows.indexOf(anchor);
        return i + 1 < this.rows.length ? this.rows[i + 1].pos : anchor.pos + 1;
    }

    /**
     * A sentence the person said live (no uuid) that the first history page holds as the
     * stored user entry (with a uuid): the same row, so it is not shown twice.
     */
    private liveSentence(entry: TranscriptNotification): Row | undefined {
        if (entry.role !== 'user' || entry.kind !== 'text') return undefined;
        const row = this.rows.find((r) => r.kind === 'user' && r.uuid === null && r.text === entry.text);
        if (row === undefined) return undefined;
        this.byKey.delete(row.key);
        row.uuid = entry.uuid;
        row.key = entry.uuid ?? row.key;
        row.sessionId = entry.sessionId;
        this.byKey.set(row.key, row);
        return row;
    }

    private blank(kind: RowKind, pos: number): Row {
        this.counter++;
        return {
            key: `e:${this.counter}`,
            pos,
            kind,
            text: '',
            uuid: null,
            step: null,
            sessionId: null,
            toolName: null,
            toolInput: null,
            result: false,
            pruned: null,
            prunedText: null,
            passed: null,
        };
    }

    private fromEntry(n: TranscriptNotification, pos: number): Row {
        const kind: RowKind = n.kind === 'text' ? (n.role === 'user' ? 'user' : 'assistant') : 'tool';
        const row = this.blank(kind, pos);
        if (n.uuid !== null) row.key = n.uuid;
        row.text = n.text;
        row.uuid = n.uuid;
        row.step = n.step;
        row.sessionId = n.sessionId;
        row.toolName = n.toolName;
        row.toolInput = n.toolInput;
        row.result = n.kind === 'result';
        row.pruned = n.pruned;
        row.prunedText = n.prunedText;
        row.toolUseId = n.toolUseId;
        row.parent = n.parent ?? null;
        row.stepTitle = n.stepLabel ?? null;
        if (n.kind === 'result' && n.denied === true) row.denied = n.text; // what the model was told (issue 34)
        return row;
    }
}

/** An entry's identity (protocol.md: its uuid; entries without one get a key from their seq). */
function entryKey(entry: TranscriptNotification, i: number): string {
    return entry.uuid ?? `h:${entry.seq}:${i}`;
}
