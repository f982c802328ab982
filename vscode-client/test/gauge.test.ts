import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { cap, capReached, costLine, fill, forecastLines, formatTokens, gauge, percent, shortModel, STORE_WARN_BYTES, storeLine, type Translate, usd } from '../src/model/gauge';
import type { FolderStatus } from '../src/protocol';
import { status } from './fixtures';

test('the gauge reads tokens / window · percent from the server status', () => {
    const g = gauge({ status: status(), server: 'running' });
    assert.equal(g.text, 'flower 80.2K / 200K · 40%');
    assert.equal(g.colour, null);
    assert.equal(g.spinner, false);
});

test('the window is the one the server reports, not an assumed 200K', () => {
    const g = gauge({ status: status({ context: 500_000, window: 1_000_000, handoffAt: 600_000 }), server: 'running' });
    assert.equal(g.text, 'flower 500K / 1M · 50%');
});

test('a context over the window clamps at 100 %', () => {
    assert.equal(gauge({ status: status({ context: 250_000 }), server: 'running' }).text, 'flower 250K / 200K · 100%');
    assert.equal(percent(250_000, 200_000), 100);
    assert.equal(percent(-5, 200_000), 0);
});

test('an unknown window shows the tokens alone, an unknown context a dash', () => {
    assert.equal(gauge({ status: status({ window: 0 }), server: 'running' }).text, 'flower 80.2K');
    assert.equal(gauge({ status: status({ context: null }), server: 'running' }).text, 'flower — / 200K');
    assert.equal(gauge({ status: null, server: 'starting' }).text, 'flower');
});

test('warning from the handoff threshold on, not below it', () => {
    assert.equal(gauge({ status: status({ context: 119_999 }), server: 'running' }).colour, null);
    assert.equal(gauge({ status: status({ context: 120_000 }), server: 'running' }).colour, 'warning');
});

test('a stopped server says so, in the error colour, whatever the last status said', () => {
    const g = gauge({ status: status({ running: true }), server: 'stopped' });
    assert.equal(g.text, 'flower: stopped');
    assert.equal(g.colour, 'error');
    assert.equal(g.spinner, false);
});

test('offline: error colour and a countdown that the caller counts down', () => {
    const waiting = { reason: 'offline', seconds: 15, attempt: 2, maxAttempts: 6, until: 1e9, secondsLeft: 12.1 };
    const s = status({ running: true, waiting, context: 130_000 });
    assert.equal(gauge({ status: s, server: 'running' }).text, 'flower offline · retry in 13 s');
    const later = gauge({ status: s, server: 'running', waitLeft: 4.2 });
    assert.equal(later.text, 'flower offline · retry in 5 s');
    assert.equal(later.colour, 'error');
    assert.equal(gauge({ status: s, server: 'running', waitLeft: -3 }).text, 'flower offline · retry in 0 s');
});

test('a backoff wait keeps the size and adds the countdown', () => {
    const waiting = { reason: 'backoff', seconds: 4, attempt: 1, maxAttempts: 6, until: 1e9, secondsLeft: 3.5 };
    const g = gauge({ status: status({ running: true, waiting }), server: 'running' });
    assert.equal(g.text, 'flower 80.2K / 200K · 40% · retry in 4 s');
    assert.equal(g.colour, null);
});

test('a spinner while a step runs; the tooltip names folder, wake, step, goals, verdict, wait', () => {
    const g = gauge({
        status: status({
            running: true,
            step: '干活#round2',
            verdict: { round: 1, passed: false, reasons: 'subtraction is missing' },
            waiting: { reason: 'backoff', seconds: 4, attempt: 1, maxAttempts: 6, until: 1e9, secondsLeft: 4 },
        }),
        server: 'running',
    });
    assert.equal(g.spinner, true);
    const tip = g.tooltip.join('\n');
    for (const part of ['app', 'wake #3', 'step: 干活#round2', 'goals 1/2', 'round 1: not yet — subtraction is missing', 'waiting (backoff), attempt 1/6']) {
        assert.ok(tip.includes(part), `${part} missing in ${tip}`);
    }
});

