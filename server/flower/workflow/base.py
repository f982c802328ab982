"""Step and Workflow: a continuous workflow resumes each step's session across processes (S2, S9–S11, S18)."""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ..core.background import AGENT
from ..core.events import StepEnded, StepStarted
from ..core.journal import Seen, note, sidechain, with_stored
from ..core.lineage import Lineage
from ..core.lock import WorkspaceLock
from ..core.manifest import Manifest, StepResult, retry_name
from ..core.manifest import step_of as step_of  # where the workflow's users have found it
from ..core.texts import Said, say
from ..runtime import AgentSpec, Runtime, Sessions
from ..status import Judged, at_rest

log = logging.getLogger(__name__)

Prompt = str | Callable[[dict[str, Any]], str]


class Context(dict[str, Any]):
    """A wake's context: each step's output under its name, and flower's own entries under `_` names (S2).

    A dict, so that users' code reads `ctx["_woke"]` and `ctx["_sessions"]` as ever (S2) and it prints as JSON;
    flower's own code uses the typed properties, which are those same entries.
    """

    @classmethod
    def of(cls, woke: int, sessions: dict[str, str]) -> Context:
        """The context a wake starts with: its number and the lineage's step → session mapping (the live one)."""
        return cls(_woke=woke, _sessions=sessions, _ok=True)

    @property
    def woke(self) -> int:
        """The wake count (S5)."""
        return int(self["_woke"])

    @property
    def sessions(self) -> dict[str, str]:
        """Step → session id: the lineage's own mapping, so it shows each session the instant it is recorded."""
        found: dict[str, str] = self["_sessions"]
        return found

    @property
    def ok(self) -> bool:
        """No step failed (so far)."""
        return bool(self.get("_ok", True))

    @property
    def error(self) -> str | None:
        """Why the wake did not finish, in English (logs, JSON); `said` is the same for the person's language (D4)."""
        found: str | None = self.get("_error")
        return found

    @property
    def said(self) -> Said | None:
        """Why the wake did not finish, as a catalog sentence."""
        found: Said | None = self.get("_said")
        return found

    @property
    def task(self) -> str:
        """The task as `需求.md` holds it (the flower path's clarify prompt)."""
        return str(self.get("_task", ""))

    @task.setter
    def task(self, value: str) -> None:
        self["_task"] = value

    @property
    def verdict(self) -> Judged | None:
        """How the goal gate ended the work (S14), once it ran."""
        found = self.get("verdict")
        return Judged(**found) if isinstance(found, dict) else None

    @verdict.setter
    def verdict(self, value: Judged) -> None:
        self["verdict"] = dataclasses.asdict(value)  # a plain dict: users' code and JSON read it as one

    def fail(self, said: Said) -> None:
        """Mark the wake failed: `said` for a front-end to show in the person's language, `error` its English (D4)."""
        self["_ok"], self["_error"], self["_said"] = False, str(said), said


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

    async def run(self, rt: Runtime, resume_from: dict[str, str] | None = None) -> Context:
        """Run every step and return ctx with `_woke` and `_sessions` (S2); one writer per workspace (D5)."""
        with WorkspaceLock(rt.run_dir, rt.records):
            lineage = self.lineage(rt)
            ctx = Context.of(lineage.wake(), lineage.steps)
            if resume_from:
                lineage.steps.update(resume_from)
            for index, step in enumerate(self.steps, 1):
                if step.skip is not None and step.skip(ctx):
                    continue
                result = await self.run_step(rt, step, ctx, lineage, index)
                ctx[step.name] = result.text
                if not result.ok:
                    ctx.fail(say("step_failed", step=step.name, error=result.said or result.error))
                    break
            return ctx

    def lineage(self, rt: Runtime) -> Lineage:
        """The lineage to continue: the stored one when continuous (S10, S12), else a fresh one kept in memory (S29)."""
        if self.continuous:
            return Lineage.load(rt.run_dir, rt.workspace, rt.has_session, records=rt.records)
        return Lineage(rt.run_dir, rt.workspace, persist=False, records=rt.records)

    def manifest_for(self, rt: Runtime) -> Manifest:
        """This process's manifest writer (S8)."""
        if self.manifest is None:
            self.manifest = Manifest(rt.run_dir, records=rt.records)
        return self.manifest

    async def run_step(self, rt: Runtime, step: Step, ctx: Context, lineage: Lineage, index: int,
                       message: str | None = None, name: str | None = None, total: int | None = None) -> StepResult:
        """Run one step with its ordinary retries; the session id is recorded the instant it arrives (S11)."""
        for attempt in range(step.retries + 1):
            session = lineage.steps.get(step.name)
            shown = name or step.name
            shown = shown if attempt == 0 else retry_name(shown, attempt)
            rt.emit(StepStarted(index=index, total=total or len(self.steps), session_id=session, woke=ctx.woke, step=shown))
            text = message if message is not None else step.message(ctx, session is not None)
            result = await self.dispatch(rt, step, text, session, lineage, shown)
            await self.manifest_for(rt).save(result)
            rt.emit(StepEnded(ok=result.ok, session_id=result.session_id, error=result.error, context=result.context, step=shown,
                              said=result.said, cost_usd=result.cost_usd, duration_s=result.duration_s))
            if result.ok:
                break
        return result

    async def dispatch(self, rt: Runtime, step: Step, prompt: str, session: str | None, lineage: Lineage, name: str) -> StepResult:
        """`rt.run` recording the session id in the lineage the instant it arrives (S11).

        The hook is an argument of this one run, so nothing else (the judge, S14) can ever be recorded by it.
        """
        told = await recall(rt, session or lineage.lost.get(step.name), resumed=session is not None, prompt=prompt)
        return await rt.run(step.agent, f"{told}\n\n{prompt}" if told else prompt, resume=session, step=name,
                            on_session=lambda sid: lineage.record(step.name, sid), early=step.name not in lineage.replacing)


