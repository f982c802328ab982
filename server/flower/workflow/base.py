"""Step and Workflow: a continuous workflow resumes each step's session across processes (S2, S9–S11, S18)."""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.events import StepEnded, StepStarted
from ..core.lineage import Lineage
from ..core.lock import WorkspaceLock
from ..core.manifest import Manifest, StepResult, parse_name, retry_name
from ..core.texts import Said, say
from ..runtime import AgentSpec, Runtime, Sessions
from ..status import at_rest

Prompt = str | Callable[[dict[str, Any]], str]


def step_of(name: str) -> str:
    """The step a run's name belongs to (S7): `干活#round2#retry1` → `干活`; a judge's name (`干活·判定#1`) stays itself."""
    base, kind, _ = parse_name(name)
    while kind in ("retry", "round"):
        name = base
        base, kind, _ = parse_name(name)
    return name


def fail(ctx: dict[str, Any], said: Said) -> None:
    """Mark the wake failed: `_said` for a front-end to show in the person's language, `_error` its English (D4)."""
    ctx["_ok"], ctx["_error"], ctx["_said"] = False, str(said), said


@dataclass
class Step:
    """One workflow step: an agent, its prompt, and what to say instead when its session is resumed (S18)."""

    name: str
    agent: AgentSpec
    prompt: Prompt
    resume_prompt: Prompt | None = None
    retries: int = 0
    """Ordinary retries after a failed run, recorded as `<step>#retry<N>` (S7)."""
    skip: Callable[[dict[str, Any]], bool] | None = None
    """When true for the ctx, the step is frozen and not run (S17)."""

    def message(self, ctx: dict[str, Any], resuming: bool) -> str:
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
                    fail(ctx, say("step_failed", step=step.name, error=result.said or result.error))
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

    async def run_step(self, rt: Runtime, step: Step, ctx: dict[str, Any], lineage: Lineage, index: int,
                       message: str | None = None, name: str | None = None, total: int | None = None) -> StepResult:
        """Run one step with its ordinary retries; the session id is recorded the instant it arrives (S11)."""
        for attempt in range(step.retries + 1):
            session = lineage.steps.get(step.name)
            shown = name or step.name
            shown = shown if attempt == 0 else retry_name(shown, attempt)
            rt.emit(StepStarted(index=index, total=total or len(self.steps), session_id=session, woke=ctx["_woke"], step=shown))
            text = message if message is not None else step.message(ctx, session is not None)
            result = await self.dispatch(rt, step, text, session, lineage, shown)
            self.manifest_for(rt).add(result)
            rt.emit(StepEnded(ok=result.ok, session_id=result.session_id, error=result.error, context=result.context, step=shown,
                              said=result.said, cost_usd=result.cost_usd, duration_s=result.duration_s))
            if result.ok:
                break
        return result

    async def dispatch(self, rt: Runtime, step: Step, prompt: str, session: str | None, lineage: Lineage, name: str) -> StepResult:
        """`rt.run` recording the session id in the lineage the instant it arrives (S11).

        The hook is an argument of this one run, so nothing else (the judge, S14) can ever be recorded by it.
        """
        return await rt.run(step.agent, prompt, resume=session, step=name,
                            on_session=lambda sid: lineage.record(step.name, sid))


def wake_state(workspace: str | os.PathLike[str] = ".", run_dir: str | os.PathLike[str] = "runs") -> dict[str, Any]:
    """Would the next run here resume? `waking`, `checks` (goal count), `woke`, `steps` (S3).

    Computed from the same `Status` as `flower status`, with only sessions still in sessions.db (S10).
    """
    sessions = Sessions.open(run_dir)
    st = at_rest(workspace, run_dir, lambda sid: sessions.has(workspace, sid))
    return {"waking": bool(st.steps), "checks": len(st.goals), "woke": st.woke, "steps": dict(st.steps),
            "workspace": st.workspace, "run_dir": st.run_dir}
