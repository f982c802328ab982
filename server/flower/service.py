"""FlowerService: one per workspace; wake, say, new and status over the flower path, with events (D3)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import os
import threading
import time
from collections.abc import Callable, Hashable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from . import retention
from .core import goals, taskfiles, texts
from .core.approvals import Approvals
from .core.budget import Budget
from .core.caller import Ask, Caller
from .core.changes import ChangeLog, WakeChanges
from .core.errors import FlowerError
from .core.events import (
    Banner,
    ContextSize,
    Event,
    Listener,
    Notice,
    SessionStarted,
    StepEnded,
    StepStarted,
    Verdict,
    Waiting,
    emit_to,
)
from .core.forecast import Basis, Forecast, forecast_of
from .core.lineage import Lineage, task_began
from .core.lock import WorkspaceLock, held
from .core.manifest import in_work_session, parsed_rows
from .core.records import SENTENCES_FILE, WORK
from .core.requirements import REQUIREMENTS_FILE
from .core.resilience import Resilience
from .core.tally import Tally
from .core.text import megabytes
from .core.trust import Trust
from .sessions import Sessions
from .settings import Settings
from .status import WINDOW, Cost, Status, VerdictState, WaitingFor, WaitState, WakeOutcome, at_rest, recorded_of

if TYPE_CHECKING:
    from .runtime import Runtime
    from .stores.prefetch import Prefetch
    from .workflow.flower import FlowerPath

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Config:
    """How a task's service runs its wakes: one typed value, read from the settings once (`of`) or given by a program."""

    locale: str = "en"
    trim: bool = True
    rounds: int = 10
    resilience: Resilience | None = None
    handoff_at: int | None = None
    """The work session's context size that starts a handoff (S26); None: 60% of `window`."""
    window: int = WINDOW
    model: str | None = None
    fallback_model: str | None = None
    isolated: bool = False
    max_cost: float | None = None
    settings: Settings | None = None
    """The settings these values were read from (shown by status), when a front-end read them."""
    store: str | None = None
    project: str | None = None
    trust: Trust | None = None
    """Whether the folder's own Claude Code settings and MCP servers may run (D10); None: decided from this process."""
    allow: list[str] | None = None
    mode: str | None = None
    approvals_wait: float | None = None
    approvals_unattended: Literal["deny", "wait"] = "deny"
    retention_days: int | None = None
    """A wake first deletes the sessions of archived tasks unused this many days (#26); None: never."""
    store_warn: int = retention.STORE_WARN_BYTES
    """A store at least this large on disk gets one line at wake suggesting `flower gc`."""

    @classmethod
    def of(cls, settings: Settings, *, locale: str = "en", trust: Trust | None = None) -> Config:
        """The configuration `settings` give (flower.settings: flags, environment, file, defaults)."""
        return cls(locale=locale, trim=settings.trim, rounds=settings.rounds, handoff_at=settings.handoff_at,
                   model=settings.model, fallback_model=settings.fallback_model, isolated=settings.isolated,
                   max_cost=settings.max_cost, settings=settings, store=settings.store, project=settings.project,
                   trust=trust, allow=settings.allow, mode=settings.mode, approvals_wait=settings.approvals_wait,
                   approvals_unattended="wait" if settings.approvals_unattended == "wait" else "deny",
                   retention_days=settings.retention_days)


