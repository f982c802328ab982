"""flower's own SQLite ``SessionStore``: ``runs/sessions.db`` (DESIGN D2)."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import itertools
import json
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeVar

from ..core.context import context_of, tail_pages
from ..core.errors import FlowerError
from ..core.redact import redact_encoded
from .base import SessionUsage
from .bodies import PACK_BATCH, SAMPLES, Codec, builtin, builtin_cli, encode_all, expander, is_raw, raw, train
from .repeats import MIN_LENGTH, Cut, Known, Span, has_refs, plan, spans, still_held, stored_bodies, texts
from .rows import BEFORE_NEWEST as _BEFORE_NEWEST
from .rows import LATEST as _LATEST
from .rows import LOAD_SEQS as _LOAD_SEQS
from .rows import codec_of as _codec
from .rows import decode_bodies, read_transaction, resolved
from .uuids import Seen, fresh

if TYPE_CHECKING:
    from .base import SessionKey, SessionListSubkeysKey, SessionStoreEntry, SessionStoreListEntry, SessionSummaryEntry

__all__ = ["MIGRATIONS", "Migration", "SessionStoreError", "SqliteSessionStore", "decode_bodies", "load_session"]

T = TypeVar("T")

# Several flower processes may append to one sessions.db: writers queue on the
# lock rather than fail, and one batch holds it for milliseconds.
BUSY_TIMEOUT_S = 30.0

SMALL_PAGE = 512
"""A new file's page size: most databases stay small, where SQLite's page per table and index is most of the file."""
PAGE = 4096
"""The page size a file is rewritten into once it has its own dictionary (SAMPLES entries) or REPAGE_BYTES, whichever
comes first: small pages make appends of a large session slower (see `_prepare`)."""
REPAGE_BYTES = 1 << 20
"""Past this, the pages a file's tables take beyond their rows are under 1% of it in 4 KB pages too."""
REPAGE_WAIT_S = 0.1
"""How long the rewrite waits for a lock before it leaves the file as it is for a later attempt (never an append's 30 s)."""

Migration = Callable[[sqlite3.Connection], None]
"""One schema step: brings ``PRAGMA user_version`` from its index to index + 1, inside the
transaction that records the new version (so a step is applied whole or not at all)."""

_SCHEMA_V1 = (
    """CREATE TABLE IF NOT EXISTS transcripts (
        id          INTEGER PRIMARY KEY,
        project_key TEXT NOT NULL,
        session_id  TEXT NOT NULL,
        subpath     TEXT NOT NULL,      -- '' for the main transcript
        mtime       INTEGER NOT NULL,   -- storage write time, Unix epoch ms
        UNIQUE (project_key, session_id, subpath)
    )""",
    "CREATE INDEX IF NOT EXISTS transcripts_by_mtime ON transcripts (mtime)",
    # body: the entry's JSON, never rewritten (D2). Written by earlier flowers as TEXT
    # (stdlib json); now as a BLOB of orjson's UTF-8, TEXT only where orjson cannot encode. Since v3 a
    # BLOB is a zstd frame against the database's dictionary once it has one, since v4 against flower's built-in
    # one before (stores/bodies.py).
    """CREATE TABLE IF NOT EXISTS entries (
        seq        INTEGER PRIMARY KEY, -- append order, across processes
        transcript INTEGER NOT NULL,
        uuid       TEXT,
        body       TEXT NOT NULL
    )""",
    # An index implicitly ends with the rowid (seq), so this one also yields a
    # transcript's entries in append order.
    "CREATE INDEX IF NOT EXISTS entries_by_transcript ON entries (transcript)",
    "CREATE UNIQUE INDEX IF NOT EXISTS entries_uuid ON entries (transcript, uuid) WHERE uuid IS NOT NULL",
    """CREATE TABLE IF NOT EXISTS summaries (
        project_key TEXT NOT NULL,
        session_id  TEXT NOT NULL,
        mtime       INTEGER NOT NULL,
        data        TEXT NOT NULL,      -- SDK-owned, persisted verbatim
        PRIMARY KEY (project_key, session_id)
    )""",
)


def _create_v1(conn: sqlite3.Connection) -> None:
    for statement in _SCHEMA_V1:
        conn.execute(statement)


def _speed_v2(conn: sqlite3.Connection) -> None:
    """Summaries folded on demand, uuids kept unique without an index, a clock for mtimes."""
    # Folding every batch into its summary inside append() cost as much as storing the
    # batch: the fold now runs when summaries are asked for, from the entries after
    # `folded`. v1 folded at every append, so its summaries are up to date. (A v1 flower
    # reopening the file sets user_version back to 1: this step must tolerate a rerun.)
    if "folded" not in {row[1] for row in conn.execute("PRAGMA table_info(summaries)")}:
        conn.execute("ALTER TABLE summaries ADD COLUMN folded INTEGER NOT NULL DEFAULT 0")
    conn.execute(
        "UPDATE summaries SET folded = coalesce((SELECT max(e.seq) FROM transcripts t"
        " JOIN entries e ON e.transcript = t.id WHERE t.project_key = summaries.project_key"
        " AND t.session_id = summaries.session_id AND t.subpath = ''), 0)"
    )
    # Random uuids put every batch's index entries on as many pages, each rewritten whole
    # to the WAL at commit: that index made a batch cost twice its entries. Uniqueness is
    # kept by append() under the write lock instead (see Seen).
    conn.execute("DROP INDEX IF EXISTS entries_uuid")
    # A few pages of transcripts are scanned for max(mtime) faster than an index on it is
    # kept: each index is one more 16 KB page rewritten to the WAL per append.
    conn.execute("DROP INDEX IF EXISTS transcripts_by_mtime")
    # The newest mtime of the deleted transcripts: with it, mtimes never repeat, and "same
    # mtime" means "not written since" (what Seen relies on). Only delete() writes it, so
    # an append dirties no page for it.
    conn.execute("CREATE TABLE IF NOT EXISTS clock (mtime INTEGER NOT NULL)")
    conn.execute("INSERT INTO clock SELECT 0 WHERE NOT EXISTS (SELECT 1 FROM clock)")


