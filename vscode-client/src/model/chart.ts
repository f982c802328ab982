/**
 * The context chart (issue 34; S19, S26) as geometry: the context each work round ended at, the handoffs between
 * sessions, the handoff threshold and the window, laid out for a given size. No `vscode` and no DOM here (unit-tested
 * in plain Node); the transcript page turns the result into SVG elements.
 *
 * The vertical scale ends a little above the higher of the threshold and the largest point, or at the window when
 * that is lower: a 1M window would otherwise squash a 120K threshold and every point into the bottom tenth. The
 * window's line is drawn only when it is in range; the text alternative always names it.
 */
import type { ContextPoint, FolderStatus } from '../protocol';
import { formatTokens } from './gauge';

/** The chart's words in the window's language; `{0}` and `{1}` are filled in. */
export interface ChartWords {
    /** The chart's name: `context per work round`. */
    title: string;
    /** The caption's size: `context {0} of {1}` (the last round's, the window). */
    size: string;
    /** `rounds {0}–{1}`. */
    rounds: string;
    /** `round {0}`. */
    round: string;
    /** One point: `round {0}: {1}`. */
    point: string;
    /** `last {0} (round {1})`. */
    last: string;
    /** `highest {0} (round {1})`. */
    peak: string;
    /** A handoff marker: `handoff before round {0}`. */
    handoff: string;
    /** The threshold's line: `handoff at {0}`. */
    threshold: string;
    /** The window's line: `window {0}`. */
    window: string;
    /** The forecast in the caption: `handoff in {0} rounds`. */
    toHandoff: string;
    /** `handoff in 1 round`. */
    toHandoffOne: string;
    /** The forecast says the threshold is reached: `handoff at the next round`. */
    handoffDue: string;
    /** No point to draw: `no work round yet`. */
    empty: string;
}

export const CHART_ENGLISH: ChartWords = {
    title: 'context per work round',
    size: 'context {0} of {1}',
    rounds: 'rounds {0}–{1}',
    round: 'round {0}',
    point: 'round {0}: {1}',
    last: 'last {0} (round {1})',
    peak: 'highest {0} (round {1})',
    handoff: 'handoff before round {0}',
    threshold: 'handoff at {0}',
    window: 'window {0}',
    toHandoff: 'handoff in {0} rounds',
    toHandoffOne: 'handoff in 1 round',
    handoffDue: 'handoff at the next round',
    empty: 'no work round yet',
};

export interface ChartInput {
    /** The status's `forecast.points`, oldest first. */
    points: ContextPoint[];
    handoffAt: number;
    window: number;
    /** The forecast's rounds left to the threshold, for the caption (null: not growing, or unknown). */
    toHandoff?: number | null;
    /** The drawing's size in CSS pixels. */
    width: number;
    height: number;
    words?: ChartWords;
}

/** A horizontal line across the plot (the threshold, the window). */
export interface Level {
    y: number;
    tokens: number;
    label: string;
}

export interface ChartView {
    width: number;
    height: number;
    /** No point has a recorded context: nothing to draw but the words. */
    empty: boolean;
    /** The tokens at the top of the plot. */
    yMax: number;
    /** One path (`M x y L x y …`) per unbroken run of points: a handoff or a round without a context breaks the line. */
    segments: string[];
    /** A dot per round with a recorded context. */
    dots: { x: number; y: number; round: number; context: number; title: string }[];
    /** A vertical marker per handoff, between the round before it and the round it started. */
    handoffs: { x: number; round: number; title: string }[];
    threshold: Level | null;
    window: Level | null;
    /** The plot's bottom (the rounds' axis) and its first and last round's labels (`round 1`). */
    axis: { y: number; left: number; right: number; first: string; last: string };
    /** The one line above the chart: the last round's size against the window, the forecast (short: the side bar is narrow). */
    caption: string;
    /** The text alternative (`aria-label`, `<title>`): every number the drawing shows, in words. */
    label: string;
}

/** Room around the plot: labels of the lines sit inside it, the rounds' numbers below it. */
const PAD = { left: 4, right: 4, top: 4, bottom: 14 };
/** Headroom above the higher of the threshold and the largest point. */
const HEADROOM = 1.15;

/** `template` with `{0}`, `{1}` … filled in. */
export function fillIn(template: string, ...values: (string | number)[]): string {
    return template.replace(/\{(\d)\}/g, (whole, i: string) => (values[Number(i)] !== undefined ? String(values[Number(i)]) : whole));
}

/** Coordinates to a tenth of a pixel: short path strings, stable in tests. */
function px(n: number): number {
    return Math.round(n * 10) / 10;
}

