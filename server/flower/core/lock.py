"""One writer per workspace (D5): a lock in run_dir that a second wake runs into; and the flock helper every lock uses.

`<run_dir>/flower.lock` is held with an exclusive `flock` and records the holder's pid and
start time, so the refusal can say who holds it. The OS drops a flock when the holder's
file is closed, which happens when the process dies in any way (kill -9, SIGHUP, reboot):
a dead holder never blocks anyone, and there is no stale-lock cleanup to get wrong.

The lock file is never deleted: unlinking a flock'ed file lets two processes hold locks on
two different inodes under the same name.
"""

from __future__ import annotations

import fcntl
import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from . import shared
from .durable import write_atomic
from .errors import FlowerError
from .shared import Shared
from .texts import say

log = logging.getLogger(__name__)

LOCK_FILE = "flower.lock"
PROBE_GRACE = 0.1
"""Seconds `acquire` keeps trying, so a status probe holding the lock shared for an instant is not taken for a holder."""
WAKE_FILE = "wake.json"
"""`<run_dir>/wake.json`: a wake is under way (pid, start); removed when it ends, so one left behind marks a wake cut off."""


class WorkspaceBusy(FlowerError):
    """Another live flower process drives this workspace; `.pid` and `.started_at` name it."""

    def __init__(self, path: Path, pid: int | None, started_at: float | None, *, host: str | None = None) -> None:
        self.path = path
        self.pid = pid
        self.started_at = started_at
        self.host = host
        """The holder's machine, when the lock is shared by several (D9)."""
        who = (say("busy_pid_host", pid=pid, host=host, since=_when(started_at)) if pid and started_at and host
               else say("busy_pid_since", pid=pid, since=_when(started_at)) if pid and started_at
               else say("busy_pid", pid=pid) if pid else say("busy_unknown"))
        stop = (say("busy_stop_host", pid=pid, host=host) if pid and host
                else say("busy_stop_pid", pid=pid) if pid else say("busy_stop"))
        super().__init__("workspace_busy", who=who, stop=stop, lock=path)


def try_flock(fd: int, timeout: float = 0.0) -> bool:
    """Take an exclusive flock on `fd`, trying for up to `timeout` seconds; False if another holder kept it."""
    deadline = time.monotonic() + timeout
    delay = 0.001
    while True:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return True
        except BlockingIOError:
            if time.monotonic() >= deadline:
                return False
            time.sleep(delay)
            delay = min(delay * 2, 0.05)


