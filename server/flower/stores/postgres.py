"""flower's PostgreSQL ``SessionStore`` on asyncpg, shared by every machine of a team (DESIGN D9).

One schema (default ``flower``) holds the transcripts, their entries (the SDK's JSON as written, never altered:
D2), the summaries folded on demand, and the team tables the shared backend (stores/shared.py) keeps the
lineage, manifest rows and lock holders in. A batch is one transaction keyed by a client token, and entries by
their uuid, so a batch re-sent after a lost commit is stored once. During an outage appends queue in memory, in
order, and are written when the database answers again (the CLI's own JSONL still holds them if this process dies).
"""

from __future__ import annotations

import asyncio
import atexit
import functools
import json
import logging
import threading
import time
import uuid as uuidlib
from collections import deque
from collections.abc import Awaitable, Callable, Mapping, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, TypeAlias, TypeVar, cast

import asyncpg
from asyncpg import exceptions as pgerr
from asyncpg.pool import PoolConnectionProxy

from ..core.context import context_of, tail_pages
from ..core.errors import FlowerError
from ..core.redact import redact_encoded
from ..core.shared import is_postgres_url, safe_url
from .base import SessionUsage
from .bodies import PACK_BATCH, SAMPLES, Codec, builtin_cli, codec, encode_all, expander, is_raw, known, raw, train
from .repeats import MIN_LENGTH, Known, Span, has_refs, plan, referred, resolve, spans, still_held, stored_bodies, texts
from .sqlite import decode_bodies
from .uuids import Seen, fresh

if TYPE_CHECKING:
    from .base import SessionKey, SessionListSubkeysKey, SessionStoreEntry, SessionStoreListEntry, SessionSummaryEntry

__all__ = ["SCHEMA_VERSION", "PostgresSessionStore", "StoreError", "StoreOffline", "is_postgres_url", "safe_url"]

log = logging.getLogger(__name__)
T = TypeVar("T")
Conn: TypeAlias = "asyncpg.Connection[Any] | PoolConnectionProxy[Any]"

SCHEMA_VERSION = 6
"""The version of the tables below; a database marked with a higher one was set up by a newer flower.

v2 added `changes`, v3 `task_files` and `task_files_seen` (the task's files travel with it) and `dictionary`
(bodies as zstd frames); every statement of `_SCHEMA` is idempotent, so running it again is the migration. v3's
conversion of the rows stored before the dictionary runs after it, a committed batch at a time (`_pack`): resumed at
the next open if cut short, every row readable meanwhile. v4: new bodies are frames against flower's built-in
dictionary until the database trains its own (frames name theirs): no table changes, nothing to convert; the version
makes a v3 flower, which reads no built-in frame, refuse the database. v5 added `sentences` (a sentence said at wake is
kept until all three places have it, issue 31). v6 (issue 35): a long string a transcript repeats is stored once
(`repeats`, stores/repeats.py), new bodies are frames against the built-in dictionary of the CLI's constant text until
the database trains its own (v4-v5's frames name bodies.zdict and are read as they are), and the unique index on
(transcript, uuid) is gone: a writer checks uuids under the transcript's row lock (stores/uuids.py). A v5 flower reads
no reference, and its insert needs that index: the version makes it refuse the database."""
OUTAGE_WAIT_S = 45.0
"""How long an append waits for the database before leaving its batch queued (under the SDK's 60 s send timeout)."""
CONNECT_TIMEOUT_S = 10.0
READ_WAIT_S = 10.0
"""How long a view's read (a history page, a count) waits out an outage before it fails with StoreOffline."""

