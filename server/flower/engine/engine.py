"""The engine's server: a Unix socket for this user only, the folders it holds, and when it stops (D11).

Watchman is the model: one per user, found at a well-known socket, started on demand by any
client, gone when nobody needs it. It never stops or restarts while a wake runs: the idle clock
starts only when no wake runs and no client is connected, and an update to another flower
version waits for the same quiet.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import signal
import stat
import time
from collections.abc import Awaitable, Coroutine
from pathlib import Path
from typing import Any

from ..core import host
from ..lsp import protocol as p
from ..lsp.folders import Folder
from ..lsp.framing import LINE_LIMIT
from ..lsp.server import VERSION, settle
from ..settings import FILE as SETTINGS_FILE
from ..settings import PYPROJECT
from ..task import folder_key, folder_of
from .connection import Connection
from .fanout import Fanout
from .place import lock_path, private_dir
from .stream import bodies

log = logging.getLogger(__name__)

IDLE = 600.0
"""Seconds with no wake running and no client connected after which the engine stops (`--idle`)."""
TRIM_EVERY = 5.0
"""Seconds between giving freed memory back to the system while no wake runs (`give_back`)."""
STOP_TIMEOUT = 30.0
"""Bound on cancelling the runs and closing the folders when the engine is told to stop."""


class EngineRunning(Exception):
    """Another engine holds the lock of this socket: it is the one engine."""

    def __init__(self, sock: Path, pid: int | None) -> None:
        super().__init__(f"a flower engine is already running at {sock}" + (f" (pid {pid})" if pid else ""))
        self.pid = pid


class Engine:
    """Every folder's service for every client of this user, behind one socket."""

    def __init__(self, sock: Path, idle: float = IDLE) -> None:
        self.sock, self.idle = sock, idle
        self.folders: dict[str, Folder] = {}
        """Folder key (normalized path) → the one Folder serving it, in the order they began being served."""
        self.fans: dict[str, Fanout] = {}
        self.made: dict[str, tuple[object, ...]] = {}
        """Folder key → (locale, options, editor trust, settings files' stamps) it was built with: other ones rebuild an idle folder."""
        self.connections: set[Connection] = set()
        self.update_to: str | None = None
        """Another flower version a client runs: the engine stops at the next quiet moment so that one starts."""
        self._quiet_since = time.monotonic()
        self._stop: asyncio.Event | None = None
        self._closing: set[asyncio.Task[None]] = set()

    # -- folders -----------------------------------------------------------------------------------
    def key(self, uri: str) -> str | None:
        """The folder key of a `file://` URI; None for anything else."""
        path = folder_of(uri)
        return folder_key(path) if path is not None else None

    def fan(self, key: str) -> Fanout:
        """The connections attached to a folder (made on first use)."""
        fan = self.fans.get(key)
        if fan is None:
            fan = self.fans[key] = Fanout()
        return fan

    def folder(self, uri: str, name: str | None, locale: str, options: dict[str, object],
               editor_trust: bool = False) -> tuple[str, Folder] | None:
        """The Folder serving `uri` (made if none is): rebuilt with these settings if they differ and nothing runs there."""
        path = folder_of(uri)
        if path is None:
            log.warning("ignoring workspace folder %s: not a file:// URI", uri)
            return None
        key, made = folder_key(path), (locale, dict(options), editor_trust, settings_stamp(path))
        existing = self.folders.get(key)
        if existing is not None and (self.made[key] == made or existing.svc.running):
            return key, existing
        folder = Folder(self.fan(key), existing.uri if existing else uri, name or path.name, path, locale, options, editor_trust)
        if existing is not None:  # other settings, nothing running: serve it anew, numbering live entries on
            folder.continue_after(existing.cursor)
            self._background(existing.close())
            for connection in self.connections:
                if key in connection.folders:
                    connection.folders[key] = folder
            log.info("serving %s again with a client's new settings", path)
        else:
            log.info("serving workspace folder %s", path)
        self.folders[key], self.made[key] = folder, made
        return key, folder

    def runs(self) -> p.RunsResult:
        """Every folder held, running or idle, with its attached clients."""
        runs = []
        for key, folder in self.folders.items():
            st, fan = folder.status(), self.fan(key)
            runs.append(p.RunInfo(folder.uri, folder.name, str(folder.path), st.running, st.step, st.context,
                                  fan.since, len(fan.live()), st.waiting_for, list(st.background)))
        return p.RunsResult(runs, VERSION, os.getpid())

    def busy(self) -> bool:
        """Whether a wake runs in any folder."""
        return any(f.svc.running for f in self.folders.values())

    # -- clients -----------------------------------------------------------------------------------
    def left(self, connection: Connection) -> None:
        """A connection closed."""
        self.connections.discard(connection)

    def update_when_idle(self, version: str) -> bool:
        """A client runs another flower version: stop at the next moment no wake runs. True if one runs now."""
        if self.update_to != version:
            log.info("a client runs flower %s (this engine: %s): stopping when no wake runs, so it can start its own",
                     version, VERSION)
        self.update_to = version
        return self.busy()

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            pid, uid = host.peer(writer.get_extra_info("socket"))
        except OSError as exc:
            log.warning("refused a connection whose peer cannot be known: %s", exc)
            writer.close()
            return
        if uid != host.user_id():  # D11: one user's engine; the directory's 0700 is the first wall, this the second
            log.warning("refused a connection from uid %d (pid %d): this engine serves uid %d only", uid, pid, host.user_id())
            writer.close()
            return
        connection = Connection(self, writer, pid)
        self.connections.add(connection)
        log.info("client pid %d connected (%d connected)", pid, len(self.connections))
        self._quiet_since = time.monotonic()
        try:
            async for body in bodies(reader):
                connection.wire.receive(body)
                if connection.closed.is_set():
                    break
        except (ConnectionError, OSError) as exc:
            log.info("client pid %d left: %s", pid, exc)
        except Exception:
            log.exception("serving client pid %d", pid)
        finally:
            connection.close()
            self._quiet_since = time.monotonic()
            log.info("client pid %d left (%d connected)", pid, len(self.connections))

    # -- life --------------------------------------------------------------------------------------
    async def serve(self) -> int:
        """Hold the lock, listen, and serve until idle, an update, or SIGTERM/SIGINT; 0 when it stopped as it should."""
        private_dir(self.sock.parent)
        lock = take_lock(self.sock)
        try:
            if self.sock.exists() or self.sock.is_symlink():  # the lock is ours: whatever is there is a dead engine's
                if not stat.S_ISSOCK(os.lstat(self.sock).st_mode):
                    raise OSError(f"{self.sock} exists and is not a socket; remove it or set FLOWER_ENGINE elsewhere")
                self.sock.unlink()
                log.info("replaced the stale socket of an engine that is gone")
            self._stop = asyncio.Event()
            umask = os.umask(0o177)  # the socket is born 0600: no moment at which another user could connect
            try:
                server = await host.listen(self._accept, self.sock, 2 * LINE_LIMIT)
            finally:
                os.umask(umask)
            os.chmod(self.sock, 0o600)
            inode = os.stat(self.sock).st_ino
            loop = asyncio.get_running_loop()
            for sig in (signal.SIGTERM, signal.SIGINT):
                loop.add_signal_handler(sig, self._stop.set)
            log.info("flower engine %s (pid %d) serving %s; stops after %.0f s idle", VERSION, os.getpid(), self.sock, self.idle)
            settle()  # startup's objects out of every later garbage collection, as in the editor's server
            try:
                await self._live()
            finally:
                server.close()
                for connection in list(self.connections):
                    connection.close()
                await self._close_folders()
                with contextlib.suppress(OSError):
                    if os.stat(self.sock).st_ino == inode:  # never remove a socket another engine made since
                        self.sock.unlink()
            return 0
        finally:
            os.close(lock)

    async def _live(self) -> None:
        assert self._stop is not None
        tick = max(0.05, min(1.0, self.idle / 4))
        trimmed = time.monotonic()
        while not self._stop.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._stop.wait(), tick)
            now, busy = time.monotonic(), self.busy()
            if not busy and now - trimmed >= TRIM_EVERY:
                host.give_back()  # a long-lived idle engine stays small
                trimmed = now
            if busy or self.connections:
                self._quiet_since = now
            if self.update_to is not None and not busy:
                log.info("no wake runs: stopping so that flower %s can start its engine", self.update_to)
                return
            if now - self._quiet_since >= self.idle:
                log.info("no wake and no client for %.0f s: stopping", self.idle)
                return
        log.info("told to stop: cancelling the runs (the next engine resumes them)")

    async def _close_folders(self) -> None:
        folders, self.folders = list(self.folders.values()), {}
        closing = [f.close() for f in folders] + list(self._closing)
        try:
            await asyncio.wait_for(asyncio.gather(*closing, return_exceptions=True), STOP_TIMEOUT)
        except TimeoutError:
            log.warning("some wakes did not stop within %.0f s", STOP_TIMEOUT)

    def _background(self, work: Coroutine[Any, Any, None] | Awaitable[None]) -> None:
        task = asyncio.ensure_future(work)
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)


def settings_stamp(path: Path) -> tuple[tuple[int, int] | None, ...]:
    """(mtime, size) of the folder's settings files: a changed file is read again by the next client to initialize it."""
    stamps: list[tuple[int, int] | None] = []
    for name in (SETTINGS_FILE, PYPROJECT):
        try:
            info = os.stat(path / name)
            stamps.append((info.st_mtime_ns, info.st_size))
        except OSError:
            stamps.append(None)
    return tuple(stamps)


def take_lock(sock: Path) -> int:
    """Hold the lock next to the socket for this process's life (the kernel lets go when it dies); EngineRunning if held."""
    path = lock_path(sock)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
    if not host.try_lock(fd):
        held = os.read(fd, 32).decode("ascii", "replace").strip()
        os.close(fd)
        raise EngineRunning(sock, int(held) if held.isdigit() else None) from None
    os.ftruncate(fd, 0)
    os.write(fd, str(os.getpid()).encode())
    return fd

