"""The agent CLIs a flower starts (D5, issue #31): each recorded under run_dir, none left writing a session it resumes.

The lock of core/lock.py keeps one flower per task, but each CLI it starts writes the session too. Killed alone, a
flower used to leave its CLI running: it finished its turn with every tool denied, sent the model more (billed)
requests, and wrote turns into the session the next wake resumed. So every CLI starts through core/launch.py, which
ties it to its flower where the kernel can (Linux) and records it in `<run_dir>/clis/` as it starts (everywhere but
Windows, whose CLI must be a native .exe); a wake ends any CLI whose flower is gone before it reads or resumes a
session. A process is known by its pid *and* its start time, never by a name: a pid reused since is left alone.
"""

from __future__ import annotations

import itertools
import json
import logging
import os
import shlex
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from . import host, launch

log = logging.getLogger(__name__)

CLIS_DIR = "clis"
"""`<run_dir>/clis/`: one record per running CLI, and the launcher script."""
SCRIPT = "launch"
END_WAIT = 3.0
"""Seconds given to an interrupted CLI to end before it is killed, and to a killed one to be gone (milliseconds, as a rule)."""

_counter = itertools.count(1)
_written: set[Path] = set()
"""Launcher scripts this process has written or found current."""


@dataclass(frozen=True)
class Spawn:
    """How to start one recorded CLI: the SDK's `cli_path`, the env to add, and where its record will be."""

    cli_path: str
    env: dict[str, str]
    record: Path

    def end(self) -> None:
        """Interrupt the CLI as Ctrl-C would, then kill it if it has not ended within END_WAIT (a run cut off).

        Left to the SDK's close it went on alone for seconds, refusing itself every tool call and asking the model
        again. SIGINT stops its turn at once and still lets it write its own last entries (a kill would lose them).
        """
        try:
            info = json.loads(self.record.read_text(encoding="utf-8"))
            pid, start = int(info["pid"]), info["start"]
        except (OSError, ValueError, KeyError, TypeError):
            return  # not started yet, or not recorded: the SDK's close ends it
        if start is not None and host.started(pid) == start:
            _end(pid, start, signal.SIGINT)

    def forget(self) -> None:
        """Remove the record once the CLI has ended (its client closed it); a kill leaves it for the next wake."""
        try:
            self.record.unlink()
        except OSError:
            pass


@dataclass(frozen=True)
class Stray:
    """A recorded CLI whose flower is gone: ended by `end_strays`."""

    pid: int
    session: str | None


def spawn(run_dir: str | os.PathLike[str], cli: str | None, session: str | None) -> Spawn | None:
    """A launch of `cli` recorded under run_dir; None where it cannot be (Windows, no CLI found, run_dir unusable)."""
    if cli is None or os.name == "nt":
        return None
    folder = Path(run_dir) / CLIS_DIR
    script = folder / SCRIPT
    body = f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -I -S {shlex.quote(launch.__file__)} "$@"\n'
    if script in _written and script.is_file():  # read once per process (a stat after): every CLI start comes here
        return _record(folder, script, cli, session)
    try:
        if not script.is_file() or script.read_text(encoding="utf-8") != body:
            folder.mkdir(parents=True, exist_ok=True)
            tmp = folder / f".{SCRIPT}.{os.getpid()}.tmp"
            tmp.write_text(body, encoding="utf-8")
            tmp.chmod(0o755)
            os.replace(tmp, script)
    except OSError as exc:
        log.warning("children: cannot write the CLI launcher in %s (%s): the CLI starts unrecorded", folder, exc)
        return None
    if not os.access(script, os.X_OK):  # a run_dir on a noexec mount: start the CLI as the SDK would
        return None
    _written.add(script)
    return _record(folder, script, cli, session)


def _record(folder: Path, script: Path, cli: str, session: str | None) -> Spawn:
    """A launch through `script` whose CLI records itself in `folder`."""
    record = folder / f"{os.getpid()}.{next(_counter)}.json"
    env = {launch.CLI: cli, launch.RECORD: str(record)}
    if session:
        env[launch.SESSION] = session
    return Spawn(cli_path=str(script), env=env, record=record)


def end_strays(run_dir: str | os.PathLike[str]) -> list[Stray]:
    """End every recorded CLI of run_dir whose flower is gone; drop records of CLIs that have ended. Returns those ended."""
    folder = Path(run_dir) / CLIS_DIR
    try:
        paths = sorted(folder.glob("*.json"))
    except OSError:
        return []
    ended: list[Stray] = []
    for path in paths:
        try:
            info = json.loads(path.read_text(encoding="utf-8"))
            pid, start, owner, owner_start = int(info["pid"]), info["start"], int(info["owner"]), info["owner_start"]
        except (OSError, ValueError, KeyError, TypeError):
            continue  # being written (never: the launcher replaces whole), or not ours to judge
        now = host.started(owner)
        if now is not None and now == (owner_start or now):
            continue  # its flower lives (this one, or another that holds its own task): its own to end
        if start is not None and host.started(pid) == start:
            _end(pid, start)
            ended.append(Stray(pid=pid, session=info.get("session")))
            log.warning("children: ended the agent CLI pid %d (session %s) that a dead flower left running",
                        pid, info.get("session"))
        try:
            path.unlink()
        except OSError:
            pass
    return ended


def _end(pid: int, start: str, first: int | None = None) -> None:
    """Signal `pid` (`first`, then SIGKILL after END_WAIT; else SIGKILL at once) until it is gone or another process."""
    for sig in ([first] if first is not None else []) + [host.KILL]:
        try:
            os.kill(pid, sig)
        except OSError:
            return
        deadline = time.monotonic() + END_WAIT
        while host.started(pid) == start and time.monotonic() < deadline:
            time.sleep(0.005)
        if host.started(pid) != start:
            return
