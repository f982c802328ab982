"""The task's files travel with the task: `需求.md`, `目标.md` and the handoff notes beside the lineage (D9, issue #22).

With a shared store, the requirements, the goal checklist and the handoff notes are the task's memory as much as its
transcripts. `sync` reconciles a workspace's copies with the store's: at the start of a wake it restores what the
workspace lacks (`restore=True`); at step ends and at the end of a wake it picks up what flower or the agent wrote.

The store keeps, per file, its newest body and, per place (host + workspace path), the hash last seen there. So a
difference is read the right way round: a local copy equal to what was last seen here is stale (the store's is newer);
a store copy equal to it means the local one is newer; both changed since is a conflict, won by the later write (the
local file's mtime against the store's record), the other kept beside it as `<name>.theirs` — never overwritten
silently: each restore, update and conflict is one line.
"""

from __future__ import annotations

import logging
import os
import socket
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, runtime_checkable

from .durable import write_atomic
from .goals import GOALS_FILE
from .requirements import REQUIREMENTS_FILE
from .texts import Said, say

log = logging.getLogger(__name__)

ARCHIVE = "notes/archive/"
"""Names under it are archived tasks' files (`flower --new`): kept in the store, never restored."""


@dataclass(frozen=True)
class Stored:
    """One task file as the store holds it, and the hash last seen at this place (None: never seen here)."""

    body: bytes
    sha: str
    host: str
    updated_at: float
    seen: str | None


@runtime_checkable
class TaskFiles(Protocol):
    """The store's side (stores/shared.py): the task's files and what each place last saw of them.

    Only a shared store's records have it: run_dir's files need no copy of the workspace's own files."""

    def task_files(self, place: str) -> dict[str, Stored]:
        """Every stored file of the task (archived ones included), with `place`'s last-seen hashes."""

    def save_task_files(self, place: str, bodies: dict[str, bytes], seen: dict[str, str]) -> None:
        """Store `bodies` (newest copies) and record `seen` (name → hash now at `place`), in one transaction."""

    def archive_task_files(self, names: list[str], into: str) -> None:
        """Move the stored `names` under `into` (`notes/archive/<stamp>/`): `flower --new` (S28)."""


def sha(body: bytes) -> str:
    """The hash a file is compared by."""
    import hashlib  # here, not at import: the light commands never need it (issue 34)

    return hashlib.sha256(body).hexdigest()


def place_of(workspace: str | os.PathLike[str]) -> str:
    """This machine's copy of the task: host and workspace path."""
    return f"{socket.gethostname()}:{os.path.abspath(workspace)}"


def names_in(workspace: Path) -> set[str]:
    """The task files a workspace has: `需求.md`, `目标.md`, `notes/handoff-*.md`."""
    notes = workspace / "notes"
    found = {f"notes/{p.name}" for p in notes.glob("handoff-*.md")} if notes.is_dir() else set()
    return found | {name for name in (REQUIREMENTS_FILE, GOALS_FILE) if (workspace / name).is_file()}


def sync(store: TaskFiles, workspace: str | os.PathLike[str], *, restore: bool) -> list[Said]:
    """Reconcile the workspace's task files with the store's; returns the lines to say (restored, updated, conflicts)."""
    workspace = Path(os.path.abspath(workspace))
    place = place_of(workspace)
    stored = store.task_files(place)
    bodies: dict[str, bytes] = {}
    seen: dict[str, str] = {}
    said: list[Said] = []
    for name in sorted(names_in(workspace) | {n for n in stored if not n.startswith(ARCHIVE)}):
        path = workspace / name
        try:
            local: bytes | None = path.read_bytes()
        except FileNotFoundError:
            local = None
        except OSError as e:  # unreadable here: left as it is (the wake's own check keeps it aside)
            log.warning("task file %s not synced (%s)", path, e)
            continue
        row = stored.get(name)
        if row is None:
            if local is not None:
                bodies[name], seen[name] = local, sha(local)
            continue
        if local is None:
            if restore:  # a machine whose workspace lacks it: the store's copy, one line
                _write(path, row.body)
                seen[name] = row.sha
                said.append(say("task_file_restored", file=name, host=row.host))
            continue
        here = sha(local)
        if here == row.sha:
            if row.seen != here:
                seen[name] = here
        elif here == row.seen:  # unchanged here since last seen: the store's is newer
            if restore:
                kept = _beside(path, local)
                _write(path, row.body)
                seen[name] = row.sha
                said.append(say("task_file_updated", file=name, host=row.host, kept=kept.name))
        elif row.seen == row.sha:  # unchanged in the store since this place saw it: the local one is newer
            bodies[name], seen[name] = local, here
        else:  # both changed since: the later write wins, the other is kept beside it
            if path.stat().st_mtime >= row.updated_at:
                kept = _beside(path, row.body)
                bodies[name], seen[name] = local, here
                said.append(say("task_file_conflict_local", file=name, kept=kept.name, host=row.host))
            else:
                kept = _beside(path, local)
                _write(path, row.body)
                seen[name] = row.sha
                said.append(say("task_file_conflict_store", file=name, kept=kept.name, host=row.host))
    if bodies or seen:
        store.save_task_files(place, bodies, seen)
    return said


def archive(store: TaskFiles, into: str) -> None:
    """`flower --new`: the stored `需求.md` and `目标.md` move under `into` (`notes/archive/<stamp>/`), as the local ones
    did (S28); handoff notes stay where they are, here as there."""
    stored = store.task_files("")
    names = [n for n in (REQUIREMENTS_FILE, GOALS_FILE) if n in stored]
    if names:
        store.archive_task_files(names, into.rstrip("/") + "/")


def _write(path: Path, body: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(path, body)


def _beside(path: Path, body: bytes) -> Path:
    """Keep `body` beside `path` as `<name>.theirs` (`.theirs-N` when taken): never overwrites."""
    for n in range(1000):
        kept = path.with_name(f"{path.name}.theirs" + (f"-{n}" if n else ""))
        try:
            with open(kept, "xb") as f:
                f.write(body)
            return kept
        except FileExistsError:
            continue
    raise FileExistsError(f"no free name beside {path}")
