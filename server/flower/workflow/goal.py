"""The goal gate: work rounds checked by a judge with fresh eyes against `目标.md` (S14, S27)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from pathlib import Path

from ..core.events import Verdict
from ..core.goals import GOALS_FILE
from ..core.manifest import Manifest, StepResult, judge_name
from ..core.requirements import REQUIREMENTS_FILE
from ..core.verdicts import verdict_of
from ..runtime import AgentSpec, Runtime

JUDGE = AgentSpec(
    "judge",
    instructions=(
        "You are the judge of a coding agent's work. You did not do the work and owe it nothing. "
        "Check the workspace against every item of the goal checklist; read files, do not change them. "
        "End your answer with one line: `VERDICT: PASS` when every goal is met, otherwise `VERDICT: FAIL` "
        "followed by the unmet goals and what is missing."
    ),
    allowed_tools=["Read", "Glob", "Grep"],
    # Removed outright, whatever the user's or project's settings.json allows: the judge reads, never writes.
    disallowed_tools=["Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"],
)


def judge_prompt(workspace: Path) -> str:
    """The judge reads only the goal list and the requirements, never the worker's conversation (S14)."""
    goals = _read(workspace / GOALS_FILE)
    brief = _read(workspace / REQUIREMENTS_FILE)
    return f"Goal checklist ({GOALS_FILE}):\n{goals}\n\nRequirements ({REQUIREMENTS_FILE}):\n{brief}\n\nJudge the work in this workspace now."


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError:
        return "(missing)"


@dataclass
class GateResult:
    """How the gate ended: passed, the last work result, rounds used, the last verdict's reasons."""

    passed: bool
    work: StepResult
    rounds: int
    reasons: str = ""


async def judge(rt: Runtime, manifest: Manifest, step: str, n: int) -> tuple[bool, str, StepResult]:
    """One judge round: always a new session, dispatched with `rt.run` outside the lineage (S14).

    No `on_session` is passed: the judge's session can never be recorded as the work step's (S11), by construction.
    """
    result = await rt.run(JUDGE, judge_prompt(rt.workspace), step=judge_name(step, n))
    await manifest.save(result)
    passed, reasons = verdict_of(result.text) if result.ok else (False, f"the judge could not run: {result.error}")
    rt.emit(Verdict(round=n, passed=passed, reasons=reasons, step=judge_name(step, n), cost_usd=result.cost_usd,
                    duration_s=result.duration_s))
    return passed, reasons, result


async def with_goal(
    rt: Runtime,
    manifest: Manifest,
    step: str,
    work: Callable[[int, str], Awaitable[StepResult]],
    first_message: str,
    rounds: int,
    retry_message: Callable[[str], str],
) -> GateResult:
    """Run work rounds until the judge passes them or `rounds` is used up (S27: counted per wake)."""
    message, reasons = first_message, ""
    for n in range(1, rounds + 1):
        result = await work(n, message)
        if not result.ok:
            return GateResult(False, result, n, result.error or "")
        passed, reasons, _ = await judge(rt, manifest, step, n)
        if passed:
            return GateResult(True, result, n, reasons)
        message = retry_message(reasons)
    return GateResult(False, result, rounds, reasons)
