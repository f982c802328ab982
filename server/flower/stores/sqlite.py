"""flower's own SQLite ``SessionStore``: ``runs/sessions.db`` (DESIGN D2)."""

from __future__ import annotations

import asyncio
import gc
import json
import os
import sqlite3
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar

import aiosqlite
from claude_agent_sdk import fold_session_summary
from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from ..core.errors import FlowerError
from ..core.redact import redact

__all__ = ["SessionStoreError", "SqliteSessionStore"]

T = TypeVar("T")

# Several flower processes may append to one sessions.db: writers queue on the
# lock rather than fail, and one batch holds it for milliseconds.
BUSY_TIMEOUT_S = 30.0

_SCHEMA = """
BEGIN IMMEDIATE;
CREATE TABLE IF NOT EXISTS transcripts (
    id          INTEGER PRIMARY KEY,
    project_key TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    subpath     TEXT NOT NULL,      -- '' for the main transcript
    mtime       INTEGER NOT NULL,   -- storage write time, Unix epoch ms
    UNIQUE (project_key, session_id, subpath)
);
CREATE INDEX IF NOT EXISTS transcripts_by_mtime ON transcripts (mtime);
CREATE TABLE IF NOT EXISTS entries (
    seq        INTEGER PRIMARY KEY, -- append order, across processes
    transcript INTEGER NOT NULL,
    uuid       TEXT,
    body       TEXT NOT NULL        -- the entry's JSON text; never rewritten (S23a)
);
-- An index implicitly ends with the rowid (seq), so this one also yields a
-- transcript's entries in append order.
CREATE INDEX IF NOT EXISTS entries_by_transcript ON entries (transcript);
CREATE UNIQUE INDEX IF NOT EXISTS entries_uuid
    ON entries (transcript, uuid) WHERE uuid IS NOT NULL;
CREATE TABLE IF NOT EXISTS summaries (
    project_key TEXT NOT NULL,
    session_id  TEXT NOT NULL,
    mtime       INTEGER NOT NULL,
    data        TEXT NOT NULL,      -- SDK-owned, persisted verbatim
    PRIMARY KEY (project_key, session_id)
);
PRAGMA user_version = 1;
COMMIT;
"""

_STORED_UUIDS = """
SELECT e.uuid FROM transcripts t JOIN entries e ON e.transcript = t.id
WHERE t.project_key = ? AND t.session_id = ? AND t.subpath = ?
  AND e.uuid IN (SELECT value FROM json_each(?))
"""

# mtime = max(now, newest mtime in the store + 1), computed under the write
# lock: strictly increasing even across processes and a clock step back.
_TOUCH_TRANSCRIPT = """
INSERT INTO transcripts (project_key, session_id, subpath, mtime)
VALUES (?, ?, ?, max(?, 1 + coalesce((SELECT max(mtime) FROM transcripts), 0)))
ON CONFLICT (project_key, session_id, subpath) DO UPDATE SET mtime = excluded.mtime
RETURNING id, mtime
"""


class SessionStoreError(FlowerError, ValueError):
    """The session database cannot be used as it is (e.g. it is not SQLite)."""


def _not_a_database(path: Path, err: sqlite3.Error) -> SessionStoreError:
    return SessionStoreError("db_not_sqlite", db=path, reason=err)


def _is_not_a_database(err: sqlite3.Error) -> bool:
    return getattr(err, "sqlite_errorcode", None) in (
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_CORRUPT,
    )


def _key3(key: SessionKey) -> tuple[str, str, str]:
    # '' rather than NULL for the main transcript, so UNIQUE and '=' just work.
    return key["project_key"], key["session_id"], key.get("subpath") or ""


def _dumps(entry: SessionStoreEntry) -> str:
    # ensure_ascii (the default) escapes lone surrogates, which the CLI can emit
    # when it truncates text mid-emoji; they could not be stored as UTF-8.
    return json.dumps(entry, separators=(",", ":"))


def _uuid(entry: SessionStoreEntry) -> str | None:
    uuid = entry.get("uuid")
    return uuid if isinstance(uuid, str) else None


def _decode_array(bodies: list[str]) -> list[Any]:
    # One decode of the whole array beats one per row. JSON builds no cycles, but
    # its ~50 containers per entry would trigger GC passes over the whole heap
    # that cost as much as the parsing itself.
    text = "[" + ",".join(bodies) + "]"
    if not gc.isenabled():
        return json.loads(text)
    gc.disable()
    try:
        return json.loads(text)
    finally:
        gc.enable()


