"""What flower asks of the operating system, in one place (issue 33): file locks, who is at the other end of a socket,
where the engine's socket and log live, whether a process lives and since when, and handing freed memory back.

Tested on Linux. macOS takes its own branches (LOCAL_PEERCRED, `~/Library`, `ps`); Windows imports everything and runs
the CLI and the window-mode editor server, but has no engine (no Unix sockets to hold its one-user wall, D11).

Stdlib only, and nothing platform-only imported at module level: core/launch.py loads this file by path, before the
agent CLI starts (it must cost milliseconds), and `import flower` must work on every platform. The branches are
`sys.platform` tests that mypy understands, so `mypy --platform darwin|win32` checks each one (`make lint`).
"""

from __future__ import annotations

import functools
import os
import signal
import struct
import sys
from collections.abc import Awaitable, Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import asyncio
    import socket

ENGINE = sys.platform != "win32"
"""Whether this platform can run the engine: it listens on a Unix socket only its user can reach (D11)."""

if sys.platform == "win32":
    async def listen(accept: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]], path: Path,
                     limit: int) -> asyncio.Server:
        """Serve `accept` on the Unix socket at `path` (OSError on Windows, which has none: ENGINE is False there)."""
        raise OSError("no Unix sockets on Windows: the flower engine is off there")

    async def connect(path: Path, limit: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the Unix socket at `path` (OSError on Windows, which has none)."""
        raise OSError("no Unix sockets on Windows: the flower engine is off there")
else:
    async def listen(accept: Callable[[asyncio.StreamReader, asyncio.StreamWriter], Awaitable[None]], path: Path,
                     limit: int) -> asyncio.Server:
        """Serve `accept` on the Unix socket at `path` (OSError on Windows, which has none: ENGINE is False there)."""
        import asyncio

        return await asyncio.start_unix_server(accept, path=str(path), limit=limit)

    async def connect(path: Path, limit: int) -> tuple[asyncio.StreamReader, asyncio.StreamWriter]:
        """A connection to the Unix socket at `path` (OSError on Windows, which has none)."""
        import asyncio

        return await asyncio.open_unix_connection(str(path), limit=limit)

# -- file locks --------------------------------------------------------------------------------------------------
# POSIX: flock, which belongs to the open file description and goes when it closes (a process killed in any way
# lets go). Windows: one byte locked with msvcrt far past any content, so reading the holder's record is never
# blocked; it has no shared lock, so a probe takes the exclusive one for an instant (lock.py's PROBE_GRACE rides it out).
WINDOWS_LOCK_AT = 2**30
"""Windows: the offset of the byte whose lock is the file's lock."""

if sys.platform == "win32":
    def try_lock(fd: int, shared: bool = False) -> bool:
        """Take the file's lock (shared if asked, where the OS has one) without waiting; False if another holds it."""
        import msvcrt

        os.lseek(fd, WINDOWS_LOCK_AT, os.SEEK_SET)
        try:
            msvcrt.locking(fd, msvcrt.LK_NBLCK, 1)
        except OSError:
            return False
        return True

    def wait_lock(fd: int) -> None:
        """Take the file's exclusive lock, waiting as long as another holds it."""
        import time

        while not try_lock(fd):
            time.sleep(0.05)  # msvcrt's own blocking mode gives up after ten seconds

    def unlock(fd: int) -> None:
        """Let go of the file's lock (closing the file lets go too, at once on POSIX, eventually on Windows)."""
        import msvcrt

        os.lseek(fd, WINDOWS_LOCK_AT, os.SEEK_SET)
        msvcrt.locking(fd, msvcrt.LK_UNLCK, 1)

    def read_at(fd: int, size: int, offset: int) -> bytes:
        """Up to `size` bytes at `offset` (pread where there is one)."""
        os.lseek(fd, offset, os.SEEK_SET)
        return os.read(fd, size)

    def write_at(fd: int, data: bytes, offset: int) -> None:
        """`data` written at `offset` (pwrite where there is one)."""
        os.lseek(fd, offset, os.SEEK_SET)
        os.write(fd, data)
else:
    def try_lock(fd: int, shared: bool = False) -> bool:
        """Take the file's lock (shared if asked, where the OS has one) without waiting; False if another holds it."""
        import fcntl

        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            return False
        return True

    def wait_lock(fd: int) -> None:
        """Take the file's exclusive lock, waiting as long as another holds it."""
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_EX)

    def unlock(fd: int) -> None:
        """Let go of the file's lock (closing the file lets go too, at once on POSIX, eventually on Windows)."""
        import fcntl

        fcntl.flock(fd, fcntl.LOCK_UN)

    def read_at(fd: int, size: int, offset: int) -> bytes:
        """Up to `size` bytes at `offset` (pread where there is one)."""
        return os.pread(fd, size, offset)

    def write_at(fd: int, data: bytes, offset: int) -> None:
        """`data` written at `offset` (pwrite where there is one)."""
        os.pwrite(fd, data, offset)


