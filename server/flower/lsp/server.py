"""The pygls server: thin handlers for `flower/wake`, `say`, `new`, `status`, delegating to one Folder per workspace folder."""

from __future__ import annotations

import asyncio
import functools
import gc
import logging
import os
import signal
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

import cattrs
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pygls.lsp.server import LanguageServer
from pygls.protocol import JsonRPCNotification, JsonRPCRequestMessage, JsonRPCResponseMessage, default_converter

from ..core import crash, wire
from ..core.errors import FlowerError, MissingCredentials
from ..core.lock import WorkspaceBusy
from ..core.texts import locale_from
from ..settings import options_of
from ..task import folder_key, folder_of
from . import protocol as p
from .folders import CLOSE_TIMEOUT, Folder, crashed
from .framing import FlowerProtocol

log = logging.getLogger(__name__)
VERSION = wire.VERSION


def converter_factory() -> cattrs.Converter:
    """pygls' converter, except that params and results of custom methods stay plain JSON (the params pitfall).

    pygls turns unknown methods' params into namedtuples; flower structures them itself with the strict
    protocol converter, so a bad request always gets an InvalidParams answer instead of silence.
    """
    converter: cattrs.Converter = default_converter()  # type: ignore[no-untyped-call]  # untyped in pygls

    def keep(field: str) -> Callable[[dict[str, Any], type], Any]:
        def hook(obj: dict[str, Any], cls: type) -> Any:
            return cls(**{k: obj.get(k) for k in ("id", "method", "jsonrpc", field) if k in obj or k == field})
        return hook

    converter.register_structure_hook(JsonRPCRequestMessage, keep("params"))
    converter.register_structure_hook(JsonRPCNotification, keep("params"))
    converter.register_structure_hook(JsonRPCResponseMessage, keep("result"))
    return converter


