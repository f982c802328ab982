import assert from 'node:assert/strict';
import { test } from 'node:test';
import { CHART_ENGLISH, chart, chartData, fillIn } from '../src/model/chart';
import type { ContextPoint } from '../src/protocol';
import { status } from './fixtures';

const pt = (round: number, context: number | null, handoff = false): ContextPoint => ({ round, context, handoff });
/** 200 × 84: the plot is x 4…196, y 4…70 (14 px below for the rounds' numbers). */
const size = { width: 200, height: 84 };

test('the path runs through each round\'s context, scaled to the threshold and the window', () => {
    // handoffAt 50K, window 200K: the top is 1.15 × the higher of 50K and 55K = 63.25K (the window is out of range).
    const v = chart({ points: [pt(1, 30_000), pt(2, 55_000)], handoffAt: 50_000, window: 200_000, ...size });
    assert.equal(v.yMax, 63_250);
    assert.deepEqual(v.segments, ['M4 38.7 L196 12.6']); // 70 − 66 × 30/63.25 = 38.7; 70 − 66 × 55/63.25 = 12.6
    assert.deepEqual(v.dots.map((d) => [d.x, d.y, d.title]), [[4, 38.7, 'round 1: 30K'], [196, 12.6, 'round 2: 55K']]);
    assert.deepEqual(v.threshold, { y: 17.8, tokens: 50_000, label: 'handoff at 50K' });
    assert.equal(v.window, null, 'a window far above the points is named, not drawn');
    assert.deepEqual(v.axis, { y: 70, left: 4, right: 196, first: 'round 1', last: 'round 2' });
});

test('a handoff breaks the line and gets a marker between the rounds it separates', () => {
    const v = chart({ points: [pt(1, 30_000), pt(2, 55_000), pt(3, 12_000, true), pt(4, 20_000)], handoffAt: 50_000, window: 200_000, ...size });
    assert.equal(v.segments.length, 2, 'one line per session');
    assert.match(v.segments[0], /^M4 [\d.]+ L68 [\d.]+$/);
    assert.match(v.segments[1], /^M132 [\d.]+ L196 [\d.]+$/);
    assert.deepEqual(v.handoffs, [{ x: 100, round: 3, title: 'handoff before round 3' }]);
    assert.equal(v.dots.length, 4);
    assert.equal(v.label, 'context per work round: rounds 1–4; last 20K (round 4); highest 55K (round 2); handoff before round 3; handoff at 50K; window 200K');
});

test('the window is drawn when it is the top: the points near the wall', () => {
    const v = chart({ points: [pt(7, 150_000), pt(8, 190_000)], handoffAt: 120_000, window: 200_000, ...size });
    assert.equal(v.yMax, 200_000);
    assert.deepEqual(v.window, { y: 4, tokens: 200_000, label: 'window 200K' });
    assert.equal(v.threshold?.y, 30.4); // 70 − 66 × 0.6
    assert.deepEqual([v.axis.first, v.axis.last], ['round 7', 'round 8']);
});

test('no point: an empty chart that says so; one point: a dot in the middle, no line', () => {
    const empty = chart({ points: [], handoffAt: 120_000, window: 200_000, ...size });
    assert.equal(empty.empty, true);
    assert.deepEqual([empty.segments, empty.dots, empty.handoffs], [[], [], []]);
    assert.equal(empty.label, 'context per work round: no work round yet');
    assert.equal(empty.caption, 'context per work round: no work round yet');
    assert.deepEqual([empty.axis.first, empty.axis.last], ['', '']);
    const one = chart({ points: [pt(1, 42_300)], handoffAt: 120_000, window: 200_000, toHandoff: 30, ...size });
    assert.equal(one.empty, false);
    assert.deepEqual(one.segments, [], 'one point is no line');
    assert.deepEqual(one.dots.map((d) => [d.x, d.round]), [[100, 1]]);
    assert.equal(one.label, 'context per work round: round 1; last 42.3K (round 1); handoff at 120K; window 200K');
    assert.equal(one.caption, 'context 42.3K of 200K · handoff in 30 rounds');
    assert.deepEqual([one.axis.first, one.axis.last], ['round 1', '']);
});

