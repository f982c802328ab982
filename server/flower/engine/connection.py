"""One client of the engine: its own pygls protocol object over the engine's shared folders (D11).

pygls serves one client per server object, so each connection gets a `Connection` — a FlowerServer
whose handlers are the stdio server's own (wake, say, new, status, history, progress cancel) plus
the engine's (attach, detach, runs, cancel) — while the domain state stays in one place: the
engine's Folder per workspace (one FlowerService per task, as with stdio). A connection's
`folders` are the engine's Folder objects it initialized or attached; leaving (`shutdown`, `exit`,
a closed socket) only detaches them: the runs go on.
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Generator
from typing import TYPE_CHECKING, Any

import cattrs
from lsprotocol import types
from pygls.protocol.language_server import lsp_method

from ..core import wire
from ..core.texts import locale_from, text
from ..lsp import protocol as p
from ..lsp import server as stdio
from ..lsp.folders import Folder
from ..lsp.framing import FlowerProtocol
from ..lsp.server import VERSION, FlowerServer, converter_factory, editor_trust
from ..settings import options_of

if TYPE_CHECKING:
    from .engine import Engine

log = logging.getLogger(__name__)

BACKLOG = 64 * 2**20
"""Bytes sent to a client and not yet read by it after which the engine lets it go (its window hung, say)."""
VERSION_OPTION = wire.VERSION_OPTION
ANSWERS_OPTION = wire.ANSWERS_OPTION
ANSWERABLE = frozenset({p.APPROVE, p.ASK})


@functools.cache
def shared_converter() -> cattrs.Converter:
    """One converter for every connection: cattrs builds each type's hooks once, not once per client (slow)."""
    return converter_factory()


class ConnectionProtocol(FlowerProtocol):
    """A connection's protocol: `exit` ends this connection, never the engine."""

    @lsp_method(types.EXIT)
    def lsp_exit(self, *args: Any) -> Generator[Any, Any, None]:
        """Close this client's socket; the engine and its runs go on."""
        server = self._server
        if isinstance(server, Connection):
            server.close()
        yield from ()


class Connection(FlowerServer):
    """One socket's client: a protocol object of its own over the engine's folders."""

    def __init__(self, engine: Engine, writer: asyncio.StreamWriter, pid: int | None) -> None:
        super().__init__(protocol_cls=ConnectionProtocol, converter=shared_converter)
        self.engine, self.writer, self.pid = engine, writer, pid
        self.closed = asyncio.Event()
        """Set when the socket has closed (the peer left, or `exit`)."""
        self.attached: set[str] = set()
        """Keys of the folders whose notifications this connection receives."""
        self.answers: frozenset[str] = frozenset()
        """The questions this client declared it puts to its person at `initialize`: only those are sent to it (issue 31)."""
        self.protocol.set_writer(BoundedWriter(self))
        register(self)

    @property
    def wire(self) -> ConnectionProtocol:
        """This connection's protocol, which frames are handed to."""
        assert isinstance(self.protocol, ConnectionProtocol)
        return self.protocol

    @property
    def open(self) -> bool:
        """Whether the socket is still there to write to."""
        return not self.closed.is_set() and not self.writer.is_closing()

    @property
    def supports_progress(self) -> bool:
        """The client said it supports `window/workDoneProgress` at initialize."""
        caps = getattr(self.protocol, "client_capabilities", None)
        return bool(caps and caps.window and caps.window.work_done_progress)

    def close(self) -> None:
        """Leave: detach from every folder, then close the socket (idempotent)."""
        if not self.closed.is_set():
            self.closed.set()
            for key in list(self.attached):
                self.engine.fan(key).detach(self)
            self.attached.clear()
            self.writer.close()
            self.engine.left(self)

    # -- folders: the engine's, seen through this connection -------------------------------------
    def add_folder(self, uri: str, name: str | None = None) -> Folder | None:
        """Serve a folder through the engine (created there if no client served it yet); None if not a local folder."""
        found = self.engine.folder(uri, name, self.locale, self.options, self.editor_trust)
        if found is not None:
            key, folder = found
            self.folders[key] = folder
            return folder
        return None

    def remove_folder(self, uri: str) -> None:
        """This client no longer shows the folder: detach only; the engine keeps serving it, a run goes on."""
        key = self.engine.key(uri)
        if key is not None:
            self.folders.pop(key, None)
            self.detach(key)

    def attach(self, uri: str) -> tuple[str, Folder]:
        """Subscribe to a folder's notifications (serving it first if needed)."""
        key = self.engine.key(uri)
        folder = (self.folders.get(key) if key else None) or self.add_folder(uri)
        if key is None or folder is None:
            raise p.error(p.UNKNOWN_FOLDER, f"folder {uri!r} is not a file:// URI of a folder; "
                          "send one like file:///home/me/app", folder=uri, known=self.uris())
        self.engine.fan(key).attach(self)
        self.attached.add(key)
        return key, folder

    def detach(self, key: str) -> bool:
        """Unsubscribe from a folder's notifications; False if not attached."""
        if key not in self.attached:
            return False
        self.attached.discard(key)
        self.engine.fan(key).detach(self)
        return True

    async def close_all(self) -> None:
        """`shutdown` from this client: it leaves every folder; the engine's runs go on."""
        for key in list(self.attached):
            self.detach(key)

    def report_server_error(self, error: Exception, source: Any) -> None:
        """Log out-of-band errors (to the engine's log; redacted)."""
        p.report(log, error, source)


