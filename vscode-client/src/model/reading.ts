/**
 * Which transcript rows are folded for reading (issue 34). Pure: no DOM, unit-tested in Node.
 * The records keep the seed's step names (S7): a judge's round is `<step>·判定#N`, whatever the UI's language.
 */

const JUDGE = /·判定#\d+$/;

/** Whether `step` is one of the judge's rounds: its prompt (the checklist, the requirements) is folded behind its verdict. */
export function isJudgeRound(step: string | null | undefined): boolean {
    return typeof step === 'string' && JUDGE.test(step);
}