def _dictionary_v3(conn: sqlite3.Connection) -> None:
    """Bodies become zstd frames against the database's own dictionary (#26): the table that holds it."""
    # At most one row. `trained`: the newest seq when it was trained (rows up to it may be raw JSON, later ones
    # are frames); `packed`: the rows up to it are converted. The conversion runs after this step, a committed
    # batch at a time (_pack): a v2 flower refuses the file from this step on (user_version 3), and this one
    # reads raw rows and frames alike, so a kill at any point loses nothing and the next open resumes.
    conn.execute(
        "CREATE TABLE IF NOT EXISTS dictionary (id INTEGER PRIMARY KEY, data BLOB NOT NULL,"
        " trained INTEGER NOT NULL, packed INTEGER NOT NULL)"
    )


def _builtin_v4(conn: sqlite3.Connection) -> None:
    """New bodies are frames against flower's built-in dictionary until the database trains its own (#26)."""
    # Nothing to convert: a v3 file's rows (raw JSON, frames against its own dictionary) are read as they are, and
    # frames name their dictionary. The version alone is the step: a v3 flower reads no built-in frame, so it must
    # refuse the file (the "newer flower" error) once one may be in it.


def _repeats_v5(conn: sqlite3.Connection) -> None:
    """A long string a transcript repeats is stored once: a later entry refers to the earlier one (issue 35)."""
    # The writer's index of the strings of MIN_LENGTH bytes or more each transcript holds inline: where the first copy
    # is (its entry's seq, offset and length in that entry's stored JSON). Readers never read it: a body names what it
    # refers to (stores/repeats.py). A v4 flower cannot read such a body, so the version makes it refuse the file.
    conn.execute(
        "CREATE TABLE IF NOT EXISTS repeats (transcript INTEGER NOT NULL, digest BLOB NOT NULL, seq INTEGER NOT NULL,"
        " start INTEGER NOT NULL, length INTEGER NOT NULL, PRIMARY KEY (transcript, digest)) WITHOUT ROWID"
    )


MIGRATIONS: tuple[Migration, ...] = (_create_v1, _speed_v2, _dictionary_v3, _builtin_v4, _repeats_v5)
"""The schema steps, in order; ``PRAGMA user_version`` counts those applied. Append, never edit."""

_TRANSCRIPT = "SELECT id, mtime FROM transcripts WHERE project_key = ? AND session_id = ? AND subpath = ?"

# mtime = max(now, newest mtime ever given + 1), computed under the write lock (one statement
# with the upsert: each is a round trip per append): strictly increasing even across processes,
# deletions and a clock step back.
_TOUCH_TRANSCRIPT = """
INSERT INTO transcripts (project_key, session_id, subpath, mtime) VALUES (?, ?, ?,
    max(?, 1 + coalesce((SELECT max(mtime) FROM transcripts), 0), 1 + (SELECT mtime FROM clock)))
ON CONFLICT (project_key, session_id, subpath) DO UPDATE SET mtime = excluded.mtime
RETURNING id, mtime
"""

# Newest first from `before` on: the index on (transcript) ends with the rowid, so this walks it backwards.
_TAIL = """
SELECT e.seq, e.body FROM entries e
WHERE e.transcript = (SELECT id FROM transcripts WHERE project_key = ? AND session_id = ? AND subpath = '')
AND e.seq < ? ORDER BY e.seq DESC LIMIT ?
"""


_AFTER = """
SELECT e.seq, e.body FROM entries e
WHERE e.transcript = (SELECT id FROM transcripts WHERE project_key = ? AND session_id = ? AND subpath = '')
AND e.seq > ? ORDER BY e.seq
"""


_USAGE = """
SELECT t.session_id, count(e.seq), coalesce(sum(length(CAST(e.body AS BLOB))), 0), max(t.mtime)
FROM transcripts t LEFT JOIN entries e ON e.transcript = t.id
WHERE t.project_key = ? GROUP BY t.session_id
"""


def _delete(conn: sqlite3.Connection, project_key: str, session_id: str, subpath: str) -> None:
    """Delete a transcript (a main one: every subpath and the summary too), inside the caller's transaction."""
    # A main key matches every subpath of the session; a subpath only itself.
    where = "project_key = ? AND session_id = ?"
    params: tuple[str, ...] = (project_key, session_id)
    if subpath:
        where, params = where + " AND subpath = ?", (project_key, session_id, subpath)
    conn.execute(f"UPDATE clock SET mtime = max(mtime, (SELECT coalesce(max(mtime), 0) FROM transcripts WHERE {where}))", params)
    conn.execute(f"DELETE FROM entries WHERE transcript IN (SELECT id FROM transcripts WHERE {where})", params)
    if conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'repeats'").fetchone():  # v5 (a store of fewer steps)
        # A reference never leaves its transcript: the strings it shared go with it (issue 35).
        conn.execute(f"DELETE FROM repeats WHERE transcript IN (SELECT id FROM transcripts WHERE {where})", params)
    conn.execute(f"DELETE FROM transcripts WHERE {where}", params)
    if not subpath:
        conn.execute(f"DELETE FROM summaries WHERE {where}", params)


def _last_context(conn: sqlite3.Connection, project_key: str, session_id: str) -> int | None:
    """The context size of the session's last real model round, read backwards a page at a time (never the whole session)."""
    before = 1 << 62
    for limit in tail_pages():
        # Newest first; their bodies oldest first, with what they repeat put back (issue 35).
        rows, codec = _with_codec(_TAIL, (project_key, session_id, before, limit))(conn)
        found = context_of(decode_bodies([body for _, body in reversed(rows)], codec))
        if found is not None or len(rows) < limit:
            return found
        before = rows[-1][0]
    return None  # unreachable: tail_pages never ends