_SCHEMA = """
CREATE SCHEMA IF NOT EXISTS {s};
CREATE TABLE IF NOT EXISTS {s}.meta (key text PRIMARY KEY, value text NOT NULL);
CREATE TABLE IF NOT EXISTS {s}.transcripts (
    id          bigserial PRIMARY KEY,
    project_key text NOT NULL,
    session_id  text NOT NULL,
    subpath     text NOT NULL,          -- '' for the main transcript
    mtime       bigint NOT NULL,        -- storage write time, Unix epoch ms; moves at every append that stores
    UNIQUE (project_key, session_id, subpath)
);
CREATE TABLE IF NOT EXISTS {s}.entries (
    seq        bigserial NOT NULL,      -- append order, across processes (v1-v5: the primary key)
    transcript bigint NOT NULL REFERENCES {s}.transcripts ON DELETE CASCADE,
    uuid       text,                    -- since v6 only one that is no canonical UUID (see uid)
    plain      boolean NOT NULL,        -- body is the stdlib's JSON (orjson could not encode the entry)
    body       bytea NOT NULL           -- the entry's JSON as written (D2); since v3 its zstd frame (stores/bodies.py)
);
-- Stored out of line, not compressed again: pglz made appends 2.4x and loads 3x slower for 1.6x less disk
-- (benchmarks/store.py), and since v3 a body is a zstd frame (stores/bodies.py).
ALTER TABLE {s}.entries ALTER COLUMN body SET STORAGE EXTERNAL;
CREATE INDEX IF NOT EXISTS entries_by_transcript ON {s}.entries (transcript, seq);
-- v6 (issue 35): a row's own cost. For benchmarks/store.py's 20k-entry session the table took 0.241x the CLI's JSONL,
-- its bodies 0.142x, and the rest was 200 bytes a row: uuids are kept unique by the writer under the transcript's row
-- lock (stores/uuids.py), not by an index (1.2 MB); seq is drawn from its sequence, never given twice, and every read
-- goes by (transcript, seq), so seq alone needs no index either (0.5 MB); a canonical uuid takes 16 bytes, not 37.
DROP INDEX IF EXISTS {s}.entries_uuid;
ALTER TABLE {s}.entries DROP CONSTRAINT IF EXISTS entries_pkey;
ALTER TABLE {s}.entries ADD COLUMN IF NOT EXISTS uid uuid;
CREATE TABLE IF NOT EXISTS {s}.batches (token uuid PRIMARY KEY, at timestamptz NOT NULL DEFAULT now());
CREATE TABLE IF NOT EXISTS {s}.summaries (
    project_key text NOT NULL,
    session_id  text NOT NULL,
    mtime       bigint NOT NULL,
    data        text NOT NULL,          -- SDK-owned, persisted verbatim
    folded      bigint NOT NULL,        -- the last entry seq folded in
    PRIMARY KEY (project_key, session_id)
);
CREATE TABLE IF NOT EXISTS {s}.lineages (
    project    text PRIMARY KEY,        -- the workspace identity (D9)
    data       jsonb NOT NULL,          -- the S5 shape: workspace (the last writer's path), woke, steps
    host       text NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now()
);
CREATE TABLE IF NOT EXISTS {s}.manifest (
    id      bigserial PRIMARY KEY,
    project text NOT NULL,
    run     text NOT NULL,              -- one writer's run mark (S8)
    rows    jsonb NOT NULL,
    UNIQUE (project, run)
);
CREATE TABLE IF NOT EXISTS {s}.holders (
    project     text PRIMARY KEY,       -- who holds the advisory lock of the identity (D5, D9)
    backend_pid integer NOT NULL,       -- the lock connection's server pid: the row counts while it holds the lock
    host       text NOT NULL,
    pid        integer NOT NULL,
    started_at double precision NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.task_files (
    project    text NOT NULL,           -- the task's 需求.md, 目标.md, notes/handoff-*.md (v3, issue #22)
    name       text NOT NULL,           -- relative to the workspace; notes/archive/<stamp>/… after `flower --new`
    body       bytea NOT NULL,
    sha        text NOT NULL,
    host       text NOT NULL,           -- the machine that wrote it last
    updated_at double precision NOT NULL,
    PRIMARY KEY (project, name)
);
CREATE TABLE IF NOT EXISTS {s}.task_files_seen (
    project text NOT NULL,
    place   text NOT NULL,              -- host:workspace path
    name    text NOT NULL,
    sha     text NOT NULL,              -- the copy last seen there
    PRIMARY KEY (project, place, name)
);
CREATE TABLE IF NOT EXISTS {s}.changes (
    project    text PRIMARY KEY,        -- v2: bumped with every write of the identity's lineage, manifest or wake mark
    n          bigint NOT NULL          -- the records' change stamp: a status re-reads them only when it moved
);
CREATE TABLE IF NOT EXISTS {s}.dictionary (
    one        boolean PRIMARY KEY DEFAULT true CHECK (one),  -- v3: at most one row
    id         bigint NOT NULL,         -- zstd's dictionary id, named in every frame
    data       bytea NOT NULL,          -- trained from the database's first entries (stores/bodies.py)
    trained    bigint NOT NULL,         -- the newest seq when it was trained: rows up to it may be raw JSON
    packed     bigint NOT NULL          -- the rows up to it are converted to frames
);
CREATE TABLE IF NOT EXISTS {s}.sentences (
    project    text PRIMARY KEY,        -- v5: the sentences said at wake not yet in all three places (core/sentences.py)
    data       jsonb NOT NULL
);
CREATE TABLE IF NOT EXISTS {s}.repeats (
    transcript bigint NOT NULL REFERENCES {s}.transcripts ON DELETE CASCADE,  -- v6: a writer's index (issue 35)
    digest     bytea NOT NULL,          -- of a long string the transcript holds inline (stores/repeats.py)
    seq        bigint NOT NULL,         -- the entry holding it, where in that entry's stored JSON, how long
    start      integer NOT NULL,
    length     integer NOT NULL,
    PRIMARY KEY (transcript, digest)
);
CREATE TABLE IF NOT EXISTS {s}.wakes (
    project    text PRIMARY KEY,        -- a wake of the identity is under way, or was cut off (the shared wake.json)
    host       text NOT NULL,
    pid        integer NOT NULL,
    started_at double precision NOT NULL
);
"""

_LOAD = """
SELECT e.seq, e.transcript, e.plain, e.body FROM {s}.transcripts t JOIN {s}.entries e ON e.transcript = t.id
WHERE t.project_key = $1 AND t.session_id = $2 AND t.subpath = $3 ORDER BY e.seq
"""

# Newest first from `before` on, along the (transcript, seq) index.
_TAIL = """
SELECT e.seq, e.transcript, e.plain, e.body FROM {s}.entries e
WHERE e.transcript = (SELECT id FROM {s}.transcripts WHERE project_key = $1 AND session_id = $2 AND subpath = '')
AND e.seq < $3 ORDER BY e.seq DESC LIMIT $4
"""

_LATEST = """
SELECT coalesce(max(e.seq), 0) FROM {s}.entries e
WHERE e.transcript = (SELECT id FROM {s}.transcripts WHERE project_key = $1 AND session_id = $2 AND subpath = '')
"""

_BEFORE_NEWEST = """
SELECT coalesce((SELECT e.seq FROM {s}.entries e
WHERE e.transcript = (SELECT id FROM {s}.transcripts WHERE project_key = $1 AND session_id = $2 AND subpath = '')
ORDER BY e.seq DESC LIMIT 1 OFFSET $3), 0)
"""

_AFTER = """
SELECT e.seq, e.transcript, e.plain, e.body FROM {s}.entries e
WHERE e.transcript = (SELECT id FROM {s}.transcripts WHERE project_key = $1 AND session_id = $2 AND subpath = '')
AND e.seq > $3 ORDER BY e.seq
"""

_TOUCH = """
INSERT INTO {s}.transcripts AS t (project_key, session_id, subpath, mtime) VALUES ($1, $2, $3, $4)
ON CONFLICT (project_key, session_id, subpath) DO UPDATE SET mtime = t.mtime RETURNING id, mtime
"""

_UUIDS = "SELECT coalesce(uid::text, uuid) FROM {s}.entries WHERE transcript = $1 AND (uid IS NOT NULL OR uuid IS NOT NULL)"

# A uuid PostgreSQL writes back as it was given (lowercase, hyphenated) is stored in `uid` (v6), any other in `uuid`.
_CANONICAL = "'^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$'"
_UUID_COLUMNS = f"CASE WHEN u ~ {_CANONICAL} THEN NULL ELSE u END, CASE WHEN u ~ {_CANONICAL} THEN u::uuid END"

# The rows, and the transcript's mtime moved (it moves at every append that stores, never to a value it had: see
# stores/uuids.py), in one statement.
_INSERT = """
WITH added AS (
    INSERT INTO {s}.entries (transcript, uuid, uid, plain, body)
    SELECT $1, {uuids}, p, b FROM unnest($2::text[], $3::boolean[], $4::bytea[]) WITH ORDINALITY AS x(u, p, b, o) ORDER BY o
)
UPDATE {s}.transcripts SET mtime = greatest($5::bigint, mtime + 1) WHERE id = $1 RETURNING mtime
""".replace("{uuids}", _UUID_COLUMNS)