test('tokens are written as people read them', () => {
    assert.deepEqual([812, 1000, 80213, 199_950, 1_234_567].map(formatTokens), ['812', '1K', '80.2K', '200K', '1.2M']);
});

// -- the model in use and what work cost (issue 15) ---------------------------------------

const MODEL = 'claude-sonnet-4-5-20250929';

test('the gauge names the model in use beside its window; the tooltip has its whole name', () => {
    const g = gauge({ status: status({ model: MODEL }), server: 'running' });
    assert.equal(g.text, 'flower 80.2K / 200K · 40% · sonnet-4-5');
    assert.ok(g.tooltip.includes(`model: ${MODEL}`), g.tooltip.join('\n'));
    assert.equal(gauge({ status: status({ model: 'my-proxy-model', context: null }), server: 'running' }).text, 'flower — / 200K · my-proxy-model');
});

test('an unknown model (null) is not guessed: no model in the text or the tooltip', () => {
    const g = gauge({ status: status({ model: null }), server: 'running' });
    assert.equal(g.text, 'flower 80.2K / 200K · 40%');
    assert.ok(!g.tooltip.some((l) => l.startsWith('model')), g.tooltip.join('\n'));
});

test('the tooltip shows this wake, the task so far and the cap', () => {
    const g = gauge({ status: status({ running: true, cost: { wake: 0.42, task: 3.1, max: 20 } }), server: 'running' });
    assert.ok(g.tooltip.includes('$0.42 this wake · $3.10 task · cap $20'), g.tooltip.join('\n'));
    assert.equal(g.colour, null);
});

test('without a cap the cost line has no cap part', () => {
    const g = gauge({ status: status({ cost: { wake: 1.25, task: 12.5, max: null } }), server: 'running' });
    assert.ok(g.tooltip.includes('$1.25 this wake · $12.50 task'), g.tooltip.join('\n'));
    assert.ok(!g.tooltip.join('\n').includes('cap'), g.tooltip.join('\n'));
});

test('costs as people read them: cents, a fraction of a cent, nothing; a cap as set', () => {
    assert.deepEqual([0, 0.001, 0.0049, 0.005, 0.42, 3.1, 1234.567].map(usd), ['$0.00', '<$0.01', '<$0.01', '$0.01', '$0.42', '$3.10', '$1234.57']);
    assert.deepEqual([20, 0.5, 2.25].map(cap), ['$20', '$0.50', '$2.25']);
    assert.equal(costLine({ wake: 0, task: 0, max: null }), '$0.00 this wake · $0.00 task');
});

test('a wake stopped at its cap reads so in the bar (warning) and the tooltip says how to go on', () => {
    const s = status({ model: MODEL, cost: { wake: 0.51, task: 0.9, max: 0.5 } });
    assert.equal(capReached(s), true);
    const g = gauge({ status: s, server: 'running' });
    assert.equal(g.text, 'flower 80.2K / 200K · 40% · sonnet-4-5 · cap reached');
    assert.equal(g.colour, 'warning');
    const tip = g.tooltip.join('\n');
    assert.ok(tip.includes('$0.51 this wake · $0.90 task · cap $0.50'), tip);
    assert.ok(tip.includes('the wake stopped at the cap of $0.50: raise flower.maxCost'), tip);
});

test('under the cap, without a cap, or while still running: not "cap reached"', () => {
    for (const s of [
        status({ cost: { wake: 0.49, task: 0.9, max: 0.5 } }),
        status({ cost: { wake: 9, task: 9, max: null } }),
        status({ running: true, cost: { wake: 0.6, task: 0.9, max: 0.5 } }),
    ]) {
        assert.equal(capReached(s), false, JSON.stringify(s.cost));
        const g = gauge({ status: s, server: 'running' });
        assert.ok(!g.text.includes('cap reached'), g.text);
        assert.ok(!g.tooltip.join('\n').includes('stopped at the cap'), g.tooltip.join('\n'));
    }
});