def _with_codec(sql: str, params: tuple[Any, ...]) -> Callable[[sqlite3.Connection], tuple[list[Any], Codec | None]]:
    """A read of rows (seq first, body last) with their repeated strings put back, and the dictionary that expands
    their bodies (read after them: a frame is written after its dictionary)."""
    def work(conn: sqlite3.Connection) -> tuple[list[Any], Codec | None]:
        rows = conn.execute(sql, params).fetchall()
        codec = _codec(conn)
        if not any(has_refs(r[-1]) for r in rows):
            return rows, codec
        bodies = resolved(conn, [r[-1] for r in rows], codec, [r[0] for r in rows])
        return [(*r[:-1], b) for r, b in zip(rows, bodies, strict=True)], codec

    return lambda conn: read_transaction(conn, work)


_NO_ROWS: tuple[list[Any], Codec | None] = ([], None)


def _pack(conn: sqlite3.Connection, batches: int | None = None) -> Codec | None:
    """Train the database's dictionary once it holds SAMPLES entries, then compress the raw rows stored before it,
    one committed batch at a time (at most `batches`); the dictionary, or None while there are too few entries."""

    if not conn.execute("SELECT 1 FROM sqlite_schema WHERE name = 'dictionary'").fetchone():
        return None  # a store made with fewer migrations (tests of the steps)
    # At every open: without the write lock when there is nothing to do (converted, or too few entries to train).
    done = conn.execute("SELECT trained <= packed FROM dictionary").fetchone()
    if done == (1,):
        return _codec(conn)
    if done is None and conn.execute(
            "SELECT count(*) FROM (SELECT 1 FROM entries WHERE typeof(body) = 'blob' LIMIT ?)", (SAMPLES,)).fetchone()[0] < SAMPLES:
        return None

    def trained() -> tuple[int, int] | None:
        row = conn.execute("SELECT trained, packed FROM dictionary").fetchone()
        if row is not None:
            return int(row[0]), int(row[1])
        stored = [b for (b,) in conn.execute(
            "SELECT body FROM entries WHERE typeof(body) = 'blob' ORDER BY seq LIMIT ?", (SAMPLES,))]
        if len(stored) < SAMPLES:
            return None
        ident, data = train(raw(stored, None))  # since v4 the samples are frames against the built-in dictionary
        (top,) = conn.execute("SELECT max(seq) FROM entries").fetchone()
        # Raw rows only ever precede frames (a v4 flower writes none, an older one cannot open the file): with none
        # among the oldest, there is nothing to convert. Frames against the built-in dictionary stay as they are (D2).
        packed = 0 if any(is_raw(b) for b in stored) else top
        conn.execute("INSERT INTO dictionary (id, data, trained, packed) VALUES (?, ?, ?, ?)", (ident, data, top, packed))
        return int(top), int(packed)

    marks = _in_transaction(conn, trained)
    if marks is None:
        return None
    codec = _codec(conn)
    assert codec is not None  # written above or by another process, never removed
    top, packed = marks

    def batch() -> int:
        # Read under the write lock: another process may be converting too (a frame is never packed twice).
        (done,) = conn.execute("SELECT packed FROM dictionary").fetchone()
        rows = conn.execute(
            "SELECT seq, body FROM entries WHERE seq > ? AND seq <= ? ORDER BY seq LIMIT ?", (done, top, PACK_BATCH)
        ).fetchall()
        conn.executemany(
            "UPDATE entries SET body = ? WHERE seq = ?",
            [(codec.pack(body), seq) for seq, body in rows if type(body) is bytes and is_raw(body)],
        )
        upto = int(rows[-1][0]) if rows else top
        conn.execute("UPDATE dictionary SET packed = max(packed, ?)", (upto,))
        return upto

    converted = packed < top
    while packed < top and (batches is None or batches > 0):
        packed = _in_transaction(conn, batch)
        batches = None if batches is None else batches - 1
    if converted and packed >= top:
        # The rows shrank in place (a page's free space, not free pages): rewritten once, the file gives back
        # what the raw rows held (#26). Once per database; a kill during it leaves the file as it was.
        conn.execute("VACUUM")
    return codec


def _repage(conn: sqlite3.Connection, own: bool) -> bool | None:
    """Rewrite a file of small pages into PAGE-byte ones once it is due (it has its `own` dictionary, or REPAGE_BYTES)
    and this connection has it to itself. True: its pages are PAGE bytes or larger now; False: not yet due, or another
    connection has the file open (try again at the next append); None: the disk refused the copy (at the next open)."""
    ((size,),), ((count,),) = conn.execute("PRAGMA page_size"), conn.execute("PRAGMA page_count")
    if size >= PAGE:
        return True
    if not own and size * count < REPAGE_BYTES:
        return False
    # A WAL file keeps its page size: the rewrite needs the file out of WAL, which SQLite grants only to a connection
    # that has it alone (it refuses at once, without waiting, while any other is open: another flower, the editor's
    # reads, the prefetch worker), then VACUUM, then back into WAL. A kill at any point loses nothing: VACUUM runs
    # under a rollback journal, which the next open rolls back, and every open puts the file back into WAL.
    conn.execute(f"PRAGMA busy_timeout = {REPAGE_WAIT_S * 1000:.0f}")
    try:
        if conn.execute("PRAGMA journal_mode = DELETE").fetchone()[0] != "delete":
            return False
        conn.execute(f"PRAGMA page_size = {PAGE:d}")
        conn.execute("VACUUM")
    except sqlite3.OperationalError as err:  # not alone (SQLITE_BUSY), or no room for the copy VACUUM writes
        busy = ((getattr(err, "sqlite_errorcode", None) or 0) & 0xFF) in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
        return False if busy else None
    finally:
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_S * 1000:.0f}")
        with contextlib.suppress(sqlite3.OperationalError):  # another connection came meanwhile: the next open does it
            conn.execute("PRAGMA journal_mode = WAL").fetchone()
    return bool(conn.execute("PRAGMA page_size").fetchone()[0] >= PAGE)