# -- who is at the other end of the engine's socket (D11) ----------------------------------------------------------
SOL_LOCAL, LOCAL_PEERCRED, LOCAL_PEERPID = 0, 1, 2
"""macOS <sys/un.h>: the level and options that give a Unix socket peer's credentials and pid."""
XUCRED = struct.Struct("@IIh16I")
"""macOS <sys/ucred.h> `struct xucred`: cr_version, cr_uid, cr_ngroups, cr_groups[NGROUPS=16] (76 bytes)."""
XUCRED_VERSION = 0
PEERCRED = struct.Struct("3i")
"""Linux `struct ucred`: pid, uid, gid."""


def peer(sock: socket.socket) -> tuple[int, int]:
    """(pid, uid) of the process at the other end of a connected Unix socket, as the kernel recorded them at connect.

    OSError where they cannot be known (a system with neither branch): the engine then refuses the connection.
    """
    if sys.platform == "linux":
        import socket as sockets

        return linux_peer(sock.getsockopt(sockets.SOL_SOCKET, sockets.SO_PEERCRED, PEERCRED.size))
    elif sys.platform == "darwin":
        uid = xucred_uid(sock.getsockopt(SOL_LOCAL, LOCAL_PEERCRED, XUCRED.size))
        pid = struct.unpack("i", sock.getsockopt(SOL_LOCAL, LOCAL_PEERPID, 4))[0]
        return pid, uid
    else:
        raise OSError(f"the peer of a Unix socket cannot be known on {sys.platform}")


def linux_peer(creds: bytes) -> tuple[int, int]:
    """(pid, uid) from the bytes of Linux's SO_PEERCRED."""
    pid, uid, _gid = PEERCRED.unpack(creds)
    return pid, uid


def xucred_uid(creds: bytes) -> int:
    """The uid in the bytes of macOS's LOCAL_PEERCRED (`struct xucred`); OSError for another version or a short read."""
    if len(creds) < XUCRED.size:
        raise OSError(f"LOCAL_PEERCRED gave {len(creds)} bytes, not the {XUCRED.size} of a struct xucred")
    version, uid, _ngroups, *_groups = XUCRED.unpack_from(creds)
    if version != XUCRED_VERSION:
        raise OSError(f"LOCAL_PEERCRED gave a struct xucred of version {version}, not {XUCRED_VERSION}")
    return int(uid)


if sys.platform == "win32":
    def user_id() -> int:
        """This user's uid; 0 on Windows, which has none (`os.stat` says 0 for every file there)."""
        return 0
else:
    def user_id() -> int:
        """This user's uid; 0 on Windows, which has none (`os.stat` says 0 for every file there)."""
        return os.getuid()