test('short model names: the claude- prefix and a date suffix go, anything else stays', () => {
    assert.deepEqual(
        [MODEL, 'claude-opus-4-1', 'claude-3-5-haiku-20241022', 'gpt-proxy', 'claude-sonnet-4-5[1m]'].map(shortModel),
        ['sonnet-4-5', 'opus-4-1', '3-5-haiku', 'gpt-proxy', 'sonnet-4-5[1m]'],
    );
});

test('a status from a flower older than the client (no model, no cost) still draws the gauge', () => {
    const old = status() as Partial<FolderStatus>;
    delete old.model;
    delete old.cost;
    const g = gauge({ status: old as FolderStatus, server: 'running' });
    assert.equal(g.text, 'flower 80.2K / 200K · 40%');
    assert.ok(!g.tooltip.join('\n').includes('this wake'), g.tooltip.join('\n'));
    assert.equal(capReached(old as FolderStatus), false);
});

test("the tooltip says whether the folder's own hooks and MCP servers run, and who decided (D10)", () => {
    const trusted = gauge({ status: status(), server: 'running' }).tooltip;
    assert.ok(trusted.includes("trusted: yes (the editor's workspace trust)"), trusted.join('\n'));
    const not = gauge({ status: status({ trusted: false, trust: 'nobody trusted it yet' }), server: 'running' }).tooltip;
    assert.ok(not.includes('trusted: no (nobody trusted it yet)'), not.join('\n'));
});

test('while the run waits for an approval or a question the gauge says flower: waiting for you, the tooltip what for', () => {
    const params = { folder: 'f', id: 't1', step: '干活', tool: 'Bash', input: {}, summary: 'rm -rf build', detail: { kind: 'command' as const, text: '' }, suggestions: [], since: 1 };
    const asked = gauge({ status: status({ running: true, step: '干活', waitingFor: { what: 'approval', since: 1, approval: params } }), server: 'running' });
    assert.equal(asked.text, 'flower: waiting for you');
    assert.equal(asked.colour, 'warning');
    assert.equal(asked.spinner, false, 'nothing moves until the person answers');
    assert.ok(asked.tooltip.includes('waiting for you: allow Bash: rm -rf build?'), asked.tooltip.join('\n'));
    const question = gauge({ status: status({ running: true, waitingFor: { what: 'question', since: 1, approval: null } }), server: 'running' });
    assert.equal(question.text, 'flower: waiting for you');
    assert.ok(question.tooltip.includes('waiting for you: a question'));
    // An outage is not the person's to answer: the gauge keeps its retry countdown.
    const outage = gauge({ status: status({ running: true, waitingFor: { what: 'outage', since: 1, approval: null } }), server: 'running' });
    assert.notEqual(outage.text, 'flower: waiting for you');
    // A flower older than this client sends no waitingFor at all.
    const old = status();
    delete (old as Partial<FolderStatus>).waitingFor;
    assert.equal(gauge({ status: old, server: 'running' }).text, 'flower 80.2K / 200K · 40%');
});

test('the tooltip shows the store size on disk; past 2 GB it says what frees it', () => {
    const small = gauge({ status: status({ storeBytes: 12_345_678 }), server: 'running' }).tooltip;
    assert.ok(small.includes('store 12.3 MB on disk'), small.join('\n'));
    assert.ok(!small.join('\n').includes('flower gc'), small.join('\n'));
    const big = gauge({ status: status({ storeBytes: STORE_WARN_BYTES + 100_000_000 }), server: 'running' }).tooltip;
    assert.ok(big.includes('store 2.1 GB on disk: `flower gc` shows what archived tasks hold and frees them'), big.join('\n'));
    assert.equal(storeLine(STORE_WARN_BYTES - 1), 'store 2000.0 MB on disk');
    // A status not read yet (null), or from a flower older than #26 (absent): no store line.
    const unread = gauge({ status: status({ storeBytes: null }), server: 'running' }).tooltip;
    assert.ok(!unread.some((l) => l.startsWith('store')), unread.join('\n'));
    const older = { ...status() } as Partial<FolderStatus>;
    delete older.storeBytes;
    assert.ok(!gauge({ status: older as FolderStatus, server: 'running' }).tooltip.some((l) => l.startsWith('store')));
});