async def _fold_summary(
    db: aiosqlite.Connection,
    key: SessionKey,
    entries: list[SessionStoreEntry],
    mtime: int,
) -> None:
    pk, sid = key["project_key"], key["session_id"]
    rows = list(
        await db.execute_fetchall(
            "SELECT mtime, data FROM summaries WHERE project_key = ? AND session_id = ?",
            (pk, sid),
        )
    )
    prev: SessionSummaryEntry | None = None
    if rows:
        prev = {"session_id": sid, "mtime": rows[0][0], "data": json.loads(rows[0][1])}
    folded = fold_session_summary(prev, key, entries)
    # Stamped with the mtime list_sessions() reports, as the SDK requires.
    await db.execute(
        "INSERT OR REPLACE INTO summaries (project_key, session_id, mtime, data)"
        " VALUES (?, ?, ?, ?)",
        (pk, sid, mtime, json.dumps(folded["data"])),
    )


class SqliteSessionStore(SessionStore):
    """A ``SessionStore`` in one SQLite file (WAL), shareable by several processes."""

    def __init__(self, path: str | os.PathLike[str]) -> None:
        """Remember ``path``; the database is opened on first use."""
        self.path = Path(path)
        self._conn: aiosqlite.Connection | None = None
        # One connection runs one transaction at a time, and a load must not see
        # another coroutine's half-done append through it.
        self._lock = asyncio.Lock()

    async def __aenter__(self) -> SqliteSessionStore:
        async with self._lock:
            await self._db()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def close(self) -> None:
        """Close the connection (a later call reopens it)."""
        async with self._lock:
            if self._conn is not None:
                conn, self._conn = self._conn, None
                await conn.close()

    async def _db(self) -> aiosqlite.Connection:
        if self._conn is not None:
            return self._conn
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = await aiosqlite.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None
            )
        except sqlite3.Error as err:
            raise SessionStoreError("db_cannot_open", db=self.path, reason=err) from err
        try:
            # Reading the header rejects a non-database before anything that
            # could write to the file or beside it (WAL switch, schema).
            await conn.execute_fetchall("PRAGMA schema_version")
            # Only takes effect while the file is new. Entries are a few KB and
            # tool results up to hundreds: big pages mean short overflow chains.
            await conn.execute("PRAGMA page_size = 16384")
            await conn.execute_fetchall("PRAGMA journal_mode = WAL")
            # Under WAL, NORMAL cannot corrupt the file; a power cut may lose the
            # last commits, which the CLI's own JSONL still holds (D2).
            await conn.execute("PRAGMA synchronous = NORMAL")
            await conn.executescript(_SCHEMA)
        except sqlite3.Error as err:
            await conn.close()
            if _is_not_a_database(err):
                raise _not_a_database(self.path, err) from err
            raise
        self._conn = conn
        return conn

    async def _read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        async with self._lock:
            db = await self._db()
            return list(await db.execute_fetchall(sql, params))

    async def _write(self, work: Callable[[aiosqlite.Connection], Awaitable[T]]) -> T:
        """Run ``work(db)`` in one ``BEGIN IMMEDIATE`` transaction."""
        async with self._lock:
            db = await self._db()
            # IMMEDIATE takes the write lock up front, so concurrent processes
            # queue here instead of failing to upgrade a read lock later.
            await db.execute("BEGIN IMMEDIATE")
            try:
                result = await work(db)
                await db.execute("COMMIT")
            except BaseException:
                try:
                    await db.execute("ROLLBACK")
                except sqlite3.OperationalError:
                    pass  # the failed statement already ended the transaction
                raise
            return result

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Persist ``entries`` in order, skipping uuids already stored for ``key``."""
        if not entries:
            return
        k3 = _key3(key)
        uuids = [_uuid(e) for e in entries]
        # D6: no API key is stored, e.g. quoted in an API error the CLI records as assistant text. The JSON
        # text is redacted, in one call per batch: keys are [A-Za-z0-9_-], and walking entries costs more.
        bodies: list[str] = redact([_dumps(e) for e in entries])

        async def work(db: aiosqlite.Connection) -> None:
            wanted = [u for u in uuids if u is not None]
            seen: set[str] = set()
            if wanted:
                rows = await db.execute_fetchall(_STORED_UUIDS, (*k3, json.dumps(wanted)))
                seen = {r[0] for r in rows}
            fresh: list[int] = []
            for i, u in enumerate(uuids):
                if u is not None:
                    if u in seen:
                        continue
                    seen.add(u)  # a uuid repeated within the batch counts once
                fresh.append(i)
            if not fresh:
                return
            ((tid, mtime),) = await db.execute_fetchall(
                _TOUCH_TRANSCRIPT, (*k3, int(time.time() * 1000))
            )
            await db.executemany(
                "INSERT INTO entries (transcript, uuid, body) VALUES (?, ?, ?)",
                [(tid, uuids[i], bodies[i]) for i in fresh],
            )
            if not k3[2]:  # subagent transcripts stay out of the session summary
                await _fold_summary(db, key, [entries[i] for i in fresh], mtime)

        await self._write(work)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """All entries of ``key`` in append order, or None if it was never written."""
        rows = await self._read(
            "SELECT e.body FROM transcripts t JOIN entries e ON e.transcript = t.id"
            " WHERE t.project_key = ? AND t.session_id = ? AND t.subpath = ?"
            " ORDER BY e.seq",
            _key3(key),
        )
        # A transcript row exists only once an entry was stored in it.
        return _decode_array([r[0] for r in rows]) if rows else None

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """Main transcripts of ``project_key`` with their mtimes (epoch ms)."""
        rows = await self._read(
            "SELECT session_id, mtime FROM transcripts"
            " WHERE project_key = ? AND subpath = ''",
            (project_key,),
        )
        return [{"session_id": sid, "mtime": mtime} for sid, mtime in rows]

    async def list_session_summaries(
        self, project_key: str
    ) -> list[SessionSummaryEntry]:
        """The folded summaries of the main transcripts of ``project_key``."""
        rows = await self._read(
            "SELECT session_id, mtime, data FROM summaries WHERE project_key = ?",
            (project_key,),
        )
        return [
            {"session_id": sid, "mtime": mtime, "data": json.loads(data)}
            for sid, mtime, data in rows
        ]

    async def delete(self, key: SessionKey) -> None:
        """Delete ``key``; a main key also deletes its subkeys and summary."""
        pk, sid, subpath = _key3(key)
        # A main key matches every subpath of the session; a subpath only itself.
        where = "project_key = ? AND session_id = ?"
        params: tuple[str, ...] = (pk, sid)
        if subpath:
            where, params = where + " AND subpath = ?", (pk, sid, subpath)

        async def work(db: aiosqlite.Connection) -> None:
            await db.execute(
                "DELETE FROM entries WHERE transcript IN"
                f" (SELECT id FROM transcripts WHERE {where})",
                params,
            )
            await db.execute(f"DELETE FROM transcripts WHERE {where}", params)
            if not subpath:
                await db.execute(f"DELETE FROM summaries WHERE {where}", params)

        await self._write(work)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """Subpaths (e.g. subagent transcripts) stored under a session."""
        rows = await self._read(
            "SELECT subpath FROM transcripts WHERE project_key = ?"
            " AND session_id = ? AND subpath != '' ORDER BY id",
            (key["project_key"], key["session_id"]),
        )
        return [r[0] for r in rows]

    def has_session_sync(self, project_key: str, session_id: str) -> bool:
        """Whether a main transcript is stored for the session (sync, read-only)."""
        if not self.path.exists():
            return False
        # mode=ro: never creates the file, never writes to it.
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as err:
            raise SessionStoreError("db_cannot_open", db=self.path, reason=err) from err
        try:
            row = conn.execute(
                "SELECT 1 FROM transcripts WHERE project_key = ?"
                " AND session_id = ? AND subpath = ''",
                (project_key, session_id),
            ).fetchone()
        except sqlite3.OperationalError as err:
            if "no such table" in str(err):  # an empty file: no store written yet
                return False
            raise
        except sqlite3.DatabaseError as err:
            if _is_not_a_database(err):
                raise _not_a_database(self.path, err) from err
            raise
        finally:
            conn.close()
        return row is not None

    def load_sync(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """``load`` for synchronous callers (a status answered at once): read-only, never creates the file."""
        if not self.path.exists():
            return None
        uri = self.path.resolve().as_uri() + "?mode=ro"
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as err:
            raise SessionStoreError("db_cannot_open", db=self.path, reason=err) from err
        try:
            rows = conn.execute(
                "SELECT e.body FROM transcripts t JOIN entries e ON e.transcript = t.id"
                " WHERE t.project_key = ? AND t.session_id = ? AND t.subpath = ?"
                " ORDER BY e.seq",
                _key3(key),
            ).fetchall()
        except sqlite3.OperationalError as err:
            if "no such table" in str(err):  # an empty file: no store written yet
                return None
            raise
        except sqlite3.DatabaseError as err:
            if _is_not_a_database(err):
                raise _not_a_database(self.path, err) from err
            raise
        finally:
            conn.close()
        return _decode_array([r[0] for r in rows]) if rows else None
