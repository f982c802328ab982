"""One workspace folder in the editor: its FlowerService, and its events rendered as notifications and progress.

Events arrive synchronously on the event loop (FlowerService.subscribe); they are queued and sent
by one pump task per folder, so everything a folder sends keeps the order the events had, even
when a step's `$/progress` token must first be created with a round trip to the client.
`flower/status` never goes through the queue: it reads the service directly and answers at once.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ..core.banner import kilo, label
from ..core.errors import FlowerError
from ..core.events import Event
from ..service import FlowerService
from ..status import to_json
from . import protocol as p

if TYPE_CHECKING:
    from .server import FlowerServer

log = logging.getLogger(__name__)

START_TIMEOUT = 30.0
"""Bound on how long wake/say/new wait for their run to show its first event (it comes before any CLI starts)."""
CREATE_TIMEOUT = 10.0
"""Bound on the client's answer to `window/workDoneProgress/create`."""
CLOSE_TIMEOUT = 20.0
"""Bound on cancelling a run and flushing its notifications when a folder closes."""
REPORT_LIMIT = 120


@dataclass
class Run:
    """One wake (or new) driven in the background for this folder."""

    number: int
    task: asyncio.Task | None = None
    began: asyncio.Event = field(default_factory=asyncio.Event)
    announced: bool = False
    """`flower/state` running=true has been queued."""
    answered: bool = False
    """The request that started it has returned; from now on its failures go out as notifications."""
    cancel_requested: bool = False
    error: BaseException | None = None
    said: str | None = None
    """The person's sentence that started it, sent as a `user` transcript entry right after the run begins."""


@dataclass
class Options:
    """Per-server settings from `initializationOptions` (all optional)."""

    rounds: int | None = None
    trim: bool = True
    handoff_at: int | None = None


