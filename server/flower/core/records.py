"""A task's records — lineage, manifest rows, one-writer lock, wake mark — in run_dir's files, or in a shared store (D9).

One `Records` object per task is opened with its session store (`runtime.Sessions.open`) and passed down to
`Lineage`, `Manifest`, `WorkspaceLock`, status and History. `FileRecords` (here) keeps them in run_dir's files;
`stores/shared.py` keeps them in PostgreSQL. Every "files or database" difference lives in those two classes,
so the workflow code never asks which one it has.
"""

from __future__ import annotations

import json
import logging
import os
import time
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypedDict

from .durable import move_aside, write_atomic
from .lock import LOCK_FILE, WAKE_FILE, FileLock, TaskLock, exclusive, held
from .manifest_file import ManifestFile

log = logging.getLogger(__name__)

CLARIFY, GOALS, WORK = "澄清", "目标", "干活"
"""The flower path's steps, as the lineage names them (workflow/flower.py)."""

LINEAGE_FILE = "lineage.json"
MANIFEST_FILE = "manifest.json"
SENTENCES_FILE = "sentences.json"
"""`<run_dir>/sentences.json`: the sentences said at wake not yet in all three places (core/sentences.py, issue 31)."""
LOCK_TIMEOUT_S = 10.0
"""How long a manifest write waits for another process's read-modify-replace (a stopped holder cannot hang a run)."""


class LineageData(TypedDict):
    """The S5 shape of a stored lineage."""

    workspace: str
    woke: int
    steps: dict[str, str]


@dataclass(frozen=True)
class Damaged:
    """A stored lineage that cannot be read as one: rebuilt from the manifest, and kept aside by the first write (issue 31)."""

    stat: os.stat_result | None = None
    """The damaged file as it was read: only that file is moved aside, never one another process wrote since."""


class Records(Protocol):
    """A task's records, wherever they are kept; every method may raise when the place cannot be read or written."""

    where: str
    """Where they are, as messages show it (no password)."""

    def load_lineage(self, workspace: str) -> LineageData | Damaged | None:
        """The stored lineage of `workspace` (S5 shape), None (nothing stored, or not that workspace's, S12), or Damaged.

        Reading never moves, creates or rewrites anything: a read-only command reads too.
        """

    def save_lineage(self, data: LineageData) -> None:
        """Write the lineage durably before returning (S11); raises on failure."""

    def set_aside(self, damaged: Damaged) -> bool:
        """Keep a damaged lineage aside before a rebuilt one is written; False if it still sits where the write would go."""

    def pending_sentences(self) -> list[dict[str, Any]]:
        """The sentences said at wake not yet in all three places (core/sentences.py); raises when they cannot be read."""

    def save_pending_sentences(self, rows: list[dict[str, Any]]) -> None:
        """Replace them durably before returning ([] = none pending); raises on failure."""

    def archive_lineage(self, into: Path, data: LineageData) -> None:
        """Keep the lineage in the archive directory `into` (S28): run_dir's lineage.json was moved there already."""

    def manifest_rows(self) -> list[dict[str, Any]]:
        """Every manifest row of the task, all writers, in the order their writers first wrote (S8)."""

    def save_manifest(self, run: str, rows: list[dict[str, Any]], changed: Sequence[int] | None = None) -> None:
        """Make writer `run`'s rows `rows`, keeping every other writer's (S8); raises on failure.

        `changed`: the indexes of `rows` written or changed since this writer's last save that succeeded (None: all),
        so that a save costs those rows, not the task's (issue 35).
        """

    def lock(self) -> TaskLock:
        """A new one-writer lock of the task (D5), not taken yet."""

    def mark_wake(self, on: bool) -> None:
        """Record that a wake is under way (on) or ended (off); raises on failure."""

    def wake_mark(self) -> tuple[bool, bool]:
        """(a wake's mark is left, a live flower holds the lock); raises on failure."""

    def stamp(self) -> Hashable:
        """A value that changes whenever the lineage, the manifest or the wake mark changes (cheap: a status asks often)."""


