"""One workspace folder in the editor: its FlowerService, and its events rendered as notifications and progress.

Events arrive synchronously on the event loop (FlowerService.subscribe); they are queued and sent
by one pump task per folder, so everything a folder sends keeps the order the events had, even
when a step's `$/progress` token must first be created with a round trip to the client.
`flower/status` never goes through the queue: it maps the service's in-memory status and answers at once (the
service refreshes what it read of the records off the event loop, when its events or their change stamps say so).
"""

from __future__ import annotations

import asyncio
import functools
import itertools
import logging
import time
from collections.abc import Awaitable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol, assert_never

from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams, JsonRpcMethodNotFound

from ..core import crash
from ..core.approvals import Approval, Decision
from ..core.banner import kilo, label
from ..core.caller import Caller
from ..core.errors import FlowerError
from ..core.events import (
    AssistantText,
    Banner,
    ContextSize,
    Event,
    Handoff,
    Header,
    Notice,
    Question,
    SessionStarted,
    StepEnded,
    StepStarted,
    ToolCall,
    Verdict,
    Waiting,
)
from ..core.manifest import in_work_session
from ..core.redact import cut, hold_secrets
from ..core.text import tool_label
from ..core.travel import travelling
from ..core.trust import why
from ..history import Item, Pruned, Verdicts
from ..settings import KEYS, OPTION_LABELS, SettingsError
from ..status import WaitingFor, WakeOutcome, to_json
from ..task import NotASession, open_task
from . import protocol as p
from .progress import StepProgress

log = logging.getLogger(__name__)

START_TIMEOUT = 30.0
"""Bound on how long wake/say/new wait for their run to show its first event (it comes before any CLI starts)."""
CLOSE_TIMEOUT = 20.0
"""Bound on cancelling a run and flushing its notifications when a folder closes."""
HISTORY_LIMIT = 200
"""`flower/history` entries per page when the client does not say."""
HISTORY_MAX = 1000
OPEN_WAIT = 2.0
"""Bound on how long a folder's first status waits for its first read of the records (a store that does not answer)."""
END_WAIT = 2.0
"""Bound on how long the end of a wake waits for status's records to be read again, so the next status is the end's."""


@dataclass
class Run:
    """One wake (or new) driven in the background for this folder."""

    number: int
    task: asyncio.Task[dict[str, Any]] | None = None
    began: asyncio.Event = field(default_factory=asyncio.Event)
    announced: bool = False
    """`flower/state` running=true has been queued."""
    answered: bool = False
    """The request that started it has returned; from now on its failures go out as notifications."""
    cancel_requested: bool = False
    error: BaseException | None = None
    said: str | None = None
    """The person's sentence that started it, sent as a `user` transcript entry right after the run begins."""


class Peer(Protocol):
    """Whom a Folder talks to: one client's server (stdio), or the engine's fan-out to every client attached (D11)."""

    @property
    def protocol(self) -> Any:
        """`notify(method, params)`, `send_request_async(method, params)`, `client_capabilities`."""

    @property
    def work_done_progress(self) -> Any:
        """`create_async(token)`, `begin`, `report`, `end` of `$/progress`."""


class Left(JsonRpcException):
    """Every client asked a question withdrew without an answer (a reload, a terminal's Ctrl-C): the person may come back."""


def crashed(exc: Exception, folder: Folder | None) -> crash.Crash:
    """A bug: its traceback goes to the folder's run dir log (core/crash.py), the editor gets one line."""
    error = crash.caught(exc, folder.svc.run_dir if folder is not None else None, "crash_editor")
    log.error("unexpected error%s (traceback in %s): %s", f" in {folder.uri}" if folder else "", error.log,
              error.said.fields["what"])
    return error