test('a store that does not answer: the gauge says store unreachable in the error colour, the tooltip the server\'s sentence', () => {
    const said = 'the store postgresql://flower@127.0.0.1:5432/team is not answering (connection refused); this status is what was read before. It refreshes when the store is back.';
    const g = gauge({ status: status({ unreachable: said }), server: 'running' });
    assert.equal(g.text, 'flower 80.2K / 200K · 40% · store unreachable');
    assert.equal(g.colour, 'error');
    assert.ok(g.tooltip.includes(`store unreachable: ${said}`), g.tooltip.join('\n'));
    // Back again: no trace of it.
    const back = gauge({ status: status(), server: 'running' });
    assert.equal(back.colour, null);
    assert.ok(!back.tooltip.some((line) => line.includes('unreachable')), back.tooltip.join('\n'));
    // A flower older than this client sends no unreachable field at all.
    const old = status();
    delete (old as Partial<FolderStatus>).unreachable;
    assert.equal(gauge({ status: old, server: 'running' }).text, 'flower 80.2K / 200K · 40%');
});

test('the tooltip names the subagents and background shells the run has going (issue 32)', () => {
    const g = gauge({ server: 'running', status: status({ running: true, step: '干活', background: ['write the docs (general-purpose)', 'npm run dev'] }) });
    assert.deepEqual(g.tooltip.filter((l) => l.startsWith('in the background')), [
        'in the background: write the docs (general-purpose)', 'in the background: npm run dev']);
    assert.ok(!gauge({ server: 'running', status: status({}) }).tooltip.some((l) => l.startsWith('in the background')));
});

// -- the forecast and the step in the window's language (issue 34) ------------------------------

test('the tooltip names the step as the server says it and forecasts the rounds left and their cost', () => {
    const forecast = { rounds: 3, slope: 2500, toHandoff: 34, toWindow: 66, wakePerRound: 0.58, taskPerRound: 0.61 };
    const g = gauge({ status: status({ running: true, step: '干活#round2', stepLabel: 'work · round 2', forecast }), server: 'running' });
    const tip = g.tooltip.join('\n');
    assert.ok(tip.includes('step: work · round 2') && !tip.includes('干活'), tip);
    assert.ok(tip.includes('forecast: +2.5K a round: hand-off in 34 rounds, the window in 66 rounds'), tip);
    assert.ok(tip.includes('per work round: $0.58 this wake · $0.61 the task'), tip);
    const early = forecastLines({ ...forecast, slope: null, toHandoff: null, toWindow: null });
    assert.equal(early[0], 'forecast: too few rounds to tell where the context is heading');
    assert.equal(forecastLines({ ...forecast, slope: 0, toHandoff: null, toWindow: null })[0], 'forecast: the context is not growing');
});

/** What vscode.l10n.t does in a window of `lang`: the bundle's translation of the English message, filled in. */
function translator(lang: string): Translate {
    const bundle = JSON.parse(readFileSync(`l10n/bundle.l10n${lang === 'en' ? '' : `.${lang}`}.json`, 'utf8')) as Record<string, string>;
    return (message, ...args) => {
        assert.ok(message in bundle, `no ${lang} translation for ${JSON.stringify(message)}`);
        return fill(bundle[message], ...args);
    };
}

/** A status with every tooltip line: a verdict, a backoff, an approval asked, the store unreachable, work in the background, the forecast, a cap. */
function everything(): FolderStatus {
    return status({
        running: false,
        step: '干活#round2',
        stepLabel: '干活 · 第 2 轮',
        model: 'claude-sonnet-4-5',
        cost: { wake: 0.33, task: 1.2, max: 0.25 },
        verdict: { round: 1, passed: false, reasons: 'subtraction is missing' },
        waiting: { reason: 'backoff', seconds: 4, attempt: 1, maxAttempts: 6, until: 1e9, secondsLeft: 4 },
        waitingFor: { what: 'approval', since: 0, approval: null },
        unreachable: 'the store … is not answering',
        background: ['npm run dev'],
        forecast: { rounds: 3, slope: 2500, toHandoff: 1, toWindow: 66, wakePerRound: 0.58, taskPerRound: null },
    });
}

