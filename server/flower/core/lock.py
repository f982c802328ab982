"""One writer per workspace (D5): the lock a second wake runs into; and the flock helper every lock uses.

`<run_dir>/flower.lock` is held with an exclusive `flock` and records the holder's pid and
start time, so the refusal can say who holds it. The OS drops a flock when the holder's
file is closed, which happens when the process dies in any way (kill -9, SIGHUP, reboot):
a dead holder never blocks anyone, and there is no stale-lock cleanup to get wrong.

The lock file is never deleted: unlinking a flock'ed file lets two processes hold locks on
two different inodes under the same name.
"""

from __future__ import annotations

import json
import logging
import os
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from . import host
from .errors import FlowerError
from .texts import say

if TYPE_CHECKING:
    from .records import Records

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
    """Take an exclusive flock on `fd` (core/host.py's file lock), trying for up to `timeout` seconds; False if another holder kept it."""
    deadline = time.monotonic() + timeout
    delay = 0.001
    while not host.try_lock(fd):
        if time.monotonic() >= deadline:
            return False
        time.sleep(delay)
        delay = min(delay * 2, 0.05)
    return True


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
            host.unlock(fd)
    finally:
        os.close(fd)


class TaskLock(Protocol):
    """A task's one-writer lock (D5), as a Records backend keeps it."""

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""

    def acquire(self) -> None:
        """Take the lock or raise WorkspaceBusy naming its holder; idempotent for the holder."""

    def release(self) -> None:
        """Give the lock up; idempotent."""


class FileLock:
    """Exclusive, non-blocking flock on `<run_dir>/flower.lock` (the files' TaskLock).

    flock locks belong to an open file description, so a second FileLock on the same
    run_dir refuses even inside the same process. The descriptor is not inherited by child
    processes (Python opens files non-inheritable), so an agent CLI outliving a killed
    flower does not keep the workspace locked.
    """

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(os.path.abspath(run_dir))
        self._fd: int | None = None
        self._mutex = threading.Lock()

    @property
    def path(self) -> Path:
        """`<run_dir>/flower.lock`."""
        return self.run_dir / LOCK_FILE

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._fd is not None

    def acquire(self) -> None:
        """Take the lock or raise WorkspaceBusy (within PROBE_GRACE); idempotent for the holder. OSError if run_dir is unusable."""
        with self._mutex:
            if self._fd is not None:
                return
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
                host.write_at(fd, info, 0)
            except OSError:
                pass  # the lock holds anyway; only the refusal message loses the pid
            self._fd = fd

    def release(self) -> None:
        """Give the lock up; idempotent. The file stays (see the module docstring)."""
        with self._mutex:
            fd, self._fd = self._fd, None
            if fd is None:
                return
            try:
                os.ftruncate(fd, 0)
            except OSError:
                pass
            try:
                host.unlock(fd)
            finally:
                os.close(fd)

    def __del__(self) -> None:
        fd = getattr(self, "_fd", None)
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass


class WorkspaceLock:
    """The task's one-writer lock (D5) as a context manager: run_dir's flock, or the lock of the `records` given."""

    def __init__(self, run_dir: str | os.PathLike[str], records: Records | None = None) -> None:
        self.run_dir = Path(os.path.abspath(run_dir))
        self._lock: TaskLock = records.lock() if records is not None else FileLock(self.run_dir)

    @property
    def path(self) -> Path:
        """`<run_dir>/flower.lock` (the files' lock)."""
        return self.run_dir / LOCK_FILE

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._lock.held

    def acquire(self) -> WorkspaceLock:
        """Take the lock or raise WorkspaceBusy; idempotent for the holder."""
        self._lock.acquire()
        return self

    def release(self) -> None:
        """Give the lock up; idempotent."""
        self._lock.release()

    def __enter__(self) -> WorkspaceLock:
        return self.acquire()

    def __exit__(self, *exc: object) -> None:
        self.release()


def held(run_dir: str | os.PathLike[str]) -> bool:
    """Whether a live process (this one included) holds `<run_dir>/flower.lock` now.

    Probed with a shared flock for an instant: `WorkspaceLock.acquire` tries for a moment, so the probe never makes a wake refuse.
    """
    try:
        fd = os.open(Path(run_dir) / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return False  # no lock file: nobody has ever held it
    try:
        if not host.try_lock(fd, shared=True):
            return True
        host.unlock(fd)  # at once: Windows lets go of a closed file's lock only eventually
    finally:
        os.close(fd)
    return False


def holder(run_dir: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The live process holding `<run_dir>/flower.lock` now, as it recorded itself (`pid`, `started_at`, either may be
    missing for an instant after it took the lock); None when nobody holds it.

    Read-only (issue 31: `flower status`, `ps` and `stop` name who runs a wake): the same instant's probe as `held`.
    """
    try:
        fd = os.open(Path(run_dir) / LOCK_FILE, os.O_RDONLY)
    except OSError:
        return None
    try:
        if not host.try_lock(fd, shared=True):
            return _read_info(fd)
        host.unlock(fd)
        return None
    finally:
        os.close(fd)


def _read_info(fd: int) -> dict[str, Any]:
    """The holder's `{"pid", "started_at"}`, or {} if it has not written it (yet) or it is garbled."""
    try:
        data = json.loads(host.read_at(fd, 4096, 0).decode("utf-8"))
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