def parse_lineage(raw: bytes) -> LineageData | None:
    """The lineage if `raw` is JSON of exactly the S5 shape, else None."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return lineage_of(data)


def lineage_of(data: object) -> LineageData | None:
    """`data` as a lineage if it has exactly the S5 shape, else None."""
    if not isinstance(data, dict):
        return None
    workspace, woke, steps = data.get("workspace"), data.get("woke"), data.get("steps")
    if not isinstance(workspace, str) or not os.path.isabs(workspace):
        return None
    if not isinstance(woke, int) or isinstance(woke, bool) or woke < 0:
        return None
    if not isinstance(steps, dict) or not all(isinstance(k, str) and isinstance(v, str) and v
                                              for k, v in steps.items()):
        return None
    return {"workspace": workspace, "woke": woke, "steps": dict(steps)}


def lineage_json(data: LineageData) -> bytes:
    """The lineage as lineage.json holds it."""
    return (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode()


class FileRecords:
    """The records in `<run_dir>/`: lineage.json, manifest.json (+ its .lock), flower.lock, wake.json (the default)."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.run_dir = Path(os.path.abspath(run_dir))
        self.where = str(self.run_dir)
        self._manifest = ManifestFile(self.run_dir / MANIFEST_FILE)
        """manifest.json and what this object has read of it (a status reads only what was appended since)."""

    @property
    def lineage_path(self) -> Path:
        """`<run_dir>/lineage.json`."""
        return self.run_dir / LINEAGE_FILE

    @property
    def manifest_path(self) -> Path:
        """`<run_dir>/manifest.json`."""
        return self.run_dir / MANIFEST_FILE

    def load_lineage(self, workspace: str) -> LineageData | Damaged | None:
        """lineage.json; a corrupt one is Damaged (left where it is: only a write moves it), one of another
        workspace path is left as it is (S12)."""
        path = self.lineage_path
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                raw = f.read()
        except FileNotFoundError:
            return None
        except OSError as e:
            log.warning("cannot read %s (%s); starting fresh", path, e)
            return None
        data = parse_lineage(raw)
        if data is None:
            log.info("%s is not a valid lineage; rebuilding it from the manifest", path)
            return Damaged(st)
        if os.path.normpath(data["workspace"]) != workspace:
            log.info("lineage in %s belongs to %s, not %s; starting fresh", path, data["workspace"], workspace)
            return None
        return data

    def save_lineage(self, data: LineageData) -> None:
        """Atomically (temp + fsync + replace): a crash leaves the old file or the new one (S11)."""
        write_atomic(self.lineage_path, lineage_json(data))

    def set_aside(self, damaged: Damaged) -> bool:
        """Move the damaged lineage.json to `lineage.json.corrupt-<ts>` (never overwriting one kept before)."""
        path = self.lineage_path
        if move_aside(path, expect=damaged.stat) is not None:
            return True
        try:  # not moved: fine only if that file is gone or was replaced by another writer meanwhile
            now = os.stat(path)
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return damaged.stat is not None and (now.st_dev, now.st_ino) != (damaged.stat.st_dev, damaged.stat.st_ino)

    def archive_lineage(self, into: Path, data: LineageData) -> None:
        """Nothing: lineage.json itself went into the archive."""

    @property
    def sentences_path(self) -> Path:
        """`<run_dir>/sentences.json`."""
        return self.run_dir / SENTENCES_FILE

    def pending_sentences(self) -> list[dict[str, Any]]:
        """sentences.json's rows; [] when it is missing; a corrupt one is kept aside (logged) and counts as empty."""
        path = self.sentences_path
        read = _read_rows(path)
        if read is None:
            return []
        rows, st = read
        if rows is None:
            log.warning("%s is not a list of sentences; keeping it aside", path)
            move_aside(path, expect=st)
            return []
        return [r for r in rows if isinstance(r, dict)]

    def save_pending_sentences(self, rows: list[dict[str, Any]]) -> None:
        """Written atomically; removed when none is pending."""
        if rows:
            write_atomic(self.sentences_path, (json.dumps(rows, ensure_ascii=False, indent=1) + "\n").encode())
        else:
            self.sentences_path.unlink(missing_ok=True)

    def manifest_rows(self) -> list[dict[str, Any]]:
        """The rows of manifest.json, read from where the last read stopped; [] when it is missing or not a manifest (logged)."""
        return [r for r in self._manifest.rows() if isinstance(r, dict)]

    def save_manifest(self, run: str, rows: list[dict[str, Any]], changed: Sequence[int] | None = None) -> None:
        """Append the changed rows of `run` to manifest.json under an exclusive lock on its sidecar, one fsync (S8, issue 35)."""
        chosen = range(len(rows)) if changed is None else changed
        if not chosen:
            return
        os.makedirs(self.run_dir, exist_ok=True)
        with exclusive(self.run_dir / (MANIFEST_FILE + ".lock"), LOCK_TIMEOUT_S):
            self._manifest.append(run, [(i, rows[i]) for i in chosen])

    def lock(self) -> FileLock:
        """`<run_dir>/flower.lock`, an flock (dies with its holder)."""
        return FileLock(self.run_dir)

    def mark_wake(self, on: bool) -> None:
        """wake.json written atomically (whole or absent after a crash), or removed."""
        path = self.run_dir / WAKE_FILE
        if on:
            write_atomic(path, json.dumps({"pid": os.getpid(), "started_at": time.time()}).encode())
        else:
            path.unlink(missing_ok=True)

    def wake_mark(self) -> tuple[bool, bool]:
        """From files only, so it survives any crash: the flock dies with its holder (kill -9, a crashed server, a reload)."""
        if not (self.run_dir / WAKE_FILE).exists():
            return False, False  # no probe of the lock needed
        return True, held(self.run_dir)

    def stamp(self) -> Hashable:
        """The files' inode, size and mtime, and the wake mark (a holder's death changes no file)."""
        return (*(_file_stamp(self.run_dir / name) for name in (LINEAGE_FILE, MANIFEST_FILE)), self.wake_mark())


