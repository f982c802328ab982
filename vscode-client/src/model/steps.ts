/**
 * A transcript's step sections: what each step run's head says (title, state, duration, cost,
 * a judge round's verdict), from flower/history's `steps` and the live stepStart / stepEnd /
 * verdict notifications. Pure: the step's title comes from the server in the window's language
 * (issue 33: no step name is parsed here), the other words come in as `StepLabels`.
 */

/** What a section head shows of one step run (the newest run of that manifest name). */
export interface StepInfo {
    /** The manifest name (`干活#round2`, `干活·判定#1`, S7): the key rows are grouped by. */
    step: string;
    /** Its name as the server says it in the window's language (`work · round 2`, `judge · round 1`). */
    title: string;
    state: 'running' | 'done' | 'failed';
    costUsd: number | null;
    durationS: number | null;
    /** A judge round's verdict; null for other steps or not known yet. */
    passed: boolean | null;
}

/** The words of section heads and verdict lines, in the window's language (the extension fills them). */
export interface StepLabels {
    running: string;
    done: string;
    failed: string;
    passed: string;
    notPassed: string;
    /** `{0}` = how many lines are folded. */
    moreLines: string;
    moreLine: string;
    /** `{0}` = how many lines the output has. */
    output: string;
    outputLine: string;
    rawInput: string;
    collapse: string;
    /** The head of a subagent's section under its `Agent` call (issue 32). */
    subagent: string;
    subagentTool: string;
    /** `{0}` = its tool calls. */
    subagentTools: string;
    /** The fold button's tooltip. */
    subagentFold: string;
    /** A denied call's mark (issue 34). */
    denied?: string;
    /** The judge's folded prompt; `{0}` = its lines (issue 34). */
    prompt?: string;
}

export const ENGLISH: StepLabels = {
    running: 'running',
    done: 'done',
    failed: 'failed',
    passed: 'passed',
    notPassed: 'not passed',
    moreLines: '{0} more lines',
    moreLine: '1 more line',
    output: 'output · {0} lines',
    outputLine: 'output · 1 line',
    rawInput: 'raw input',
    collapse: 'collapse or expand this step',
    subagent: 'subagent',
    subagentTool: '1 tool call',
    subagentTools: '{0} tool calls',
    subagentFold: "show or hide what the subagent did",
    denied: 'denied',
    prompt: 'prompt for the judge · {0} lines',
};

export function fill(template: string, value: string | number): string {
    return template.replace('{0}', String(value));
}

/** A section head's title: the server's words for the step run, else those that came with its row, else its name. */
export function stepTitle(step: string, info: StepInfo | undefined, said: string | null = null): string {
    return info?.title ?? said ?? step;
}

/** `42 s`, `3 min 5 s`, `1 h 2 min`. */
export function duration(seconds: number): string {
    const s = Math.round(seconds);
    if (s < 60) return `${s} s`;
    if (s < 3600) return `${Math.floor(s / 60)} min${s % 60 ? ` ${s % 60} s` : ''}`;
    return `${Math.floor(s / 3600)} h ${Math.floor((s % 3600) / 60)} min`;
}

/** `$0.41`; below a cent, `$0.004`. */
export function cost(usd: number): string {
    return usd > 0 && usd < 0.01 ? `$${usd.toFixed(3)}` : `$${usd.toFixed(2)}`;
}

/** The facts after a head's title: state (or a judge's verdict), duration, cost. */
export function stepFacts(info: StepInfo | undefined, labels: StepLabels): string[] {
    if (info === undefined) return [];
    const facts: string[] = [];
    if (info.passed !== null) facts.push(info.passed ? labels.passed : labels.notPassed);
    else facts.push(info.state === 'running' ? labels.running : info.state === 'failed' ? labels.failed : labels.done);
    if (info.durationS !== null) facts.push(duration(info.durationS));
    if (info.costUsd !== null && info.costUsd > 0) facts.push(cost(info.costUsd));
    return facts;
}