class FlowerServer(LanguageServer):
    """A language server whose documents are workspaces: one FlowerService per workspace folder (P1, P2)."""

    def __init__(self, protocol_cls: type[FlowerProtocol] = FlowerProtocol,
                 converter: Callable[[], cattrs.Converter] = converter_factory) -> None:
        super().__init__("flower", VERSION, text_document_sync_kind=types.TextDocumentSyncKind.None_,
                         converter_factory=converter, protocol_cls=protocol_cls)
        logging.getLogger("pygls.protocol.json_rpc").addFilter(p.EXPECTED_ERRORS)  # once: a filter is added only once
        self.folders: dict[str, Folder] = {}
        """Normalized folder path → Folder."""
        self.locale = "en"
        self.options: dict[str, object] = {}
        """`initializationOptions` as setting key → value (checked per folder, with its settings file)."""
        self.editor_trust = False
        """The client said its workspace is trusted (VS Code's workspace trust, D10): then so are its folders."""
        self._closing: set[asyncio.Task[None]] = set()
        self._stopping: asyncio.Future[None] | None = None
        self.loop_watch: LoopWatch | None = None
        """Set by `--watch-loop`: measures event-loop stalls (benchmarks/lsp.py reads its log lines)."""

    # -- folders -------------------------------------------------------------------------------
    def add_folder(self, uri: str, name: str | None = None) -> Folder | None:
        """Start serving a workspace folder (idempotent); None for a URI that is not a local folder."""
        path = folder_of(uri)
        if path is None:
            log.warning("ignoring workspace folder %s: not a file:// URI", uri)
            return None
        key = folder_key(path)
        if key not in self.folders:
            self.folders[key] = Folder(self, uri, name or path.name, path, self.locale, self.options, self.editor_trust)
            log.info("serving workspace folder %s", path)
        return self.folders[key]

    def remove_folder(self, uri: str) -> None:
        """Stop serving a folder at once; its running wake is cancelled in the background (the next wake resumes it)."""
        path = folder_of(uri)
        folder = self.folders.pop(folder_key(path), None) if path else None
        if folder is not None:
            self._closing.add(task := asyncio.create_task(folder.close()))
            task.add_done_callback(self._closing.discard)

    def folder(self, uri: str) -> Folder:
        """The Folder for a request's `folder` URI, or a clear error naming the folders there are."""
        path = folder_of(uri)
        if path is None:
            raise p.error(p.UNKNOWN_FOLDER, f"folder {uri!r} is not a file:// URI of a workspace folder; "
                          f"use the WorkspaceFolder.uri the editor sent at initialize", folder=uri, known=self.uris())
        folder = self.folders.get(folder_key(path))
        if folder is None:
            known = ", ".join(self.uris()) or "none"
            raise p.error(p.UNKNOWN_FOLDER, f"{uri} is not one of this server's workspace folders (it serves: {known}); "
                          "open it as a workspace folder first", folder=uri, known=self.uris())
        return folder

    def uris(self) -> list[str]:
        """The URIs of the folders served."""
        return [f.uri for f in self.folders.values()]

    async def close_all(self) -> None:
        """Cancel every running wake and flush its notifications (bounded)."""
        folders, self.folders = list(self.folders.values()), {}
        closing = [f.close() for f in folders] + list(self._closing)
        await asyncio.wait_for(asyncio.gather(*closing, return_exceptions=True), CLOSE_TIMEOUT + 5)

    def terminate(self) -> None:
        """SIGTERM (an editor stopping a server that did not exit): stop the agents cleanly, then end the process."""
        async def stop() -> None:
            try:
                await self.close_all()
            except Exception:
                log.exception("stopping on SIGTERM")
            finally:
                os._exit(143)

        self._stopping = asyncio.ensure_future(stop())

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log out-of-band errors; never show raw exception text (it could carry secrets) to the person."""
        p.report(log, error, source)


LATE_S = 0.01
"""A heartbeat this late is counted (not logged): the loop kept a request waiting longer than status may take."""


class LoopWatch:
    """A heartbeat that measures how late the event loop wakes it: any lateness is a stall every request waits out."""

    def __init__(self, threshold: float = 0.05, beat: float = 0.01) -> None:
        self.threshold, self.beat = threshold, beat
        self.beats = 0
        self.worst = 0.0
        self.stalls: list[tuple[float, float]] = []
        """(lag, CPU time of the loop thread during it) of each stall, in seconds."""
        self.late: list[tuple[float, float, float]] = []
        """(lag, the loop thread's CPU, the other threads' CPU) of each beat over 10 ms late: what a status
        p99 < 10 ms must not see often (benchmarks/status.py). Neither thread computing: the machine's other processes."""
        self.collections = [0, 0, 0]
        """Garbage collections of each generation since the watch started."""
        self.collected_worst = 0.0
        """The longest collection, in seconds: every thread waits it out (it holds the GIL)."""
        self._collecting = 0.0
        self._task: asyncio.Task[None] | None = None

    def start(self) -> None:
        """Start beating on the running loop (idempotent)."""
        if self._task is None:
            loop = asyncio.get_running_loop()
            if loop.get_debug():  # PYTHONASYNCIODEBUG=1: asyncio also names the callback behind each stall
                loop.slow_callback_duration = self.threshold
            gc.callbacks.append(self._collected)
            self._task = loop.create_task(self._run())

    def _collected(self, phase: str, info: dict[str, int]) -> None:
        if phase == "start":
            self._collecting = time.perf_counter()
        else:
            self.collections[info["generation"]] += 1
            self.collected_worst = max(self.collected_worst, time.perf_counter() - self._collecting)

    async def _run(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            before, cpu, others = loop.time(), time.thread_time(), time.process_time()
            await asyncio.sleep(self.beat)
            lag = loop.time() - before - self.beat
            cpu = time.thread_time() - cpu
            others = time.process_time() - others - cpu
            self.beats += 1
            self.worst = max(self.worst, lag)
            if lag > LATE_S:
                self.late.append((lag, cpu, others))
            if lag > self.threshold:
                # CPU the loop thread itself spent tells code that hogs the loop from a machine that preempts it.
                self.stalls.append((lag, cpu))
                log.warning("event loop stalled %.1f ms (loop thread CPU %.1f ms)", lag * 1000, cpu * 1000)

    def report(self) -> str:
        """One line: beats, worst lag, stalls over the threshold and how many of them the loop thread was computing."""
        busy = sum(1 for lag, cpu in self.stalls if cpu > self.threshold / 2)
        late_busy = sum(1 for lag, cpu, _ in self.late if cpu > lag / 2)
        late_threads = sum(1 for lag, cpu, others in self.late if cpu <= lag / 2 < others)
        return (f"loop-watch: beats={self.beats} worst_ms={self.worst * 1000:.1f} "
                f"stalls_over_{self.threshold * 1000:.0f}ms={len(self.stalls)} busy={busy} "
                f"late_over_10ms={len(self.late)} late_busy={late_busy} late_threads={late_threads} "
                f"gc={'/'.join(map(str, self.collections))} gc_worst_ms={self.collected_worst * 1000:.1f}")


class ClientLog(logging.Handler):
    """Forwards flower's own log lines (INFO and up) to the editor's output channel as `window/logMessage`."""

    LEVELS = {logging.ERROR: types.MessageType.Error, logging.WARNING: types.MessageType.Warning,
              logging.INFO: types.MessageType.Info}

    def __init__(self, ls: FlowerServer) -> None:
        super().__init__(logging.INFO)
        self.ls = ls

    def emit(self, record: logging.LogRecord) -> None:
        try:
            kind = next((t for level, t in self.LEVELS.items() if record.levelno >= level), types.MessageType.Log)
            self.ls.window_log_message(types.LogMessageParams(kind, p.redact(self.format(record))))
        except Exception:  # a log line must never break the server
            self.handleError(record)


def settle() -> None:
    """Leave what startup made (the SDK, pygls, flower: some 130k objects) out of every later garbage collection.

    Why: a full collection walks every tracked object while holding the GIL, 50-230 ms on this machine, and a long
    wake makes enough new objects to start one now and then: a status stall each time. Frozen, they are skipped.
    """
    gc.freeze()


Handler = Callable[["FlowerServer", Any], Awaitable[Any]]


def answers(method: str, params_cls: type) -> Callable[[Handler], Handler]:
    """Structure params strictly, call the handler, map flower's failures to JSON-RPC errors, send plain JSON."""

    def wrap(handler: Handler) -> Handler:
        @functools.wraps(handler)
        async def run(ls: FlowerServer, params: Any) -> Any:
            value: Any = p.structure_params(method, params, params_cls)
            try:
                result = await handler(ls, value)
                return result if isinstance(result, dict) else p.to_wire(result)  # a dict is wire JSON already
            except JsonRpcException:
                raise
            except WorkspaceBusy as exc:
                raise p.error(p.WORKSPACE_BUSY, exc.text(ls.locale), key=exc.key, pid=exc.pid, lock=str(exc.path)) from None
            except MissingCredentials as exc:  # its own code: the client offers "Set API Key…" without reading text
                raise p.error(p.MISSING_CREDENTIALS, exc.text(ls.locale), key=exc.key) from None
            except crash.Crash as exc:  # a bug in the wake it started, already recorded (Folder._drive)
                raise p.error(p.UNEXPECTED, exc.text(ls.locale), key=exc.key, log=str(exc.log)) from None
            except FlowerError as exc:
                raise p.error(p.FLOWER_ERROR, exc.text(ls.locale), key=exc.key) from None
            except Exception as exc:  # the last resort: one line to the editor, the traceback in the run dir's log
                path = folder_of(getattr(value, "folder", None) or "")
                error = crashed(exc, ls.folders.get(folder_key(path)) if path is not None else None)
                raise p.error(p.UNEXPECTED, error.text(ls.locale), key=error.key, log=str(error.log)) from None
        return run

    return wrap


server = FlowerServer()


@server.feature(types.INITIALIZE)
def initialize(ls: FlowerServer, params: types.InitializeParams) -> None:
    """Serve every workspace folder the editor opened (or the root); the locale picks the strings (D4)."""
    if not any(isinstance(h, ClientLog) for h in logging.getLogger("flower").handlers):
        logging.getLogger("flower").addHandler(ClientLog(ls))
        logging.getLogger("flower").setLevel(min(logging.getLogger("flower").getEffectiveLevel(), logging.INFO))
    ls.locale = locale_from(params.locale)
    raw = params.initialization_options
    ls.editor_trust = editor_trust(raw)
    ls.options = options_of(raw)
    folders: list[tuple[str, str | None]] = [(f.uri, f.name) for f in params.workspace_folders or []]
    if not folders and params.root_uri:
        folders = [(params.root_uri, None)]
    for uri, name in folders:
        ls.add_folder(uri, name)
    if ls.loop_watch is not None:
        ls.loop_watch.start()
    settle()
    try:
        asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, ls.terminate)
    except (NotImplementedError, RuntimeError):  # not the main thread, or no signals here
        pass