async def recall(rt: Runtime, session_id: str | None, *, resumed: bool, prompt: str) -> str:
    """What the journal saw of `session_id` that the store (and so the model) lacks, as a note; "" if nothing (issue #22).

    Once per session and process: after that, this process wrote the store and the journal alike.
    """
    if session_id is None or session_id in rt.journal.checked:
        return ""
    rt.journal.checked.add(session_id)
    try:
        # Records an earlier comparison found all stored are not compared again while the store holds at least
        # what it held then (it only ever appends; a store made anew compares them all).
        start, held = rt.journal.seen(session_id)
        count = await rt.entry_count(session_id)
        records, end = rt.journal.read_from(session_id, start if count >= held else 0)
        if not records:
            return ""
        # The newer records are the newest entries': read back from the end until every record is matched. Loading
        # the whole session and the whole journal cost a 20k-entry wake 0.45 s before its CLI started
        # (benchmarks/wake.py); a record the store lacks still means reading all of it.
        seen = Seen()
        async for entries in rt.newest_first(session_id):
            seen.add(entries)
            if not seen.lacks(records):
                break
    except Exception as e:  # the run then goes on as before: the note is a bonus (S12)
        log.warning("could not compare session %s with its journal (%s)", session_id, e)
        return ""
    lacking = seen.lacks(records)
    if not lacking:
        rt.journal.mark_seen(session_id, end, count)
    try:  # an interrupted subagent's words: the CLI does not stream a foreground one's, its stored transcript has them
        agents = {r["id"]: r["tool"] for r in lacking if r["k"] == "task" and r.get("type") == AGENT and r.get("tool")}
        for agent_id, call in agents.items():
            lacking = with_stored(lacking, sidechain(await rt.sidechain(session_id, str(agent_id)), str(call)))
    except Exception as e:  # told from the journal alone then
        log.warning("could not read the subagents of session %s (%s)", session_id, e)
    told = note(lacking, resumed=resumed, prompt=prompt)
    if told:
        log.info("session %s: told the model what the journal saw and the store lacks", session_id)
    return told


def wake_state(workspace: str | os.PathLike[str] = ".", run_dir: str | os.PathLike[str] = "runs") -> dict[str, Any]:
    """Would the next run here resume? `waking`, `checks` (goal count), `woke`, `steps` (S3).

    Computed from the same `Status` as `flower status`, with only sessions still in sessions.db (S10).
    """
    sessions = Sessions.open(run_dir)
    st = at_rest(workspace, run_dir, lambda sid: sessions.has(workspace, sid), records=sessions.records)
    return {"waking": bool(st.steps), "checks": len(st.goals), "woke": st.woke, "steps": dict(st.steps),
            "workspace": st.workspace, "run_dir": st.run_dir}
