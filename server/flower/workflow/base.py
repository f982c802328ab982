"""Step and Workflow: a continuous workflow resumes each step's session across processes (S2, S9–S11, S18)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..core import goals
from ..core.events import StepEnded, StepStarted
from ..core.lineage import Lineage
from ..core.lock import WorkspaceLock
from ..core.manifest import Manifest, StepResult, retry_name
from ..runtime import AgentSpec, Runtime

Prompt = str | Callable[[dict], str]


@dataclass
class Step:
    """One workflow step: an agent, its prompt, and what to say instead when its session is resumed (S18)."""

    name: str
    agent: AgentSpec
    prompt: Prompt
    resume_prompt: Prompt | None = None
    retries: int = 0
    """Ordinary retries after a failed run, recorded as `<step>#retry<N>` (S7)."""
    skip: Callable[[dict], bool] | None = None
    """When true for the ctx, the step is frozen and not run (S17)."""

    def message(self, ctx: dict, resuming: bool) -> str:
        """The prompt to send: on resume the other side already has the brief, so send `resume_prompt` (S18)."""
        chosen = self.resume_prompt if resuming and self.resume_prompt is not None else self.prompt
        return chosen(ctx) if callable(chosen) else chosen


@dataclass
class Workflow:
    """Steps run in order; `continuous=True` (the default, S9) resumes the lineage's sessions."""

    steps: list[Step]
    continuous: bool = True
    manifest: Manifest | None = field(default=None, repr=False)

    async def run(self, rt: Runtime, resume_from: dict[str, str] | None = None) -> dict[str, Any]:
        """Run every step and return ctx with `_woke` and `_sessions` (S2); one writer per workspace (D5)."""
        with WorkspaceLock(rt.run_dir):
            lineage = self.lineage(rt)
            ctx: dict[str, Any] = {"_woke": lineage.wake(), "_sessions": lineage.steps, "_ok": True}
            if resume_from:
                lineage.steps.update(resume_from)
            for index, step in enumerate(self.steps, 1):
                if step.skip is not None and step.skip(ctx):
                    continue
                result = await self.run_step(rt, step, ctx, lineage, index)
                ctx[step.name] = result.text
                if not result.ok:
                    ctx["_ok"], ctx["_error"] = False, f"{step.name}: {result.error}"
                    break
            return ctx

    def lineage(self, rt: Runtime) -> Lineage:
        """The lineage to continue: the stored one when continuous (S10, S12), else a fresh one kept in memory (S29)."""
        if self.continuous:
            return Lineage.load(rt.run_dir, rt.workspace, rt.has_session)
        return Lineage(rt.run_dir, rt.workspace, persist=False)

    def manifest_for(self, rt: Runtime) -> Manifest:
        """This process's manifest writer (S8)."""
        if self.manifest is None:
            self.manifest = Manifest(rt.run_dir)
        return self.manifest

    async def run_step(self, rt: Runtime, step: Step, ctx: dict, lineage: Lineage, index: int,
                       message: str | None = None, name: str | None = None, total: int | None = None) -> StepResult:
        """Run one step with its ordinary retries; the session id is recorded the instant it arrives (S11)."""
        for attempt in range(step.retries + 1):
            session = lineage.steps.get(step.name)
            shown = name or step.name
            shown = shown if attempt == 0 else retry_name(shown, attempt)
            rt.emit(StepStarted(index, total or len(self.steps), session, ctx["_woke"], step=shown))
            text = message if message is not None else step.message(ctx, session is not None)
            result = await self.dispatch(rt, step, text, session, lineage, shown)
            self.manifest_for(rt).add(result)
            rt.emit(StepEnded(result.ok, result.session_id, result.error, result.context, step=shown))
            if result.ok:
                break
        return result

    async def dispatch(self, rt: Runtime, step: Step, prompt: str, session: str | None, lineage: Lineage, name: str) -> StepResult:
        """`rt.run` with the lineage hook installed only for its duration (S11: the judge must not be recorded)."""
        rt.on_session = lambda sid: lineage.record(step.name, sid)
        try:
            return await rt.run(step.agent, prompt, resume=session, step=name)
        finally:
            rt.on_session = None


def wake_state(workspace: str | os.PathLike = ".", run_dir: str | os.PathLike = "runs") -> dict[str, Any]:
    """Would the next run here resume? `waking`, `checks` (goal count), `woke`, `steps` (S3)."""
    rt = Runtime(workspace, run_dir)
    lineage = Lineage.load(rt.run_dir, rt.workspace, rt.has_session)
    return {
        "waking": bool(lineage.steps),
        "checks": len(goals.read(Path(rt.workspace) / goals.GOALS_FILE)),
        "woke": lineage.woke,
        "steps": dict(lineage.steps),
        "workspace": str(rt.workspace),
        "run_dir": str(rt.run_dir),
    }