# A batch holding long strings (issue 35): its seqs, drawn before its rows are written (an entry may refer to one of
# the same batch), and what the transcript's index knows of its strings' digests.
_DRAW = """
SELECT array(SELECT nextval(pg_get_serial_sequence('{s}.entries', 'seq')) FROM generate_series(1, $3)),
       k.d, k.q, k.a, k.n
FROM (SELECT array_agg(digest) AS d, array_agg(seq) AS q, array_agg(start) AS a, array_agg(length) AS n
      FROM {s}.repeats WHERE transcript = $1 AND digest = any($2::bytea[])) k
"""

_HOLDERS = "SELECT seq, body FROM {s}.entries WHERE transcript = $1 AND seq = any($2::bigint[]) AND NOT plain"

_INSERT_SHARED = """
WITH added AS (
    INSERT INTO {s}.entries (seq, transcript, uuid, uid, plain, body)
    SELECT q, $1, {uuids}, p, b FROM unnest($6::bigint[], $2::text[], $3::boolean[], $4::bytea[]) AS x(q, u, p, b)
), indexed AS (
    INSERT INTO {s}.repeats (transcript, digest, seq, start, length)
    SELECT $1, d, q, a, n FROM unnest($7::bytea[], $8::bigint[], $9::integer[], $10::integer[]) AS y(d, q, a, n)
    ON CONFLICT (transcript, digest) DO UPDATE SET seq = excluded.seq, start = excluded.start, length = excluded.length
)
UPDATE {s}.transcripts SET mtime = greatest($5::bigint, mtime + 1) WHERE id = $1 RETURNING mtime
""".replace("{uuids}", _UUID_COLUMNS)

# Along the (transcript, seq) index: a reference never leaves its transcript.
_BY_SEQ = """
SELECT seq, body FROM {s}.entries WHERE transcript = any($2::bigint[]) AND seq = any($1::bigint[]) AND NOT plain
"""

# The newest entries of several transcripts below a seq: each transcript's along its index, then merged (v6: no index
# on seq alone).
_PAGE = """
SELECT e.seq, e.transcript, e.plain, e.body FROM unnest($1::bigint[]) AS t(id) CROSS JOIN LATERAL (
    SELECT seq, transcript, plain, body FROM {s}.entries WHERE transcript = t.id AND seq < $2 ORDER BY seq DESC LIMIT $3
) e ORDER BY e.seq DESC LIMIT $3
"""

_NEWEST = """
SELECT coalesce(max(e.seq), 0) FROM {s}.transcripts t CROSS JOIN LATERAL (
    SELECT seq FROM {s}.entries WHERE transcript = t.id ORDER BY seq DESC LIMIT 1
) e
"""

_STALE = """
SELECT t.id, t.session_id, t.mtime, s.data, s.folded FROM {s}.transcripts t
LEFT JOIN {s}.summaries s ON s.project_key = t.project_key AND s.session_id = t.session_id
WHERE t.project_key = $1 AND t.subpath = '' AND (s.mtime IS NULL OR s.mtime != t.mtime)
"""

# Errors that mean "the database is not there right now" (refused, restarting, shut down, connection lost),
# as opposed to a wrong URL, password or permission: those are said once, at open, and never waited for.
_TRANSIENT = (OSError, asyncio.TimeoutError, pgerr.PostgresConnectionError, pgerr.OperatorInterventionError,
              pgerr.InterfaceError)


class StoreError(FlowerError):
    """The store URL cannot be used as it is: said in one line, before anything is written."""


class StoreOffline(StoreError):
    """The database did not answer within the wait."""


def _quote_ident(name: str) -> str:
    return '"' + name.replace('"', '""') + '"'


def _classify(url: str, exc: BaseException) -> StoreError:
    """The one line a person reads for a failure to open the store."""
    where = safe_url(url)
    if isinstance(exc, (pgerr.InvalidPasswordError, pgerr.InvalidAuthorizationSpecificationError)):
        return StoreError("store_auth", url=where, reason=_reason(exc))
    if isinstance(exc, pgerr.InvalidCatalogNameError):
        return StoreError("store_no_database", url=where, reason=_reason(exc))
    if isinstance(exc, pgerr.InsufficientPrivilegeError):
        return StoreError("store_no_permission", url=where, reason=_reason(exc))
    if isinstance(exc, (pgerr.ClientConfigurationError, ValueError)):
        return StoreError("store_bad_url", url=where, reason=_reason(exc))
    return StoreError("store_unreachable", url=where, reason=_reason(exc))


