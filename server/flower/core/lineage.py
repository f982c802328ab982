"""The lineage: which workflow step used which agent session, persisted the moment it is known.

`<run_dir>/lineage.json` = `{"workspace": "<abs path>", "woke": N, "steps": {"<step>": "<sid>"}}` (S5).
It is the one mapping that used to live only in memory; everything else needed to resume
(sessions.db, 需求.md, 目标.md, the code) is on disk already.

Two invariants shape this module:
- S11 write at once: `record()` writes before returning, atomically (temp + fsync + replace),
  and a failing disk never raises into the run.
- S12 mismatch means absent, silently: a missing or foreign (other workspace path) file, or a
  session gone from sessions.db, all load as "start fresh".
A corrupt file is no reason to lose the task while the manifest and sessions.db still name and hold every
session (issue 31): it is rebuilt from the manifest's rows, silently, and kept aside by the first write —
never by a read, so a read-only command (`flower status`) changes no file.
"""

from __future__ import annotations

import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterable
from pathlib import Path

from flower.core.durable import free_name, stamp
from flower.core.lock import WorkspaceBusy
from flower.core.manifest import ManifestRow, parse_name, step_of
from flower.core.records import LINEAGE_FILE, Damaged, FileRecords, LineageData, Records

log = logging.getLogger(__name__)


class Lineage:
    """The step → session mapping of one workspace and run_dir, plus the wake count."""

    def __init__(self, run_dir: str | os.PathLike[str], workspace: str | os.PathLike[str], woke: int = 0,
                 steps: dict[str, str] | None = None, *, persist: bool = True, records: Records | None = None) -> None:
        self.run_dir = Path(os.path.abspath(run_dir))
        self.workspace = os.path.abspath(workspace)
        self.woke = woke
        self.steps: dict[str, str] = dict(steps or {})
        self.lost: dict[str, str] = {}
        """Steps whose session the file named but the store no longer holds (S10), until the step records a new one:
        what the journal saw of them is told to the step's fresh session (issue #22)."""
        self.replacing: set[str] = set()
        """Steps whose session a successor replaces (a handoff, S26): dropped from `steps` in memory only, the file keeps
        the old one until the successor's id is recorded, so a wake cut off in between seeds the successor again."""
        self._lock = threading.Lock()
        self._dirty = True  # nothing of this object is known to be on disk yet
        self.persist = persist
        """False keeps the lineage in memory only (`continuous=False` must not disturb the file, S29)."""
        self.records: Records = records if records is not None else FileRecords(self.run_dir)
        """Where the lineage is kept: run_dir's lineage.json, or the task's shared store (D9)."""
        self.damaged: Damaged | None = None
        """The stored lineage this one was rebuilt from, until the first write keeps it aside (issue 31)."""

    @property
    def path(self) -> Path:
        """`<run_dir>/lineage.json`."""
        return self.run_dir / LINEAGE_FILE

    @classmethod
    def load(cls, run_dir: str | os.PathLike[str], workspace: str | os.PathLike[str],
             has_session: Callable[[str], bool] | None = None, *, records: Records | None = None) -> Lineage:
        """The stored lineage if it is valid and belongs to `workspace`, else a fresh one (S12).

        A corrupt file is rebuilt from the manifest (`rebuilt`) and left where it is: the first write keeps it aside
        (`lineage.json.corrupt-<ts>`), so loading changes no file (issue 31). A file written for another
        workspace path is left as it is (it belongs to that path). `has_session(sid)` keeps only
        the steps whose session is still in sessions.db (S10). Never raises for file problems; a shared
        store that does not answer raises (starting fresh would overwrite the team's lineage, D9).
        """
        fresh = cls(run_dir, workspace, records=records)
        data = fresh.records.load_lineage(fresh.workspace)
        if data is None:
            return fresh
        if isinstance(data, Damaged):
            lineage = rebuilt(fresh, has_session)
            lineage.damaged = data
            return lineage
        steps = data["steps"]
        if has_session is not None:
            steps = {step: sid for step, sid in steps.items() if _alive(has_session, step, sid)}
        lineage = cls(run_dir, workspace, woke=data["woke"], steps=steps, records=fresh.records)
        lineage.lost = {step: sid for step, sid in data["steps"].items() if step not in steps}
        lineage._dirty = steps != data["steps"]
        return lineage

    def record(self, step: str, session_id: str) -> None:
        """Map `step` to `session_id` and write to disk before returning (S11); never raises."""
        with self._lock:
            if self.steps.get(step) == session_id and not self._dirty and self.damaged is None:
                return  # already on disk: the runtime reports the same id on every message
            self.steps[step] = session_id
            self.lost.pop(step, None)
            self.replacing.discard(step)
            self._dirty = True
            self._save_locked()

    def hand_over(self, step: str) -> None:
        """The step's next run starts a successor session (S26); lineage.json names the old one until it is recorded."""
        with self._lock:
            self.steps.pop(step, None)
            self.replacing.add(step)

    def wake(self) -> int:
        """Count one more wake, write it, and return the new count."""
        with self._lock:
            self.woke += 1
            self._dirty = True
            self._save_locked()
            return self.woke

    def save(self) -> bool:
        """Write the lineage atomically; False (logged, never raised) if the disk refused (S11)."""
        with self._lock:
            return self._save_locked()

    def _save_locked(self) -> bool:
        if not self.persist:
            return True
        try:
            if self.damaged is not None:  # kept, never overwritten: the rebuilt lineage goes beside it
                if not self.records.set_aside(self.damaged):
                    log.warning("could not keep the damaged lineage in %s aside; not overwriting it", self.records.where)
                    return False
                self.damaged = None
            self.records.save_lineage(self._as_dict_locked())
        except WorkspaceBusy:  # a shared lock went to another flower in a database outage: that one drives now (D5)
            raise
        except Exception as e:
            log.warning("could not write the lineage to %s (%s); continuing without it", self.records.where, e)
            return False
        self._dirty = False
        return True

    def archive(self, into: str | os.PathLike[str], extra: Iterable[str | os.PathLike[str]] = ()) -> Path:
        """Move lineage.json and the existing `extra` files together into `<into>/<YYYYmmdd-HHMMSS>/` (S28).

        Then `steps` and `woke` start over. Archive, never delete: sessions.db is not touched.
        The files go together or not at all: if one cannot be moved, those already moved are
        put back (best effort) and the OSError is raised, leaving the lineage as it was.
        Returns the archive directory.
        """
        with self._lock:
            sources = [self.path, *(Path(p) for p in extra)]
            sources = [p for p in dict.fromkeys(Path(os.path.abspath(p)) for p in sources) if p.exists()]
            dest = _new_dir(Path(into), stamp())
            moved: list[tuple[Path, Path]] = []
            try:
                for src in sources:
                    target = free_name(dest, src.name)
                    shutil.move(str(src), str(target))
                    moved.append((src, target))
            except OSError:
                for src, target in reversed(moved):
                    try:
                        shutil.move(str(target), str(src))
                    except OSError as e:
                        log.warning("could not put %s back to %s: %s", target, src, e)
                raise
            self.records.archive_lineage(dest, self._as_dict_locked())  # a shared one is archived beside the files (S28)
            self.damaged = None  # a damaged lineage.json went into the archive as it was
            self.steps.clear()
            self.lost.clear()
            self.woke = 0
            self._dirty = True  # the fresh state is written by the next record()/wake()
            log.info("archived %s into %s", ", ".join(p.name for p in sources) or "nothing", dest)
            return dest

    def as_dict(self) -> LineageData:
        """The S5 shape: `{"workspace", "woke", "steps"}` (a copy)."""
        with self._lock:
            return self._as_dict_locked()

    def _as_dict_locked(self) -> LineageData:
        return {"workspace": self.workspace, "woke": self.woke, "steps": dict(self.steps)}

    def __repr__(self) -> str:
        return f"Lineage(workspace={self.workspace!r}, woke={self.woke}, steps={self.steps!r})"


