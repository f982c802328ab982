"""A resume's transcript pruned and written by a worker process while the `flower` command imports the SDK (S23, D2).

A wake from the command line spends its first half second or more importing the SDK (its `mcp` and pydantic), on
one core, before it reaches the resume; loading, pruning and writing a 20k-entry session takes as long again
(benchmarks/wake.py). So the command starts this worker first, on the work session lineage.json names: it reads the
session from sessions.db read-only, in one read transaction, adds what the wake's reconcile will import from the
CLI's own transcripts (after a kill, the entries the mirror never got: the same `reconcile` run against a copy of
the session, with the sweep's memory read and never written), prunes it as the wake's view will, and writes the
JSONL and the spill files it points at (S26: written whole, idempotent). The resume adopts the file
(stores/resume.py) only if, once the wake holds the lock and has swept and reconciled, the session is what the
worker read plus exactly what it predicted (sessions.db only ever appends: the same entry count, and the entries
after the seq it read the ones it added), the CLI's config dir is the one it read, and the view prunes alike;
anything else, and the resume materialises from the store as usual. The worker imports no SDK (stores/rows.py,
transcript.py, bodies.py, reconcile.py), and removes its output if its parent is gone.
"""

from __future__ import annotations

import asyncio
import functools
import gc
import hashlib
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