test('a round without a recorded context is a gap, not a zero', () => {
    const v = chart({ points: [pt(1, 10_000), pt(2, null), pt(3, 14_000), pt(4, 16_000)], handoffAt: 120_000, window: 200_000, ...size });
    assert.deepEqual(v.dots.map((d) => d.round), [1, 3, 4]);
    assert.equal(v.segments.length, 1, 'round 1 alone draws no line; 3–4 do');
    assert.ok(v.dots.every((d) => d.y < 70), 'no point on the floor');
    assert.equal(chart({ points: [pt(1, null)], handoffAt: 1, window: 2, ...size }).empty, true);
});

test('a first point that is a handoff (the series was capped there) marks it at that round', () => {
    const v = chart({ points: [pt(51, 9_000, true), pt(52, 11_000)], handoffAt: 120_000, window: 200_000, ...size });
    assert.deepEqual(v.handoffs.map((h) => h.x), [4]);
});

test('the caption counts the rounds left in words; the words are the window\'s', () => {
    const at = (toHandoff: number): string => chart({ points: [pt(1, 1000)], handoffAt: 2000, window: 4000, toHandoff, ...size }).caption;
    assert.match(at(1), /handoff in 1 round$/);
    assert.match(at(0), /handoff at the next round$/);
    const zh = chart({
        points: [pt(1, 1000)], handoffAt: 2000, window: 4000, ...size,
        words: { title: '每轮上下文', size: '上下文 {0} / {1}', rounds: '第 {0}–{1} 轮', round: '第 {0} 轮', point: '第 {0} 轮:{1}', last: '最近 {0}(第 {1} 轮)',
            peak: '最高 {0}(第 {1} 轮)', handoff: '第 {0} 轮前交接', threshold: '{0} 交接', window: '窗口 {0}', toHandoff: '再 {0} 轮交接',
            toHandoffOne: '再 1 轮交接', handoffDue: '下一轮交接', empty: '还没有干活轮' },
    });
    assert.equal(zh.label, '每轮上下文: 第 1 轮; 最近 1K(第 1 轮); 2K 交接; 窗口 4K');
    assert.equal(zh.caption, '上下文 1K / 4K');
    assert.equal(fillIn('{0} of {1}, {2}', 'a', 2), 'a of 2, {2}');
});

test('a context over the window stays inside the drawing; a tiny size is still a drawing', () => {
    const v = chart({ points: [pt(1, 250_000), pt(2, 100_000)], handoffAt: 120_000, window: 200_000, ...size });
    assert.equal(v.yMax, 250_000);
    assert.ok(v.dots.every((d) => d.y >= 4 && d.y <= 70));
    const tiny = chart({ points: [pt(1, 5), pt(2, 6)], handoffAt: 10, window: 20, width: 0, height: 0 });
    assert.ok(tiny.width > 0 && tiny.height > 0 && tiny.dots.every((d) => Number.isFinite(d.x) && Number.isFinite(d.y)));
});

test('the page is sent the status\'s series with its threshold, window and forecast; nothing before a work round', () => {
    assert.equal(chartData(null), null);
    assert.equal(chartData(status({ forecast: null })), null);
    assert.equal(chartData(status({})), null, 'an older flower sends no forecast');
    const forecast = { rounds: 2, slope: 2500, toHandoff: 16, toWindow: 48, wakePerRound: 0.4, taskPerRound: 0.4, points: [pt(1, 80_000), pt(2, 82_500)] };
    assert.equal(chartData(status({ forecast: { ...forecast, points: [] } })), null);
    assert.deepEqual(chartData(status({ forecast, handoffAt: 120_000, window: 1_000_000 })), {
        points: forecast.points, handoffAt: 120_000, window: 1_000_000, toHandoff: 16, words: CHART_ENGLISH,
    });
});
