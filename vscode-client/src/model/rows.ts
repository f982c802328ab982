/**
 * A transcript row as the sidebar shows it, and the messages between the extension and the
 * webview page (typed both ways; no `vscode` import, shared by both bundles).
 */
import type { Json, PrunedVerdict } from '../protocol';
import type { ApprovalsToPage, DecideFromPage } from './approvals';
import type { ChartData } from './chart';
import type { StepInfo, StepLabels } from './steps';

/** The row kinds of the DOM contract (`data-kind`). */
export type RowKind =
    | 'banner'
    | 'header'
    | 'user'
    | 'assistant'
    | 'tool'
    | 'verdict'
    | 'wait'
    | 'handoff'
    | 'notice'
    | 'question';

export interface Row {
    /** Unique in a folder's transcript: the entry's uuid when it has one. */
    key: string;
    /** Where the row sits: rows are shown in increasing `pos`. */
    pos: number;
    kind: RowKind;
    text: string;
    uuid: string | null;
    step: string | null;
    sessionId: string | null;
    /** A tool call's name (kind `tool`, not a result). */
    toolName: string | null;
    /** A tool call's input (kind `tool`). */
    toolInput: { [key: string]: Json } | null;
    /** A tool result (kind `tool`, from history), not a call. */
    result: boolean;
    pruned: PrunedVerdict | null;
    prunedText: string | null;
    /** Verdict rows: the round passed. */
    passed: boolean | null;
    /** A tool call's tool_use id (an `Agent` call's names its subagent's rows). */
    toolUseId?: string | null;
    /** A subagent's row: the tool_use id of the `Agent` call it works for (issue 32); null for the main conversation. */
    parent?: string | null;
    /** Its step in the window's language, as the server said it with the entry (issue 33). */
    stepTitle?: string | null;
    /**
     * A denied call (issue 34): what the model was told instead of a result. On the call's row live (`flower/approved`),
     * on the result's row in history (its `denied`); null or absent for everything else.
     */
    denied?: string | null;
}

/** Extension → page. */
export type ToPage =
    | {
          type: 'reset';
          folder: string | null;
          folderName: string;
          epoch: number;
          op: number;
          rows: Row[];
          hasOlder: boolean;
          /** Shown in `#view-message` (untrusted workspace, no folder), or null. */
          message: string | null;
          /** Input allowed: the workspace is trusted and a folder is open. */
          enabled: boolean;
          running: boolean;
          /** The folder's path: paths under it are shown relative (issue #25). */
          workspace: string;
          labels: StepLabels;
          steps: StepInfo[];
      }
    | { type: 'rows'; epoch: number; op: number; rows: Row[]; steps: StepInfo[] }
    | { type: 'steps'; steps: StepInfo[] }
    | { type: 'older'; epoch: number; rows: Row[]; hasOlder: boolean }
    | { type: 'newer'; epoch: number; rows: Row[]; hasNewer: boolean }
    | { type: 'running'; running: boolean }
    | { type: 'sync' }
    /** The context chart's data (issue 34), or null: no chart (before the first work round). */
    | { type: 'chart'; chart: ChartData | null }
    | ApprovalsToPage;

/** Page → extension. */
export type FromPage =
    | { type: 'ready'; epoch: number | null; op: number | null }
    | { type: 'older'; beforePos: number }
    | { type: 'newer'; afterPos: number }
    | { type: 'say'; text: string }
    /** Open a file of the workspace (a clickable path), at `line` when given (1-based). */
    | { type: 'open'; path: string; line: number | null }
    | DecideFromPage;

/** What the model sees of a row when its session resumes, or what happened, per the toggle. */
export interface RowView {
    /** Shown at all: `added` rows exist only for the model. */
    visible: boolean;
    /** The verdict to mark (`data-verdict`), only in the pruned view. */
    verdict: PrunedVerdict | null;
    /** The text to show. */
    text: string;
}

/** The row as shown: as it happened, or as the pruner leaves it on resume (S23, S25). */
export function rowView(row: Row, prunedView: boolean): RowView {
    if (!prunedView) return { visible: row.pruned !== 'added', verdict: null, text: row.text };
    switch (row.pruned) {
        case 'rewritten':
            return { visible: true, verdict: 'rewritten', text: row.prunedText ?? row.text };
        case 'added':
            return { visible: true, verdict: 'added', text: row.prunedText ?? row.text };
        case 'hidden':
            return { visible: true, verdict: 'hidden', text: row.text };
        default:
            return { visible: true, verdict: null, text: row.text };
    }
}