class SessionStoreError(FlowerError, ValueError):
    """The session database cannot be used as it is (e.g. it is not SQLite)."""


def _not_a_database(path: Path, err: sqlite3.Error) -> SessionStoreError:
    return SessionStoreError("db_not_sqlite", db=path, reason=err)


def _too_new(path: Path, version: int, known: int) -> SessionStoreError:
    return SessionStoreError("db_too_new", db=path, version=version, known=known)


def _write_refused(path: Path, err: sqlite3.Error) -> SessionStoreError | None:
    """What to tell the person when the disk refused a write (full, read-only); None for any other error."""
    code = (getattr(err, "sqlite_errorcode", None) or 0) & 0xFF  # the primary code of an extended one
    # ENOSPC is SQLITE_FULL; a write cut short otherwise (EFBIG past RLIMIT_FSIZE, a quota, EIO) is SQLITE_IOERR.
    if code in (sqlite3.SQLITE_FULL, sqlite3.SQLITE_IOERR):
        return SessionStoreError("db_full", db=path, reason=err)
    if code in (sqlite3.SQLITE_READONLY, sqlite3.SQLITE_CANTOPEN, sqlite3.SQLITE_PERM):
        return SessionStoreError("db_read_only", db=path, reason=err)
    return None


def _is_not_a_database(err: sqlite3.Error) -> bool:
    return getattr(err, "sqlite_errorcode", None) in (
        sqlite3.SQLITE_NOTADB,
        sqlite3.SQLITE_CORRUPT,
    )


def _key3(key: SessionKey) -> tuple[str, str, str]:
    # '' rather than NULL for the main transcript, so UNIQUE and '=' just work.
    return key["project_key"], key["session_id"], key.get("subpath") or ""


_PAGE = """
SELECT seq, transcript, body FROM entries WHERE transcript IN (SELECT value FROM json_each(?)) AND seq < ?
ORDER BY seq DESC LIMIT ?
"""

_TRANSCRIPTS = """
SELECT t.id, t.session_id, (SELECT count(*) FROM entries e WHERE e.transcript = t.id) FROM transcripts t
WHERE t.project_key = ? AND t.subpath = '' AND t.session_id IN (SELECT value FROM json_each(?)) ORDER BY t.id
"""

_COUNT = """
SELECT count(*) FROM transcripts t JOIN entries e ON e.transcript = t.id
WHERE t.project_key = ? AND t.session_id = ? AND t.subpath = ''
"""


def load_session(db: str, project_key: str, session_id: str) -> list[Any]:
    """A whole main transcript of the sessions.db at `db`, read-only ([] when none): picklable, for a worker process."""
    return SqliteSessionStore(db).load_sync({"project_key": project_key, "session_id": session_id}) or []


_STALE_SUMMARIES = """
SELECT t.id, t.session_id, t.mtime, s.data, s.folded FROM transcripts t
LEFT JOIN summaries s ON s.project_key = t.project_key AND s.session_id = t.session_id
WHERE t.project_key = ? AND t.subpath = '' AND (s.mtime IS NULL OR s.mtime != t.mtime)
"""


def _fold_summaries(conn: sqlite3.Connection, project_key: str) -> None:
    """Fold the entries appended since each main transcript's summary was last folded (v2)."""
    # Only the SDK asks for summaries (a wake's list_session_summaries): a command that reads records imports no SDK.
    from claude_agent_sdk import fold_session_summary

    # Every append that stores an entry moves its transcript's mtime: a summary stamped
    # with another mtime than its transcript's misses entries.
    for tid, sid, mtime, data, folded in conn.execute(_STALE_SUMMARIES, (project_key,)).fetchall():
        rows = conn.execute(
            "SELECT seq, body FROM entries WHERE transcript = ? AND seq > ? ORDER BY seq", (tid, folded or 0)
        ).fetchall()
        prev: SessionSummaryEntry | None = None
        if data is not None:
            prev = {"session_id": sid, "mtime": mtime, "data": json.loads(data)}
        key: SessionKey = {"project_key": project_key, "session_id": sid}
        codec = _codec(conn)
        bodies = resolved(conn, [r[1] for r in rows], codec, [r[0] for r in rows])
        summary = fold_session_summary(prev, key, decode_bodies(bodies, codec))
        # Stamped with the mtime list_sessions() reports, as the SDK requires.
        conn.execute(
            "INSERT OR REPLACE INTO summaries (project_key, session_id, mtime, data, folded) VALUES (?, ?, ?, ?, ?)",
            (project_key, sid, mtime, json.dumps(summary["data"]), rows[-1][0] if rows else folded or 0),
        )


def _in_transaction(conn: sqlite3.Connection, work: Callable[[], T]) -> T:
    """Run ``work()`` in one ``BEGIN IMMEDIATE`` transaction, committed before returning."""
    # IMMEDIATE takes the write lock up front, so concurrent processes queue here
    # instead of failing to upgrade a read lock later.
    conn.execute("BEGIN IMMEDIATE")
    try:
        result = work()
        conn.execute("COMMIT")
    except BaseException:
        if conn.in_transaction:  # a failed statement may already have ended it
            conn.execute("ROLLBACK")
        raise
    return result


_KNOWN = "SELECT digest, seq, start, length FROM repeats WHERE transcript = ? AND digest IN ({})"


