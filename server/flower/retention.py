"""Retention (#26): what the current task and each archived one hold in the store, and collecting archived ones.

A task's sessions are its lineage's steps (S5) and the sessions its manifest rows name (S6, a handed-off session's
`retired` too). `flower --new` moves the lineage into `notes/archive/<stamp>/` (S28), so an archive names the steps
of its task, and the manifest rows between the previous archive and it are that task's (status.recorded reads the
task's start the same way). Collecting deletes only archived tasks' sessions from flower's own store, with their
journals: never a session of the current task (even one an archive also names), never a file of the archive
(需求.md, 目标.md, notes stay, S28), never the Claude Code CLI's own files under ~/.claude.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .core.journal import Journal
from .core.lineage import Lineage
from .core.projects import project_key
from .core.records import LINEAGE_FILE, Records, parse_lineage
from .sessions import Sessions

log = logging.getLogger(__name__)

ARCHIVE = "notes/archive"
"""Where `flower --new` archives a task (S28)."""
STORE_WARN_BYTES = 2_000_000_000
"""A store past this size gets one line at wake suggesting `flower gc`."""
DAY_S = 86400.0


@dataclass(frozen=True)
class Holding:
    """What one task holds: the current one, an archive of `flower --new` (S28), or stored sessions of neither."""

    kind: Literal["current", "archive", "other"]
    name: str
    """`current`, the archive's directory name (its stamp), or `other`."""
    path: str | None
    """The archive's directory; None for the current task and `other`."""
    sessions: tuple[str, ...]
    """Its sessions the store holds."""
    entries: int
    bytes: int
    """Its entries' bytes as stored, with its sessions' journals."""
    last_used: float | None
    """When it was last written (epoch s): its newest session write, else the archive's own time; None if unknown."""


@dataclass(frozen=True)
class Survey:
    """Every holding of a workspace's store, current task first, then archives oldest first, then `other`."""

    holdings: list[Holding]
    store_bytes: int
    """What the whole store takes on disk now."""

    def collectable(self, older_than: float | None = None, now: float | None = None) -> list[Holding]:
        """The archives with stored sessions last used more than `older_than` seconds ago (None: every archive)."""
        cutoff = (time.time() if now is None else now) - (older_than or 0.0)
        return [h for h in self.holdings if h.kind == "archive" and h.sessions
                and (older_than is None or (h.last_used is not None and h.last_used < cutoff))]


@dataclass(frozen=True)
class Freed:
    """What a collection removed, and the store's size on disk before and after giving the space back."""

    sessions: int
    entries: int
    bytes: int
    before: int
    after: int

    @property
    def returned(self) -> int:
        """Bytes the store's files shrank by."""
        return max(0, self.before - self.after)


def age_seconds(text: str) -> float:
    """`90d` or `12h` as seconds (a whole number ≥ 0 of days or hours); ValueError otherwise."""
    found = re.fullmatch(r"\s*(\d+)\s*([dh])\s*", text.lower())
    if found is None:
        raise ValueError(text)
    return int(found.group(1)) * (DAY_S if found.group(2) == "d" else 3600.0)


@dataclass(frozen=True)
class _Task:
    kind: Literal["current", "archive"]
    name: str
    path: Path | None
    sessions: list[str]
    began: float | None


def _tasks(workspace: Path, run_dir: Path, records: Records) -> list[_Task]:
    archives: list[tuple[float, Path]] = []
    try:
        for d in (workspace / ARCHIVE).iterdir():
            if d.is_dir():
                archives.append((_archived_at(d), d))
    except OSError:
        pass
    archives.sort()
    rows = records.manifest_rows()
    current = Lineage.load(run_dir, workspace, records=records)
    found = [_Task("current", "current", None, [*current.steps.values(), *_named(rows, archives[-1][0] if archives else 0.0, None)],
                   None)]
    for i, (at, d) in enumerate(archives):
        lineage = _archived_lineage(d)
        since = archives[i - 1][0] if i else None
        found.append(_Task("archive", d.name, d, [*lineage, *_named(rows, since, at)], at))
    return found


