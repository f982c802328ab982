"""FlowerService: one per workspace; wake, say, new and status over the flower path, with events (D3)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
from collections.abc import Callable
from pathlib import Path

from .core import goals, texts
from .core.changes import ChangeLog, WakeChanges
from .core.errors import FlowerError
from .core.events import Banner, ContextSize, Event, Listener, Notice, StepStarted, Verdict, Waiting
from .core.lineage import Lineage
from .core.lock import WorkspaceLock, held
from .core.manifest import Manifest
from .core.requirements import REQUIREMENTS_FILE
from .core.resilience import Resilience
from .runtime import Budget, Runtime, Sessions, emit_to
from .settings import Settings
from .status import WINDOW, Cost, Judged, Status, VerdictState, WaitState, WakeOutcome, at_rest
from .workflow.base import step_of
from .workflow.flower import WORK, Ask, FlowerPath

log = logging.getLogger(__name__)


class FlowerService:
    """Drives the flower path in one workspace for any front-end; events go to every subscriber."""

    def __init__(self, workspace: str | os.PathLike[str], run_dir: str | os.PathLike[str] | None = None, *,
                 locale: str = "en", trim: bool = True, rounds: int | None = None, env: dict[str, str] | None = None,
                 resilience: Resilience | None = None, handoff_at: int | None = None, window: int = WINDOW,
                 model: str | None = None, fallback_model: str | None = None, isolated: bool = False,
                 max_cost: float | None = None, settings: Settings | None = None, store: str | None = None,
                 project: str | None = None):
        self.workspace = Path(os.path.abspath(workspace))
        self.run_dir = Path(os.path.abspath(run_dir)) if run_dir else self.workspace / "runs"
        self.locale, self.trim, self.rounds, self.env = locale, trim, rounds or 10, env
        self.resilience, self.window = resilience, window
        self.handoff_at = handoff_at or int(window * 0.6)
        self.model, self.fallback_model, self.isolated, self.max_cost = model, fallback_model, isolated, max_cost
        self.settings = settings
        """The settings these values were read from (shown by status), when a front-end read them."""
        self.budget = Budget(max_cost)
        """The current (or last) wake's spending: a new one per wake, since the cap is per wake (issue #15)."""
        self.ask: Ask | None = None
        """Set by a front-end to put clarify questions to the person; None means nobody is there."""
        self.sessions = Sessions.open(self.run_dir, trim=trim, store=store, workspace=self.workspace, project=project)
        """This workspace's sessions.db, shared by every wake's Runtime and by the readers below."""
        self._listeners: list[Listener] = []
        self._task: asyncio.Task[WakeOutcome] | None = None
        self._path: FlowerPath | None = None
        self._step: str | None = None
        self._waiting: WaitState | None = None
        self._verdict: VerdictState | None = None
        self._context: int | None = None
        """The work session's context size, once seen in this process."""
        self._stored: tuple[str, int | None] | None = None
        """(work session, its context size read back from sessions.db), so status() reads the db once per session."""
        self._runtime: Runtime | None = None
        self._window_seen = False
        """Whether `window` is one the CLI reported (in this process, or recorded in the manifest) rather than assumed."""
        self._model_seen: str | None = None
        """The model the CLI last reported in this process."""
        self._woken = False
        """A wake ran in this process: `budget` holds its cost."""

    @classmethod
    def from_settings(cls, workspace: str | os.PathLike[str], settings: Settings, run_dir: str | os.PathLike[str], *,
                      locale: str = "en", env: dict[str, str] | None = None) -> FlowerService:
        """A service configured by `settings` (flower.settings: flags, environment, file, defaults)."""
        return cls(workspace, run_dir, locale=locale, trim=settings.trim, rounds=settings.rounds, env=env,
                   handoff_at=settings.handoff_at, model=settings.model, fallback_model=settings.fallback_model,
                   isolated=settings.isolated, max_cost=settings.max_cost, settings=settings, store=settings.store,
                   project=settings.project)

    # -- events ----------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Receive every event; returns the function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, event: Event) -> None:
        """Keep what status() shows, then hand the event on; a subscriber's exception is logged, never raised."""
        if self._runtime is not None and self._runtime.window:
            self.window, self._window_seen = self._runtime.window, True  # the gauge follows the model actually used
        self._waiting = None
        match event:
            case StepStarted(step=step):
                self._step = step
            case ContextSize(step=step, tokens=tokens) if step_of(step or "") == WORK:  # not the judge's
                self._context = tokens
            case Banner(context=int(context)):  # read from sessions.db at wake
                self._context = context
            case Verdict(round=n, passed=passed, reasons=reasons):
                self._verdict = VerdictState(round=n, passed=passed, reasons=reasons)
            case Waiting():
                self._waiting = WaitState(reason=event.reason, seconds=event.seconds, attempt=event.attempt,
                                          max_attempts=event.max_attempts)
        emit_to(self._listeners, event)

    # -- commands --------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """Whether a wake is in progress in this process."""
        return self._task is not None and not self._task.done()

    async def wake(self, text: str | None = None) -> WakeOutcome:
        """Continue here (text = a wake sentence), or start (text = the task); joins a wake already running (D5)."""
        task = self._task
        if task is not None and not task.done():
            if text and text.strip():
                await self.say(text)
            return await asyncio.shield(task)
        self._task = asyncio.create_task(self._run(text))
        return await asyncio.shield(self._task)

    async def say(self, text: str) -> WakeOutcome | None:
        """A sentence for the work session: delivered at its next turn while running (None), else a wake (S15)."""
        if self.running and self._path is not None:
            self._path.inbox.put_nowait(text.strip())
            self._emit(Notice(text=texts.text("queued", self.locale, sentence=text.strip())))
            return None
        return await self.wake(text)

    async def new(self, text: str) -> WakeOutcome:
        """Start something else: archive lineage, 需求.md and 目标.md (S28), then start `text` as the task."""
        if not text or not text.strip():
            raise FlowerError("new_needs_task")
        if self._task is not None and self.running:
            self.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        with WorkspaceLock(self.run_dir):
            lineage = Lineage.load(self.run_dir, self.workspace)
            extra = [self.workspace / REQUIREMENTS_FILE, self.workspace / goals.GOALS_FILE]
            into = lineage.archive(self.workspace / "notes" / "archive", extra=extra)
        self._context = self._verdict = None  # they were the archived task's
        self._emit(Notice(text=texts.text("archived", self.locale, path=into)))
        return await self.wake(text)

    def cancel(self) -> None:
        """Stop the running wake cleanly at the person's request; the lineage keeps its sessions, so the next wake resumes."""
        if self._task is not None and self.running:
            if self._path is not None:
                self._path.stopped = True  # ended by the person, not cut off: status() will not say `interrupted`
            self._task.cancel()

    async def close(self) -> None:
        """Cancel any running wake (cut off: the next status says `interrupted`) and wait for it to end."""
        if self._task is not None:
            if self.running:
                self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        await self.sessions.close()

    async def pruned(self, session_id: str) -> dict[str, str] | None:
        """How the pruner treats a session's stored entries on resume: {uuid: "hidden" | "rewritten" | "added"} (S23).

        None when sessions.db holds nothing for the session.
        """
        entries = await self.sessions.entries(self.workspace, session_id)
        if not entries:
            return None
        pruned = await asyncio.to_thread(self.sessions.pruned.prune, [dict(e) for e in entries])
        return dict(pruned.verdicts)

    # -- the run's changes (issue #25) ------------------------------------------------------------
    @property
    def change_log(self) -> ChangeLog:
        """The change records and before-images of this run_dir (the running wake's Runtime records into the same files)."""
        return self._runtime.changes if self._runtime is not None else ChangeLog(self.run_dir, self.workspace)

    async def changes(self) -> list[WakeChanges]:
        """Every wake's changed files with +/- counts against the workspace now, oldest wake first."""
        return await asyncio.to_thread(self.change_log.wakes)

    async def revert(self, path: str | None = None, wake: int | None = None) -> list[str]:
        """Restore before-images (one file, or every file of `wake`); refused while a wake runs here or elsewhere (D5)."""
        if path is None and wake is None:
            raise FlowerError("revert_what")
        if self.running or held(self.run_dir):
            raise FlowerError("revert_running")
        with WorkspaceLock(self.run_dir):  # a wake starting meanwhile waits for the restore, and vice versa
            return await asyncio.to_thread(self.change_log.revert, path, wake)

    async def _run(self, text: str | None) -> WakeOutcome:
        self.budget, self._woken = Budget(self.max_cost), True
        rt = Runtime(self.workspace, self.run_dir, sessions=self.sessions, resilience=self.resilience, env=self.env,
                     model=self.model, fallback_model=self.fallback_model, isolated=self.isolated, budget=self.budget)
        rt.listeners.append(self._emit)
        self._runtime = rt
        self._path = FlowerPath(rt, self.locale, self.rounds, self.handoff_at, ask=self._ask)
        try:
            ctx = await self._path.wake(text)
            verdict = ctx.get("verdict")
            return WakeOutcome(ok=ctx["_ok"], error=ctx.get("_error"), said=ctx.get("_said"), woke=ctx["_woke"],
                               sessions=dict(ctx["_sessions"]), verdict=Judged(**verdict) if verdict else None)
        except asyncio.CancelledError:
            cancelled = texts.say("cancelled")
            return WakeOutcome(ok=False, error=str(cancelled), said=cancelled)
        finally:
            self._step = self._waiting = None
            if rt.window:
                self.window, self._window_seen = rt.window, True
            self._model_seen = rt.model_seen or self._model_seen
            self._runtime = None

    async def _ask(self, question: str) -> str | None:
        return await self.ask(question) if self.ask else None

    # -- status ----------------------------------------------------------------------------
    def _stored_context(self, session_id: str) -> int | None:
        """The session's last context size in sessions.db; None (logged) if the db cannot be read: the gauge is a bonus (S12)."""
        try:
            return self.sessions.context(self.workspace, session_id)
        except Exception as exc:
            log.warning("cannot read the context size of %s from %s (%s)", session_id, self.sessions.raw.path, exc)
            return None

    def _recorded_window(self) -> int | None:
        """The window the CLI last reported in this run_dir, from the manifest's newest row that has one."""
        rows = sorted(Manifest(self.run_dir).rows(), key=lambda r: r.get("ended_at") or 0)
        return next((r["window"] for r in reversed(rows) if isinstance(r.get("window"), int) and r["window"] > 0), None)

    def status(self) -> Status:
        """Everything a front-end shows, answered at once from files and memory (no model request).

        `context` is the work session's size seen in this process, or else its last round read back
        from sessions.db, so a fresh process shows the gauge before any wake.
        """
        if not self._window_seen:
            recorded = self._recorded_window()
            if recorded:
                self.window, self._window_seen = recorded, True
        st = at_rest(self.workspace, self.run_dir)
        context, work = self._context, st.steps.get(WORK)
        if context is None and work is not None:
            if self._stored is None or self._stored[0] != work:
                self._stored = (work, self._stored_context(work))
            context = self._stored[1]
        seen = self._runtime.model_seen if self._runtime is not None else None
        return dataclasses.replace(
            st, context=context, window=self.window, running=self.running, step=self._step,
            interrupted=not self.running and st.interrupted, elsewhere=not self.running and st.elsewhere,
            waiting=self._waiting, verdict=self._verdict, handoff_at=self.handoff_at,
            model=self.model or seen or self._model_seen or st.model,
            # This process's wake when it ran one, else the last process's (a terminal's wake, read from the manifest).
            cost=Cost(wake=round(self.budget.spent, 6) if self._woken else st.cost.wake, task=st.cost.task, max=self.max_cost),
            settings=self.settings.shown() if self.settings is not None else None)