@server.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)
def folders_changed(ls: FlowerServer, params: types.DidChangeWorkspaceFoldersParams) -> None:
    """Keep one service per folder as folders are added and removed (before any later request is handled)."""
    for removed in params.event.removed or []:
        ls.remove_folder(removed.uri)
    for added in params.event.added or []:
        ls.add_folder(added.uri, added.name)


@server.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)
def progress_cancelled(ls: FlowerServer, params: types.WorkDoneProgressCancelParams) -> None:
    """The person pressed cancel on a step's progress: stop that folder's wake cleanly."""
    for folder in ls.folders.values():
        if params.token in folder.progress.tokens:
            folder.cancel()


@server.feature(p.WAKE)
@answers(p.WAKE, p.WakeParams)
async def wake(ls: FlowerServer, params: p.WakeParams) -> p.WakeResult:
    """Continue (or start) the workflow in a folder; returns at once, the work goes on in the background."""
    return await ls.folder(params.folder).wake(params.text, params.env)  # the request's variables go with its wake


@server.feature(p.SAY)
@answers(p.SAY, p.SayParams)
async def say(ls: FlowerServer, params: p.SayParams) -> p.SayResult:
    """One more sentence for the work session."""
    return await ls.folder(params.folder).say(params.text, params.env)  # the request's variables go with its wake


