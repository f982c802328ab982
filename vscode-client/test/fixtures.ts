/** Payload builders for the unit tests: every field present, as the server sends them. */
import type { ApproveParams, FolderStatus, HistoryResult, TranscriptNotification } from '../src/protocol';

export const FOLDER = 'file:///home/me/app';

export function status(over: Partial<FolderStatus> = {}): FolderStatus {
    return {
        folder: FOLDER,
        name: 'app',
        workspace: '/home/me/app',
        runDir: '/home/me/app/runs',
        woke: 3,
        steps: {},
        goals: [
            { text: 'adds', done: true },
            { text: 'subtracts', done: false },
        ],
        context: 80213,
        window: 200000,
        handoffAt: 120000,
        running: false,
        step: null,
        waiting: null,
        verdict: null,
        interrupted: false,
        elsewhere: false,
        model: null,
        cost: { wake: 0, task: 0, max: null },
        settings: null,
        waitingFor: null,
        unreachable: null,
        storeBytes: 573440,
        trusted: true,
        trust: "the editor's workspace trust",
        hasTask: true,
        workSession: false,
        stepLabel: null,
        ...over,
    };
}

export function entry(seq: number, uuid: string | null, over: Partial<TranscriptNotification> = {}): TranscriptNotification {
    return {
        folder: FOLDER,
        step: '干活',
        sessionId: 's1',
        uuid,
        role: 'assistant',
        kind: 'text',
        text: `text ${uuid ?? seq}`,
        toolName: null,
        toolInput: null,
        toolUseId: null,
        pruned: null,
        prunedText: null,
        seq,
        ...over,
    };
}

export function page(entries: TranscriptNotification[], nextBefore: number | null): HistoryResult {
    return { folder: FOLDER, entries, nextBefore, sessions: [], pending: [], steps: [] };
}

export function approval(over: Partial<ApproveParams> = {}): ApproveParams {
    return {
        folder: FOLDER,
        id: 'toolu_01',
        step: '干活',
        tool: 'Bash',
        input: { command: 'rm -rf build' },
        summary: 'rm -rf build',
        detail: { kind: 'command', text: 'rm -rf build' },
        suggestions: ['Bash(rm:*)'],
        since: 1_764_600_000,
        ...over,
    };
}