from ..core import host
from ..core.records import LINEAGE_FILE, WORK, parse_lineage
from ..core.redact import redact_encoded
from ..core.shared import is_sessions_db
from .bodies import encode_all
from .jsonl import write_jsonl, write_spills
from .reconcile import SWEPT_FILE, config_dir, content_key, load_swept, reconcile, remembered
from .rows import LATEST, LOAD_SEQS, codec_of, decode_bodies, resolved
from .transcript import TRIM_KEEP_ROUNDS, TRIM_THRESHOLD, prune

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from claude_agent_sdk.types import SessionKey, SessionStoreEntry

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
        return cls.start(run_dir / "sessions.db", lineage["steps"][WORK], trim=trim, spill_dir=run_dir / "spill",
                         swept=run_dir / SWEPT_FILE)

    @classmethod
    def start(cls, db: Path, session_id: str, *, trim: bool, spill_dir: Path, swept: Path) -> Prefetch | None:
        """Start the worker on `db`'s session (None when there is no sessions.db, or it cannot start); `swept` is the
        sweep's memory (run_dir's `reconciled.json`), read to predict the reconcile."""
        if not db.is_file():
            return None
        _remove_orphans()
        out = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
        try:
            proc = subprocess.Popen(
                [sys.executable, "-m", __name__, str(db), session_id, "1" if trim else "0", str(spill_dir), str(out),
                 str(os.getpid()), str(swept)],
                stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
        except OSError:
            shutil.rmtree(out, ignore_errors=True)
            return None
        return cls(session_id, trim, spill_dir, out, proc)

    async def take(self, view: PruningSessionStore, project_key: str, env: Mapping[str, str],
                   timeout: float) -> Path | None:
        """The JSONL, if it is the session's pruned view as `view` would write it now; None (and nothing kept) otherwise.

        `env` is the CLI's (its config dir holds the transcripts the worker reconciled against). The caller moves the
        file away before it calls `discard`.
        """
        try:
            said, _ = await asyncio.to_thread(self.proc.communicate, timeout=timeout)
            read = json.loads(said or b"null")
        except (subprocess.TimeoutExpired, ValueError):
            read = None
        path = self.out / f"{self.session_id}.jsonl"
        if not (isinstance(read, dict) and read.get("project_key") == project_key and self.prunes_like(view)
                and read.get("config") == str(config_dir({**os.environ, **env})) and path.is_file()):
            log.info("resume of %s: the prefetched view is not this one (written from the store instead)", self.session_id)
            return None
        stored = view.inner
        count = await stored.count(project_key, self.session_id)
        added = await stored.entries_after(project_key, self.session_id, read.get("seq", -1))
        if count != read.get("count") or _digest(added) != read.get("added"):
            log.info("resume of %s: the store is not what the prefetch read and predicted (written from the store instead)",
                     self.session_id)
            return None
        log.info("resume of %s: the prefetched view is taken (%d entries reconciled since its read)", self.session_id,
                 len(added))
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
        if pid != os.getpid() and not host.alive(pid):
            shutil.rmtree(left, ignore_errors=True)


def _digest(entries: Sequence[Mapping[str, object]]) -> str:
    """A fingerprint of entries by content, in order."""
    return hashlib.sha256(b"\n".join(content_key(e) for e in entries)).hexdigest()


class _Copy:
    """A session as the worker read it, which a reconcile appends to as the store would (D6: redacted; a uuid the
    session holds skipped), so that the worker prunes what the wake's store will hold once it has reconciled."""

    def __init__(self, seq: int, rows: list[tuple[int, object]]) -> None:
        self.seq, self.rows = seq, rows
        self.added: list[object] = []

    @functools.cached_property
    def uuids(self) -> set[str]:
        """The uuids the session holds: read only if a reconcile appends (a clean wake's does not)."""
        return {u for _, e in self.rows if isinstance(e, dict) and isinstance(u := e.get("uuid"), str)}

    async def entries_after(self, project_key: str, session_id: str, seq: int) -> list[SessionStoreEntry]:
        """The entries after `seq`."""
        return [e for s, e in self.rows if s > seq]  # type: ignore[misc]  # JSON objects, as the CLI wrote them

    async def latest_seq(self, project_key: str, session_id: str, skip: int = 0) -> int:
        """The newest seq (the store's own for what it read, counted on for what was added), or `skip` places before it."""
        if not skip:
            return self.seq
        return self.rows[-1 - skip][0] if skip < len(self.rows) else 0

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Add `entries` as the store's append would, then read them back as its load would."""
        fresh = []
        for e in entries:
            uid = e.get("uuid")
            if isinstance(uid, str):
                if uid in self.uuids:
                    continue
                self.uuids.add(uid)
            fresh.append(e)
        for e in decode_bodies(redact_encoded(encode_all(fresh))):
            self.seq += 1
            self.rows.append((self.seq, e))
            self.added.append(e)


def _read(db: Path, session_id: str) -> tuple[str, int, list[tuple[int, object]]] | None:
    """(project key, newest seq, (seq, entry) rows) of the session's main transcript, read in one read transaction."""
    conn = sqlite3.connect(f"{db.absolute().as_uri()}?mode=ro", uri=True, isolation_level=None)
    try:
        conn.execute("BEGIN")  # one snapshot: the seq and the bodies are the same moment's
        keys = conn.execute(_KEYS, (session_id,)).fetchall()
        if len(keys) != 1:  # none, or the id under two project keys (a moved workspace): the resume reads it
            return None
        (project_key,) = keys[0]
        (seq,) = conn.execute(LATEST, (project_key, session_id)).fetchone()
        rows = conn.execute(LOAD_SEQS, (project_key, session_id, "")).fetchall()
        codec = codec_of(conn)
        seqs = [r[0] for r in rows]
        bodies = resolved(conn, [r[1] for r in rows], codec, seqs)  # repeated strings put back (issue 35)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return project_key, int(seq), list(zip(seqs, decode_bodies(bodies, codec), strict=True))


def main(argv: list[str]) -> int:
    """The worker: `python -m flower.stores.prefetch DB SESSION TRIM SPILL_DIR OUT PARENT_PID SWEPT`; one JSON line out."""
    db, session_id, trim, spill_dir, out = Path(argv[0]), argv[1], argv[2] == "1", Path(argv[3]), Path(argv[4])
    parent, swept = int(argv[5]), Path(argv[6])
    gc.disable()  # a short life that builds no cycles: GC passes over the transcript would cost more than pruning it
    read = _read(db, session_id)
    if read is None:
        return 0
    project_key, seq, rows = read
    count = len(rows)
    # What the wake's sweep and reconcile will import (the CLI's env is this process's: the command's own), against
    # the memory they will read; `reconcile` is given the memory, so it writes none.
    session = _Copy(seq, rows)
    asyncio.run(reconcile(session, project_key, session_id, memory=remembered(load_swept(swept), project_key)))
    entries = [e for _, e in session.rows]
    result = prune(entries, trim=trim, spill_dir=spill_dir)  # type: ignore[arg-type]  # JSON objects, as the CLI wrote them
    if os.getppid() != parent:  # the command is gone: nobody will take it
        shutil.rmtree(out, ignore_errors=True)
        return 0
    write_jsonl(out / f"{session_id}.jsonl", result.entries)
    write_spills({path: text for path, text in result.spills.items() if not path.exists()})
    if os.getppid() != parent:
        shutil.rmtree(out, ignore_errors=True)
        return 0
    said = {"project_key": project_key, "seq": seq, "count": count + len(session.added),
            "added": _digest(session.added), "config": str(config_dir(os.environ))}  # type: ignore[arg-type]
    sys.stdout.write(json.dumps(said) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