@contextmanager
def exclusive(path: str | os.PathLike[str], timeout: float) -> Iterator[None]:
    """Hold an exclusive flock on `path` (created if missing); TimeoutError after `timeout` s, so a stopped holder cannot hang a run."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        if not try_flock(fd, timeout):
            raise TimeoutError(f"{path} held by another process for {timeout:.0f}s")
        try:
            yield
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)


class WorkspaceLock:
    """Exclusive, non-blocking lock on `<run_dir>/flower.lock`; a context manager.

    flock locks belong to an open file description, so a second WorkspaceLock on the same
    run_dir refuses even inside the same process. The descriptor is not inherited by child
    processes (Python opens files non-inheritable), so an agent CLI outliving a killed
    flower does not keep the workspace locked.
    """

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(os.path.abspath(run_dir))
        self._fd: int | None = None
        self._mutex = threading.Lock()
        self._shared: Shared | None = None

    @property
    def path(self) -> Path:
        """`<run_dir>/flower.lock`."""
        return self.run_dir / LOCK_FILE

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None or self._shared is not None

    def acquire(self) -> WorkspaceLock:
        """Take the lock or raise WorkspaceBusy (within PROBE_GRACE); idempotent for the holder. OSError if run_dir is unusable."""
        with self._mutex:
            if self.held:
                return self
            backend = shared.of(self.run_dir)
            if backend is not None:  # D9: the lock of a shared task is the database's, across machines
                backend.acquire()
                self._shared = backend
                return self
            os.makedirs(self.run_dir, exist_ok=True)
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                taken = try_flock(fd, PROBE_GRACE)  # rides out an `interrupted()` probe's instant of shared lock
            except BaseException:
                os.close(fd)
                raise
            if not taken:
                holder = _read_info(fd)
                os.close(fd)
                raise WorkspaceBusy(self.path, holder.get("pid"), holder.get("started_at"))
            try:
                info = json.dumps({"pid": os.getpid(), "started_at": time.time()}).encode()
                os.ftruncate(fd, 0)
                os.pwrite(fd, info, 0)
            except OSError:
                pass  # the lock holds anyway; only the refusal message loses the pid
            self._fd = fd
            return self

    def release(self) -> None:
        """Give the lock up; idempotent. The file stays (see the module docstring)."""
        with self._mutex:
            backend, self._shared = self._shared, None
            if backend is not None:
                backend.release()
            fd, self._fd = self._fd, None
            if fd is None:
                return
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
            try:
                fcntl.flock(fd, fcntl.LOCK_UN)
            finally:
                os.close(fd)

    def __enter__(self) -> WorkspaceLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


def held(run_dir: str | os.PathLike[str]) -> bool:
    """Whether a live process (this one included) holds `<run_dir>/flower.lock` now.

    Probed with a shared flock for an instant: `WorkspaceLock.acquire` tries for a moment, so the probe never makes a wake refuse.
    """
    try:
        fd = os.open(Path(run_dir) / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False  # no lock file: nobody has ever held it
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # closing drops the shared lock if it was taken
    return False


def mark_wake(run_dir: str | os.PathLike[str]) -> None:
    """Record, under the workspace lock, that a wake is under way here (atomically: a crash leaves it whole or absent)."""
    backend = shared.of(run_dir)
    if backend is not None:  # D9: in the shared store, so another machine sees a wake cut off here
        backend.mark_wake(True)
        return
    write_atomic(Path(run_dir) / WAKE_FILE, json.dumps({"pid": os.getpid(), "started_at": time.time()}).encode())


def clear_wake(run_dir: str | os.PathLike[str]) -> None:
    """The wake ended (finished, failed, or stopped by the person): nothing was cut off."""
    backend = shared.of(run_dir)
    if backend is not None:
        try:
            backend.mark_wake(False)
        except Exception as e:  # the mark stays: the next status calls the wake cut off, which loses nothing
            log.warning("could not clear the wake mark in %s (%s)", backend.where, e)
        return
    Path(run_dir, WAKE_FILE).unlink(missing_ok=True)


def wake_mark(run_dir: str | os.PathLike[str]) -> tuple[bool, bool]:
    """(a wake's marker is left, a live process holds the lock): marked and unheld = cut off; marked and held = under way.

    Read from files only, so it survives any crash: the flock dies with its holder (kill -9, a crashed server, a reload).
    With a shared store, from its database (the advisory lock dies with its holder alike); (False, False) while it
    cannot be read.
    """
    backend = shared.of(run_dir)
    if backend is not None:
        try:
            return backend.wake_mark()
        except Exception:  # the database not answering: the wake's own message says so, a status shows none
            return False, False
    if not Path(run_dir, WAKE_FILE).exists():
        return False, False  # no probe of the lock needed
    return True, held(run_dir)


def interrupted(run_dir: str | os.PathLike[str]) -> bool:
    """A wake here was cut off and nothing has continued or finished it: its marker is left and no live process holds the lock."""
    marked, holder = wake_mark(run_dir)
    return marked and not holder


def _read_info(fd: int) -> dict[str, Any]:
    """The holder's `{"pid", "started_at"}`, or {} if it has not written it (yet) or it is garbled."""
    try:
        data = json.loads(os.pread(fd, 4096, 0).decode("utf-8"))
    except (OSError, ValueError, UnicodeDecodeError):
        return {}
    if not isinstance(data, dict):
        return {}
    pid, started = data.get("pid"), data.get("started_at")
    return {
        "pid": pid if isinstance(pid, int) and not isinstance(pid, bool) else None,
        "started_at": float(started) if isinstance(started, (int, float)) and not isinstance(started, bool) else None,
    }


def _when(t: float) -> str:
    """`12:03` if today, else `2026-09-07 12:03` (local time)."""
    lt, now = time.localtime(t), time.localtime()
    if (lt.tm_year, lt.tm_yday) == (now.tm_year, now.tm_yday):
        return time.strftime("%H:%M", lt)
    return time.strftime("%Y-%m-%d %H:%M", lt)
