"""The PostgreSQL side of a shared task (D9): lineage, manifest rows, the one-writer lock and the wake mark, keyed by workspace identity."""

from __future__ import annotations

import json
import logging
import os
import socket
import time
from collections.abc import Hashable, Sequence
from pathlib import Path
from typing import Any

from ..core.durable import free_name, write_atomic
from ..core.lock import WorkspaceBusy
from ..core.records import LINEAGE_FILE, Damaged, LineageData, lineage_json, lineage_of, parse_lineage
from ..core.taskfiles import Stored, sha
from .postgres import Conn, PostgresSessionStore, _Link

log = logging.getLogger(__name__)

_HOLDER = """
SELECT h.host, h.pid, h.started_at FROM {s}.holders h
JOIN pg_locks l ON l.pid = h.backend_pid AND l.locktype = 'advisory' AND l.granted AND l.objsubid = 1
WHERE h.project = $1
  AND l.classid::bigint = ((hashtextextended($2, 0) >> 32) & 4294967295)
  AND l.objid::bigint = (hashtextextended($2, 0) & 4294967295)
"""


_BUMP = """
INSERT INTO {s}.changes (project, n) VALUES ($1, 1) ON CONFLICT (project) DO UPDATE SET n = {s}.changes.n + 1
"""
"""Run in the transaction of every write of the records: `changes.n` is their change stamp (a status asks it often)."""