def _shared(conn: sqlite3.Connection, tid: int, found: list[list[Span]], top: int) -> tuple[list[list[Cut]], list[tuple[Any, ...]]]:
    """Per body of the batch (its seq `top` + 1 + its place), the long strings it repeats from an earlier entry of the
    transcript, and the index rows of the strings it holds first (stores/repeats.py's `plan`)."""
    digests = sorted({d for spans_ in found for _, _, d in spans_})
    known: Known = {}
    for at in range(0, len(digests), 500):  # under SQLite's limit of bound parameters
        part = digests[at:at + 500]
        known.update((d, (s, a, n)) for d, s, a, n in conn.execute(_KNOWN.format(",".join("?" * len(part))), (tid, *part)))
    refs, held = plan(found, _still_held(conn, tid, known), range(top + 1, top + 1 + len(found)))
    return refs, [(tid, *h) for h in held]


def _still_held(conn: sqlite3.Connection, tid: int, known: Known) -> Known:
    """The indexed strings whose entry still holds them, checked byte for byte (by digest) before one is referred to."""
    # flower deletes whole transcripts only, but a file's rows can be deleted by hand (tests simulate a lagging mirror
    # so), and SQLite then gives a later entry the same seq: a reference is only ever made to bytes read just now.
    if not known:
        return known
    seqs = sorted({s for s, _, _ in known.values()})
    rows = conn.execute(f"SELECT seq, body FROM entries WHERE transcript = ? AND seq IN ({','.join('?' * len(seqs))})",
                        (tid, *seqs)).fetchall() if len(seqs) < 500 else []
    return still_held(known, texts(((s, b) for s, b in rows if type(b) is bytes), expander(_codec(conn))))


def _append(
    k3: tuple[str, str, str], uuids: list[str | None], bodies: list[bytes | str], seen: Seen | None,
    conn: sqlite3.Connection, found: list[list[Span]] | None = None,
) -> tuple[Seen | None, int, bool]:
    """Store the rows whose uuid is not stored under ``k3`` yet, in one committed transaction;
    return what is stored now, how many rows were stored, and whether the database has its own dictionary.
    ``found``: each body's long strings (stores/repeats.py), for a database that shares them (v5)."""

    def work() -> tuple[Seen | None, int, bool]:
        now = seen
        row = conn.execute(_TRANSCRIPT, k3).fetchone()
        if row is None:
            now = None
        elif now is None or (now.tid, now.mtime) != row:
            # mtime moves at every append and never repeats (see the clock table), so an
            # unchanged one means nobody wrote to the transcript since our last look.
            stored = conn.execute(
                "SELECT uuid FROM entries WHERE transcript = ? AND uuid IS NOT NULL", (row[0],)
            )
            now = Seen(row[0], row[1], {r[0] for r in stored})
        known = now.uuids if now is not None else set()
        take, added = fresh(uuids, known)
        if not take:
            return now, 0, False
        tid, mtime = conn.execute(_TOUCH_TRANSCRIPT, (*k3, int(time.time() * 1000))).fetchone()
        # Looked up under the write lock: another process may have trained it since our last append. Until then,
        # frames against the built-in dictionary (v4, #26): since v5 the one that holds the CLI's constant text.
        codec = _codec(conn)
        packer = codec or (builtin() if found is None else builtin_cli())
        kept = bodies if len(take) == len(bodies) else [bodies[i] for i in take]
        ids = uuids if kept is bodies else [uuids[i] for i in take]
        spans_ = None if found is None else found if kept is bodies else [found[i] for i in take]
        if not spans_ or not any(spans_):
            conn.executemany("INSERT INTO entries (transcript, uuid, body) VALUES (?, ?, ?)",
                             zip(itertools.repeat(tid), ids, packer.pack_all(kept)))
        else:
            # Seqs given, not drawn: an entry refers to an earlier one by its seq, maybe one of this batch (issue 35).
            (top,) = conn.execute("SELECT coalesce(max(seq), 0) FROM entries").fetchone()
            refs, held = _shared(conn, tid, spans_, top)
            conn.executemany("INSERT INTO entries (seq, transcript, uuid, body) VALUES (?, ?, ?, ?)",
                             zip(itertools.count(top + 1), itertools.repeat(tid), ids, stored_bodies(kept, refs, packer.pack_all)))
            conn.executemany("INSERT OR REPLACE INTO repeats VALUES (?, ?, ?, ?, ?)", held)  # a stale row replaced
        known |= added  # in place: on failure the caller drops this Seen altogether
        return Seen(tid, mtime, known), len(take), codec is not None

    return _in_transaction(conn, work)


