"""Find the engine, or start exactly one (D11): `flower serve --background`, the extension and `flower --detach` use it.

Nothing answering at the socket → start `python -m flower.cli serve` detached (its own session
and process group, stdin /dev/null, output to the log file) and wait until it answers. Two
starters at once each start one; the lock next to the socket lets one serve and the other stop.
An engine of another flower version is asked (by this client's `initialize`) to stop when no wake
runs: then this one's own engine starts; while a wake runs, the old one goes on serving.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

from ..core import host
from ..core.texts import text
from ..core.wire import VERSION  # not lsp.server: `flower --detach` imports no pygls nor SDK (issue 35)
from .client import engine_runs
from .place import log_path, private_dir, socket_path

START_TIMEOUT = 60.0
"""Bound on an engine starting to answer."""
UPDATE_TIMEOUT = 45.0
"""Bound on an idle engine of another version going away (its stop closes the folders, bounded at 30 s)."""
LOG_LIMIT = 5 * 2**20
"""A log over this many bytes is moved to `engine.log.1` when an engine starts."""


class StartError(Exception):
    """The engine could not be started or reached: one line that says what to do."""


@dataclass
class Running:
    """An engine that answers."""

    sock: Path
    version: str
    pid: int
    busy: bool
    """A wake runs in it."""
    started: bool
    """This call started it."""


async def probe(sock: Path, locale: str = "en") -> Running | None:
    """Ask the engine at `sock` who it is (telling it this flower's version); None when nothing answers."""
    runs = await engine_runs(sock, locale)
    try:
        return Running(sock, runs["version"], runs["pid"], any(r["running"] for r in runs["runs"]), False) if runs else None
    except (KeyError, TypeError):
        return None


async def ensure(idle: float | None = None, locale: str = "en", sock: Path | None = None) -> tuple[Running, str | None]:
    """The engine at this user's socket, started if none answers; with a line to show when it is another version, busy."""
    sock = sock or socket_path()
    found = await probe(sock, locale)
    if found is not None and found.version == VERSION:
        return found, None
    if found is not None and found.busy:
        return found, text("engine_busy_update", locale, version=found.version)
    if found is not None:  # another version, idle: it stops now that it heard this one's version
        await _gone(sock, locale)
    private_dir(sock.parent)
    # Starters take turns: the second one finds the first one's engine instead of starting another (the
    # engine's own lock would make one serve anyway, but each extra engine pays a whole startup for nothing).
    turn = os.open(sock.with_name(sock.name + ".start"), os.O_RDWR | os.O_CREAT, 0o600)
    try:
        await asyncio.wait_for(asyncio.to_thread(host.wait_lock, turn), START_TIMEOUT * 2)
        found = await probe(sock, locale)
        if found is not None:
            return found, None
        return await _start(sock, idle, locale), None
    finally:
        os.close(turn)  # closing lets go of the turn (a thread still waiting for it gets EBADF, harmlessly)


async def _gone(sock: Path, locale: str) -> None:
    loop = asyncio.get_running_loop()
    deadline = loop.time() + UPDATE_TIMEOUT
    while await probe(sock, locale) is not None:
        if loop.time() > deadline:
            raise StartError(f"the flower engine at {sock} runs another version and did not stop; "
                             f"stop it (kill its pid) and try again")
        await asyncio.sleep(0.2)


async def _start(sock: Path, idle: float | None, locale: str) -> Running:
    log = log_path()
    try:
        private_dir(log.parent)
        with contextlib.suppress(FileNotFoundError):
            if log.stat().st_size > LOG_LIMIT:
                log.replace(log.with_name(log.name + ".1"))
        out = open(log, "ab")  # noqa: SIM115 - handed to the child, closed here right after
    except OSError as exc:
        raise StartError(f"cannot prepare the flower engine's files ({exc}); check {sock.parent} and {log.parent}") from None
    command = [sys.executable, "-m", "flower.cli", "serve"] + (["--idle", f"{idle:g}"] if idle is not None else [])
    with out:
        child = subprocess.Popen(command, stdin=subprocess.DEVNULL, stdout=out, stderr=out, cwd="/",
                                 env={**os.environ, "FLOWER_ENGINE": str(sock)}, start_new_session=True)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + START_TIMEOUT
    while loop.time() < deadline:
        found = await probe(sock, locale)
        if found is not None:
            found.started = found.pid == child.pid
            child.poll()  # the loser of a race has exited: reap it
            return found
        if child.poll() not in (None, 0, 1):  # 1: another engine won the race; it will answer
            break
        await asyncio.sleep(0.05)
    raise StartError(f"the flower engine did not start (see {log}): {_last_line(log)}")


def _last_line(log: Path) -> str:
    try:
        lines = [ln for ln in log.read_text(encoding="utf-8", errors="replace").splitlines() if ln.strip()]
    except OSError:
        return "no log"
    return lines[-1][-300:] if lines else "nothing in its log"
