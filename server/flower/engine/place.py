"""Where the engine lives: its socket, the lock that makes it one, and its log (D11)."""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from pathlib import Path

from ..core import host


class PlaceError(Exception):
    """The engine's directory cannot be used safely (someone else's, or not a directory)."""


def socket_path(env: Mapping[str, str] | None = None) -> Path:
    """`$FLOWER_ENGINE`, else `engine.sock` in this user's runtime directory (core/host.py: `$XDG_RUNTIME_DIR/flower`,
    else `~/.cache/flower` on Linux; `~/Library/Caches/flower` on macOS)."""
    env = os.environ if env is None else env
    if env.get("FLOWER_ENGINE", "").strip():
        return Path(os.path.abspath(os.path.expanduser(env["FLOWER_ENGINE"].strip())))
    return host.runtime_dir(env) / "engine.sock"


def existing_socket() -> Path | None:
    """The engine's socket if the file is there (an engine may run); None when it is not, or there is no place for it."""
    if not host.ENGINE:
        return None
    try:
        sock = socket_path()
    except RuntimeError:  # no home directory to put it in
        return None
    return sock if sock.exists() else None


def lock_path(sock: Path) -> Path:
    """The lock held by the engine serving `sock`, next to it: whoever holds it is the one engine."""
    return sock.with_name(sock.name + ".lock")


def log_path(env: Mapping[str, str] | None = None) -> Path:
    """`engine.log` in this user's log directory (core/host.py: `$XDG_STATE_HOME/flower`, else `~/.local/state/flower`
    on Linux; `~/Library/Logs/flower` on macOS)."""
    return host.log_dir(env) / "engine.log"


def private_dir(path: Path) -> Path:
    """Create `path` (0700) or check it: it must be a directory of this user; it is made 0700 if it is not."""
    try:
        path.mkdir(mode=0o700, parents=True, exist_ok=True)
    except FileExistsError:  # a file (or a link) where the directory should be: said below
        pass
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode):
        raise PlaceError(f"{path} is not a directory; remove it or set FLOWER_ENGINE to a socket path elsewhere")
    if info.st_uid != host.user_id():
        raise PlaceError(f"{path} belongs to uid {info.st_uid}, not to you; set FLOWER_ENGINE to a socket path in a directory of yours")
    if stat.S_IMODE(info.st_mode) != 0o700:
        os.chmod(path, 0o700)  # only this user may reach the socket (D11), whatever the umask made
    return path
