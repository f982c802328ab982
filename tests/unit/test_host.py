"""What flower asks of the OS (core/host.py, issue 33): each platform's logic, checked here on Linux from bytes and names;
and that flower imports where the Unix-only modules are missing, as on Windows."""

from __future__ import annotations

import os
import socket
import struct
import subprocess
import sys
from pathlib import Path

import pytest

from flower.core import host

HOME = Path("/home/u")


def xucred(version: int, uid: int, groups: list[int]) -> bytes:
    """A macOS `struct xucred` as getsockopt(SOL_LOCAL, LOCAL_PEERCRED) returns it (<sys/ucred.h>: u_int, uid_t, short,
    then gid_t[16] aligned to 4, so two bytes of padding after cr_ngroups)."""
    padded = groups + [0] * (16 - len(groups))
    return struct.pack("<IIhxx16I", version, uid, len(groups), *padded)


def test_macos_peer_credentials_are_read_from_an_xucred() -> None:
    data = xucred(0, 501, [20, 12, 61])
    assert len(data) == 76 == host.XUCRED.size
    assert host.xucred_uid(data) == 501
    with pytest.raises(OSError, match="version 1"):
        host.xucred_uid(xucred(1, 501, [20]))  # a layout this code does not know is refused, never guessed
    with pytest.raises(OSError, match="12 bytes"):
        host.xucred_uid(data[:12])


def test_linux_peer_credentials_of_a_real_socket_pair() -> None:
    a, b = socket.socketpair(socket.AF_UNIX)
    with a, b:
        assert host.peer(a) == (os.getpid(), os.getuid())
    assert host.linux_peer(struct.pack("3i", 42, 1000, 100)) == (42, 1000)


@pytest.mark.parametrize(("platform", "env", "runtime", "logs"), [
    ("linux", {"XDG_RUNTIME_DIR": "/run/user/1", "XDG_STATE_HOME": "/s"}, Path("/run/user/1/flower"), Path("/s/flower")),
    ("linux", {"XDG_RUNTIME_DIR": "rel", "XDG_STATE_HOME": " "}, HOME / ".cache/flower", HOME / ".local/state/flower"),
    ("linux", {}, HOME / ".cache/flower", HOME / ".local/state/flower"),
    # macOS keeps per-user files under ~/Library whatever XDG says (a stray XDG_RUNTIME_DIR is not its place).
    ("darwin", {"XDG_RUNTIME_DIR": "/run/user/1"}, HOME / "Library/Caches/flower", HOME / "Library/Logs/flower"),
    ("win32", {"LOCALAPPDATA": "/c/AppData/Local"}, Path("/c/AppData/Local/flower"), Path("/c/AppData/Local/flower/logs")),
    ("win32", {}, HOME / "AppData/Local/flower", HOME / "AppData/Local/flower/logs"),
])
def test_each_platform_has_its_own_runtime_and_log_directories(platform: str, env: dict[str, str], runtime: Path,
                                                               logs: Path) -> None:
    assert host.runtime_dir(env, platform, HOME) == runtime
    assert host.log_dir(env, platform, HOME) == logs


def test_a_process_start_time_from_proc_and_from_ps() -> None:
    # /proc/<pid>/stat: the name may hold spaces and parentheses; field 22 is the start time; a zombie has none.
    line = b"77 (a (b) c) S " + b" ".join(str(n).encode() for n in range(4, 22)) + b" 123456 0 0\n"
    assert host.proc_start(line) == "123456"
    assert host.proc_start(line.replace(b") S ", b") Z ")) is None
    assert host.started(os.getpid()) == host.proc_start(Path(f"/proc/{os.getpid()}/stat").read_bytes())
    # `ps -o stat=,lstart=` (macOS, the BSDs): the start as one token; nothing, or a zombie, is None.
    assert host.ps_start("Ss   Mon Sep  7 12:03:01 2026\n") == "Mon Sep 7 12:03:01 2026"
    assert host.ps_start("Z+   Mon Sep  7 12:03:01 2026\n") is None
    assert host.ps_start("") is None