# -- where the engine's socket and log live ------------------------------------------------------------------------
def runtime_dir(env: Mapping[str, str] | None = None, platform: str = sys.platform, home: Path | None = None) -> Path:
    """Where flower's per-user runtime files (the engine's socket) go.

    Linux: `$XDG_RUNTIME_DIR/flower`, else `~/.cache/flower`; macOS: `~/Library/Caches/flower`;
    Windows: `%LOCALAPPDATA%\\flower`.
    """
    env = os.environ if env is None else env
    if platform == "win32":
        return _local_app_data(env, home) / "flower"
    if platform == "darwin":
        return (home or Path.home()) / "Library" / "Caches" / "flower"
    runtime = env.get("XDG_RUNTIME_DIR", "").strip()
    if runtime and os.path.isabs(runtime):
        return Path(runtime) / "flower"
    return (home or Path.home()) / ".cache" / "flower"


def log_dir(env: Mapping[str, str] | None = None, platform: str = sys.platform, home: Path | None = None) -> Path:
    """Where flower's per-user logs (the engine's) go.

    Linux: `$XDG_STATE_HOME/flower`, else `~/.local/state/flower`; macOS: `~/Library/Logs/flower` (where Console finds
    them); Windows: `%LOCALAPPDATA%\\flower\\logs`.
    """
    env = os.environ if env is None else env
    if platform == "win32":
        return _local_app_data(env, home) / "flower" / "logs"
    if platform == "darwin":
        return (home or Path.home()) / "Library" / "Logs" / "flower"
    state = env.get("XDG_STATE_HOME", "").strip()
    base = Path(state) if state and os.path.isabs(state) else (home or Path.home()) / ".local" / "state"
    return base / "flower"


def _local_app_data(env: Mapping[str, str], home: Path | None) -> Path:
    local = env.get("LOCALAPPDATA", "").strip()
    return Path(local) if local else (home or Path.home()) / "AppData" / "Local"


# -- processes ----------------------------------------------------------------------------------------------------
if sys.platform == "win32":
    KILL = signal.SIGTERM
    """The signal that ends a process at once (Windows has no SIGKILL: os.kill terminates it whatever the number)."""

    def alive(pid: int) -> bool:
        """Whether a process with this pid runs (never signals it: os.kill(pid, 0) would terminate it on Windows)."""
        import ctypes

        kernel = ctypes.windll.kernel32
        handle = kernel.OpenProcess(0x1000, False, pid)  # PROCESS_QUERY_LIMITED_INFORMATION
        if not handle:
            return ctypes.get_last_error() == 5  # ERROR_ACCESS_DENIED: it exists, it is another user's
        try:
            code = ctypes.c_ulong()
            return bool(kernel.GetExitCodeProcess(handle, ctypes.byref(code))) and code.value == 259  # STILL_ACTIVE
        finally:
            kernel.CloseHandle(handle)

    def kill_group(pid: int) -> None:
        """End the process group `pid` leads, at once (Windows: the process itself)."""
        os.kill(pid, KILL)

    def pipe_reader_gone(fd: int) -> bool:
        """Whether the reader of the pipe at `fd` has closed it (never known on Windows)."""
        return False

    def loop_can_read(fd: int) -> bool:
        """Whether the event loop can read `fd` itself (a pipe or socket on POSIX; never on Windows, whose loop
        wants overlapped handles, which an inherited stdin is not)."""
        return False
else:
    KILL = signal.SIGKILL
    """The signal that ends a process at once (Windows has no SIGKILL: os.kill terminates it whatever the number)."""

    def alive(pid: int) -> bool:
        """Whether a process with this pid runs (never signals it: os.kill(pid, 0) would terminate it on Windows)."""
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:  # another user's process
            return True
        return True

    def kill_group(pid: int) -> None:
        """End the process group `pid` leads, at once (Windows: the process itself)."""
        os.killpg(pid, KILL)

    def pipe_reader_gone(fd: int) -> bool:
        """Whether the reader of the pipe at `fd` has closed it (never known on Windows)."""
        import select

        poller = select.poll()  # a pipe whose reader closed polls as an error on its write end
        poller.register(fd, select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))

    def loop_can_read(fd: int) -> bool:
        """Whether the event loop can read `fd` itself (a pipe or socket on POSIX; never on Windows, whose loop
        wants overlapped handles, which an inherited stdin is not)."""
        import stat

        mode = os.fstat(fd).st_mode
        return stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode)  # epoll refuses /dev/null and regular files