class Folder:
    """A workspace folder: the lineage key (P2), with its own service and `runs/`."""

    def __init__(self, ls: FlowerServer, uri: str, name: str, path: Path, locale: str, options: Options):
        self.ls, self.uri, self.name, self.path = ls, uri, name, path
        self.svc = FlowerService(path, locale=locale, trim=options.trim, rounds=options.rounds,
                                 handoff_at=options.handoff_at)
        self.svc.ask = self._ask
        self._unsubscribe = self.svc.subscribe(self._on_event)
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._pump: asyncio.Task | None = None
        self._numbers = itertools.count(1)
        self.run: Run | None = None
        self.progress: str | None = None
        """The `$/progress` token of the step running now."""
        self.tokens: set[str] = set()
        """Every progress token this folder created (for `window/workDoneProgress/cancel`)."""
        self._header: str | None = None
        self._verdicts: dict[str, dict[str, str]] = {}

    # -- commands --------------------------------------------------------------------------
    def status(self) -> p.FolderStatus:
        """The folder's status, from the service's memory and files: no model request, no waiting."""
        s = to_json(self.svc.status())
        waiting, verdict = s.get("waiting"), s.get("verdict")
        return p.FolderStatus(
            folder=self.uri, name=self.name, workspace=s["workspace"], run_dir=s["run_dir"], woke=s["woke"],
            steps=dict(s["steps"]), goals=[p.Goal(g["text"], g["done"]) for g in s["goals"]],
            context=s.get("context"), window=s["window"], running=s["running"], step=s.get("step"),
            waiting=p.WaitState(waiting["reason"], waiting["seconds"], waiting["attempt"], waiting["max_attempts"])
            if waiting else None,
            verdict=p.VerdictState(verdict["round"], verdict["passed"], verdict["reasons"]) if verdict else None,
        )

    async def wake(self, text: str | None) -> p.WakeResult:
        """Start a wake, or join the one running here (D5); a text for a running wake goes to its work session."""
        text = text.strip() if text and text.strip() else None
        if self.svc.running:
            if text:
                self._said(text)
                await self.svc.say(text)
            return p.WakeResult(self.uri, "joined", text is not None, self.status())
        await self._start(self.svc.wake(text), said=text)
        return p.WakeResult(self.uri, "started", False, self.status())

    async def say(self, text: str) -> p.SayResult:
        """Queue a sentence for the running work session, or wake with it when idle (S15)."""
        if self.svc.running:
            self._said(text.strip())
            await self.svc.say(text)
            return p.SayResult(self.uri, "delivered", self.status())
        await self._start(self.svc.say(text), said=text.strip())
        return p.SayResult(self.uri, "started", self.status())

    async def new(self, text: str) -> p.NewResult:
        """Cancel what runs, archive the task (S28) and start `text`."""
        cancelled = await self.cancel_and_wait()
        await self._start(self.svc.new(text), said=text.strip())
        return p.NewResult(self.uri, "started", cancelled, self.status())

    def cancel(self) -> bool:
        """Stop the running wake cleanly; its sessions stay in the lineage, so the next wake resumes."""
        if not self.svc.running:
            return False
        if self.run is not None:
            self.run.cancel_requested = True
        self.svc.cancel()
        return True

    async def cancel_and_wait(self) -> bool:
        """Cancel the running wake and wait (bounded) until its end has been sent."""
        run = self.run
        if not self.cancel():
            return False
        if run is not None and run.task is not None:
            await asyncio.wait_for(asyncio.shield(run.task), CLOSE_TIMEOUT)
        return True

    async def close(self) -> None:
        """Cancel the running wake, send what is queued, and let go of the service."""
        try:
            await asyncio.wait_for(self._close(), CLOSE_TIMEOUT)
        except (TimeoutError, Exception):
            log.exception("closing %s", self.uri)
        finally:
            self._unsubscribe()
            if self._pump is not None:
                self._pump.cancel()

    async def _close(self) -> None:
        run = self.run
        self.cancel()
        await self.svc.close()
        if run is not None and run.task is not None:
            await asyncio.gather(run.task, return_exceptions=True)
        await self._queue.join()

    # -- running in the background -----------------------------------------------------------
    async def _start(self, work, said: str | None = None) -> Run:
        """Drive `work` in the background; return once it showed its first event, or raise if it failed before."""
        self._ensure_pump()
        run = Run(next(self._numbers), said=said)
        self.run = run
        run.task = asyncio.create_task(self._drive(run, work))
        began = asyncio.create_task(run.began.wait())
        try:
            await asyncio.wait({run.task, began}, timeout=START_TIMEOUT, return_when=asyncio.FIRST_COMPLETED)
        finally:
            began.cancel()
        if run.task.done() and not run.announced and run.error is not None:
            if self.run is run:
                self.run = None
            raise run.error
        run.answered = True
        return run

    async def _drive(self, run: Run, work) -> dict[str, Any]:
        try:
            result = await work
            outcome = to_json(result) if result is not None else {"ok": True}
        except Exception as exc:  # an expected FlowerError, or a bug: either way the folder stays usable
            if not isinstance(exc, FlowerError):
                log.exception("wake in %s failed", self.uri)
            run.error = exc
            outcome = {"ok": False, "error": f"{type(exc).__name__}: {exc}" if not isinstance(exc, FlowerError) else str(exc)}
        if not run.announced:
            if run.error is not None and not run.answered:
                return outcome  # the request that started it answers with the error instead
            self._announce(run)
        self._queue.put_nowait(("end", (run, outcome)))
        return outcome

    def _announce(self, run: Run) -> None:
        run.announced = True
        self._queue.put_nowait(("begin", run))
        if run.said:
            self._queue.put_nowait(("said", run.said))
        run.began.set()

    def _on_event(self, event: Event) -> None:
        run = self.run
        if run is not None and not run.announced and not (run.task and run.task.done()):
            self._announce(run)
        self._ensure_pump()
        self._queue.put_nowait(("event", event))

    def _said(self, text: str) -> None:
        """The person's sentence, as a transcript entry of role `user`."""
        self._ensure_pump()
        self._queue.put_nowait(("said", text))

    async def _ask(self, question: str) -> str | None:
        """Put a clarify question to the person through `flower/ask`; None when the client cannot answer."""
        try:
            raw = await self.ls.protocol.send_request_async(p.ASK, p.to_wire(p.AskParams(self.uri, question)))
        except JsonRpcException as exc:
            log.info("flower/ask not answered by the client (%s): the agent will assume", exc.message)
            return None
        try:
            return p.CONVERTER.structure(raw if raw is not None else {}, p.AskResult).answer
        except Exception:
            log.warning("flower/ask: the client's answer %r is not {\"answer\": string|null}; treated as none", raw)
            return None

    # -- the pump: events → notifications, in order -------------------------------------------
    def _ensure_pump(self) -> None:
        if self._pump is None or self._pump.done():
            self._pump = asyncio.create_task(self._pump_loop())

    async def _pump_loop(self) -> None:
        while True:
            kind, item = await self._queue.get()
            try:
                await self._render(kind, item)
            except Exception:  # a rendering bug must not stop the folder's notifications
                log.exception("could not send %s for %s", kind, self.uri)
            finally:
                self._queue.task_done()

    def notify(self, method: str, payload: Any) -> None:
        """Send one notification (camelCase, explicit nulls, no API keys)."""
        self.ls.protocol.notify(method, p.to_wire(payload))

    async def _render(self, kind: str, item: Any) -> None:
        if kind == "begin":
            self.notify(p.STATE, p.StateNotification(self.uri, item.number, True, None, False, None, None))
        elif kind == "end":
            run, outcome = item
            cancelled = run.cancel_requested
            self._end_progress("cancelled" if cancelled else ("failed" if not outcome.get("ok") else "done"))
            self.notify(p.STATE, p.StateNotification(
                self.uri, run.number, False, bool(outcome.get("ok")), cancelled, outcome.get("error"), outcome.get("woke")))
            if self.run is run:
                self.run = None
        elif kind == "said":
            self.notify(p.TRANSCRIPT, p.TranscriptNotification(
                self.uri, None, None, None, "user", "text", item, None, None, None, None))
        else:
            await self._event(item)

    async def _event(self, e: Event) -> None:
        f = self.uri
        k = e.kind
        if k == "banner":
            self.notify(p.BANNER, p.BannerNotification(f, e.text, e.woke))
        elif k == "header":
            self._header = e.text
            self.notify(p.HEADER, p.HeaderNotification(f, e.step, e.text))
        elif k == "step_start":
            token = await self._begin_progress(e)
            self.notify(p.STEP_START, p.StepStartNotification(f, e.step, e.index, e.total, e.session_id, e.woke, token))
        elif k == "step_end":
            self.notify(p.STEP_END, p.StepEndNotification(f, e.step, e.ok, e.session_id, e.error, e.context))
            self._end_progress("done" if e.ok else f"failed: {e.error or 'unknown error'}")
            if e.session_id:
                await self._send_pruned(e.session_id)
        elif k == "session":
            self.notify(p.SESSION, p.SessionNotification(f, e.step, e.session_id, e.resumed))
        elif k == "text":
            self.notify(p.TRANSCRIPT, p.TranscriptNotification(
                f, e.step, e.session_id, e.uuid, "assistant", "text", e.text, None, None, None, self._verdict(e)))
            self._report(e.text.strip().splitlines()[0] if e.text.strip() else "")
        elif k == "tool":
            summary = tool_summary(e.name, e.input)
            self.notify(p.TRANSCRIPT, p.TranscriptNotification(
                f, e.step, e.session_id, e.uuid, "assistant", "tool", summary, e.name, p.cut(e.input), e.tool_use_id,
                self._verdict(e)))
            self._report(summary)
        elif k == "context":
            self.notify(p.CONTEXT, p.ContextNotification(f, e.step, e.session_id, e.tokens, self.svc.window))
            self._report(f"context {kilo(e.tokens)} / {kilo(self.svc.window)}")
        elif k == "wait":
            self.notify(p.WAIT, p.WaitNotification(
                f, e.step, e.reason, e.attempt, e.max_attempts, e.seconds, e.error or "", e.offline_since))
            self._report(f"{e.reason}: waiting {e.seconds:.0f} s (attempt {e.attempt}/{e.max_attempts})")
        elif k == "verdict":
            self.notify(p.VERDICT, p.VerdictNotification(f, e.step, e.round, e.passed, e.reasons))
        elif k == "question":
            self.notify(p.QUESTION, p.QuestionNotification(f, e.text))
        elif k == "handoff":
            self.notify(p.HANDOFF, p.HandoffNotification(f, e.old_session, e.new_session, e.path))
        elif k == "notice":
            self.notify(p.NOTICE, p.NoticeNotification(f, e.text))
        else:
            log.debug("no notification for event %r", k)

    # -- $/progress ----------------------------------------------------------------------------
    @property
    def _progress_supported(self) -> bool:
        caps = getattr(self.ls.protocol, "client_capabilities", None)
        return bool(caps and caps.window and caps.window.work_done_progress)

    async def _begin_progress(self, e: Event) -> str | None:
        self._end_progress("done")
        if not self._progress_supported:
            return None
        token = f"flower/{uuid.uuid4()}"
        try:
            await asyncio.wait_for(self.ls.work_done_progress.create_async(token), CREATE_TIMEOUT)
        except (TimeoutError, JsonRpcException) as exc:
            log.warning("the client did not create progress %s (%s); the step runs without it", token, exc)
            return None
        self.tokens.add(token)
        self.progress = token
        name = label(self.svc.locale, e.step or "")
        self.ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=f"flower: {name}", message=p.redact(self._header or name), cancellable=True,
            percentage=int(100 * (e.index - 1) / max(e.total, 1))))
        return token

    def _report(self, message: str) -> None:
        if self.progress and message:
            short = message if len(message) <= REPORT_LIMIT else message[:REPORT_LIMIT - 1] + "…"
            self.ls.work_done_progress.report(self.progress, types.WorkDoneProgressReport(message=p.redact(short)))

    def _end_progress(self, message: str) -> None:
        token, self.progress = self.progress, None
        if token:
            short = message if len(message) <= REPORT_LIMIT else message[:REPORT_LIMIT - 1] + "…"
            self.ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=p.redact(short)))

    # -- what the pruner does (S23) -----------------------------------------------------------
    def _verdict(self, e: Event) -> str | None:
        return self._verdicts.get(getattr(e, "session_id", None) or "", {}).get(getattr(e, "uuid", None) or "")

    async def _send_pruned(self, session_id: str) -> None:
        """Tell the client how the pruner treats this session's entries on resume (read back from sessions.db)."""
        verdicts = await self.svc.pruned(session_id)
        if verdicts is not None:
            self._verdicts[session_id] = verdicts
            self.notify(p.PRUNED, p.PrunedNotification(self.uri, session_id, verdicts))


def tool_summary(name: str, data: Any) -> str:
    """`Write(notes.txt)`, `Bash(ls -la)`: a tool call in one line."""
    data = data if isinstance(data, dict) else {}
    arg = next((v for k in ("file_path", "command", "path", "pattern", "url", "description") if isinstance(v := data.get(k), str)), "")
    arg = arg.splitlines()[0] if arg else ""
    arg = arg if len(arg) <= 80 else arg[:77] + "..."
    return f"{name}({arg})"
