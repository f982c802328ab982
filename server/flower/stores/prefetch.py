"""A resume's transcript pruned and written by a worker process while the `flower` command imports the SDK (S23, D2).

A wake from the command line spends its first half second or more importing the SDK (its `mcp` and pydantic), on
one core, before it reaches the resume; loading, pruning and writing a 20k-entry session takes as long again
(benchmarks/wake.py). So the command starts this worker first, on the work session lineage.json names: it reads the
session from sessions.db read-only, in one read transaction, prunes it as the wake's view will, and writes the
JSONL and the spill files it points at (S26: written whole, idempotent). The resume adopts the file
(stores/resume.py) only if the session is still what the worker read once the wake holds the lock and has swept
and reconciled (the same newest seq and entry count: sessions.db only ever appends, and a seq is never reused),
and the view prunes alike; anything else, and the resume materialises from the store as usual. The worker imports
no SDK (stores/rows.py, transcript.py, bodies.py), and removes its output if its parent is gone.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from ..core.records import LINEAGE_FILE, WORK, parse_lineage
from ..core.shared import is_sessions_db
from .jsonl import write_jsonl, write_spills
from .rows import LATEST, LOAD, codec_of, decode_bodies
from .transcript import TRIM_KEEP_ROUNDS, TRIM_THRESHOLD, prune

if TYPE_CHECKING:
    from .prune import PruningSessionStore

__all__ = ["PREFIX", "Prefetch"]

log = logging.getLogger("flower")

PREFIX = "flower-prefetch-"
"""The worker's output dir in the temp dir: `flower-prefetch-<the command's pid>-*` (not a `claude-resume-*`: the
sweep never reads it)."""

_KEYS = "SELECT project_key FROM transcripts WHERE session_id = ? AND subpath = '' ORDER BY id"


@dataclass
class Prefetch:
    """One worker preparing one session's pruned view."""

    session_id: str
    trim: bool
    spill_dir: Path
    out: Path
    proc: subprocess.Popen[bytes]

    @classmethod
    def work(cls, run_dir: Path, workspace: Path, store: str | None, *, trim: bool) -> Prefetch | None:
        """Start the worker on the work session of the task in `run_dir` (None: a shared store, no such session yet)."""
        if not is_sessions_db(store):  # a shared store is read by the wake itself
            return None
        run_dir = Path(os.path.abspath(run_dir))
        try:
            lineage = parse_lineage((run_dir / LINEAGE_FILE).read_bytes())
        except OSError:
            return None
        if lineage is None or lineage["workspace"] != os.path.abspath(workspace) or WORK not in lineage["steps"]:
            return None
        return cls.start(run_dir / "sessions.db", lineage["steps"][WORK], trim=trim, spill_dir=run_dir / "spill")

    @classmethod
    def start(cls, db: Path, session_id: str, *, trim: bool, spill_dir: Path) -> Prefetch | None:
        """Start the worker on `db`'s session (None when there is no sessions.db, or it cannot start)."""
        if not db.is_file():
            return None
        _remove_orphans()
        out = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", __name__, str(db), session_id, "1" if trim else "0", str(spill_dir), str(out),
                 str(os.getpid())],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError:
            shutil.rmtree(out, ignore_errors=True)
            return None
        return cls(session_id, trim, spill_dir, out, proc)

    async def take(self, view: PruningSessionStore, project_key: str, timeout: float) -> Path | None:
        """The JSONL, if it is the session's pruned view as `view` would write it now; None (and nothing kept) otherwise.

        The caller moves the file away before it calls `discard`.
        """
        import asyncio  # here: the worker, which imports this module too, needs no event loop

        try:
            said, _ = await asyncio.to_thread(self.proc.communicate, timeout=timeout)
            read = json.loads(said or b"null")
        except (subprocess.TimeoutExpired, ValueError):
            read = None
        path = self.out / f"{self.session_id}.jsonl"
        if not (isinstance(read, dict) and read.get("project_key") == project_key and self.prunes_like(view)
                and path.is_file()):
            log.info("resume of %s: the prefetched view is not this one (written from the store instead)", self.session_id)
            return None
        stored = view.inner
        now = (await stored.latest_seq(project_key, self.session_id), await stored.count(project_key, self.session_id))
        if now != (read.get("seq"), read.get("count")):
            log.info("resume of %s: the store changed since the prefetch read it (written from the store instead)",
                     self.session_id)
            return None
        log.info("resume of %s: the prefetched view is taken", self.session_id)
        return path

    def prunes_like(self, view: PruningSessionStore) -> bool:
        """Whether `view` prunes as the worker did (its defaults, with this trim and spill dir)."""
        return ((view.keep_denials, view.ephemeral, view.trim, view.trim_threshold, view.trim_keep_rounds)
                == (1, True, self.trim, TRIM_THRESHOLD, TRIM_KEEP_ROUNDS)
                and (not self.trim or view.spill_dir == self.spill_dir))

    def discard(self) -> None:
        """Stop the worker if it still runs and remove what it wrote (the spill files stay: the view points at them)."""
        if self.proc.poll() is None:
            self.proc.kill()
        try:
            self.proc.communicate(timeout=10)
        except (subprocess.TimeoutExpired, ValueError):
            pass
        shutil.rmtree(self.out, ignore_errors=True)


def _remove_orphans() -> None:
    """Output dirs of commands that died before they took them (a kill): removed at the next start."""
    for left in Path(tempfile.gettempdir()).glob(f"{PREFIX}*"):
        try:
            pid = int(left.name[len(PREFIX):].split("-", 1)[0])
        except ValueError:
            continue
        if pid != os.getpid() and not _alive(pid):
            shutil.rmtree(left, ignore_errors=True)


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # another user's process
        return True
    return True


def _read(db: Path, session_id: str) -> tuple[str, int, list[object]] | None:
    """(project key, newest seq, entries) of the session's main transcript, read in one read transaction."""
    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute("BEGIN")  # one snapshot: the seq and the bodies are the same moment's
        keys = conn.execute(_KEYS, (session_id,)).fetchall()
        if len(keys) != 1:  # none, or the id under two project keys (a moved workspace): the resume reads it
            return None
        (project_key,) = keys[0]
        (seq,) = conn.execute(LATEST, (project_key, session_id)).fetchone()
        bodies = [row[0] for row in conn.execute(LOAD, (project_key, session_id, ""))]
        codec = codec_of(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return project_key, int(seq), decode_bodies(bodies, codec)


def main(argv: list[str]) -> int:
    """The worker: `python -m flower.stores.prefetch DB SESSION TRIM SPILL_DIR OUT PARENT_PID`; one JSON line out."""
    db, session_id, trim, spill_dir, out, parent = Path(argv[0]), argv[1], argv[2] == "1", Path(argv[3]), Path(argv[4]), int(argv[5])
    gc.disable()  # a short life that builds no cycles: GC passes over the transcript would cost more than pruning it
    read = _read(db, session_id)
    if read is None:
        return 0
    project_key, seq, entries = read
    result = prune(entries, trim=trim, spill_dir=spill_dir)  # type: ignore[arg-type]  # JSON objects, as the CLI wrote them
    if os.getppid() != parent:  # the command is gone: nobody will take it
        shutil.rmtree(out, ignore_errors=True)
        return 0
    write_jsonl(out / f"{session_id}.jsonl", result.entries)
    write_spills({path: text for path, text in result.spills.items() if not path.exists()})
    if os.getppid() != parent:
        shutil.rmtree(out, ignore_errors=True)
        return 0
    sys.stdout.write(json.dumps({"project_key": project_key, "seq": seq, "count": len(entries)}) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