def test_alive_and_the_file_lock_between_two_descriptions(tmp_path: Path) -> None:
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, timeout=30)
    assert host.alive(os.getpid()) and not host.alive(int(done.stdout))  # a pid just reaped (reuse is vanishingly rare)
    path = tmp_path / "l"
    first, second = os.open(path, os.O_RDWR | os.O_CREAT), os.open(path, os.O_RDWR)
    try:
        assert host.try_lock(first) and not host.try_lock(second) and not host.try_lock(second, shared=True)
        host.write_at(first, b"holder", 0)
        assert host.read_at(second, 100, 0) == b"holder"  # the holder's record is readable while it holds the lock
        host.unlock(first)
        assert host.try_lock(second, shared=True) and host.try_lock(first, shared=True)
    finally:
        os.close(first)
        os.close(second)


# What Windows lacks, made missing before flower is imported: its modules, and the names its os/signal/select/socket
# do not have. A module importing one at module level (or reading one at import) fails here as it would there.
WINDOWS_LACKS = ("fcntl", "termios", "pty", "tty", "pwd", "grp", "resource", "posix")
WINDOWS_LACKS_NAMES = {"os": ("getuid", "fchmod", "pread", "pwrite", "killpg", "getpgid", "setsid"),
                       "signal": ("SIGKILL", "SIGPIPE", "SIGHUP", "SIGQUIT"), "select": ("poll", "epoll"),
                       "socket": ("SO_PEERCRED",)}
BLOCKER = f"""
import importlib, importlib.abc, os, pkgutil, sys
import asyncio, select, signal, socket  # the stdlib itself first (Linux's asyncio needs some of these): flower's use is tested
class Windows(importlib.abc.MetaPathFinder):
    # Only flower's own imports are refused: the libraries it uses guard theirs (mcp: `if sys.platform != "win32"`).
    def find_spec(self, name, path=None, target=None):
        frame = sys._getframe(1)
        while frame is not None and frame.f_code.co_filename.startswith("<frozen importlib"):
            frame = frame.f_back
        importer = frame.f_globals.get("__name__", "") if frame is not None else ""
        if name in {WINDOWS_LACKS!r} and (importer == "__main__" or importer.startswith("flower")):
            raise ImportError(f"no module named {{name!r}} (as on Windows)")
for name in {WINDOWS_LACKS!r}:
    sys.modules.pop(name, None)
sys.meta_path.insert(0, Windows())
for module, names in {WINDOWS_LACKS_NAMES!r}.items():
    for attr in names:
        if hasattr(sys.modules[module], attr):
            delattr(sys.modules[module], attr)
real, sys.platform = sys.platform, "win32"  # core/host.py takes its Windows branches, as it would there
import flower.core.host
sys.platform = real
assert not flower.core.host.ENGINE
failed = []
for info in pkgutil.walk_packages(flower.__path__, "flower."):
    if info.name.endswith("__main__"):
        continue  # runs its program; what it imports is its package's, imported here
    try:
        importlib.import_module(info.name)
    except Exception as exc:
        failed.append(f"{{info.name}}: {{type(exc).__name__}}: {{exc}}")
print("\\n".join(failed))
"""


def test_every_flower_module_imports_without_what_windows_lacks(tmp_path: Path) -> None:
    # Windows needs flower, flower.cli, flower.lsp and flower.service; nothing else may import a Unix-only module at
    # module level either (issue 33): each is loaded inside the one function that needs it, in core/host.py.
    done = subprocess.run([sys.executable, "-c", BLOCKER], capture_output=True, text=True, timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == ""
    # The blocker works: a module that imports fcntl is refused.
    probe = BLOCKER.split("real, sys.platform")[0] + "import fcntl\n"
    refused = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert "as on Windows" in refused.stderr


def test_the_engine_is_refused_in_one_line_where_there_is_none(tmp_path: Path) -> None:
    # Windows has no Unix sockets: `flower serve` says so in one line and exits non-zero (ENGINE forced off here).
    code = ("import sys; from flower.core import host; host.ENGINE = False; from flower.cli import run; "
            "sys.exit(run(['serve']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60, cwd=tmp_path,
                          env={**os.environ, "LANG": "C"})
    assert done.returncode != 0 and done.stdout == ""
    assert done.stderr.strip().splitlines() == [
        "flower: the flower engine needs Unix sockets, which Windows does not have; run flower in this terminal "
        "(without --detach), and set flower.engine to \"window\" in the editor"]