def records_of(target: Records | str | os.PathLike[str]) -> Records:
    """`target` if it is a task's records, else the files of run_dir `target`."""
    return FileRecords(target) if isinstance(target, (str, os.PathLike)) else target


def mark_wake(target: Records | str | os.PathLike[str]) -> None:
    """Record, under the workspace lock, that a wake is under way (removed when it ends; left behind if it is cut off)."""
    records_of(target).mark_wake(True)


def clear_wake(target: Records | str | os.PathLike[str]) -> None:
    """The wake ended (finished, failed, or stopped by the person): nothing was cut off."""
    records = records_of(target)
    try:
        records.mark_wake(False)
    except Exception as e:  # the mark stays: the next status calls the wake cut off, which loses nothing
        log.warning("could not clear the wake mark in %s (%s)", records.where, e)


def wake_mark(target: Records | str | os.PathLike[str]) -> tuple[bool, bool]:
    """(a wake's mark is left, a live process holds the lock): marked and unheld = cut off; marked and held = under way.

    (False, False) while the records cannot be read: the wake's own message says why, a status shows none.
    """
    try:
        return records_of(target).wake_mark()
    except Exception:
        return False, False


def interrupted(target: Records | str | os.PathLike[str]) -> bool:
    """A wake here was cut off and nothing has continued or finished it: its mark is left and no live process holds the lock."""
    marked, holder = wake_mark(target)
    return marked and not holder


def _file_stamp(path: Path) -> tuple[int, int, int] | None:
    try:
        st = path.stat()
    except OSError:
        return None
    return st.st_ino, st.st_size, st.st_mtime_ns


def _read_rows(path: Path) -> tuple[list[Any] | None, os.stat_result] | None:
    """A JSON list file's rows (None: not a list) with the stat of what was read, for a move aside; None when missing."""
    try:
        with open(path, "rb") as f:
            st = os.fstat(f.fileno())
            raw = f.read()
    except FileNotFoundError:
        return None
    return _parse_rows(raw), st


def _parse_rows(raw: bytes) -> list[Any] | None:
    """The list a JSON list file holds (sentences.json), or None if `raw` is not one."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
    return data if isinstance(data, list) else None


__all__ = ["LINEAGE_FILE", "LOCK_FILE", "MANIFEST_FILE", "SENTENCES_FILE", "Damaged", "FileRecords", "LineageData", "Records", "clear_wake",
           "interrupted", "lineage_of", "mark_wake", "parse_lineage", "records_of", "wake_mark"]