class FlowerService:
    """Drives the flower path in one workspace for any front-end; events go to every subscriber.

    Built from one `Config`; what a wake runs with (its environment, who answers its questions) comes with that
    wake as a `Caller` (core/caller.py), so two clients of one service never share theirs (issue 33).
    """

    def __init__(self, workspace: str | os.PathLike[str], run_dir: str | os.PathLike[str] | None = None,
                 config: Config | None = None):
        config = config or Config()
        self.config = config
        self.workspace = Path(os.path.abspath(workspace))
        self.run_dir = Path(os.path.abspath(run_dir)) if run_dir else self.workspace / "runs"
        self.locale, self.trim, self.rounds = config.locale, config.trim, config.rounds or 10
        self.resilience, self.window = config.resilience, config.window
        self.handoff_at = config.handoff_at or int(config.window * 0.6)
        self.model, self.fallback_model, self.isolated = config.model, config.fallback_model, config.isolated
        self.max_cost, self.settings = config.max_cost, config.settings
        self._shown = self.settings.shown() if self.settings is not None else None
        """`settings.shown()`, made once: settings never change in a service, and status is asked often."""
        self.trust = config.trust
        """Whether the folder's own Claude Code settings and MCP servers may run, for every agent of every wake (D10);
        None: each wake's Runtime decides it from its own environment."""
        self.allow, self.mode = config.allow, config.mode
        self.approvals = Approvals(config.approvals_wait, config.approvals_unattended)
        """Tool calls outside `allow`, put to the person: each wake's `Caller` says who asks (issue 24)."""
        self.retention_days, self.store_warn = config.retention_days, config.store_warn
        self._question_since: float | None = None
        self._offline_since: float | None = None
        self.budget = Budget(self.max_cost)
        """The current (or last) wake's spending: a new one per wake, since the cap (`max_cost`) is per wake."""
        self.sessions = Sessions.open(self.run_dir, trim=self.trim, store=config.store, workspace=self.workspace,
                                      project=config.project)
        """This workspace's sessions.db, shared by every wake's Runtime and by the readers below."""
        self._listeners: list[Listener] = []
        self._task: asyncio.Task[WakeOutcome] | None = None
        self._path: FlowerPath | None = None
        self._listening = asyncio.Event()
        """The running wake's `FlowerPath.listening`: `say` waits for it (made before the wake's task, so never stale)."""
        self._step: str | None = None
        self._waiting: WaitState | None = None
        self._verdict: VerdictState | None = None
        self._context: int | None = None
        """The work session's context size, once seen in this process."""
        self._rest: _Rest | None = None
        """The last snapshot of the records status read (off the event loop), or None before the first."""
        self._tally = Tally()
        """The task's manifest rows folded: a refresh adds the rows appended since the last one (issue 35)."""
        self._folding = threading.Lock()
        self._reading: asyncio.Future[None] | None = None
        self._read_since = self._read_at = float("-inf")
        self._dirty = True
        """An event of this service changed the records since the snapshot was read."""
        self._sized_at = float("-inf")
        """When a refresh last read the store's size (`monotonic`)."""
        self._unreachable: texts.Said | None = None
        """The last refresh failed: the store is not answering."""
        self._runtime: Runtime | None = None
        self._window_seen = False
        """Whether `window` is one the CLI reported (in this process, or recorded in the manifest) rather than assumed."""
        self._model_seen: str | None = None
        """The model the CLI last reported in this process."""
        self._woken = False
        """A wake ran in this process: `budget` holds its cost."""

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
        if isinstance(event, (Banner, SessionStarted, StepStarted, StepEnded, Verdict)):
            self._dirty = True  # the lineage or the manifest moved: a front-end that keeps a snapshot reads them now
            if self._reading is not None:
                self._poke()
        match event:
            case StepStarted(step=step):
                self._step = step
            case ContextSize(step=step, tokens=tokens) if in_work_session(step):  # not the judge's
                self._context = tokens
            case Banner(context=int(context)):  # read from sessions.db at wake
                self._context = context
            case Verdict(round=n, passed=passed, reasons=reasons):
                self._verdict = VerdictState(round=n, passed=passed, reasons=reasons)
            case Waiting():
                self._offline_since = event.offline_since if event.reason == "offline" else None
                self._waiting = WaitState(reason=event.reason, seconds=event.seconds, attempt=event.attempt,
                                          max_attempts=event.max_attempts, until=time.time() + event.seconds)
        emit_to(self._listeners, event)

    # -- commands --------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """Whether a wake is in progress in this process."""
        return self._task is not None and not self._task.done()

    async def wake(self, text: str | None = None, caller: Caller | None = None, *,
                   prefetch: Prefetch | None = None) -> WakeOutcome:
        """Continue here (text = a wake sentence), or start (text = the task); joins a wake already running (D5).

        `caller` is whom a wake started here runs for (its variables, who answers its questions: issue 33);
        `prefetch`, the work session's pruned view a worker is preparing, which its resume takes (stores/prefetch.py).
        """
        task = self._task
        if task is not None and not task.done():
            if prefetch is not None:  # the running wake resumed without it
                prefetch.discard()
            if text and text.strip():
                await self.say(text)
            return await asyncio.shield(task)
        self._listening = asyncio.Event()
        self._task = asyncio.create_task(self._run(text, caller or Caller(), prefetch, self._listening))
        return await asyncio.shield(self._task)

    async def say(self, text: str, caller: Caller | None = None) -> WakeOutcome | None:
        """A sentence for the work session: delivered at its next turn while running (None), else a wake (S15)."""
        path = await self._heard_by()
        if path is not None:
            path.hear(text.strip())  # pending on disk at once (issue 31), then delivered
            # Said only now that it is on disk: the acknowledgment a terminal shows at once (issue 34).
            self._emit(Notice(text=texts.text("queued", self.locale, sentence=text.strip())))
            return None
        return await self.wake(text, caller)

    async def _heard_by(self) -> FlowerPath | None:
        """The running wake's path once it has read the sentences earlier wakes left pending; None when no wake runs,
        or it ended before that (a sentence heard earlier would be saved over theirs: issue 31, nothing said is lost).

        Waits no longer than the wake's start: reading the lineage and the pending sentences under its lock.
        """
        task, listening = self._task, self._listening
        if task is None or task.done():
            return None
        if not listening.is_set():
            ready = asyncio.ensure_future(listening.wait())
            try:
                await asyncio.wait({ready, task}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                ready.cancel()
        return self._path if listening.is_set() and not task.done() else None

    async def new(self, text: str, caller: Caller | None = None) -> WakeOutcome:
        """Start something else: archive lineage, 需求.md and 目标.md (S28), then start `text` as the task."""
        if not text or not text.strip():
            raise FlowerError("new_needs_task")
        if self._task is not None and self.running:
            self.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        with WorkspaceLock(self.run_dir, self.sessions.records):
            lineage = Lineage.load(self.run_dir, self.workspace, records=self.sessions.records)
            # The archived task's pending sentences go with it (issue 31): said to that task, not to the new one.
            extra = [self.workspace / REQUIREMENTS_FILE, self.workspace / goals.GOALS_FILE, self.run_dir / SENTENCES_FILE]
            into = lineage.archive(self.workspace / "notes" / "archive", extra=extra)
            if isinstance(records := self.sessions.records, taskfiles.TaskFiles):  # or the next wake restores them (D9)
                taskfiles.archive(records, into.relative_to(self.workspace).as_posix())
        self._context = self._verdict = None  # they were the archived task's
        self._dirty = True
        self._emit(Notice(text=texts.text("archived", self.locale, path=into)))
        return await self.wake(text, caller)

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

    async def _run(self, text: str | None, caller: Caller, prefetch: Prefetch | None,
                   listening: asyncio.Event) -> WakeOutcome:
        # Imported by the first wake, not with the service: status, changes and gc read the records through it and
        # need neither the runtime nor the SDK behind it (issue 34).
        from .runtime import Runtime
        from .workflow.flower import FlowerPath

        self.budget, self._woken = Budget(self.max_cost), True
        # The prefetch is the Runtime's now: it takes it or discards it when it closes.
        rt = Runtime(self.workspace, self.run_dir, sessions=self.sessions, resilience=self.resilience, env=dict(caller.env),
                     model=self.model, fallback_model=self.fallback_model, isolated=self.isolated, budget=self.budget,
                     trust=self.trust, allow=self.allow, mode=self.mode, approvals=self.approvals, prefetch=prefetch,
                     caller=caller)
        rt.listeners.append(self._emit)
        self._runtime = rt
        ask = caller.ask
        self._path = FlowerPath(rt, self.locale, self.rounds, self.handoff_at,
                                ask=(lambda question: self._ask(ask, question)) if ask is not None else None,
                                listening=listening)
        try:
            await self.housekeeping()
            ctx = await self._path.wake(text)
            return WakeOutcome(ok=ctx.ok, error=ctx.error, said=ctx.said, woke=ctx.woke, sessions=dict(ctx.sessions),
                               verdict=ctx.verdict)
        except asyncio.CancelledError:
            cancelled = texts.say("cancelled")
            return WakeOutcome(ok=False, error=str(cancelled), said=cancelled)
        finally:
            self._step = self._waiting = None
            if rt.window:
                self.window, self._window_seen = rt.window, True
            self._model_seen = rt.model_seen or self._model_seen
            self._runtime = None
            await rt.close()  # its journal's files; the sessions are the service's
            # Its write connection lives while a wake runs: a service between wakes holds no descriptor of sessions.db,
            # however many reads it served at once meanwhile (stores/sqlite.py `rest`; issue 35: soak.py's fds).
            await self.sessions.rest()
            self._dirty, self._sized_at = True, float("-inf")  # the end's status shows the size the wake left

    async def housekeeping(self) -> None:
        """Run at the start of every wake, before its steps: collect archived tasks past `retention_days`, and suggest `flower gc` for a large store.

        One line each (a Notice, so a terminal and an editor both show it); a failure is logged, never stops the wake.
        """
        try:
            if self.retention_days is not None:
                found = await retention.survey(self.workspace, self.run_dir, self.sessions)
                chosen = found.collectable(self.retention_days * retention.DAY_S)
                if chosen:
                    freed = await retention.collect(self.workspace, self.run_dir, self.sessions, chosen)
                    self._emit(Notice(text=texts.text(
                        "retention_freed", self.locale, days=self.retention_days, sessions=freed.sessions, count=len(chosen),
                        before=megabytes(freed.before), after=megabytes(freed.after))))
            size = await asyncio.to_thread(self.sessions.raw.size_on_disk)
            if size >= self.store_warn:
                self._emit(Notice(text=texts.text("store_large", self.locale, size=f"{size / 1e9:.1f}")))
        except Exception as exc:  # the store's size is a bonus to the wake, its failure only a log line
            log.warning("retention at wake: %s", exc)

    async def _ask(self, ask: Ask, question: str) -> str | None:
        """The wake's caller answers a clarify question; status says the run waits for the person meanwhile."""
        self._question_since = time.time()
        try:
            return await ask(question)
        finally:
            self._question_since = None

    def waiting_for(self) -> WaitingFor | None:
        """What the run waits for now: the person (an approval, a question) before the API (an outage)."""
        approval = self.approvals.waiting()
        if approval is not None:
            return WaitingFor(what="approval", since=approval.since, approval=approval)
        if self._question_since is not None:
            return WaitingFor(what="question", since=self._question_since)
        if self._waiting is not None and self._waiting.reason == "offline" and self._offline_since is not None:
            return WaitingFor(what="outage", since=self._offline_since)
        return None

    # -- status ----------------------------------------------------------------------------
    def _read_rest(self, sized: bool = True) -> _Rest:
        """What status shows of the records and the workspace's files, read afresh if their stamps moved (a worker thread).

        The store's size is read too when `sized`, else the last one is kept: no change stamp moves with an append,
        and on PostgreSQL the size is a query of its own.
        """
        records = self.sessions.records
        stamp = (records.stamp(), *(_stamp(self.workspace / name) for name in (REQUIREMENTS_FILE, goals.GOALS_FILE, ARCHIVE)))
        rest = self._rest
        size = self.sessions.raw.size_on_disk() if sized or rest is None else rest.store_bytes
        if rest is not None and rest.stamp == stamp:
            return dataclasses.replace(rest, store_bytes=size)
        with self._folding:  # a refresh's worker thread and `status()` may both fold the one tally
            tally = self._tally = self._tally.fold(parsed_rows(records), task_began(self.workspace))
            st = at_rest(self.workspace, self.run_dir, records=records, found=recorded_of(tally))
            work = st.steps.get(WORK)
            verdict, window, basis = tally.judged(WORK, work), tally.window, tally.basis()
        return _Rest(stamp, st, self._stored_context(work) if work else None, window, verdict, size, basis)

    async def refresh(self) -> None:
        """Read status's records again, off the event loop; callers at the same time share one read.

        From the first call on, this service's own events start such a read too (`snapshot` stays current).
        """
        if self._reading is None or self._reading.done():
            self._reading = asyncio.ensure_future(self._refresh())
        await asyncio.shield(self._reading)

    async def _refresh(self) -> None:
        self._dirty, self._read_since = False, time.monotonic()
        sized = self._read_since - self._sized_at >= SIZED_S
        try:
            self._rest = await asyncio.to_thread(self._read_rest, sized)
            self._unreachable = None
            if sized:
                self._sized_at = self._read_since
        except Exception as exc:  # the store is not answering: status says so and shows what it read before (D9)
            self._unreachable = self._not_answering(exc)
            log.warning("status: %s", self._unreachable)
        finally:
            self._read_at = time.monotonic()
        if self._dirty and self._unreachable is None:  # an event came during the read: read what it changed too
            self._reading = asyncio.ensure_future(self._refresh())

    def _not_answering(self, exc: BaseException | None) -> texts.Said:
        reason = (str(exc).strip().splitlines() or [type(exc).__name__])[0] if exc is not None else "no answer yet"
        return texts.say("status_unreachable", where=self.sessions.records.where, reason=reason)

    def _poke(self) -> None:
        """Start a background refresh if the snapshot may be stale (an event of ours, or its age); never waits."""
        if self._reading is not None and not self._reading.done():
            return
        if self._dirty or time.monotonic() - self._read_at > STALE_S:
            self._reading = asyncio.ensure_future(self._refresh())

    def status(self) -> Status:
        """Everything a front-end shows, the records read now where their change stamps moved (no model request).

        For a terminal or a script; a server that must never wait on a store answers with `snapshot()` instead.
        `context` is the work session's size seen in this process, or else its last round read back from the store,
        so a fresh process shows the gauge before any wake.
        """
        self._dirty, self._rest, self._unreachable = False, self._read_rest(), None
        self._read_at = time.monotonic()
        return self._view()

    def snapshot(self) -> Status:
        """`status()` answered at once from memory: never a read, never a wait, whatever the store does (D9).

        The records' part is the last snapshot `refresh` read in a worker thread; this starts the next one when an
        event of this service or the snapshot's age says it may be stale. While a read has hung for SLOW_S, or the
        last one failed, `unreachable` says so.
        """
        self._poke()
        return self._view()

    def _view(self) -> Status:
        """The one status (issue 33): the records' part, then each live fact from its one reader below."""
        st = self._recorded_now()
        context, window = self._context_now(), self._window_now()
        return dataclasses.replace(
            st, **self._run_now(st), context=context, window=window, handoff_at=self.handoff_at,
            verdict=self._verdict_now(), model=self._model_now(st), cost=self._cost_now(st), settings=self._shown,
            unreachable=self._unreachable_now(), store_bytes=self._rest.store_bytes if self._rest is not None else None,
            forecast=self._forecast_now(context, window))

    def _forecast_now(self, context: int | None, window: int) -> Forecast | None:
        """Rounds left to the handoff and to the window, and the cost per round: the records' rows and the live context."""
        basis = self._rest.basis if self._rest is not None else None
        return forecast_of(basis, context, self.handoff_at, window) if basis is not None else None

    def _recorded_now(self) -> Status:
        """The records' part: the last snapshot read, with a running wake's lineage over it (in memory it is newer, D5)."""
        rest = self._rest
        st = rest.status if rest is not None else Status(
            workspace=str(self.workspace), run_dir=str(self.run_dir), woke=0, started=False, steps={}, goals=[])
        lineage = self._path.lineage if self._path is not None and self.running else None
        return st if lineage is None else dataclasses.replace(st, woke=lineage.woke, steps=dict(lineage.steps), started=True)

    def _run_now(self, st: Status) -> dict[str, Any]:
        """Running or not, the step, what the run waits for, its background work."""
        running = self.running
        return dict(
            running=running, step=self._step,
            interrupted=not running and st.interrupted, elsewhere=not running and st.elsewhere,
            waiting=self._waiting, waiting_for=self.waiting_for(),
            background=[t.label for t in self._runtime.delegated.values() if t.running]  # issue 32
            if self._runtime is not None and running else [])

    def _context_now(self) -> int | None:
        """The work session's context size: seen in this process (live, or the banner's at wake), else read from the store."""
        if self._context is not None:
            return self._context
        return self._rest.context if self._rest is not None else None

    def _window_now(self) -> int:
        """The model's window: the CLI's report, else the one the manifest recorded (adopted once, for every reader)."""
        rest = self._rest
        if rest is not None and rest.window and not self._window_seen:
            self.window, self._window_seen = rest.window, True
        return self.window

    def _verdict_now(self) -> VerdictState | None:
        """The judge's last verdict: seen in this process, else the manifest's on the current work session when idle."""
        judged_here = self._rest.verdict if self._rest is not None and not self.running else None
        if self._verdict is not None or judged_here is None:
            return self._verdict
        return VerdictState(round=judged_here[0], passed=judged_here[1], reasons=judged_here[2])

    def _model_now(self, st: Status) -> str | None:
        """The model: the settings', else the one the CLI reports now, else the last it reported here, else the manifest's."""
        seen = self._runtime.model_seen if self._runtime is not None else None
        return self.model or seen or self._model_seen or st.model

    def _cost_now(self, st: Status) -> Cost:
        """This process's wake when it ran one, else the last process's (a terminal's wake, read from the manifest)."""
        wake = round(self.budget.spent, 6) if self._woken else st.cost.wake
        return Cost(wake=wake, task=st.cost.task, max=self.max_cost)

    def _unreachable_now(self) -> texts.Said | None:
        """The store is not answering: the last read failed, or one has hung for SLOW_S."""
        # In flight only once begun: a read `snapshot()` just scheduled has not set `_read_since` yet, and measuring it
        # from the previous read's start made every status > SLOW_S after a read say the store is down (issue 31).
        in_flight = self._reading is not None and not self._reading.done() and self._read_since > self._read_at
        if self._unreachable is not None or not in_flight or time.monotonic() - self._read_since <= SLOW_S:
            return self._unreachable
        return self._not_answering(None)

    def _stored_context(self, session_id: str) -> int | None:
        """The session's last context size in the store; None (logged) if it cannot be read: the gauge is a bonus (S12)."""
        try:
            return self.sessions.context(self.workspace, session_id)
        except Exception as exc:
            log.warning("cannot read the context size of %s from %s (%s)", session_id, self.sessions.raw.path, exc)
            return None


STALE_S = 0.25
"""How old the status snapshot may be before a status starts a check of the records' change stamps."""
SIZED_S = 5.0
"""How often at most a background refresh reads the store's size (a status while a wake appends shows it this fresh)."""
SLOW_S = 1.0
"""A refresh still running after this long: the store is not answering, and status says so."""
ARCHIVE = "notes/archive"
"""Where `flower --new` archives a task (S28): the newest archive is when the current task began."""


@dataclass(frozen=True)
class _Rest:
    """What status read of the records and the workspace's files, with the stamps they had."""

    stamp: tuple[Hashable, ...]
    status: Status
    context: int | None
    window: int | None
    verdict: tuple[int, bool, str] | None
    store_bytes: int | None
    basis: Basis | None
    """The forecast's part from the task's manifest rows (issue 34), made here once, not for every answer (issue 35);
    None without rows."""


def _stamp(path: Path) -> tuple[int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_mtime_ns, st.st_size