/** The chart for these points at this size. */
export function chart(input: ChartInput): ChartView {
    const words = input.words ?? CHART_ENGLISH;
    const { points, handoffAt, window } = input;
    const width = Math.max(input.width, PAD.left + PAD.right + 1);
    const height = Math.max(input.height, PAD.top + PAD.bottom + 1);
    const plotW = width - PAD.left - PAD.right;
    const plotH = height - PAD.top - PAD.bottom;
    const known = points.filter((p): p is ContextPoint & { context: number } => p.context !== null);
    const largest = known.reduce((m, p) => Math.max(m, p.context), 0);
    const top = Math.round(Math.max(handoffAt > 0 ? handoffAt : 0, largest, 1) * HEADROOM);
    const yMax = Math.max(window > 0 ? Math.min(window, top) : top, largest, 1);
    const first = points.length > 0 ? points[0].round : 0;
    const lastRound = points.length > 0 ? points[points.length - 1].round : 0;
    const x = (round: number): number =>
        px(lastRound === first ? PAD.left + plotW / 2 : PAD.left + ((round - first) / (lastRound - first)) * plotW);
    const y = (tokens: number): number => px(PAD.top + plotH * (1 - Math.min(tokens, yMax) / yMax));

    const segments: string[] = [];
    let run: string[] = [];
    const flush = (): void => {
        if (run.length > 1) segments.push(run.join(' '));
        run = [];
    };
    for (const p of points) {
        if (p.handoff || p.context === null) flush();
        if (p.context !== null) run.push(`${run.length === 0 ? 'M' : 'L'}${x(p.round)} ${y(p.context)}`);
    }
    flush();

    const dots = known.map((p) => ({
        x: x(p.round),
        y: y(p.context),
        round: p.round,
        context: p.context,
        title: fillIn(words.point, p.round, formatTokens(p.context)),
    }));
    const handoffs = points.flatMap((p, i) => {
        if (!p.handoff) return [];
        const before = i > 0 ? points[i - 1].round : null;
        return [{ x: before === null ? x(p.round) : px((x(before) + x(p.round)) / 2), round: p.round, title: fillIn(words.handoff, p.round) }];
    });
    const level = (tokens: number, template: string): Level | null =>
        tokens > 0 && tokens <= yMax ? { y: y(tokens), tokens, label: fillIn(template, formatTokens(tokens)) } : null;

    const last = known.length > 0 ? known[known.length - 1] : null;
    const peak = known.reduce<(ContextPoint & { context: number }) | null>((m, p) => (m === null || p.context > m.context ? p : m), null);
    const span = points.length === 0 ? null : first === lastRound ? fillIn(words.round, first) : fillIn(words.rounds, first, lastRound);
    const said: string[] = [];
    if (span !== null) said.push(span);
    if (last !== null) said.push(fillIn(words.last, formatTokens(last.context), last.round));
    if (peak !== null && peak !== last) said.push(fillIn(words.peak, formatTokens(peak.context), peak.round));
    said.push(...handoffs.map((h) => h.title));
    if (handoffAt > 0) said.push(fillIn(words.threshold, formatTokens(handoffAt)));
    if (window > 0) said.push(fillIn(words.window, formatTokens(window)));
    const caption = last === null
        ? `${words.title}: ${words.empty}`
        : [
              fillIn(words.size, formatTokens(last.context), window > 0 ? formatTokens(window) : '?'),
              ...(input.toHandoff != null ? [roundsLeft(input.toHandoff, words)] : []),
          ].join(' · ');

    return {
        width,
        height,
        empty: known.length === 0,
        yMax,
        segments,
        dots,
        handoffs,
        threshold: level(handoffAt, words.threshold),
        window: level(window, words.window),
        axis: {
            y: px(PAD.top + plotH),
            left: PAD.left,
            right: px(PAD.left + plotW),
            first: span === null ? '' : fillIn(words.round, first),
            last: span === null || first === lastRound ? '' : fillIn(words.round, lastRound),
        },
        caption,
        label: known.length === 0 ? `${words.title}: ${words.empty}` : `${words.title}: ${said.join('; ')}`,
    };
}

function roundsLeft(n: number, words: ChartWords): string {
    return n <= 0 ? words.handoffDue : n === 1 ? words.toHandoffOne : fillIn(words.toHandoff, n);
}

/** What the transcript page is sent to draw the chart (the size is the page's own). */
export interface ChartData {
    points: ContextPoint[];
    handoffAt: number;
    window: number;
    toHandoff: number | null;
    words: ChartWords;
}

/** The chart's data in a folder's status; null (no chart shown) before the task's first work round, or from a flower without the series. */
export function chartData(status: FolderStatus | null, words: ChartWords = CHART_ENGLISH): ChartData | null {
    const points = status?.forecast?.points ?? [];
    if (status == null || points.length === 0) return null;
    return { points, handoffAt: status.handoffAt, window: status.window, toHandoff: status.forecast?.toHandoff ?? null, words };
}
