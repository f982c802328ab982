"""The lineage: which workflow step used which agent session, persisted the moment it is known.

`<run_dir>/lineage.json` = `{"workspace": "<abs path>", "woke": N, "steps": {"<step>": "<sid>"}}` (S5).
It is the one mapping that used to live only in memory; everything else needed to resume
(sessions.db, 需求.md, 目标.md, the code) is on disk already.

Two invariants shape this module:
- S11 write at once: `record()` writes before returning, atomically (temp + fsync + replace),
  and a failing disk never raises into the run.
- S12 mismatch means absent, silently: a missing, corrupt or foreign (other workspace path)
  file, or a session gone from sessions.db, all load as "start fresh".
"""

from __future__ import annotations

import json
import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

from flower.core import shared
from flower.core.durable import move_aside, stamp, write_atomic
from flower.core.lock import WorkspaceBusy

log = logging.getLogger(__name__)

LINEAGE_FILE = "lineage.json"


class Lineage:
    """The step → session mapping of one workspace and run_dir, plus the wake count."""

    def __init__(self, run_dir: str | os.PathLike[str], workspace: str | os.PathLike[str], woke: int = 0,
                 steps: dict[str, str] | None = None, *, persist: bool = True) -> None:
        self.run_dir = Path(os.path.abspath(run_dir))
        self.workspace = os.path.abspath(workspace)
        self.woke = woke
        self.steps: dict[str, str] = dict(steps or {})
        self.lost: dict[str, str] = {}
        """Steps whose session the file named but the store no longer holds (S10), until the step records a new one:
        what the journal saw of them is told to the step's fresh session (issue #22)."""
        self._lock = threading.Lock()
        self._dirty = True  # nothing of this object is known to be on disk yet
        self.persist = persist
        """False keeps the lineage in memory only (`continuous=False` must not disturb the file, S29)."""
        self.backend = shared.of(self.run_dir)
        """The shared store holding this task's lineage instead of lineage.json (D9), or None."""

    @property
    def path(self) -> Path:
        """`<run_dir>/lineage.json`."""
        return self.run_dir / LINEAGE_FILE

    @classmethod
    def load(cls, run_dir: str | os.PathLike[str], workspace: str | os.PathLike[str],
             has_session: Callable[[str], bool] | None = None) -> Lineage:
        """The stored lineage if it is valid and belongs to `workspace`, else a fresh one (S12).

        A corrupt file is moved aside (`lineage.json.corrupt-<ts>`); a file written for another
        workspace path is left as it is (it belongs to that path). `has_session(sid)` keeps only
        the steps whose session is still in sessions.db (S10). Never raises for file problems.
        """
        fresh = cls(run_dir, workspace)
        if fresh.backend is not None:
            return cls._load_shared(fresh, fresh.backend, has_session)
        path = fresh.path
        try:
            with open(path, "rb") as f:
                st = os.fstat(f.fileno())
                raw = f.read()
        except FileNotFoundError:
            return fresh
        except OSError as e:
            log.warning("cannot read %s (%s); starting fresh", path, e)
            return fresh
        data = _parse(raw)
        if data is None:
            log.warning("%s is not a valid lineage; starting fresh", path)
            move_aside(path, expect=st)
            return fresh
        if os.path.normpath(data["workspace"]) != fresh.workspace:
            log.info("lineage in %s belongs to %s, not %s; starting fresh",
                     path, data["workspace"], fresh.workspace)
            return fresh
        return cls._alive_only(run_dir, workspace, data, has_session)

    @classmethod
    def _load_shared(cls, fresh: Lineage, backend: shared.Shared, has_session: Callable[[str], bool] | None) -> Lineage:
        """The lineage the shared store holds for the workspace identity, whichever path wrote it (D9).

        A database that does not answer raises: starting fresh would overwrite the team's lineage.
        """
        stored = backend.load_lineage()
        data = _parse(json.dumps(stored).encode()) if stored is not None else None
        if data is None:
            return fresh
        try:
            local = _parse(fresh.path.read_bytes())
        except OSError:
            local = None
        if local is not None and (local["woke"], local["steps"]) != (data["woke"], data["steps"]):
            log.warning("following the lineage of %s in %s (wake %d), not the older %s here (wake %d)",
                        backend.identity, backend.where, data["woke"], fresh.path, local["woke"])
        return cls._alive_only(fresh.run_dir, fresh.workspace, data, has_session)

    @classmethod
    def _alive_only(cls, run_dir: str | os.PathLike[str], workspace: str | os.PathLike[str], data: dict[str, Any],
                    has_session: Callable[[str], bool] | None) -> Lineage:
        """The lineage of `data` with only the steps whose session the store holds (S10); the others are `lost`."""
        steps = data["steps"]
        if has_session is not None:
            steps = {step: sid for step, sid in steps.items() if _alive(has_session, step, sid)}
        lineage = cls(run_dir, workspace, woke=data["woke"], steps=steps)
        lineage.lost = {step: sid for step, sid in data["steps"].items() if step not in steps}
        lineage._dirty = steps != data["steps"]
        return lineage

    def record(self, step: str, session_id: str) -> None:
        """Map `step` to `session_id` and write to disk before returning (S11); never raises."""
        with self._lock:
            if self.steps.get(step) == session_id and not self._dirty:
                return  # already on disk: the runtime reports the same id on every message
            self.steps[step] = session_id
            self.lost.pop(step, None)
            self._dirty = True
            self._save_locked()

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
        if self.backend is not None:  # D9: one transaction in the shared store, still before returning (S11)
            try:
                self.backend.save_lineage(self._as_dict_locked())
            except WorkspaceBusy:  # the lock went to another flower in a database outage: that one drives now (D5)
                raise
            except Exception as e:
                log.warning("could not write the lineage to %s (%s); continuing without it", self.backend.where, e)
                return False
            self._dirty = False
            return True
        data = (json.dumps(self._as_dict_locked(), ensure_ascii=False, indent=2) + "\n").encode()
        try:
            write_atomic(self.path, data)
        except OSError as e:
            log.warning("could not write %s (%s); continuing without it", self.path, e)
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
                    target = _free_name(dest, src.name)
                    shutil.move(str(src), str(target))
                    moved.append((src, target))
            except OSError:
                for src, target in reversed(moved):
                    try:
                        shutil.move(str(target), str(src))
                    except OSError as e:
                        log.warning("could not put %s back to %s: %s", target, src, e)
                raise
            if self.backend is not None:  # the shared lineage is archived beside the files (S28)
                write_atomic(_free_name(dest, LINEAGE_FILE), (json.dumps(self._as_dict_locked(), ensure_ascii=False, indent=2) + "\n").encode())
            self.steps.clear()
            self.lost.clear()
            self.woke = 0
            self._dirty = True  # the fresh state is written by the next record()/wake()
            log.info("archived %s into %s", ", ".join(p.name for p in sources) or "nothing", dest)
            return dest

    def as_dict(self) -> dict[str, Any]:
        """The S5 shape: `{"workspace", "woke", "steps"}` (a copy)."""
        with self._lock:
            return self._as_dict_locked()

    def _as_dict_locked(self) -> dict[str, Any]:
        return {"workspace": self.workspace, "woke": self.woke, "steps": dict(self.steps)}

    def __repr__(self) -> str:
        return f"Lineage(workspace={self.workspace!r}, woke={self.woke}, steps={self.steps!r})"


def _parse(raw: bytes) -> dict[str, Any] | None:
    """The lineage dict if `raw` has exactly the S5 shape, else None."""
    try:
        data = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return None
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
    return {"workspace": workspace, "woke": woke, "steps": steps}


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


def _free_name(directory: Path, name: str) -> Path:
    """`directory/name`, or `directory/<stem>-N<suffix>` when two archived files share a name."""
    target = directory / name
    n = 1
    while target.exists():
        p = Path(name)
        target = directory / f"{p.stem}-{n}{p.suffix}"
        n += 1
    return target