test('a zh-cn window gets the gauge and its whole tooltip in Chinese, the forecast lines among them (issue 34)', () => {
    const t = translator('zh-cn');
    const g = gauge({ status: everything(), server: 'running', t });
    assert.equal(g.text, 'flower: 在等你');
    assert.deepEqual(g.tooltip, [
        'flower · app',
        '第 3 次唤醒',
        '步骤:干活 · 第 2 轮',
        '目标 1/2',
        '模型:claude-sonnet-4-5',
        '本次唤醒 $0.33 · 整个任务 $1.20 · 上限 $0.25',
        '这次唤醒停在了上限 $0.25:调高 flower.maxCost(或清空它),再继续',
        '上下文 80.2K / 200K(到 120K 交接)',
        '预测:每轮 +2.5K:再 1 轮交接,再 66 轮到窗口上限',
        '每轮干活:本次唤醒 $0.58 · 整个任务 —',
        '第 1 轮:未通过 — subtraction is missing',
        '在等你:批准一次工具调用',
        '等待中(退避),第 1/6 次尝试',
        '存储无法访问:the store … is not answering',
        '存储:磁盘上 0.6 MB',
        '正在后台运行:npm run dev',
        "信任:是(the editor's workspace trust)",
    ]);
    // No English word left in what the client itself writes (the folder's name, the server's sentences and the model's name aside).
    const own = g.tooltip.slice(1).join('\n').replace(/subtraction is missing|the store … is not answering|the editor's workspace trust|npm run dev|claude-sonnet-4-5|flower(\.maxCost)?/g, '');
    assert.doesNotMatch(own, /[a-z]{3,}/i, own);
    assert.deepEqual(forecastLines({ rounds: 1, slope: null, toHandoff: null, toWindow: null, wakePerRound: null, taskPerRound: null }, t), ['预测:轮数太少,还说不准上下文会涨到哪里']);
    assert.equal(gauge({ status: status({ running: true, waiting: { reason: 'offline', seconds: 15, attempt: 2, maxAttempts: 6, until: 1e9, secondsLeft: 12.1 } }), server: 'running', t }).text, 'flower 离线 · 13 秒后重试');
    const stopped = gauge({ status: status(), server: 'stopped', t });
    assert.equal(stopped.text, 'flower: 已停止');
    // It names the command as the zh-cn palette shows it.
    const nls = JSON.parse(readFileSync('package.nls.zh-cn.json', 'utf8')) as Record<string, string>;
    assert.ok(stopped.tooltip[0].includes(`(flower: ${nls['command.restartServer']})`), stopped.tooltip[0]);
    assert.equal(gauge({ status: status({ unreachable: 'x' }), server: 'running', t }).text, 'flower 80.2K / 200K · 40% · 存储无法访问');
    assert.equal(storeLine(STORE_WARN_BYTES, t), '存储在磁盘上占 2.0 GB:`flower gc` 可查看已归档任务占用的空间并清理');
});

test('the English window: the same tooltip through the English bundle as without a translator', () => {
    const t = translator('en');
    for (const s of [everything(), status(), status({ running: true, forecast: { rounds: 3, slope: 2500, toHandoff: 34, toWindow: 1, wakePerRound: 0.58, taskPerRound: 0.61 } })]) {
        assert.deepEqual(gauge({ status: s, server: 'running', t }), gauge({ status: s, server: 'running' }));
    }
    const tip = gauge({ status: everything(), server: 'running', t }).tooltip;
    assert.ok(tip.includes('forecast: +2.5K a round: hand-off in 1 round, the window in 66 rounds'), tip.join('\n'));
    assert.ok(tip.includes('the wake stopped at the cap of $0.25: raise flower.maxCost (or clear it), then Continue'), tip.join('\n'));
});