class BoundedWriter:
    """Writes to the socket without waiting; a client that stops reading is let go before its backlog fills the memory."""

    def __init__(self, connection: Connection) -> None:
        self.connection = connection

    def write(self, data: bytes) -> None:
        """Queue `data` for the client, or close the connection when it has not read BACKLOG bytes already sent."""
        writer = self.connection.writer
        if writer.is_closing():
            return
        if writer.transport.get_write_buffer_size() > BACKLOG:
            log.warning("client pid %s reads nothing (%d MB unread): closing its connection; the runs go on",
                        self.connection.pid, BACKLOG // 2**20)
            self.connection.close()
            return
        writer.write(data)

    def close(self) -> None:
        """Close the socket (pygls calls it on `exit`)."""
        self.connection.close()


def initialize(ls: Connection, params: types.InitializeParams) -> None:
    """Serve the client's folders through the engine; its locale and options apply to folders it is the first to serve."""
    raw = params.initialization_options
    theirs = raw.pop(VERSION_OPTION, None) if isinstance(raw, dict) else None
    ls.answers = answers_of(raw.pop(ANSWERS_OPTION, None) if isinstance(raw, dict) else None)
    ls.locale = locale_from(params.locale)
    ls.options, ls.editor_trust = options_of(raw), editor_trust(raw)
    folders: list[tuple[str, str | None]] = [(f.uri, f.name) for f in params.workspace_folders or []]
    if not folders and params.root_uri:
        folders = [(params.root_uri, None)]
    for uri, name in folders:
        ls.add_folder(uri, name)
    if isinstance(theirs, str) and theirs != VERSION:
        if ls.engine.update_when_idle(theirs):
            ls.window_show_message(types.ShowMessageParams(
                types.MessageType.Warning, text("engine_busy_update", ls.locale, version=VERSION)))


def answers_of(raw: object) -> frozenset[str]:
    """The questions a client declared it answers; anything else than a list of their method names is none (logged)."""
    if raw is None:
        return frozenset()
    if isinstance(raw, list) and all(isinstance(m, str) for m in raw):
        unknown = set(raw) - ANSWERABLE
        if unknown:
            log.info("initializationOptions.%s: ignoring %s (known: %s)", ANSWERS_OPTION, sorted(unknown), sorted(ANSWERABLE))
        return frozenset(raw) & ANSWERABLE
    log.warning("initializationOptions.%s is not a list of method names (%r): the client is asked nothing", ANSWERS_OPTION, raw)
    return frozenset()


async def attach(ls: Connection, params: Any) -> Any:
    """Subscribe this connection to a folder: its status, the cursor live entries continue after, the running wake's recent ones.

    After the folder's first status is ready, the rest runs without awaiting anything: nothing the folder
    sends can come between reading the cursor and subscribing.
    """
    value = p.structure_params(p.ATTACH, params, p.AttachParams)
    key = ls.engine.key(value.folder)
    if key is not None and key not in ls.folders:
        ls.add_folder(value.folder)
    if key is not None and key in ls.folders:
        await ls.folders[key].ready()  # its first read of the records (bounded): the cursor is above the store's entries
    key, folder = ls.attach(value.folder)
    recent = list(ls.engine.fan(key).recent) if folder.svc.running else []
    return {**p.to_wire(p.AttachResult(folder.uri, folder.status(), folder.cursor, [])), "recent": recent}


def detach(ls: Connection, params: Any) -> Any:
    """Unsubscribe this connection from a folder; the run goes on."""
    value = p.structure_params(p.DETACH, params, p.DetachParams)
    key = ls.engine.key(value.folder)
    folder = ls.folder(value.folder)  # UnknownFolder for a folder this client never had
    return p.to_wire(p.DetachResult(folder.uri, ls.detach(key or "")))


def runs(ls: Connection, params: Any) -> Any:
    """Every folder the engine holds."""
    p.structure_params(p.RUNS, params, p.RunsParams)
    return p.to_wire(ls.engine.runs())


async def shutdown(ls: Connection, params: None) -> None:
    """This client stops: it leaves its folders; the engine and every run go on."""
    await ls.close_all()


def register(ls: Connection) -> None:
    """The handlers of one connection: the stdio server's own where they are the same, the engine's where they differ."""
    ls.feature(types.INITIALIZE)(initialize)
    ls.feature(types.SHUTDOWN)(shutdown)
    ls.feature(types.WORKSPACE_DID_CHANGE_WORKSPACE_FOLDERS)(stdio.folders_changed)
    ls.feature(types.WINDOW_WORK_DONE_PROGRESS_CANCEL)(stdio.progress_cancelled)
    for method, handler in REQUESTS.items():
        ls.feature(method)(handler)


REQUESTS: dict[str, Any] = {
    p.WAKE: stdio.wake, p.SAY: stdio.say, p.NEW: stdio.new, p.STATUS: stdio.status, p.HISTORY: stdio.history,
    p.ANSWER: stdio.answer, p.CHANGES: stdio.changes, p.REVERT: stdio.revert, p.CANCEL: stdio.cancel,
    p.ATTACH: attach, p.DETACH: detach, p.RUNS: runs,
}
"""Every client → server request an engine connection serves: all of protocol.md's (tests/unit/test_engine_place.py)."""


__all__ = ["Connection", "converter_factory"]
