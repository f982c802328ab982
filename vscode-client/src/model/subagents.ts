/**
 * A subagent in the transcript (issue 32, D12): the rows the CLI's `Agent` tool's subagent wrote carry
 * the call's `toolUseId` as their `parent`; a view shows them as a folded section nested under that
 * call. Pure: the page and the tests use it alike.
 */
import type { Row } from './rows';
import type { StepLabels } from './steps';

/** What the head of a subagent's section says. */
export interface SubagentSection {
    /** The `Agent` call's tool_use id. */
    call: string;
    /** The call's description (its input's `description`), or its prompt's first line. */
    description: string;
    /** The subagent's rows shown so far. */
    entries: number;
    /** Its tool calls among them (not their results). */
    tools: number;
    background: boolean;
}

/** Whether a row is an `Agent` call that starts a subagent. */
export function isAgentCall(row: Row): boolean {
    return row.kind === 'tool' && !row.result && row.toolName === 'Agent' && typeof row.toolUseId === 'string' && !row.parent;
}

/** The section of `call`, from the rows whose `parent` is its tool_use id. */
export function section(call: Row, children: readonly Row[]): SubagentSection {
    const input = call.toolInput ?? {};
    const description = typeof input.description === 'string' && input.description.trim() !== ''
        ? input.description
        : typeof input.prompt === 'string' ? input.prompt.split('\n', 1)[0] : '';
    return {
        call: call.toolUseId ?? '',
        description,
        entries: children.length,
        tools: children.filter((r) => r.kind === 'tool' && !r.result).length,
        // The CLI's default (2.1.x) is the background: only an explicit false is the foreground.
        background: input.run_in_background !== false,
    };
}

/** The head's line, e.g. `subagent · write the docs · 3 tool calls`. */
export function sectionLine(s: SubagentSection, labels: StepLabels): string {
    const tools = s.tools === 1 ? labels.subagentTool : labels.subagentTools.replace('{0}', String(s.tools));
    return [labels.subagent, s.description, tools].filter((p) => p !== '').join(' · ');
}

/** Each `Agent` call's rows in `rows` (in order), by the call's tool_use id. */
export function children(rows: readonly Row[]): Map<string, Row[]> {
    const out = new Map<string, Row[]>();
    for (const row of rows) {
        if (!row.parent) continue;
        const list = out.get(row.parent);
        if (list === undefined) out.set(row.parent, [row]);
        else list.push(row);
    }
    return out;
}