class PgRecords:
    """A task's lineage, manifest, lock, wake mark and files (需求.md, 目标.md, handoff notes) in the store's database
    (implements core.records.Records and core.taskfiles.TaskFiles).

    The lock is a session advisory lock held on a connection of its own: PostgreSQL drops it the moment that
    connection ends, so a killed holder (kill -9, a lost machine) never blocks the next one. `holders` says who
    holds it; a row counts only while its connection still holds the lock (joined with pg_locks).
    """

    def __init__(self, store: PostgresSessionStore, identity: str, run_dir: str | os.PathLike[str]) -> None:
        self.store, self.identity, self.where = store, identity, store.path
        self.run_dir = Path(os.path.abspath(run_dir))
        self._lock_link: _Link | None = None
        self._since = 0.0
        self._key = f"flower-task:{store.schema}:{identity}"

    def _call(self, sql: str, *args: Any, fetch: str = "execute") -> Any:
        async def work(conn: Conn) -> Any:
            return await getattr(conn, fetch)(self.store.sql(sql), *args)

        return self.store.link().call(work)

    def _write(self, sql: str, *args: Any) -> None:
        """One write and the change stamp's bump, in one transaction committed before returning."""
        async def work(conn: Conn) -> None:
            async with conn.transaction():
                await conn.execute(self.store.sql(sql), *args)
                await conn.execute(self.store.sql(_BUMP), self.identity)

        self.store.link().call(work)

    def load_lineage(self, workspace: str) -> LineageData | None:
        """The lineage the database holds for the workspace identity, whichever path wrote it; raises if it does not answer.

        Starting fresh while the database is down would overwrite the team's lineage (D9). An older lineage.json
        left in this run_dir is named, and not followed.
        """
        raw = self._call("SELECT data FROM {s}.lineages WHERE project = $1", self.identity, fetch="fetchval")
        data = lineage_of(json.loads(raw) if isinstance(raw, str) else raw)
        if data is None:
            return None
        try:
            local = parse_lineage((self.run_dir / LINEAGE_FILE).read_bytes())
        except OSError:
            local = None
        if local is not None and (local["woke"], local["steps"]) != (data["woke"], data["steps"]):
            log.warning("following the lineage of %s in %s (wake %d), not the older %s here (wake %d)",
                        self.identity, self.where, data["woke"], self.run_dir / LINEAGE_FILE, local["woke"])
        return data

    def set_aside(self, damaged: Damaged) -> bool:
        """Nothing to keep: `load_lineage` never reports a row damaged (jsonb holds what flower wrote, or nothing)."""
        return True

    def pending_sentences(self) -> list[dict[str, Any]]:
        """The task's pending sentences, whichever machine heard them (issue 31)."""
        raw = self._call("SELECT data FROM {s}.sentences WHERE project = $1", self.identity, fetch="fetchval")
        rows = json.loads(raw) if isinstance(raw, str) else raw
        return [r for r in rows if isinstance(r, dict)] if isinstance(rows, list) else []

    def save_pending_sentences(self, rows: list[dict[str, Any]]) -> None:
        """One statement, committed before returning; none pending removes the row."""
        self._relock()
        if rows:
            self._call("INSERT INTO {s}.sentences (project, data) VALUES ($1, $2::jsonb)"
                       " ON CONFLICT (project) DO UPDATE SET data = excluded.data",
                       self.identity, json.dumps(rows, ensure_ascii=False))
        else:
            self._call("DELETE FROM {s}.sentences WHERE project = $1", self.identity)

    def save_lineage(self, data: LineageData) -> None:
        """One statement, one transaction, committed before returning (S11)."""
        self._relock()
        self._write("INSERT INTO {s}.lineages (project, data, host) VALUES ($1, $2::jsonb, $3)"
                    " ON CONFLICT (project) DO UPDATE SET data = excluded.data, host = excluded.host, updated_at = now()",
                    self.identity, json.dumps(data, ensure_ascii=False), socket.gethostname())

    def archive_lineage(self, into: Path, data: LineageData) -> None:
        """The shared lineage written into the archive beside the files, then emptied here (S28).

        Emptied as run_dir's lineage.json is moved away: left in the database, the next wake would resume the
        archived task's sessions instead of starting the new one (#26 found it: `--new` on PostgreSQL woke #2).
        """
        write_atomic(free_name(into, LINEAGE_FILE), lineage_json(data))
        self.save_lineage({"workspace": data["workspace"], "woke": 0, "steps": {}})
        self.save_pending_sentences([])  # they were said to the archived task (run_dir's sentences.json goes with it)

    def manifest_rows(self) -> list[dict[str, Any]]:
        """Every writer's rows, in the order the writers first wrote."""
        found = self._call("SELECT rows FROM {s}.manifest WHERE project = $1 ORDER BY id", self.identity, fetch="fetch")
        rows: list[dict[str, Any]] = []
        for (raw,) in found:
            batch = json.loads(raw) if isinstance(raw, str) else raw
            rows.extend(r for r in batch if isinstance(r, dict))
        return rows

    def save_manifest(self, run: str, rows: list[dict[str, Any]], changed: Sequence[int] | None = None) -> None:
        """Replace writer `run`'s rows, all of them (`changed` is not needed: one wake's rows in one statement); other
        writers' rows are theirs (S8)."""
        self._relock()
        self._write("INSERT INTO {s}.manifest (project, run, rows) VALUES ($1, $2, $3::jsonb)"
                    " ON CONFLICT (project, run) DO UPDATE SET rows = excluded.rows",
                    self.identity, run, json.dumps(rows, ensure_ascii=False, default=str))

    async def _take(self, conn: Conn) -> bool:
        """Try the advisory lock on `conn` and, if taken, say who holds it (a holder re-taking it only stacks it)."""
        if not await conn.fetchval("SELECT pg_try_advisory_lock(hashtextextended($1, 0))", self._key):
            return False
        await conn.execute(self.store.sql(
            "INSERT INTO {s}.holders (project, backend_pid, host, pid, started_at)"
            " VALUES ($1, pg_backend_pid(), $2, $3, $4) ON CONFLICT (project) DO UPDATE SET"
            " backend_pid = excluded.backend_pid, host = excluded.host, pid = excluded.pid,"
            " started_at = excluded.started_at"), self.identity, socket.gethostname(), os.getpid(), self._since)
        return True

    def _relock(self) -> None:
        """After a database restart the lock went with its connection: take it again before writing.

        If another flower took it meanwhile, that one drives now: this one writes nothing more and stops with
        WorkspaceBusy naming it (D5: one writer, even across an outage).
        """
        link = self._lock_link
        if link is None:
            return
        try:
            taken = link.call(self._take)
        except Exception as e:  # the write that follows fails alike and says so
            log.warning("could not check the lock of %s (%s)", self.identity, e)
            return
        if not taken:
            log.warning("the lock of %s was lost in a database outage and another flower holds it now", self.identity)
            self.release()
            self._busy()

    def mark_wake(self, on: bool) -> None:
        """Record that a wake of the task is under way (on) or ended (off), for every machine to see."""
        if on:
            self._write("INSERT INTO {s}.wakes (project, host, pid, started_at) VALUES ($1, $2, $3, $4)"
                        " ON CONFLICT (project) DO UPDATE SET host = excluded.host, pid = excluded.pid,"
                        " started_at = excluded.started_at", self.identity, socket.gethostname(), os.getpid(), time.time())
        else:
            self._write("DELETE FROM {s}.wakes WHERE project = $1", self.identity)

    def wake_mark(self) -> tuple[bool, bool]:
        """(a wake's mark is left, a live flower holds the lock), on whichever machine: cut off, or under way."""
        row = self._call("SELECT EXISTS (SELECT 1 FROM {s}.wakes WHERE project = $1) AS marked,"
                         f" EXISTS ({_HOLDER}) AS held", self.identity, self._key, fetch="fetchrow")
        return bool(row["marked"]), bool(row["held"])

    def stamp(self) -> Hashable:
        """(the records' change count, the wake mark): one round trip; a holder's death moves no count, so the mark is read too."""
        row = self._call("SELECT (SELECT n FROM {s}.changes WHERE project = $1) AS n,"
                         " EXISTS (SELECT 1 FROM {s}.wakes WHERE project = $1) AS marked,"
                         f" EXISTS ({_HOLDER}) AS held", self.identity, self._key, fetch="fetchrow")
        return row["n"], bool(row["marked"]), bool(row["held"])

    def lock(self) -> PgLock:
        """The task's advisory lock, across machines (D9)."""
        return PgLock(self)

    def acquire(self) -> None:
        """Take the advisory lock on a connection of its own, or raise WorkspaceBusy with the holder's host and pid."""
        if self._lock_link is not None:
            return
        self._since = time.time()
        link = _Link(self.store.url, self.store.sql("{s}"))
        try:
            taken = link.call(self._take)
        except BaseException:
            link.close()
            raise
        if taken:
            self._lock_link = link
            return
        link.close()
        self._busy()

    def _busy(self) -> None:
        """Raise WorkspaceBusy naming the lock's holder (host and pid)."""
        holder = None
        deadline = time.monotonic() + 1.0  # the holder writes its row just after taking the lock
        while holder is None and time.monotonic() < deadline:
            holder = self._call(_HOLDER, self.identity, self._key, fetch="fetchrow")
            if holder is None:
                time.sleep(0.05)
        host, pid, started = (holder["host"], holder["pid"], holder["started_at"]) if holder else (None, None, None)
        raise WorkspaceBusy(Path(f"{self.where} {self.identity}"), pid, started, host=host)

    def task_files(self, place: str) -> dict[str, Stored]:
        """The task's stored files with `place`'s last-seen hashes (core/taskfiles.py)."""
        rows = self._call("SELECT f.name, f.body, f.sha, f.host, f.updated_at, s.sha AS seen FROM {s}.task_files f"
                          " LEFT JOIN {s}.task_files_seen s ON s.project = f.project AND s.name = f.name AND s.place = $2"
                          " WHERE f.project = $1", self.identity, place, fetch="fetch")
        return {r["name"]: Stored(bytes(r["body"]), r["sha"], r["host"], r["updated_at"], r["seen"]) for r in rows}

    def save_task_files(self, place: str, bodies: dict[str, bytes], seen: dict[str, str]) -> None:
        """The newest bodies and this place's last-seen hashes, in one transaction."""
        self._relock()
        host, now = socket.gethostname(), time.time()

        async def work(conn: Conn) -> None:
            async with conn.transaction():
                await conn.executemany(self.store.sql(
                    "INSERT INTO {s}.task_files (project, name, body, sha, host, updated_at) VALUES ($1, $2, $3, $4, $5, $6)"
                    " ON CONFLICT (project, name) DO UPDATE SET body = excluded.body, sha = excluded.sha,"
                    " host = excluded.host, updated_at = excluded.updated_at"),
                    [(self.identity, name, body, sha(body), host, now) for name, body in bodies.items()])
                await conn.executemany(self.store.sql(
                    "INSERT INTO {s}.task_files_seen (project, place, name, sha) VALUES ($1, $2, $3, $4)"
                    " ON CONFLICT (project, place, name) DO UPDATE SET sha = excluded.sha"),
                    [(self.identity, place, name, h) for name, h in seen.items()])

        self.store.link().call(work)

    def archive_task_files(self, names: list[str], into: str) -> None:
        """Rename the stored `names` under `into` (`flower --new`, S28); what each place saw of them goes."""
        self._relock()

        async def work(conn: Conn) -> None:
            async with conn.transaction():
                await conn.executemany(self.store.sql(
                    "UPDATE {s}.task_files SET name = $3 WHERE project = $1 AND name = $2"),
                    [(self.identity, name, into + name) for name in names])
                await conn.execute(self.store.sql("DELETE FROM {s}.task_files_seen WHERE project = $1 AND name = ANY($2)"),
                                   self.identity, names)

        self.store.link().call(work)

    def release(self) -> None:
        """Close the lock's connection: the lock goes with it."""
        link, self._lock_link = self._lock_link, None
        if link is not None:
            link.close()


class PgLock:
    """The TaskLock of a PgRecords: one advisory lock per task and process, given up by whoever took it."""

    def __init__(self, records: PgRecords) -> None:
        self.records = records
        self._held = False

    @property
    def held(self) -> bool:
        """True while this object holds the lock."""
        return self._held

    def acquire(self) -> None:
        """Take the lock or raise WorkspaceBusy naming its holder's host and pid."""
        self.records.acquire()
        self._held = True

    def release(self) -> None:
        """Give the lock up; idempotent."""
        if self._held:
            self._held = False
            self.records.release()


def open_shared(url: str, run_dir: str | os.PathLike[str], local_key: str, identity: str) -> tuple[PostgresSessionStore, PgRecords]:
    """The Postgres store keyed by `identity` (the CLI's `local_key` mapped to it), and the task's records in it."""
    store = PostgresSessionStore(url, keys={local_key: identity})
    return store, PgRecords(store, identity, run_dir)