def _reason(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@dataclass
class _Batch:
    """One append, queued until written: its key (already mapped), rows, and the token that makes it idempotent."""

    key: tuple[str, str, str]
    uuids: list[str | None]
    plain: list[bool]
    bodies: list[bytes]
    token: uuidlib.UUID
    spans: list[list[Span]] | None = None
    """Each body's long strings (stores/repeats.py), found before the batch is queued; None: none has any."""


class PostgresSessionStore:
    """A ``SessionStore`` in PostgreSQL (asyncpg pool), for several processes on several machines.

    `keys` maps a local project key (the CLI's, from the workspace path) to the workspace identity it is stored
    under (D9), on every call; other keys pass as they are. Opened on first use; `open()` opens at once and raises
    a StoreError with one line for a bad URL, a refused connection, a wrong password, a missing permission or a
    database set up by a newer flower, having written nothing.
    """

    def __init__(self, url: str, *, schema: str = "flower", keys: Mapping[str, str] | None = None,
                 outage_wait: float = OUTAGE_WAIT_S) -> None:
        """Remember the URL; nothing is connected until first use."""
        if not is_postgres_url(url):
            raise StoreError("store_bad_url", url=safe_url(url), reason="it must start with postgresql://")
        self.url = url
        self.schema = schema
        self.keys = dict(keys or {})
        self.outage_wait = outage_wait
        self._s = _quote_ident(schema)
        self._pool: asyncpg.Pool[Any] | None = None
        self._pool_loop: asyncio.AbstractEventLoop | None = None
        self._opened = False
        self._open_lock: asyncio.Lock | None = None
        self._pending: deque[_Batch] = deque()
        self._drain_lock = asyncio.Lock()
        self._sync: _Link | None = None
        self._codec: Codec | None = None
        self._raw: int | None = None
        """Rows in the database while it has no dictionary of its own, None until counted."""
        self._pack_key = f"flower-pack:{schema}"
        self._seen: dict[tuple[str, str, str], Seen] = {}
        """Per transcript key, the uuids it stores as of its mtime (stores/uuids.py): read again when another wrote."""
        self.refused: StoreError | None = None
        """Always None: an outage is waited out, not refused (the Runtime stops a step only on a refusal, as SQLite's full disk)."""

    @property
    def path(self) -> str:
        """Where the sessions are, as messages show it (password hidden)."""
        return safe_url(self.url)

    def sql(self, template: str) -> str:
        """`template` with `{s}` replaced by this store's quoted schema."""
        return template.replace("{s}", self._s)

    # -- connecting ------------------------------------------------------------------------
    async def __aenter__(self) -> PostgresSessionStore:
        await self.open()
        return self

    async def __aexit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                        tb: TracebackType | None) -> None:
        await self.close()

    async def open(self) -> None:
        """Connect and make sure the tables exist at this flower's version; StoreError (one line) otherwise."""
        await self._ensure_pool()

    async def _ensure_pool(self) -> asyncpg.Pool[Any]:
        loop = asyncio.get_running_loop()
        if self._pool is not None and self._pool_loop is loop:
            return self._pool
        if self._open_lock is None or self._pool_loop is not loop:
            self._open_lock = asyncio.Lock()
        async with self._open_lock:
            if self._pool is not None and self._pool_loop is loop:
                return self._pool
            try:
                pool = await asyncpg.create_pool(self.url, min_size=1, max_size=4, timeout=CONNECT_TIMEOUT_S,
                                                 command_timeout=None)
            except BaseException as exc:
                if not isinstance(exc, Exception) or (self._opened and isinstance(exc, _TRANSIENT)):
                    raise
                raise _classify(self.url, exc) from None
            try:
                async with pool.acquire() as conn:
                    await prepare_schema(conn, self.url, self._s)
                    # Resumes a conversion cut short, or trains the dictionary of a database written before v3.
                    await self._pack(conn)
            except BaseException as exc:
                await pool.close()
                if isinstance(exc, StoreError) or not isinstance(exc, Exception) or (
                        self._opened and isinstance(exc, _TRANSIENT)):
                    raise
                raise _classify(self.url, exc) from None
            self._pool, self._pool_loop, self._opened = pool, loop, True
            self._drain_lock = asyncio.Lock()
            return pool

    async def rest(self) -> None:
        """Nothing: the pool serves the reads between wakes too, and opening it again costs round trips (and a schema check)."""

    async def close(self) -> None:
        """Write what is queued (within the outage wait), then close the pool (a later call reopens it)."""
        if self._pool is not None and self._pool_loop is asyncio.get_running_loop():
            if self._pending:
                await self._drain(self.outage_wait)
            pool, self._pool = self._pool, None
            await pool.close()
        if self._sync is not None:
            self._sync.close()
            self._sync = None

    async def _with(self, work: Callable[[Conn], Awaitable[T]], wait: float | None = None) -> T:
        """`work(conn)` on a pooled connection, riding out an outage for up to `wait` s (StoreOffline after)."""
        deadline = time.monotonic() + (self.outage_wait if wait is None else wait)
        pause = 0.05
        while True:
            try:
                pool = await self._ensure_pool()
                async with pool.acquire() as conn:
                    return await work(conn)
            except _TRANSIENT as exc:
                if time.monotonic() >= deadline:
                    raise StoreOffline("store_offline", url=self.path, seconds=f"{self.outage_wait:.0f}",
                                       reason=_reason(exc)) from None
                if pause == 0.05:  # once per wait, not at every probe
                    log.warning("the session database %s is not answering (%s); waiting", self.path, _reason(exc))
                await asyncio.sleep(pause)
                pause = min(pause * 2, 1.0)

    # -- the SessionStore protocol ---------------------------------------------------------
    def _key3(self, key: SessionKey | SessionListSubkeysKey) -> tuple[str, str, str]:
        pk = key["project_key"]
        return self.keys.get(pk, pk), key["session_id"], key.get("subpath") or ""  # type: ignore[return-value]

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Persist `entries` in order, skipping uuids already stored for `key`; committed on return (queued during an outage)."""
        if not entries:
            return
        uuids: list[str | None] = []
        seen: set[str] = set()
        keep: list[SessionStoreEntry] = []
        for entry in entries:
            u = entry.get("uuid")
            if isinstance(u, str):
                if u in seen:
                    continue  # a uuid repeated within the batch counts once
                seen.add(u)
            uuids.append(u if isinstance(u, str) else None)
            keep.append(entry)
        # D6: no API key is stored, e.g. one quoted in an API error the CLI records as assistant text.
        encoded = redact_encoded(encode_all(keep))
        plain = [isinstance(b, str) for b in encoded]
        bodies = [b.encode() if isinstance(b, str) else b for b in encoded]
        # The long strings each entry holds, found before the batch is queued (issue 35), as SQLite's append does.
        found = [spans(e, b) if type(b) is bytes and len(b) >= MIN_LENGTH else [] for e, b in zip(keep, encoded, strict=True)]
        self._pending.append(_Batch(self._key3(key), uuids, plain, bodies, uuidlib.uuid4(), found if any(found) else None))
        await self._drain(self.outage_wait)

    async def _drain(self, wait: float) -> None:
        """Write the queued batches in order; during an outage wait up to `wait` s, then leave them queued (logged)."""
        async with self._drain_lock:
            while self._pending:
                batch = self._pending[0]
                try:
                    await self._with(functools.partial(self._write, batch=batch), wait)
                except StoreOffline:
                    log.warning("the session database %s is offline; %d batches wait in memory for it", self.path,
                                len(self._pending))
                    return
                self._pending.popleft()

    async def _write(self, conn: Conn, *, batch: _Batch) -> None:
        async with conn.transaction():
            # A batch whose commit was lost with the connection may have landed: its token says so (nothing twice).
            if await conn.fetchval(self.sql("INSERT INTO {s}.batches (token) VALUES ($1) ON CONFLICT DO NOTHING RETURNING true"),
                                   batch.token) is None:
                return
            if self._codec is None:
                # Training takes this lock exclusively: a batch stored raw is committed before the conversion reads.
                await conn.execute("SELECT pg_advisory_xact_lock_shared(hashtextextended($1, 0))", self._pack_key)
            packer = await self._codec_on(conn)
            # Until the database has its own dictionary, frames against the built-in one of the CLI's constant text (v6,
            # issue 35; v4-v5's frames name bodies.zdict and are read by the id they name).
            against = packer or builtin_cli()
            now = int(time.time() * 1000)
            # The upsert locks the transcript's row until this transaction ends: its writers, on any machine (D9), take
            # turns here, so the uuids and the index read below are all that is stored, and the seqs drawn after them
            # come after the transcript's earlier ones (READ COMMITTED: each statement sees what committed before it).
            tid, mtime = cast("tuple[int, int]", await conn.fetchrow(self.sql(_TOUCH), *batch.key, now))
            seen = self._seen.pop(batch.key, None)  # put back once committed
            if seen is None or (seen.tid, seen.mtime) != (tid, mtime):
                seen = Seen(tid, mtime, {r[0] for r in await conn.fetch(self.sql(_UUIDS), tid)})
            take, added = fresh(batch.uuids, seen.uuids)
            stored = len(take)
            if take:
                def kept(values: list[T]) -> list[T]:
                    return values if stored == len(values) else [values[i] for i in take]

                uuids, plain = kept(batch.uuids), kept(batch.plain)

                def pack(bodies: list[bytes | str]) -> list[bytes | str]:
                    return [b if p else against.pack(cast("bytes", b)) for p, b in zip(plain, bodies, strict=True)]

                found = kept(batch.spans) if batch.spans is not None else None
                if not found or not any(found):
                    mtime = await conn.fetchval(self.sql(_INSERT), tid, uuids, plain, pack(kept(batch.bodies)), now)  # type: ignore[arg-type]
                else:
                    mtime = await self._insert_shared(conn, tid, uuids, plain, kept(batch.bodies), found, pack, now, packer)
        self._seen[batch.key] = Seen(tid, mtime, seen.uuids | added)
        if not stored:
            return
        if packer is None:
            # Counted from the database once, then by this process: trained when it holds enough entries.
            if self._raw is None:
                self._raw = int(await conn.fetchval(self.sql("SELECT count(*) FROM {s}.entries WHERE NOT plain")))
            else:
                self._raw += stored
            if self._raw >= SAMPLES and await self._pack(conn) is not None:
                self._raw = 0

    async def _insert_shared(self, conn: Conn, tid: int, uuids: list[str | None], plain: list[bool], bodies: list[bytes],
                             found: list[list[Span]], pack: Callable[[list[bytes | str]], list[bytes | str]], now: int,
                             packer: Codec | None) -> int:
        """Store a batch holding long strings, each one the transcript holds already as a reference to it (issue 35);
        the transcript's new mtime. Under the transcript's row lock (see `_write`)."""
        digests = sorted({d for spans_ in found for _, _, d in spans_})
        seqs, *index = cast("list[Any]", await conn.fetchrow(self.sql(_DRAW), tid, digests, len(bodies)))
        indexed: Known = {d: (s, a, n) for d, s, a, n in zip(*index, strict=True)} if index[0] else {}
        if indexed:
            # bigserial never gives a seq twice, but rows deleted by hand leave the index naming them: checked by digest.
            holders = await conn.fetch(self.sql(_HOLDERS), tid, sorted({s for s, _, _ in indexed.values()}))
            indexed = still_held(indexed, texts(((r[0], r[1]) for r in holders), expander(packer)))
        seqs = sorted(seqs)
        refs, held = plan(found, indexed, seqs)
        mtime: int = await conn.fetchval(
            self.sql(_INSERT_SHARED), tid, uuids, plain, stored_bodies(bodies, refs, pack), now, seqs,
            [h[0] for h in held], [h[1] for h in held], [h[2] for h in held], [h[3] for h in held])
        return mtime

    async def _codec_on(self, conn: Conn) -> Codec | None:
        """The database's dictionary (read once it exists), None while it has none."""
        if self._codec is None:
            ident = await conn.fetchval(self.sql("SELECT id FROM {s}.dictionary"))
            if ident is not None:
                self._codec = known(ident) or codec(
                    ident, await conn.fetchval(self.sql("SELECT data FROM {s}.dictionary")))
        return self._codec

    async def _pack(self, conn: Conn, batches: int | None = None) -> Codec | None:
        """Train the database's dictionary once it holds SAMPLES entries, then compress the raw rows stored before it,
        one committed batch at a time (at most `batches`); the dictionary, or None while there are too few entries."""
        lock = "SELECT pg_advisory_xact_lock(hashtextextended($1, 0))"
        marks = await conn.fetchrow(self.sql("SELECT trained, packed FROM {s}.dictionary"))
        if marks is None:
            async with conn.transaction():
                await conn.execute(lock, self._pack_key)  # waits for the raw batches in flight (see _write)
                marks = await conn.fetchrow(self.sql("SELECT trained, packed FROM {s}.dictionary"))
                if marks is None:
                    stored = [r[0] for r in await conn.fetch(self.sql(
                        "SELECT body FROM {s}.entries WHERE NOT plain ORDER BY seq LIMIT $1"), SAMPLES)]
                    if len(stored) < SAMPLES:
                        return None
                    # Since v4 the samples are frames against the built-in dictionary; about a second: off the loop.
                    ident, data = await asyncio.to_thread(lambda: train(raw(stored, None)))
                    # Raw rows only ever precede frames (as in SQLite's _pack): none among the oldest, none to convert.
                    marks = await conn.fetchrow(self.sql(
                        "INSERT INTO {s}.dictionary (id, data, trained, packed)"
                        " SELECT $1, $2, coalesce(max(seq), 0), CASE WHEN $3 THEN 0 ELSE coalesce(max(seq), 0) END"
                        " FROM {s}.entries RETURNING trained, packed"), ident, data, any(is_raw(b) for b in stored))
        packer = await self._codec_on(conn)
        assert packer is not None and marks is not None  # written above or by another process, never removed
        top, packed = int(marks[0]), int(marks[1])
        while packed < top and (batches is None or batches > 0):
            async with conn.transaction():
                await conn.execute(lock, self._pack_key)  # one converter at a time: a frame is never packed twice
                done = int(await conn.fetchval(self.sql("SELECT packed FROM {s}.dictionary")))
                # By seq across transcripts: since v6 no index serves it (a scan a batch, once, for a database a v2
                # flower wrote before #26); the update finds its rows along (transcript, seq).
                rows = await conn.fetch(self.sql(
                    "SELECT seq, plain, body, transcript FROM {s}.entries WHERE seq > $1 AND seq <= $2 ORDER BY seq LIMIT $3"),
                    done, top, PACK_BATCH)
                todo = [(r[0], packer.pack(r[2]), r[3]) for r in rows if not r[1] and is_raw(r[2])]
                await conn.execute(self.sql(
                    "UPDATE {s}.entries e SET body = x.b FROM unnest($1::bigint[], $2::bytea[], $3::bigint[]) AS x(s, b, t)"
                    " WHERE e.transcript = x.t AND e.seq = x.s"),
                    [t[0] for t in todo], [t[1] for t in todo], [t[2] for t in todo])
                packed = int(rows[-1][0]) if rows else top
                await conn.execute(self.sql("UPDATE {s}.dictionary SET packed = greatest(packed, $1)"), packed)
            batches = None if batches is None else batches - 1
        return packer

    async def _flushed(self) -> None:
        """Write what waits in memory first: a read must see the newest entries (StoreOffline if it cannot)."""
        if self._pending:
            await self._drain(self.outage_wait)
            if self._pending:
                raise StoreOffline("store_offline", url=self.path, seconds=f"{self.outage_wait:.0f}", reason="queued batches")

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """All entries of `key` in append order (streamed from a cursor), or None if it was never written."""
        await self._flushed()
        k3 = self._key3(key)

        async def fetch(conn: Conn) -> tuple[list[bytes | str], Codec | None]:
            seqs: list[int] = []
            bodies: list[bytes | str] = []
            # One snapshot: the rows, and the entries holding what they repeat (issue 35), seen at one moment.
            async with conn.transaction(isolation="repeatable_read", readonly=True):
                tids: set[int] = set()
                async for seq, tid, plain, body in conn.cursor(self.sql(_LOAD), *k3, prefetch=1000):
                    seqs.append(seq)
                    tids.add(tid)
                    bodies.append(body.decode() if plain else body)
                # Read after the rows: a frame among them was written after its dictionary, which is never removed.
                packer = await self._codec_on(conn)
                return await self._resolved(conn, seqs, bodies, packer, tids), packer

        bodies, packer = await self._with(fetch)
        return decode_bodies(bodies, packer) if bodies else None

    async def last_context(self, project_key: str, session_id: str) -> int | None:
        """The session's last-round context size (its last real assistant entry's usage), read from the end; None if unknown."""
        await self._flushed()
        pk = self.keys.get(project_key, project_key)
        return await self._with(functools.partial(self._last_context, pk=pk, session_id=session_id))

    async def _last_context(self, conn: Conn, *, pk: str, session_id: str) -> int | None:
        """Read backwards a page at a time, never the whole session (on a pooled connection or the link's)."""
        before = 1 << 62
        for limit in tail_pages():
            # Newest first; their bodies oldest first, with what they repeat put back (issue 35).
            rows, bodies, packer = await self._rows(conn, sql=_TAIL, args=(pk, session_id, before, limit), oldest_first=True)
            found = context_of(decode_bodies(bodies, packer))
            if found is not None or len(rows) < limit:
                return found
            before = rows[-1][0]
        return None  # unreachable: tail_pages never ends

    async def latest_seq(self, project_key: str, session_id: str, skip: int = 0) -> int:
        """The append order (seq) of the session's newest entry, or of the one `skip` places before it; 0 if none."""
        await self._flushed()
        pk = self.keys.get(project_key, project_key)
        if skip:
            return int(await self._with(lambda conn: conn.fetchval(self.sql(_BEFORE_NEWEST), pk, session_id, skip)))
        return int(await self._with(lambda conn: conn.fetchval(self.sql(_LATEST), pk, session_id)))

    async def entries_after(self, project_key: str, session_id: str, seq: int) -> list[SessionStoreEntry]:
        """The session's entries appended after `seq` (see `latest_seq`), in append order."""
        await self._flushed()
        pk = self.keys.get(project_key, project_key)
        _, bodies, packer = await self._with(functools.partial(self._rows, sql=_AFTER, args=(pk, session_id, seq)))
        return decode_bodies(bodies, packer)

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """Main transcripts of `project_key` with their mtimes (epoch ms)."""
        pk = self.keys.get(project_key, project_key)
        rows = await self._with(lambda conn: conn.fetch(
            self.sql("SELECT session_id, mtime FROM {s}.transcripts WHERE project_key = $1 AND subpath = ''"), pk))
        return [{"session_id": r[0], "mtime": r[1]} for r in rows]

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The summaries of the main transcripts of `project_key`, folded now from the entries added since the last fold."""
        # Only the SDK asks for summaries (a wake): a command that reads records imports no SDK (issue 34).
        from claude_agent_sdk import fold_session_summary

        pk = self.keys.get(project_key, project_key)

        async def work(conn: Conn) -> list[Any]:
            async with conn.transaction(isolation="repeatable_read"):  # one snapshot: summary and mtime agree
                for tid, sid, mtime, data, folded in await conn.fetch(self.sql(_STALE), pk):
                    rows = await conn.fetch(self.sql(
                        "SELECT seq, plain, body FROM {s}.entries WHERE transcript = $1 AND seq > $2 ORDER BY seq"),
                        tid, folded or 0)
                    prev: SessionSummaryEntry | None = None
                    if data is not None:
                        prev = {"session_id": sid, "mtime": mtime, "data": json.loads(data)}
                    key: SessionKey = {"project_key": project_key, "session_id": sid}
                    packer = await self._codec_on(conn)
                    entries = decode_bodies(await self._resolved(conn, [r[0] for r in rows], _bodies(rows), packer, {tid}), packer)
                    summary = fold_session_summary(prev, key, entries)
                    await conn.execute(self.sql(
                        "INSERT INTO {s}.summaries (project_key, session_id, mtime, data, folded) VALUES ($1, $2, $3, $4, $5)"
                        " ON CONFLICT (project_key, session_id) DO UPDATE SET mtime = excluded.mtime, data = excluded.data,"
                        " folded = excluded.folded"),
                        pk, sid, mtime, json.dumps(summary["data"]), rows[-1][0] if rows else folded or 0)
                return list(await conn.fetch(
                    self.sql("SELECT session_id, mtime, data FROM {s}.summaries WHERE project_key = $1"), pk))

        rows = await self._with(work)
        return [{"session_id": sid, "mtime": mtime, "data": json.loads(data)} for sid, mtime, data in rows]

    async def delete(self, key: SessionKey) -> None:
        """Delete `key`; a main key also deletes its subkeys and summary."""
        pk, sid, subpath = self._key3(key)

        async def work(conn: Conn) -> None:
            async with conn.transaction():
                if subpath:
                    await conn.execute(self.sql(
                        "DELETE FROM {s}.transcripts WHERE project_key = $1 AND session_id = $2 AND subpath = $3"), pk, sid, subpath)
                else:
                    await conn.execute(self.sql("DELETE FROM {s}.transcripts WHERE project_key = $1 AND session_id = $2"), pk, sid)
                    await conn.execute(self.sql("DELETE FROM {s}.summaries WHERE project_key = $1 AND session_id = $2"), pk, sid)

        await self._with(work)

    async def delete_sessions(self, project_key: str, session_ids: Sequence[str]) -> None:
        """Delete these sessions whole (their entries by the cascade, subkeys and summaries too), in one transaction."""
        pk = self.keys.get(project_key, project_key)

        async def work(conn: Conn) -> None:
            async with conn.transaction():
                await conn.execute(self.sql(
                    "DELETE FROM {s}.transcripts WHERE project_key = $1 AND session_id = any($2::text[])"), pk, list(session_ids))
                await conn.execute(self.sql(
                    "DELETE FROM {s}.summaries WHERE project_key = $1 AND session_id = any($2::text[])"), pk, list(session_ids))

        await self._with(work)

    async def reclaim(self) -> None:
        """VACUUM the tables a deletion empties: their space is reused by later appends, and the empty pages at a table's
        end go back to the disk. Not VACUUM FULL, which would lock the team's tables while it rewrites them (D9)."""
        # Outside a transaction (VACUUM refuses one); a role that does not own the tables gets a warning, not an error.
        await self._with(lambda conn: conn.execute(self.sql("VACUUM {s}.entries, {s}.transcripts, {s}.summaries")))

    async def usage(self, project_key: str) -> list[SessionUsage]:
        """Per session of `project_key`: its entries (subkeys included), their bytes as stored, its last write."""
        rows = await self._with(lambda conn: conn.fetch(self.sql(
            "SELECT t.session_id, count(e.seq), coalesce(sum(octet_length(e.body)), 0), max(t.mtime)"
            " FROM {s}.transcripts t LEFT JOIN {s}.entries e ON e.transcript = t.id"
            " WHERE t.project_key = $1 GROUP BY t.session_id"), self.keys.get(project_key, project_key)), READ_WAIT_S)
        return [SessionUsage(str(r[0]), int(r[1]), int(r[2]), int(r[3])) for r in rows]

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """Subpaths (e.g. subagent transcripts) stored under a session."""
        pk, sid, _ = self._key3(key)
        rows = await self._with(lambda conn: conn.fetch(self.sql(
            "SELECT subpath FROM {s}.transcripts WHERE project_key = $1 AND session_id = $2 AND subpath != '' ORDER BY id"),
            pk, sid))
        return [r[0] for r in rows]

    # -- reads for a view (History) -----------------------------------------------------------
    async def newest_seq(self) -> int:
        """The highest entry position of the whole store, 0 when there is none."""
        found = await self._with(lambda conn: conn.fetchval(self.sql(_NEWEST)),
                                 READ_WAIT_S)
        return int(found)

    async def transcripts(self, project_key: str, session_ids: Sequence[str]) -> list[tuple[int, str, int]]:
        """(row id, session id, entry count) of the main transcripts of these sessions, in the order first stored."""
        rows = await self._with(lambda conn: conn.fetch(self.sql(
            "SELECT t.id, t.session_id, (SELECT count(*) FROM {s}.entries e WHERE e.transcript = t.id)"
            " FROM {s}.transcripts t WHERE t.project_key = $1 AND t.subpath = '' AND t.session_id = any($2::text[])"
            " ORDER BY t.id"), self.keys.get(project_key, project_key), list(session_ids)), READ_WAIT_S)
        return [(int(r[0]), str(r[1]), int(r[2])) for r in rows]

    async def page(self, transcripts: Sequence[int], before: int, limit: int) -> list[tuple[int, int, Any]]:
        """(seq, transcript row id, entry) of these transcripts' entries below `before`, newest first, at most `limit`."""
        rows, bodies, packer = await self._with(functools.partial(
            self._rows, sql=_PAGE, args=(list(transcripts), before, limit)), READ_WAIT_S)
        entries = decode_bodies(bodies, packer)
        return [(int(r[0]), int(r[1]), e) for r, e in zip(rows, entries, strict=True)]

    async def count(self, project_key: str, session_id: str) -> int:
        """How many entries a session's main transcript stores."""
        found = await self._with(lambda conn: conn.fetchval(self.sql(
            "SELECT count(*) FROM {s}.transcripts t JOIN {s}.entries e ON e.transcript = t.id"
            " WHERE t.project_key = $1 AND t.session_id = $2 AND t.subpath = ''"),
            self.keys.get(project_key, project_key), session_id), READ_WAIT_S)
        return int(found)

    async def session(self, project_key: str, session_id: str) -> list[Any]:
        """A session's whole main transcript ([] when none)."""
        return list(await self.load({"project_key": project_key, "session_id": session_id}) or [])

    def loader(self) -> Callable[[str, str], list[Any]] | None:
        """None: a worker process would need a connection of its own; the rows come over the network anyway."""
        return None

    # -- synchronous reads (a status answered at once) ---------------------------------------
    def link(self) -> _Link:
        """A connection of its own on a background thread, for synchronous callers (status, lineage, lock)."""
        if self._sync is None:
            self._sync = _Link(self.url, self._s)
        return self._sync

    def has_session_sync(self, project_key: str, session_id: str) -> bool:
        """Whether a main transcript is stored for the session (sync)."""
        pk = self.keys.get(project_key, project_key)
        found = self.link().call(lambda conn: conn.fetchval(self.sql(
            "SELECT true FROM {s}.transcripts WHERE project_key = $1 AND session_id = $2 AND subpath = ''"), pk, session_id))
        return bool(found)

    def last_context_sync(self, project_key: str, session_id: str) -> int | None:
        """`last_context` for synchronous callers (sync, read-only), on the link's connection."""
        pk = self.keys.get(project_key, project_key)
        found: int | None = self.link().call(functools.partial(self._last_context, pk=pk, session_id=session_id))
        return found

    def size_on_disk(self) -> int:
        """Bytes the store's schema takes in the database (its tables with their TOAST and indexes), on the link's connection."""
        found = self.link().call(lambda conn: conn.fetchval(
            "SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0) FROM pg_class c"
            " JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relkind = 'r'", self.schema))
        return int(found)

    def load_sync(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """`load` for synchronous callers (sync, read-only)."""
        rows, bodies, packer = self.link().call(functools.partial(self._rows, sql=_LOAD, args=self._key3(key)))
        return decode_bodies(bodies, packer) if rows else None

    async def _rows(self, conn: Conn, *, sql: str, args: Sequence[Any], oldest_first: bool = False,
                    ) -> tuple[list[Any], list[bytes | str], Codec | None]:
        """The rows of `sql` (seq first, plain and body last), their bodies (reversed if `oldest_first`) with the
        strings they repeat put back (issue 35), and the dictionary that expands them (read after them, see `load`)."""
        async with conn.transaction(isolation="repeatable_read", readonly=True):  # one snapshot, as `load`
            rows = list(await conn.fetch(self.sql(sql), *args))
            packer = await self._codec_on(conn)
            ordered = rows[::-1] if oldest_first else rows
            resolved = await self._resolved(conn, [r[0] for r in ordered], _bodies(ordered), packer, {r[1] for r in rows})
            return rows, resolved, packer

    async def _resolved(self, conn: Conn, seqs: list[int], bodies: list[bytes | str], packer: Codec | None,
                        transcripts: set[int]) -> list[bytes | str]:
        """`bodies` (of the entries `seqs`, of `transcripts`) with the strings they repeat put back (stores/repeats.py),
        the entries holding them read on `conn` when not among them (inside the caller's transaction)."""
        if not any(has_refs(b) for b in bodies):
            return bodies
        wanted = referred(seqs, bodies)
        held = [(int(r[0]), bytes(r[1])) for r in await conn.fetch(self.sql(_BY_SEQ), wanted, sorted(transcripts))] \
            if wanted else []
        return resolve(seqs, bodies, expander(packer), lambda _: held)


def _bodies(rows: Any) -> list[bytes | str]:
    """The bodies of `rows` (plain and body their last two columns: the stdlib's text when plain)."""
    return [r[-1].decode() if r[-2] else r[-1] for r in rows]


async def prepare_schema(conn: Conn, url: str, s: str) -> None:
    """Check the schema's version and create the tables if they are missing; StoreError if a newer flower set them up."""
    async def version() -> int:
        if await conn.fetchval("SELECT to_regclass($1)", f"{s}.meta") is None:
            return 0
        raw = await conn.fetchval(f"SELECT value FROM {s}.meta WHERE key = 'schema_version'")
        return int(raw) if raw is not None else 0

    # Read before anything is written: a newer flower's database is left exactly as it is.
    found = await version()
    if found > SCHEMA_VERSION:
        raise StoreError("store_too_new", url=safe_url(url), version=found, known=SCHEMA_VERSION)
    if found == SCHEMA_VERSION:
        return
    async with conn.transaction():
        # One migrator at a time across machines; the loser sees the tables made.
        await conn.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", f"flower-schema:{s}")
        found = await version()
        if found > SCHEMA_VERSION:
            raise StoreError("store_too_new", url=safe_url(url), version=found, known=SCHEMA_VERSION)
        if found < SCHEMA_VERSION:
            await conn.execute(_SCHEMA.replace("{s}", s))
            await conn.execute(
                f"INSERT INTO {s}.meta (key, value) VALUES ('schema_version', $1)"
                " ON CONFLICT (key) DO UPDATE SET value = excluded.value", str(SCHEMA_VERSION))


class _Link:
    """One connection on a daemon thread's event loop, for synchronous callers; reconnects after an outage.

    A daemon thread: an unclosed link never keeps the process alive, and its connection (with any advisory
    lock it holds) dies with the process, however it ends.
    """

    def __init__(self, url: str, schema: str, timeout: float = 10.0) -> None:
        self.url, self.schema, self.timeout = url, schema, timeout
        self.loop = asyncio.new_event_loop()
        self.conn: asyncpg.Connection[Any] | None = None
        self.prepared = False
        self._one = asyncio.Lock()
        """One call at a time: asyncpg runs one operation at a time on a connection, and threads share the link."""
        self._thread = threading.Thread(target=self.loop.run_forever, name="flower-pg-link", daemon=True)
        self._thread.start()
        atexit.register(self.close)  # closed before the interpreter tears down what asyncpg needs to close it

    def call(self, work: Callable[[Conn], Awaitable[T]], timeout: float | None = None) -> T:
        """`work(conn)` on the link's connection, waited for up to `timeout` s; StoreError/transient errors raised."""
        async def run() -> T:
            async with self._one:
                return await attempt()

        async def attempt() -> T:
            pause = 0.05
            while True:  # an outage: reconnect and retry until the caller's timeout (the database restarting)
                try:
                    return await work(await self.connection())
                except _TRANSIENT as exc:
                    if not self.prepared:
                        raise
                    if pause == 0.05:  # once per call
                        log.warning("the database %s is not answering (%s); retrying", safe_url(self.url), _reason(exc))
                    if self.conn is not None:
                        self.conn.terminate()
                    self.conn = None
                    await asyncio.sleep(pause)
                    pause = min(pause * 2, 1.0)

        future: Future[T] = asyncio.run_coroutine_threadsafe(run(), self.loop)
        wait = self.timeout if timeout is None else timeout
        try:
            return future.result(wait)
        except TimeoutError:
            future.cancel()
            raise StoreOffline("store_offline", url=safe_url(self.url), seconds=f"{wait:.0f}", reason="no answer") from None

    async def connection(self) -> asyncpg.Connection[Any]:
        """The open connection, (re)connected as needed."""
        if self.conn is None or self.conn.is_closed():
            try:
                self.conn = conn = await asyncpg.connect(self.url, timeout=CONNECT_TIMEOUT_S)
            except Exception as exc:
                if self.prepared and isinstance(exc, _TRANSIENT):
                    raise
                raise _classify(self.url, exc) from None
            if not self.prepared:
                await prepare_schema(conn, self.url, self.schema)
                self.prepared = True
            return conn
        return self.conn

    def close(self) -> None:
        """Close the connection and stop the thread; idempotent."""
        atexit.unregister(self.close)
        if not self._thread.is_alive():
            return

        async def shut() -> None:
            if self.conn is not None and not self.conn.is_closed():
                await self.conn.close(timeout=2)

        try:
            asyncio.run_coroutine_threadsafe(shut(), self.loop).result(5)
        except Exception as exc:  # closing is best effort: the server drops a dead client's connection anyway
            log.debug("closing the database link: %s", exc)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(5)