class SqliteSessionStore:
    """A ``SessionStore`` in one SQLite file (WAL), shareable by several processes.

    Each call uses one plain ``sqlite3`` connection from a worker thread of the event loop's
    executor (``asyncio.to_thread``) and returns once its transaction is committed. The store
    starts no thread of its own, so an unclosed store (the SDK's protocol has no close) never
    keeps the process alive; its connection closes when the store is collected or at exit.
    """

    def __init__(self, path: str | os.PathLike[str], *, migrations: Sequence[Migration] = MIGRATIONS) -> None:
        """Remember ``path``; the database is opened on first use and brought to ``migrations``' version."""
        self.path = Path(path)
        self.migrations = tuple(migrations)
        self._conn: sqlite3.Connection | None = None
        self._closer: weakref.finalize[Any, Any] | None = None
        # One connection runs one transaction at a time. A thread lock, not an
        # asyncio one: a cancelled caller leaves its worker thread running on.
        self._lock = threading.Lock()
        # Per transcript key: its stored uuids, so that an append need not look them up in
        # the file (there is no index on them since v2). Only ever read under _lock.
        self._seen: dict[tuple[str, str, str], Seen] = {}
        self._raw: int | None = None
        """Rows in the file while it has no dictionary of its own, None until counted."""
        self._small = False
        """The file has pages smaller than PAGE (read at open): `_repage` is tried at every append that stores rows."""
        self.refused: SessionStoreError | None = None
        """The last append the disk refused (full, read-only), a new object each time: the SDK only reports its text."""

    async def __aenter__(self) -> SqliteSessionStore:
        await self._call(lambda conn: None)
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    async def open(self) -> None:
        """Nothing to open ahead: the file is made by the first write, which says what the disk refused (D2)."""

    async def close(self) -> None:
        """Close the connection (a later call reopens it)."""
        await asyncio.to_thread(self._close)

    async def rest(self) -> None:
        """Close the connection while no wake writes, and with it the read connections SQLite still holds open.

        A read-only connection (a status, a history page) closed while this one is open keeps its descriptor open:
        SQLite's unix VFS defers the close(2) while any connection of the process holds a lock on the file (this one
        does, in WAL mode, all its life), since closing any descriptor drops every POSIX lock the process holds on
        it; the next read reuses it. So an engine serving a folder held as many descriptors of sessions.db as reads
        it ever ran at once (3 to 6 at soak.py's checkpoints), until this connection closed (issue 35).
        """
        await self.close()

    def _close(self) -> None:
        with self._lock:
            if self._closer is not None:
                self._closer()  # closes the connection once, and forgets it at exit
            self._conn = self._closer = None
            self._seen.clear()

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(
                self.path, timeout=BUSY_TIMEOUT_S, isolation_level=None, check_same_thread=False
            )
        except sqlite3.Error as err:
            raise SessionStoreError("db_cannot_open", db=self.path, reason=err) from err
        try:
            self._prepare(conn)
        except BaseException as err:
            conn.close()
            if isinstance(err, sqlite3.Error) and _is_not_a_database(err):
                raise _not_a_database(self.path, err) from err
            raise
        return conn

    def _prepare(self, conn: sqlite3.Connection) -> None:
        known = len(self.migrations)
        # Reading the header rejects a non-database, and the version a newer
        # flower's file, before anything that could write to the file or beside it.
        conn.execute("PRAGMA schema_version").fetchone()
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        if version > known:
            raise _too_new(self.path, version, known)
        # Only takes effect while the file is new. Every body is a frame (#26), 1/5-1/7 of its JSON, and each of the
        # file's nine tables and indexes takes at least a page: real-CLI sessions of 24 and 46 entries take 0.48x
        # and 0.37x their JSONL in 4 KB pages, 0.23x and 0.22x in 512 B pages (benchmarks/store.py). But pages under
        # 4 KB make large appends slower (1 KB all along: the benchmark's 20k-entry appends ~20%), so a file is
        # rewritten into 4 KB pages (_repage) once it trains its own dictionary or reaches REPAGE_BYTES; the 20k
        # session pays ~20 ms for it, once. Files made with 4 KB or 16 KB pages (earlier flowers) keep them.
        conn.execute(f"PRAGMA page_size = {SMALL_PAGE:d}")
        conn.execute("PRAGMA journal_mode = WAL").fetchone()
        # Under WAL, NORMAL cannot corrupt the file; a power cut may lose the
        # last commits, which the CLI's own JSONL still holds (D2).
        conn.execute("PRAGMA synchronous = NORMAL")
        if version < known:
            self._migrate(conn, known)
        # Resumes a conversion cut short (a kill, a full disk), or trains the dictionary of a database written
        # before it had one (#26).
        # A rewrite refused earlier (the file was not alone, the disk full), or cut short by a kill, is tried again here.
        self._small = _repage(conn, _pack(conn) is not None) is False

    def _migrate(self, conn: sqlite3.Connection, known: int) -> None:
        def migrate() -> None:
            # Another process may have migrated since the first look: read again under the lock.
            (now,) = conn.execute("PRAGMA user_version").fetchone()
            if now > known:
                raise _too_new(self.path, now, known)
            for step in self.migrations[now:]:
                step(conn)
            conn.execute(f"PRAGMA user_version = {known:d}")

        _in_transaction(conn, migrate)

    def _run(self, work: Callable[[sqlite3.Connection], T]) -> T:
        with self._lock:
            if self._conn is None:
                conn = self._connect()
                # An unclosed store still closes its connection when it is collected
                # or the interpreter exits (checkpointing the WAL, no ResourceWarning).
                self._conn, self._closer = conn, weakref.finalize(self, conn.close)
            return work(self._conn)

    async def _call(self, work: Callable[[sqlite3.Connection], T]) -> T:
        return await asyncio.to_thread(self._run, work)

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Persist ``entries`` in order, skipping uuids already stored for ``key``; committed on return."""
        if not entries:
            return
        uuids = [u if isinstance(u := e.get("uuid"), str) else None for e in entries]
        # Encoded here, not in the worker: see load(). D6: no API key is stored, e.g. one quoted in
        # an API error the CLI records as assistant text.
        bodies = redact_encoded(encode_all(entries))
        k3 = _key3(key)
        # The long strings each entry holds, found before the write lock is taken (issue 35); v5 stores share them.
        # (Filtered here: a call per entry of the 20k-entry benchmark costs more than the few long ones' search.)
        found = [spans(e, b) if type(b) is bytes and len(b) >= MIN_LENGTH else [] for e, b in zip(entries, bodies, strict=True)] \
            if len(self.migrations) >= 5 else None

        def work(conn: sqlite3.Connection) -> None:
            seen = self._seen.pop(k3, None)  # gone if the transaction fails
            now, stored, own = _append(k3, uuids, bodies, seen, conn, found)
            if now is not None:
                self._seen[k3] = now
            if stored and not own:
                # Counted from the file once, then by this process: the dictionary is trained when the
                # database holds enough entries (one append waits about a second, once per database).
                if self._raw is None:
                    (self._raw,) = conn.execute("SELECT count(*) FROM entries WHERE typeof(body) = 'blob'").fetchone()
                else:
                    self._raw += stored
                if self._raw >= SAMPLES and _pack(conn) is not None:
                    self._raw, own = 0, True
            if stored and self._small:
                # Committed first. A rewrite refused because another connection is open costs the append ~0.02 ms,
                # and is tried again at the next append that stores rows (or the next open).
                self._small = _repage(conn, own) is False

        try:
            await self._call(work)
        except sqlite3.Error as err:
            refused = _write_refused(self.path, err)
            if refused is None:
                raise
            self.refused = refused
            raise refused from err
        except SessionStoreError as err:  # e.g. the file cannot even be opened for writing
            self.refused = err
            raise

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """All entries of ``key`` in append order, or None if it was never written."""
        k3 = _key3(key)

        def fetch(conn: sqlite3.Connection) -> tuple[list[bytes | str], Codec | None]:
            rows, codec = _with_codec(_LOAD_SEQS, k3)(conn)
            return [r[1] for r in rows], codec

        # Read and decoded on the caller's thread when the connection is open and idle: the
        # entries' objects are built about twice as fast there as in a worker thread (measured
        # with orjson and the stdlib alike, CPython 3.11), and the GIL would keep the event
        # loop waiting for the worker all the same. A WAL read waits for no writer.
        conn = self._conn
        if conn is not None and self._lock.acquire(blocking=False):
            try:
                # All rows first, then decoded: twice as fast as decoding each as it is fetched (measured on
                # benchmarks/store.py's session), and since #26 the bodies held meanwhile are frames, 1/7 of the JSON.
                bodies, codec = fetch(conn)
            finally:
                self._lock.release()
            entries = decode_bodies(bodies, codec)
        else:
            bodies, codec = await self._call(fetch)
            entries = decode_bodies(bodies, codec)
        # A transcript row exists only once an entry was stored in it.
        return entries or None

    async def last_context(self, project_key: str, session_id: str) -> int | None:
        """The session's last-round context size (its last real assistant entry's usage), read from the end; None if unknown."""
        # On a read-only connection of its own, as every read a view makes: a process that only reads (the editor's
        # history) then holds no connection open, which would keep a small-paged file from its rewrite (_repage).
        return await asyncio.to_thread(self.last_context_sync, project_key, session_id)

    async def latest_seq(self, project_key: str, session_id: str, skip: int = 0) -> int:
        """The append order (seq) of the session's newest entry, or of the one `skip` places before it; 0 if none."""
        rows = await self._read(_BEFORE_NEWEST, (project_key, session_id, skip)) if skip else \
            await self._read(_LATEST, (project_key, session_id))
        return int(rows[0][0])

    async def entries_after(self, project_key: str, session_id: str, seq: int) -> list[SessionStoreEntry]:
        """The session's entries appended after ``seq`` (see ``latest_seq``), in append order."""
        rows, codec = await self._call(_with_codec(_AFTER, (project_key, session_id, seq)))
        return decode_bodies([r[1] for r in rows], codec)

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """Main transcripts of ``project_key`` with their mtimes (epoch ms)."""
        rows = await self._read(
            "SELECT session_id, mtime FROM transcripts WHERE project_key = ? AND subpath = ''",
            (project_key,),
        )
        return [{"session_id": sid, "mtime": mtime} for sid, mtime in rows]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The folded summaries of the main transcripts of ``project_key``."""
        def work(conn: sqlite3.Connection) -> list[Any]:
            if conn.execute(_STALE_SUMMARIES, (project_key,)).fetchone() is not None:
                _in_transaction(conn, lambda: _fold_summaries(conn, project_key))
            return conn.execute(
                "SELECT session_id, mtime, data FROM summaries WHERE project_key = ?", (project_key,)
            ).fetchall()

        rows = await self._call(work)
        return [{"session_id": sid, "mtime": mtime, "data": json.loads(data)} for sid, mtime, data in rows]

    async def delete(self, key: SessionKey) -> None:
        """Delete ``key``; a main key also deletes its subkeys and summary."""
        k3 = _key3(key)
        await self._call(lambda conn: _in_transaction(conn, lambda: _delete(conn, *k3)))

    async def delete_sessions(self, project_key: str, session_ids: Sequence[str]) -> None:
        """Delete these sessions whole (subkeys and summaries too), in one transaction."""
        gone = set(session_ids)

        def work(conn: sqlite3.Connection) -> None:
            for sid in gone:
                _delete(conn, project_key, sid, "")
            for k3 in [k for k in self._seen if k[0] == project_key and k[1] in gone]:
                del self._seen[k3]

        await self._call(lambda conn: _in_transaction(conn, lambda: work(conn)))

    async def reclaim(self) -> None:
        """Give the space of deleted rows back to the disk: VACUUM, then the WAL truncated (in the worker thread, #26)."""
        def work(conn: sqlite3.Connection) -> None:
            # A full VACUUM: the file was made with auto_vacuum off, and switching it on needs one anyway. It rewrites
            # the file and needs its size free again on disk; a kill during it leaves the file as it was.
            conn.execute("VACUUM")
            # VACUUM wrote the new pages through the WAL: truncated, the -wal file no longer holds them twice.
            conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()

        await self._call(work)

    async def usage(self, project_key: str) -> list[SessionUsage]:
        """Per session of `project_key`: its entries (subkeys included), their bytes as stored, its last write."""
        rows = await asyncio.to_thread(self._read_view, _USAGE, (project_key,))
        return [SessionUsage(str(sid), int(n), int(size), int(mtime)) for sid, n, size, mtime in rows]

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """Subpaths (e.g. subagent transcripts) stored under a session."""
        rows = await self._read(
            "SELECT subpath FROM transcripts WHERE project_key = ? AND session_id = ? AND subpath != '' ORDER BY id",
            (key["project_key"], key["session_id"]),
        )
        return [r[0] for r in rows]

    async def _read(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        return await self._call(lambda conn: conn.execute(sql, params).fetchall())

    # -- reads for a view (History): read-only connections in worker threads, never creating the file ------------
    async def newest_seq(self) -> int:
        """The highest entry position of the whole store, 0 when there is none (fast: the rowid's maximum)."""
        rows = await asyncio.to_thread(self._read_view, "SELECT coalesce(max(seq), 0) FROM entries", ())
        return int(rows[0][0]) if rows else 0

    async def transcripts(self, project_key: str, session_ids: Sequence[str]) -> list[tuple[int, str, int]]:
        """(row id, session id, entry count) of the main transcripts of these sessions, in the order first stored."""
        rows = await asyncio.to_thread(self._read_view, _TRANSCRIPTS, (project_key, json.dumps(list(session_ids))))
        return [(int(t), str(sid), int(n)) for t, sid, n in rows]

    async def page(self, transcripts: Sequence[int], before: int, limit: int) -> list[tuple[int, int, Any]]:
        """(seq, transcript row id, entry) of these transcripts' entries below `before`, newest first, at most `limit`."""
        def work() -> list[tuple[int, int, Any]]:
            params = (json.dumps(list(transcripts)), before, limit)
            rows, codec = self._read_view_with(_with_codec(_PAGE, params), _NO_ROWS)
            return [(r[0], r[1], e) for r, e in zip(rows, decode_bodies([r[2] for r in rows], codec), strict=True)]

        return await asyncio.to_thread(work)

    async def count(self, project_key: str, session_id: str) -> int:
        """How many entries a session's main transcript stores."""
        rows = await asyncio.to_thread(self._read_view, _COUNT, (project_key, session_id))
        return int(rows[0][0]) if rows else 0

    async def session(self, project_key: str, session_id: str) -> list[Any]:
        """A session's whole main transcript ([] when none), read and decoded in a worker thread."""
        return await asyncio.to_thread(load_session, str(self.path), project_key, session_id)

    def loader(self) -> Callable[[str, str], list[Any]] | None:
        """`session` for a worker process (the pruner holds the GIL for seconds of a large session): it reads the file itself."""
        return functools.partial(load_session, str(self.path))

    def has_session_sync(self, project_key: str, session_id: str) -> bool:
        """Whether a main transcript is stored for the session (sync, read-only)."""
        sql = "SELECT 1 FROM transcripts WHERE project_key = ? AND session_id = ? AND subpath = ''"
        return bool(self._read_only(sql, (project_key, session_id)))

    def load_sync(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """``load`` for synchronous callers (a status answered at once): read-only, never creates the file."""
        rows, codec = self._read_only_with(_with_codec(_LOAD_SEQS, _key3(key)), _NO_ROWS)
        return decode_bodies([r[1] for r in rows], codec) if rows else None

    def size_on_disk(self) -> int:
        """Bytes sessions.db and its -wal take on disk now (0 before the first write); never opens the file."""
        # Not the -shm: SQLite's 32 KB index of the WAL, which holds no entry, and which a read-only reader (a
        # status) creates and cannot remove, so counting it made the same store's size depend on who read it last.
        total = 0
        for name in (self.path.name, self.path.name + "-wal"):
            try:
                total += (self.path.parent / name).stat().st_size
            except FileNotFoundError:  # none yet, or the WAL just checkpointed away
                pass
        return total

    def last_context_sync(self, project_key: str, session_id: str) -> int | None:
        """``last_context`` for synchronous callers (a status answered at once): read-only, never creates the file."""
        return self._read_only_with(lambda conn: _last_context(conn, project_key, session_id), None)

    def _read_view(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """`_read_only` for a view: a file that is no database is said as one a view cannot read, left as it is."""
        rows: list[Any] = self._read_view_with(lambda conn: conn.execute(sql, params).fetchall(), [])
        return rows

    def _read_view_with(self, work: Callable[[sqlite3.Connection], T], empty: T) -> T:
        """`_read_only_with` for a view (see `_read_view`)."""
        try:
            return self._read_only_with(work, empty)
        except SessionStoreError as err:
            if err.key != "db_not_sqlite":
                raise
            raise SessionStoreError("db_unreadable", db=self.path, reason=err.said.fields.get("reason")) from err

    def _read_only(self, sql: str, params: tuple[Any, ...]) -> list[Any]:
        """The rows of one query on a read-only connection; none while no store was written."""
        rows: list[Any] = self._read_only_with(lambda conn: conn.execute(sql, params).fetchall(), [])
        return rows

    def _read_only_with(self, work: Callable[[sqlite3.Connection], T], empty: T) -> T:
        """``work`` on a read-only connection; ``empty`` while no store was written."""
        if not self.path.exists():
            return empty
        # mode=ro: never creates the file, never writes to it. But on a WAL file with no -wal beside it (no writer has it
        # open: the last one checkpointed and removed it), a mode=ro reader creates the -wal and -shm and cannot remove
        # them, so `flower status` left files behind (issue 31: a read-only command creates none). Then the file is
        # read as immutable, which opens nothing beside it: all it holds is in the main file, and a writer starting
        # meanwhile writes to a new -wal, not to the main file, until a checkpoint far later than this read.
        wal = self.path.with_name(self.path.name + "-wal")
        uri = self.path.resolve().as_uri() + ("?mode=ro" if wal.exists() else "?mode=ro&immutable=1")
        try:
            conn = sqlite3.connect(uri, uri=True, timeout=BUSY_TIMEOUT_S)
        except sqlite3.Error as err:
            raise SessionStoreError("db_cannot_open", db=self.path, reason=err) from err
        try:
            (version,) = conn.execute("PRAGMA user_version").fetchone()
            if version > len(self.migrations):
                raise _too_new(self.path, version, len(self.migrations))
            return work(conn)
        except sqlite3.OperationalError as err:
            if "no such table" in str(err):  # an empty file: no store written yet
                return empty
            raise
        except sqlite3.DatabaseError as err:
            if _is_not_a_database(err):
                raise _not_a_database(self.path, err) from err
            if isinstance(err, sqlite3.OperationalError) and "locked" in str(err):
                raise
            raise SessionStoreError("db_unreadable", db=self.path, reason=err) from err
        finally:
            conn.close()
