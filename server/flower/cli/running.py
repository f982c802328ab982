"""Who runs a folder's wake now: the engine or another flower process, by pid (issue 31).

`flower status`, `flower ps` and `flower stop` all ask this one place, so they agree on what runs, foreground or
in the engine (D11): the engine answers for the folders it holds (`flower/runs`, with what each run waits for);
any other flower process is the one holding the folder's one-writer lock (D5), which records its pid.
Read-only: nothing is started, created or written (a stat, a lock probe, a connection to a running engine).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..core.lock import holder

PERSON = ("approval", "question")
"""What a run waits for that only the person can give (an outage waits for the API, not for them)."""


@dataclass(frozen=True)
class Running:
    """A wake under way in a folder: the pid running it, whether that is the engine, and what it waits for."""

    pid: int | None
    engine: Path | None = None
    """The engine's socket when the engine runs it; None: another flower process (a terminal's, a window's server)."""
    waiting_for: str | None = None
    """`approval`, `question` or `outage` while the run waits (the engine's runs only), else None."""

    @property
    def for_you(self) -> bool:
        """The run waits for the person: `flower` in the folder attaches and asks them."""
        return self.waiting_for in PERSON

    def to_json(self) -> dict[str, Any]:
        """As `flower status --json` shows it (`held_by`)."""
        return {"pid": self.pid, "engine": self.engine is not None, "waiting_for": self.waiting_for}


def same_path(path: Path | str) -> str:
    """A folder as the engine compares it."""
    return os.path.normcase(os.path.abspath(path))


async def engine_runs(locale: str) -> tuple[Path, dict[str, Any]] | None:
    """(the engine's socket, its `flower/runs`) when an engine answers; None otherwise (nothing is started)."""
    from ..engine.place import existing_socket

    sock = existing_socket()
    if sock is None:
        return None
    # Only now: the client imports the language server (pygls, lsprotocol, cattrs, and the service with the SDK
    # behind it), which a command with no engine running has no use for.
    from ..engine.client import engine_runs as ask

    runs = await ask(sock, locale)
    return (sock, runs) if runs is not None else None


def held_in(found: tuple[Path, dict[str, Any]] | None, workspace: Path, run_dir: Path | None) -> Running | None:
    """The wake under way in `workspace`: the engine's (from `engine_runs`' answer), else the process holding
    `run_dir`'s lock, else None."""
    if found is not None:
        sock, runs = found
        here = same_path(workspace)
        for run in runs["runs"]:
            if run["running"] and same_path(run["workspace"]) == here:
                return Running(runs["pid"], sock, (run.get("waitingFor") or {}).get("what"))
    held = holder(run_dir) if run_dir is not None else None
    if held is None:
        return None
    pid = held.get("pid")
    engine = found[0] if found is not None and pid == found[1]["pid"] else None  # the engine between two of its steps
    return Running(pid, engine)


def run_dir_of(workspace: Path) -> Path | None:
    """The folder's run dir by its settings (environment, file, default); None when they cannot be read (status says why)."""
    from ..core.trust import decide
    from ..settings import SettingsError, load

    try:
        return load(workspace, trusted=decide(workspace).trusted).run_dir_path(workspace)
    except SettingsError:
        return None


async def running_here(workspace: Path, run_dir: Path | None, locale: str) -> Running | None:
    """The wake under way in `workspace`, in the engine or in another flower process; None when none is."""
    return held_in(await engine_runs(locale), workspace, run_dir)