def _archived_at(archive: Path) -> float:
    """When the archive was made: its name's stamp (whole seconds, never later than the move), or its mtime if earlier.

    The earlier of the two bounds the current task's rows: a file added to the archive later moves its mtime, which
    must not hand the current task's rows to the archive.
    """
    at = archive.stat().st_mtime
    try:
        return min(at, time.mktime(time.strptime(archive.name[:15], "%Y%m%d-%H%M%S")))
    except ValueError:
        return at


def _archived_lineage(archive: Path) -> list[str]:
    """The step sessions the archive's lineage.json names; [] when it has none or it cannot be read (S12)."""
    try:
        data = parse_lineage((archive / LINEAGE_FILE).read_bytes())
    except OSError:
        return []
    return list(data["steps"].values()) if data is not None else []


def _named(rows: Iterable[dict[str, Any]], since: float | None, until: float | None) -> list[str]:
    """The sessions of the manifest rows started in [since, until) (None: unbounded), a handed-off one's too."""
    out: list[str] = []
    for row in rows:
        started = row.get("started_at")
        at = float(started) if isinstance(started, (int, float)) and not isinstance(started, bool) else 0.0
        if (since is not None and at < since) or (until is not None and at >= until):
            continue
        retired = row.get("retired")
        for sid in [row.get("session_id"), *(retired if isinstance(retired, list) else [])]:
            if isinstance(sid, str) and sid:
                out.append(sid)
    return out


async def survey(workspace: Path, run_dir: Path, sessions: Sessions) -> Survey:
    """What the current task and each archived one hold in the store now (the records read in a worker thread)."""
    found = await asyncio.to_thread(_tasks, workspace, run_dir, sessions.records)
    usage = {u.session_id: u for u in await sessions.raw.usage(project_key(workspace))}
    journal = Journal(run_dir)
    owner: dict[str, int] = {}
    for i, task in enumerate(found):  # the current task first: a session it names is never an archive's
        for sid in task.sessions:
            owner.setdefault(sid, i)
    holdings = []
    for i, task in enumerate(found):
        mine = [sid for sid in dict.fromkeys(task.sessions) if owner[sid] == i and sid in usage]
        holdings.append(_holding(task.kind, task.name, task.path, mine, usage, journal, task.began))
    others = [sid for sid in usage if sid not in owner]
    if others:
        holdings.append(_holding("other", "other", None, others, usage, journal, None))
    size = await asyncio.to_thread(sessions.raw.size_on_disk)
    return Survey(holdings, size)


def _holding(kind: Literal["current", "archive", "other"], name: str, path: Path | None, sids: Sequence[str],
             usage: dict[str, Any], journal: Journal, began: float | None) -> Holding:
    written = [usage[s].mtime / 1000 for s in sids]
    return Holding(kind, name, str(path) if path is not None else None, tuple(sids), sum(usage[s].entries for s in sids),
                   sum(usage[s].bytes for s in sids) + sum(_size(journal.path(s)) for s in sids),
                   max(written) if written else began)


def _size(path: Path) -> int:
    try:
        return path.stat().st_size
    except OSError:
        return 0


async def collect(workspace: Path, run_dir: Path, sessions: Sessions, chosen: Sequence[Holding]) -> Freed:
    """Delete the chosen archives' sessions and their journals, then give the space back to the disk.

    The current task is read again first: a session it names now is kept whatever `chosen` says.
    """
    if any(h.kind != "archive" for h in chosen):
        raise ValueError("only archived tasks are collected")
    current = (await asyncio.to_thread(_tasks, workspace, run_dir, sessions.records))[0]
    keep = set(current.sessions)
    gone = [sid for h in chosen for sid in h.sessions if sid not in keep]
    entries = sum(h.entries for h in chosen)
    held = sum(h.bytes for h in chosen)
    before = await asyncio.to_thread(sessions.raw.size_on_disk)
    if gone:
        await sessions.raw.delete_sessions(project_key(workspace), gone)
        await sessions.raw.reclaim()
        journal = Journal(run_dir)
        for sid in gone:
            try:
                journal.remove(sid)
            except OSError as exc:  # the store is collected; a journal left behind is only bytes
                log.warning("could not remove the journal of %s (%s)", sid, exc)
    after = await asyncio.to_thread(sessions.raw.size_on_disk)
    log.info("collected %d sessions (%d entries) of %d archives: %d -> %d bytes on disk", len(gone), entries, len(chosen),
             before, after)
    return Freed(len(gone), entries, held, before, after)