def rebuilt(fresh: Lineage, has_session: Callable[[str], bool] | None) -> Lineage:
    """The lineage as the manifest's rows of the current task tell it, for a stored one that cannot be read (issue 31).

    Each step's session is the newest one its rows name (`<step>`, `#retry<N>`, `#round<N>`; never a judge's round,
    S14, nor a handoff's note) that no later handoff retired (S26) and that the store still holds (S10); a step whose
    named sessions are all gone is `lost`, so its fresh session hears what the journal saw. `woke` is the number of
    wakes that wrote rows (one run mark each, S6): a wake cut off before its first row ended is not counted, so the
    count can come out lower than it was, never higher. A manifest that cannot be read rebuilds nothing (S12).
    """
    try:
        parsed = [r for r in map(ManifestRow.of, fresh.records.manifest_rows()) if r is not None]
    except Exception as e:  # noqa: BLE001 - continuity is a bonus: start fresh
        log.warning("could not read the manifest in %s (%s); starting fresh", fresh.records.where, e)
        return fresh
    began = task_began(fresh.workspace)
    rows = sorted((r for r in parsed if r.started_at >= began), key=lambda r: r.started_at, reverse=True)
    retired = {sid for r in rows for sid in r.retired}
    steps: dict[str, str] = {}
    lost: dict[str, str] = {}
    for row in rows:  # newest first
        if row.session_id is None or parse_name(row.step)[1] in ("judge", "handoff") or row.session_id in retired:
            continue
        step = step_of(row.step)
        if step in steps:
            continue
        if has_session is None or _alive(has_session, step, row.session_id):
            steps[step] = row.session_id
            lost.pop(step, None)
        else:
            lost.setdefault(step, row.session_id)
    lineage = Lineage(fresh.run_dir, fresh.workspace, woke=len({r.run for r in rows if r.run}), steps=steps,
                      records=fresh.records)
    lineage.lost = lost
    log.info("rebuilt the lineage of %s from the manifest: wake %d, %s", fresh.workspace, lineage.woke, steps or "no steps")
    return lineage


def task_began(workspace: str | os.PathLike[str]) -> float:
    """When the current task began: the newest archive of `flower --new` (S28), else 0; rows before it were another task's."""
    archive = Path(workspace) / "notes" / "archive"
    try:
        return max((d.stat().st_mtime for d in archive.iterdir() if d.is_dir()), default=0.0)
    except OSError:
        return 0.0


def _alive(has_session: Callable[[str], bool], step: str, sid: str) -> bool:
    """has_session(sid), with a failing check counted as "gone" (S12: never stop the person)."""
    try:
        return bool(has_session(sid))
    except Exception as e:  # noqa: BLE001 - continuity is a bonus, its failure must not propagate
        log.warning("could not check session %s of step %s (%s); not resuming it", sid, step, e)
        return False


def _new_dir(parent: Path, name: str) -> Path:
    """Create and return `parent/name`, or `parent/name-1`, `-2`, … if taken."""
    parent.mkdir(parents=True, exist_ok=True)
    for n in range(1000):
        d = parent / (name if n == 0 else f"{name}-{n}")
        try:
            d.mkdir()
            return d
        except FileExistsError:
            continue
    raise FileExistsError(f"no free archive directory for {name} in {parent}")