@server.feature(p.NEW)
@answers(p.NEW, p.NewParams)
async def new(ls: FlowerServer, params: p.NewParams) -> p.NewResult:
    """Archive the current task and start another (S28)."""
    return await ls.folder(params.folder).new(params.text, params.env)  # the request's variables go with its wake


@server.feature(p.CANCEL)
@answers(p.CANCEL, p.CancelParams)
async def cancel(ls: FlowerServer, params: p.CancelParams) -> p.CancelResult:
    """Stop the folder's running wake cleanly; answers once its end state has been sent (`flower stop`, Cancel)."""
    folder = ls.folder(params.folder)
    return p.CancelResult(folder.uri, await folder.cancel_and_wait())


@server.feature(p.ANSWER)
@answers(p.ANSWER, p.AnswerParams)
async def answer(ls: FlowerServer, params: p.AnswerParams) -> p.AnswerResult:
    """Answer a folder's open tool question by its id, from any client (first answer wins; issue 24)."""
    return ls.folder(params.folder).answer(params.id, {"decision": params.decision, "message": params.message})


@server.feature(p.STATUS)
async def status(ls: FlowerServer, params: Any) -> Any:
    """Every folder's (or one folder's) status, answered at once even while a workflow streams or a store is down."""
    value = p.structure_params(p.STATUS, params, p.StatusParams)
    folders = [ls.folder(value.folder)] if value.folder is not None else list(ls.folders.values())
    opening = [f.ready() for f in folders if not f.opened]
    if opening:  # a folder's first read of its records only; at once after that
        await asyncio.gather(*opening)
    if value.fresh:  # the client saw a task file change (issue 33: it shows the server's goals, it reads no file)
        await asyncio.gather(*(f.reread() for f in folders))
    return p.to_wire(p.StatusResult([f.status() for f in folders]))


@server.feature(p.HISTORY)
@answers(p.HISTORY, p.HistoryParams)
async def history(ls: FlowerServer, params: p.HistoryParams) -> Any:
    """A page of the folder's stored transcript (every step and judge round), newest page first, with pruner verdicts."""
    page = await ls.folder(params.folder).read_history(params)
    return await asyncio.to_thread(p.to_wire, page)  # up to 1000 entries: converted off the event loop


@server.feature(p.CHANGES)
@answers(p.CHANGES, p.ChangesParams)
async def changes(ls: FlowerServer, params: p.ChangesParams) -> p.ChangesResult:
    """The files each wake changed, with +/- counts and their before-images (issue #25)."""
    return await ls.folder(params.folder).changes()


@server.feature(p.REVERT)
@answers(p.REVERT, p.RevertParams)
async def revert(ls: FlowerServer, params: p.RevertParams) -> p.RevertResult:
    """Restore before-images: one file, or every file of a wake; refused while a wake runs."""
    return await ls.folder(params.folder).revert(params.path, params.wake)


@server.feature(types.SHUTDOWN)
async def shutdown(ls: FlowerServer, params: None) -> None:
    """Cancel running wakes cleanly before the editor stops the server; their sessions resume at the next wake."""
    try:
        await ls.close_all()
    except TimeoutError:
        log.warning("some wakes did not stop in time")
    if ls.loop_watch is not None:
        print(ls.loop_watch.report(), file=sys.stderr, flush=True)


def editor_trust(raw: Any) -> bool:
    """The client says its workspace is trusted (VS Code's workspace trust, D10): then so are its folders."""
    return isinstance(raw, dict) and raw.get("trusted") is True


__all__ = ["FlowerServer", "converter_factory", "server", "settle"]