class Folder:
    """A workspace folder in the editor protocol: the task it opens (P2, `task.open_task`), rendered for its clients."""

    def __init__(self, ls: Peer, uri: str, name: str, path: Path, locale: str, options: dict[str, object],
                 editor_trust: bool = False):
        self.ls, self.uri, self.name, self.path = ls, uri, name, path
        self.task = open_task(path, locale=locale, given=options, labels=OPTION_LABELS, editor_trust=editor_trust,
                              lenient=True)
        """Trust, settings, store, service and history, opened once; a bad setting answers every wake until fixed."""
        self.trust, self.svc = self.task.trust, self.task.service
        error = self.task.settings_error
        self.settings_problem = None if error is None else _problem(error, locale)
        """The settings error as status shows it (a client tells the person at once, not only at their next wake)."""
        self._trust_said = why(self.trust).text(locale)
        """Why the folder is trusted or not, as status says it (made once: status is asked often)."""
        self.svc.approvals.on_change.append(self._approval_changed)
        self._unsubscribe = self.svc.subscribe(self._on_event)
        self._queue: asyncio.Queue[tuple[str, Any]] = asyncio.Queue()
        self._pump: asyncio.Task[None] | None = None
        self._numbers = itertools.count(1)
        self.run: Run | None = None
        self.progress = StepProgress(ls, locale)
        """The `$/progress` of the step running now."""
        self._header: str | None = None
        self._verdicts: dict[str, dict[str, Pruned]] = {}
        self._seq = 0
        """The last `seq` given to a transcript entry: above every store position known here (protocol.md)."""
        self._block: tuple[str | None, int] = (None, 0)
        """The uuid of the last live block and how many blocks had it (a second block gets `<uuid>#1`)."""
        self._awaited: set[asyncio.Future[Verdicts]] = set()
        self._closed = False
        self._opened = asyncio.ensure_future(self._open())
        """The first read of the store and the records, off the event loop: nothing is read here (status never blocks)."""

    async def _open(self) -> None:
        seq, _ = await asyncio.gather(self.task.history.latest_seq(), self.svc.refresh())
        self._seq = max(self._seq, seq)

    @property
    def opened(self) -> bool:
        """The folder's first read of its records is done."""
        return self._opened.done()

    async def ready(self, wait: float = OPEN_WAIT) -> None:
        """Wait (bounded) for the folder's first read of its records; at once after that."""
        if not self._opened.done():
            await asyncio.wait([asyncio.shield(self._opened)], timeout=wait)

    async def reread(self, wait: float = OPEN_WAIT) -> None:
        """Read the records and the task's files again now (bounded): a status asked after it shows them."""
        await asyncio.wait([asyncio.ensure_future(self.svc.refresh())], timeout=wait)

    # -- commands --------------------------------------------------------------------------
    @property
    def cursor(self) -> int:
        """The last `seq` given to a transcript entry, live or in history: every later live one is above it."""
        return self._seq

    def continue_after(self, seq: int) -> None:
        """Number live entries above `seq` (a folder rebuilt in the engine continues its clients' sequence)."""
        self._seq = max(self._seq, seq)

    def caller(self, env: dict[str, str] | None) -> Caller:
        """Whom a wake a request starts runs for: the request's variables over this process's (D11), and this
        folder's clients for its questions. Passed with that wake alone: another client's request never changes it."""
        given = travelling(env) if env is not None else {}
        hold_secrets(given)  # a key that came with the request is redacted like one of ours (D6)
        return Caller(given, ask=self._ask, approve=self._approve)

    def status(self) -> p.FolderStatus:
        """The folder's status, from the service's memory: no read, no model request, no waiting."""
        s = self.svc.snapshot()
        return p.folder_status(s, self.svc.locale, time.time(), folder=self.uri, name=self.name,
                               settings=self.settings_problem, trusted=self.trust.trusted, trust=self._trust_said,
                               waiting_for=self._waiting_for(s.waiting_for))

    async def read_history(self, params: p.HistoryParams) -> p.HistoryResult:
        """A page of the folder's stored transcript with the pruner's verdicts (protocol.md `flower/history`)."""
        limit = HISTORY_LIMIT if params.limit is None else params.limit
        if not 1 <= limit <= HISTORY_MAX:
            raise JsonRpcInvalidParams(f"{p.HISTORY}: params.limit must be 1 to {HISTORY_MAX}, not {limit}. "
                                       f"Send params like {p.HistoryParams.EXAMPLE}")
        if params.before is not None and params.before < 1:
            raise JsonRpcInvalidParams(f"{p.HISTORY}: params.before must be a nextBefore from an earlier page (>= 1), "
                                       f"not {params.before}. Send params like {p.HistoryParams.EXAMPLE}")
        try:
            page, runs = await self.task.page(params.session_id, params.before, limit)
        except NotASession as exc:
            raise JsonRpcInvalidParams(
                f"{p.HISTORY}: params.sessionId {params.session_id!r} is not a session of {self.uri} "
                f"(its sessions: {', '.join(exc.known) or 'none yet'}); omit it for every session") from None
        for sid, future in page.pending.items():
            if future not in self._awaited:  # one `flower/pruned` per computation, however many pages asked
                self._awaited.add(future)
                future.add_done_callback(functools.partial(self._pruned_later, sid))
        if page.items:
            self._seq = max(self._seq, max(i.seq for i in page.items))  # live seqs continue above what history showed
        return p.HistoryResult(
            self.uri, [self._entry(i) for i in page.items], page.next_before,
            [p.HistorySession(s.session_id, s.steps, s.entries, s.current) for s in page.sessions], list(page.pending),
            [p.StepSummary(**vars(s), label=self._label(s.step) or "") for s in runs])

    def _entry(self, i: Item) -> p.TranscriptNotification:
        return p.TranscriptNotification(
            folder=self.uri, step=i.step, session_id=i.session_id, uuid=i.uuid, role=i.role, kind=i.kind, text=i.text,
            tool_name=i.tool_name, tool_input=i.tool_input, tool_use_id=i.tool_use_id, pruned=i.pruned,
            pruned_text=i.pruned_text, seq=i.seq, parent=i.parent, step_label=self._label(i.step), denied=i.denied)

    def _pruned_later(self, session_id: str, future: asyncio.Future[Verdicts]) -> None:
        """A history page's pending verdicts are ready: send them as `flower/pruned`, in the folder's order."""
        self._awaited.discard(future)
        if self._closed:
            return
        if future.cancelled() or future.exception() is not None:
            log.warning("the pruner's view of %s could not be computed: %s", session_id,
                        None if future.cancelled() else future.exception())
            return
        self._ensure_pump()
        self._queue.put_nowait(("pruned", (session_id, future.result().verdicts)))

    async def changes(self) -> p.ChangesResult:
        """`flower/changes`: each wake's changed files against the workspace now."""
        log_ = self.svc.change_log
        running = self.svc.running
        wakes = [p.ChangedWake(w.wake, running and w.wake == log_.wake, [
            p.ChangedFile(f.path, f.change, f.added, f.removed, f.before,
                          str(log_.object_path(f.before)) if f.before else None, f.tool, f.agent) for f in w.files])
            for w in await self.svc.changes() if w.files]
        return p.ChangesResult(self.uri, wakes)

    async def revert(self, path: str | None, wake: int | None) -> p.RevertResult:
        """`flower/revert`: restore before-images; a wake running here or elsewhere refuses it (FLOWER_ERROR, key `revert_running`)."""
        if path is None and wake is None:
            raise JsonRpcInvalidParams(f"{p.REVERT}: give params.path, params.wake or both. Send params like {p.RevertParams.EXAMPLE}")
        return p.RevertResult(self.uri, await self.svc.revert(path, wake))

    async def wake(self, text: str | None, env: dict[str, str] | None = None) -> p.WakeResult:
        """Start a wake, or join the one running here (D5); a text for a running wake goes to its work session."""
        text = text.strip() if text and text.strip() else None
        if not self.busy:
            await self._prepare()
        if self.busy:  # already, or since: another request started one meanwhile
            if text:
                self._said(text)
                await self.svc.say(text)
            return p.WakeResult(self.uri, "joined", text is not None, self.status())
        await self._start(self.task.wake(text, self.caller(env)), said=text)
        return p.WakeResult(self.uri, "started", False, self.status())

    async def say(self, text: str, env: dict[str, str] | None = None) -> p.SayResult:
        """Queue a sentence for the running work session, or wake with it when idle (S15)."""
        if not self.busy:
            await self._prepare()
        if self.busy:  # already, or since: another request started one meanwhile
            self._said(text.strip())
            await self.svc.say(text)
            return p.SayResult(self.uri, "delivered", self.status())
        # A wake, not svc.say: say's coroutine returns None, and the end state needs the wake's outcome.
        await self._start(self.task.wake(text, self.caller(env)), said=text.strip())
        return p.SayResult(self.uri, "started", self.status())

    async def new(self, text: str, env: dict[str, str] | None = None) -> p.NewResult:
        """Cancel what runs, archive the task (S28) and start `text`."""
        cancelled = await self.cancel_and_wait()
        await self._prepare()
        await self._start(self.task.new(text, self.caller(env)), said=text.strip())
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
            self._closed = True
            self._opened.cancel()
            self._unsubscribe()
            if self._pump is not None:
                self._pump.cancel()

    async def _close(self) -> None:
        run = self.run
        if run is not None and self.svc.running:
            run.cancel_requested = True  # the end state says cancelled; the wake itself is cut off (status: interrupted)
        await self.task.close()
        if run is not None and run.task is not None:
            await asyncio.gather(run.task, return_exceptions=True)
        await self._queue.join()

    # -- running in the background -----------------------------------------------------------
    @property
    def busy(self) -> bool:
        """A wake runs here, or a request started one whose task has not run yet (a second request joins it)."""
        run = self.run
        return self.svc.running or (run is not None and run.task is not None and not run.task.done())

    async def _prepare(self) -> None:
        """What any wake here needs first, awaited before deciding to start or join (so two requests cannot both start)."""
        await self.task.ready()  # a bad setting, or a store that cannot be used: one clear line (D9)
        await self.ready()  # live transcript seqs continue above the store's (protocol.md)

    async def _start(self, work: Awaitable[WakeOutcome | None], said: str | None = None) -> Run:
        """Drive `work` in the background; return once it showed its first event, or raise if it failed before.

        Nothing is awaited before its task exists: `busy` is true from the moment this is called."""
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

    async def _drive(self, run: Run, work: Awaitable[WakeOutcome | None]) -> dict[str, Any]:
        outcome: dict[str, Any]
        try:
            result = await work
            outcome = to_json(result) if result is not None else {"ok": True}
            if result is not None and result.said is not None:
                outcome["error"] = result.said.text(self.svc.locale)  # the editor's language (D4)
        except Exception as exc:  # an expected FlowerError, or a bug: either way the folder stays usable
            if not isinstance(exc, FlowerError):
                exc = crashed(exc, self)
            run.error = exc
            outcome = {"ok": False, "error": exc.text(self.svc.locale)}
        # The records moved with the wake: read them again (off the loop, bounded) before its end is queued, so a
        # status asked after the end notification shows the end.
        await asyncio.wait([asyncio.ensure_future(self.svc.refresh())], timeout=END_WAIT)
        self.task.prefetch_next()  # this server holds the task until the next wake: its resume is prepared now
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

    def _waiting_for(self, found: WaitingFor | None) -> p.WaitingFor | None:
        if found is None:
            return None
        approval = self._approve_params(found.approval) if found.approval is not None else None
        return p.WaitingFor(found.what, found.since, approval)

    def _approve_params(self, a: Approval) -> p.ApproveParams:
        return p.ApproveParams(self.uri, a.id, a.step, a.tool, a.input, a.summary, p.ApprovalDetail(a.detail_kind, a.detail),
                               list(a.suggestions), a.since, a.agent)

    async def _approve(self, approval: Approval) -> Decision | None:
        """Put a tool question to the person through `flower/approve`; None when the client cannot ask (issue 24)."""
        try:
            raw = await self.ls.protocol.send_request_async(p.APPROVE, p.to_wire(self._approve_params(approval)))
        except JsonRpcException as exc:
            if exc.code == JsonRpcMethodNotFound.CODE:  # a client that cannot ask: the rule for nobody (issue 31)
                log.info("flower/approve not answered by the client (%s): the approvals rule decides", exc.message)
                return None
            # Asked, then gone (a window reloading answers with an error; `Left` in the engine): not "nobody can
            # answer", which would tell the model the person was away and let a dying CLI ask it again (protocol.md).
            # Open until answered by id (flower/answer) or by the rule's wait; over stdio the server's exit ends it.
            log.info("the clients asked about %s withdrew (%s): it stays open for the next one (flower/answer)",
                     approval.tool, exc.message)
            await asyncio.Event().wait()  # cancelled by the approvals once the question closes
            return None
        decision = Decision.parse(raw)
        if not (isinstance(raw, dict) and raw.get("decision") == decision.choice):
            log.warning("flower/approve: the client's answer %r is not {\"decision\": allow|allowAlways|deny}; a denial", raw)
        return decision

    def answer(self, approval_id: str, raw: dict[str, object]) -> p.AnswerResult:
        """`flower/answer`: the person's answer to the open question `approval_id`, from any window."""
        return p.AnswerResult(self.uri, approval_id, self.svc.approvals.answer(approval_id, Decision.parse(raw)))

    def _approval_changed(self, approval: Approval, decision: Decision | None) -> None:
        if decision is not None:  # closed: every window's card for it closes (the first answer won)
            reason = decision.reason(approval.tool) if decision.choice == "deny" else None
            self.notify(p.APPROVED, p.ApprovedNotification(self.uri, approval.id, decision.choice, decision.by, reason))
            if reason is not None:  # the denied call is not what runs now (issue 34): the progress says it was denied
                self.progress.report(f"{approval.tool} denied · waiting for the model")

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
        match kind, item:
            case "begin", Run() as run:
                self.notify(p.STATE, p.StateNotification(self.uri, run.number, True, None, False, None, None))
            case "end", (Run() as run, dict() as outcome):
                cancelled = run.cancel_requested
                self.progress.end("cancelled" if cancelled else ("failed" if not outcome.get("ok") else "done"))
                self.notify(p.STATE, p.StateNotification(self.uri, run.number, False, bool(outcome.get("ok")), cancelled,
                                                         outcome.get("error"), outcome.get("woke")))
                if self.run is run:
                    self.run = None
            case "said", str() as said:
                self._transcript(None, None, None, "user", "text", said)
            case "pruned", (str() as session_id, dict() as verdicts):
                self._verdicts[session_id] = verdicts
                self.notify(p.PRUNED, p.PrunedNotification(self.uri, session_id, verdicts))
            case "event", event if isinstance(event, Event):
                await self._event(event)
            case _:
                log.error("nothing to send for queue item %r", kind)

    def _transcript(self, step: str | None, session_id: str | None, uuid: str | None, role: p.Role,
                    kind: p.EntryKind, text: str, tool: ToolCall | None = None, parent: str | None = None) -> None:
        """A live `flower/transcript`: the next seq, and the history's uuid for a second block of one entry."""
        if uuid is not None:
            last, n = self._block
            n = n + 1 if uuid == last else 0
            self._block = (uuid, n)
            uuid = f"{uuid}#{n}" if n else uuid
        self._seq += 1
        verdict = self._verdicts.get(session_id or "", {}).get((uuid or "").partition("#")[0])
        self.notify(p.TRANSCRIPT, p.TranscriptNotification(
            self.uri, step, session_id, uuid, role, kind, text, tool.name if tool else None,
            cut(tool.input) if tool else None, tool.tool_use_id if tool else None,
            verdict, None, self._seq, parent, self._label(step)))

    async def _event(self, event: Event) -> None:
        f = self.uri
        match event:
            case Banner(text=text, woke=woke):
                self.notify(p.BANNER, p.BannerNotification(f, text, woke))
            case Header(step=step, text=text):
                self._header = text
                self.notify(p.HEADER, p.HeaderNotification(f, step, text))
            case StepStarted():
                token = await self.progress.begin(event, self._header)
                self.notify(p.STEP_START, p.StepStartNotification(
                    f, event.step, event.index, event.total, event.session_id, event.woke, token, self._label(event.step),
                    in_work_session(event.step)))
            case StepEnded():
                error = event.said.text(self.svc.locale) if event.said else event.error  # the editor's language (D4)
                self.notify(p.STEP_END, p.StepEndNotification(f, event.step, event.ok, event.session_id, error, event.context,
                                                              event.cost_usd, event.duration_s, self._label(event.step)))
                self.progress.end("done" if event.ok else f"failed: {error or 'unknown error'}")
                if event.session_id:
                    await self._send_pruned(event.session_id)
            case SessionStarted():
                self.notify(p.SESSION, p.SessionNotification(f, event.step, event.session_id, event.resumed))
            case AssistantText():
                self._transcript(event.step, event.session_id, event.uuid, "assistant", "text", event.text, parent=event.parent)
                self.progress.report(event.text.strip().splitlines()[0] if event.text.strip() else "")
            case ToolCall():
                summary = tool_label(event.name, event.input)
                self._transcript(event.step, event.session_id, event.uuid, "assistant", "tool", summary, event, event.parent)
                self.progress.report(tool_label(event.name, event.input, path=self._relative))  # paths relative everywhere (issue #25)
            case ContextSize():
                self.notify(p.CONTEXT, p.ContextNotification(f, event.step, event.session_id, event.tokens, self.svc.window,
                                                             in_work_session(event.step)))
                self.progress.report(f"context {kilo(event.tokens)} / {kilo(self.svc.window)}")
            case Waiting():
                self.notify(p.WAIT, p.WaitNotification(f, event.step, event.reason, event.attempt, event.max_attempts,
                                                       event.seconds, event.error or "", event.offline_since))
                self.progress.report(f"{event.reason}: waiting {event.seconds:.0f} s (attempt {event.attempt}/{event.max_attempts})")
            case Verdict():
                self.notify(p.VERDICT, p.VerdictNotification(f, event.step, event.round, event.passed, event.reasons,
                                                             event.cost_usd, event.duration_s, self._label(event.step)))
            case Question(text=text):
                self.notify(p.QUESTION, p.QuestionNotification(f, text))
            case Handoff():
                self.notify(p.HANDOFF, p.HandoffNotification(f, event.old_session, event.new_session, event.path))
            case Notice(text=text):
                self.notify(p.NOTICE, p.NoticeNotification(f, text))
            case _:
                assert_never(event)  # a new Event class must be given its notification here

    def _label(self, step: str | None) -> str | None:
        """A step's name in the client's language (core/banner.label): clients never parse the seed's names (issue 33)."""
        return label(self.svc.locale, step) if step else None

    def _relative(self, path: str) -> str:
        """A path under the folder shown relative to it (the progress notification's tool line)."""
        try:
            return Path(path).relative_to(self.path).as_posix()
        except ValueError:
            return path

    # -- what the pruner does (S23) -----------------------------------------------------------
    async def _send_pruned(self, session_id: str) -> None:
        """Tell the client how the pruner treats this session's entries on resume (read back from sessions.db)."""
        verdicts = await self.task.pruned(session_id)
        if verdicts is not None:
            self._verdicts[session_id] = verdicts
            self.notify(p.PRUNED, p.PrunedNotification(self.uri, session_id, verdicts))


def _problem(error: SettingsError, locale: str) -> p.SettingsProblem:
    """A settings error as status carries it: the line, and where to fix it (the editor setting or the file)."""
    key = KEYS.get(error.setting)
    option = key.option if key is not None and error.where == OPTION_LABELS.get(error.setting) else None
    return p.SettingsProblem(error.text(locale), error.setting, option, error.file)