def started(pid: int) -> str | None:
    """The process's start time as the OS keeps it (an opaque token), or None if there is no such process (or a zombie).

    /proc where there is one; `ps` elsewhere (macOS, the BSDs); None on Windows, where flower records no process.
    """
    if sys.platform == "win32":
        return None
    else:
        if not os.path.exists("/proc/self/stat"):
            return _ps(pid)
        try:
            with open(f"/proc/{pid}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            return None
        return proc_start(stat)


def proc_start(stat: bytes) -> str | None:
    """The start time in a /proc/<pid>/stat line, or None for a zombie."""
    fields = stat[stat.rindex(b")") + 2:].split()  # the name may hold spaces and parentheses: after its last ')'
    return None if fields[0] == b"Z" else fields[19].decode()  # state, then field 22 of stat(5): start time in ticks


def _ps(pid: int) -> str | None:
    import subprocess

    try:
        out = subprocess.run(["ps", "-o", "stat=,lstart=", "-p", str(pid)], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    return ps_start(out)


def ps_start(out: str) -> str | None:
    """The start time in `ps -o stat=,lstart=` output, or None for no process or a zombie."""
    state, _, start = out.strip().partition(" ")
    return None if not start or state.startswith("Z") else " ".join(start.split())


def die_with_parent(parent: int) -> bool:
    """Ask the kernel for SIGKILL when the parent dies (Linux's PR_SET_PDEATHSIG, kept across exec; elsewhere the
    record lets the next wake end an orphan); False if the parent is already gone (it died before we asked)."""
    if sys.platform == "linux":
        import ctypes  # only here: 5 ms, and not every platform has prctl

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, 9, 0, 0, 0)  # PR_SET_PDEATHSIG, SIGKILL
    return os.getppid() == parent


def config_in_use(config: Path) -> bool:
    """Whether a live process has `config` as its CLI config dir (`CLAUDE_CONFIG_DIR` in /proc/<pid>/environ).

    True where it cannot be told (no /proc: macOS, Windows), so nothing is removed there.
    """
    proc = Path("/proc")
    if not (proc / "self" / "environ").exists():
        return True
    needle = b"\0CLAUDE_CONFIG_DIR=" + os.fsencode(config) + b"\0"
    for environ in proc.glob("[0-9]*/environ"):
        try:
            if needle in b"\0" + environ.read_bytes():
                return True
        except OSError:  # gone meanwhile, or another user's (whose config dir this is not)
            continue
    return False


# -- memory --------------------------------------------------------------------------------------------------------
def give_back() -> None:
    """Return the free pages of the C heap to the system: glibc's `malloc_trim`, macOS's `malloc_zone_pressure_relief`;
    a no-op elsewhere (musl, Windows).

    A resume decodes, prunes and writes out the whole session (hundreds of MB of objects for a long one), then frees
    it; reading a large session in the engine leaves tens of MB. CPython hands the freed blocks to malloc, which keeps
    them mapped: without this the process would hold that peak for hours. ctypes releases the GIL for the call.
    """
    trim = _trimmer()
    if trim is not None:
        trim()


@functools.cache
def _trimmer() -> Callable[[], object] | None:
    import ctypes

    if sys.platform == "linux":
        try:
            trim = getattr(ctypes.CDLL(None), "malloc_trim", None)  # absent under musl
        except OSError:
            return None
        return None if trim is None else lambda: trim(0)
    elif sys.platform == "darwin":
        try:
            relief = ctypes.CDLL(None).malloc_zone_pressure_relief
        except (OSError, AttributeError):
            return None
        relief.argtypes, relief.restype = [ctypes.c_void_p, ctypes.c_size_t], ctypes.c_size_t
        return lambda: relief(None, 0)  # every zone, as much as it can
    else:
        return None
