"""The stored transcript of a workspace's sessions, a page at a time, with what the pruner makes of it (S23).

Read straight from the folder's store in worker threads — `runs/sessions.db` (read-only SQLite) or the shared
PostgreSQL store's tables (D9, its `entries.seq` is the order) — so any front-end can show the whole conversation
after a restart without a wake. Which session belongs to which step
comes from the lineage (S5) and the manifest rows (S6–S7, the judge's `<step>·判定#N` included).
The pruner needs a whole session, so its verdicts are computed once per (session, entry count)
and cached — in a thread for small sessions, in a worker process for large ones (the pruner is
Python and would hold the GIL the event loop needs) — and a page never waits for them longer
than a short budget: the caller is told which sessions are still pending. A PostgreSQL session is pruned in a
thread whatever its size (its rows come over the network; a worker process would need a connection of its own).
"""

from __future__ import annotations

import asyncio
import bisect
import gc
import json
import multiprocessing
import sqlite3
from collections.abc import Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from claude_agent_sdk import project_key_for_directory

from .core import shared
from .core.errors import FlowerError
from .core.lineage import Lineage
from .core.manifest import Manifest, parse_name
from .core.redact import cut
from .core.text import clip, tool_label
from .runtime import context_of
from .stores.postgres import CONNECT_TIMEOUT_S, PostgresSessionStore
from .stores.prune import PruningSessionStore
from .stores.sqlite import SqliteSessionStore, decode_bodies
from .workflow.flower import WORK
from .workflow.goal import verdict_of

TEXT_LIMIT = 4000
"""Tool results and tool-input strings are cut here, in history and live (a Write of a large file would flood a view)."""
VERDICT_WAIT = 0.03
"""How long a page waits for a small session's pruner verdicts before answering without them (seconds)."""
LARGE = 2000
"""Sessions with more entries are pruned in a worker process, and pages do not wait for their verdicts."""
LAST = 1 << 62
"""A `before` above every seq."""
PG_WAIT = 10.0
"""How long a page waits out a shared store's outage before answering with the error (seconds)."""

_PAGE = """
SELECT e.seq, e.transcript, e.body FROM entries e
WHERE e.transcript IN ({ids}) AND e.seq < ? ORDER BY e.seq DESC LIMIT ?
"""


@dataclass
class Item:
    """One history entry: a content block of a stored entry, in the transcript notification's terms."""

    seq: int
    session_id: str
    step: str | None
    uuid: str
    role: str
    kind: str
    text: str
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    pruned: str | None = None
    pruned_text: str | None = None


@dataclass
class Session:
    """One session of the workspace: the steps that ran in it, and how many entries it stores."""

    session_id: str
    steps: list[str]
    entries: int
    current: bool
    transcript: int = 0
    """Its row id in sessions.db's `transcripts`."""


@dataclass
class Verdicts:
    """What the pruner makes of one session: uuid → verdict, the new text of rewritten entries, added entries."""

    count: int
    verdicts: dict[str, str] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    added: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Stored uuid → the synthesized entries the pruner places right after it."""


@dataclass
class Page:
    """A page of history: items oldest first, the cursor for the page before, and the sessions."""

    items: list[Item]
    next_before: int | None
    sessions: list[Session]
    pending: dict[str, asyncio.Future[Verdicts]]
    """Sessions in this page whose verdicts are still being computed."""


@dataclass(frozen=True)
class StepRun:
    """One manifest row as a transcript section head shows it."""

    step: str
    session_id: str | None
    ok: bool
    cost_usd: float
    duration_s: float | None
    started_at: float | None
    passed: bool | None
    """A judge round's verdict; None for other steps."""


class UnknownSession(ValueError):
    """A session id that is not one of the workspace's sessions."""


Block = tuple[str, str, str, str, str | None, Any, str | None]
"""(uuid, role, kind, text, tool name, tool input, tool_use id) of one shown content block."""
Runs = dict[str, list[tuple[float, str]]]
"""Session → its manifest runs as (start time, step name), oldest first."""


def _result_text(content: Any) -> str | None:
    """The text of a tool_result body; None when it holds something else (an image)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "\n".join(str(b.get("text") or "") for b in content)
    return None


def items_of(entry: dict[str, Any]) -> list[Block]:
    """The blocks of a stored entry a transcript shows (text, tool calls, tool results), one uuid each."""
    kind, message, uuid = entry.get("type"), entry.get("message"), entry.get("uuid")
    if kind not in ("user", "assistant") or not isinstance(message, dict) or not isinstance(uuid, str):
        return []
    if entry.get("isMeta") or entry.get("isSidechain"):
        return []
    content = message.get("content")
    blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    out: list[tuple[str, str, str, str | None, Any, str | None]] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str) and block["text"]:  # as the runtime emits them live
            out.append((kind, "text", block["text"], None, None, None))
        elif btype == "tool_use" and kind == "assistant":
            name = str(block.get("name") or "")
            out.append((kind, "tool", tool_label(name, block.get("input")), name, block.get("input"), block.get("id")))
        elif btype == "tool_result" and kind == "user":
            body = _result_text(block.get("content"))
            text = clip(body, TEXT_LIMIT, count=True) if body is not None else "[a result that is not text]"
            out.append((kind, "result", text, None, None, block.get("tool_use_id")))
    # One uuid per item: the CLI stores one block per entry; should an entry hold more, they get `<uuid>#<i>`.
    return [(uuid if i == 0 else f"{uuid}#{i}", *rest) for i, rest in enumerate(out)]


def _epoch(stamp: Any) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


Body = bytes | str
"""A stored entry's JSON as `decode_bodies` takes it."""


class Reader(Protocol):
    """One read of a store's entries (sync, in a worker thread): the little SQL History needs, per store."""

    def latest_seq(self) -> int:
        """The highest entry position, 0 when there is none."""

    def transcripts(self, project_key: str, session_ids: list[str]) -> list[tuple[int, str, int]]:
        """(row id, session id, entry count) of the main transcripts of these sessions."""

    def rows(self, transcripts: Sequence[int], before: int, limit: int) -> list[tuple[int, int, Body]]:
        """(seq, transcript row id, body) of these transcripts' entries below `before`, newest first."""

    def session(self, project_key: str, session_id: str, before: int = LAST, limit: int | None = None) -> list[tuple[int, Body]]:
        """(seq, body) of a session's entries below `before`: all oldest first, or the last `limit` newest first."""

    def count(self, project_key: str, session_id: str) -> int:
        """How many entries a session stores."""

    def close(self) -> None:
        """Done reading."""


class SqliteReader:
    """A read-only connection to sessions.db (`mode=ro`: never creates or writes it, a view must not disturb a wake)."""

    def __init__(self, db_path: Path) -> None:
        self.con = sqlite3.connect(db_path.resolve().as_uri() + "?mode=ro", uri=True, timeout=30.0)

    def latest_seq(self) -> int:
        """The rowid's maximum (fast)."""
        return int(self.con.execute("SELECT coalesce(max(seq), 0) FROM entries").fetchone()[0])

    def transcripts(self, project_key: str, session_ids: list[str]) -> list[tuple[int, str, int]]:
        """See Reader."""
        return self.con.execute(
            "SELECT t.id, t.session_id, (SELECT count(*) FROM entries e WHERE e.transcript = t.id)"
            " FROM transcripts t WHERE t.project_key = ? AND t.subpath = ''"
            " AND t.session_id IN (SELECT value FROM json_each(?)) ORDER BY t.id",
            (project_key, json.dumps(session_ids))).fetchall()

    def rows(self, transcripts: Sequence[int], before: int, limit: int) -> list[tuple[int, int, Body]]:
        """See Reader."""
        return self.con.execute(_PAGE.format(ids=",".join("?" * len(transcripts))), (*transcripts, before, limit)).fetchall()

    def session(self, project_key: str, session_id: str, before: int = LAST, limit: int | None = None) -> list[tuple[int, Body]]:
        """See Reader."""
        order = "DESC LIMIT ?" if limit is not None else "LIMIT -1"
        return self.con.execute(
            "SELECT e.seq, e.body FROM transcripts t JOIN entries e ON e.transcript = t.id"
            " WHERE t.project_key = ? AND t.session_id = ? AND t.subpath = '' AND e.seq < ? ORDER BY e.seq " + order,
            (project_key, session_id, before, *(() if limit is None else (limit,)))).fetchall()

    def count(self, project_key: str, session_id: str) -> int:
        """See Reader."""
        return int(self.con.execute(
            "SELECT count(*) FROM transcripts t JOIN entries e ON e.transcript = t.id"
            " WHERE t.project_key = ? AND t.session_id = ? AND t.subpath = ''", (project_key, session_id)).fetchone()[0])

    def close(self) -> None:
        """Close the connection."""
        self.con.close()


class PgReader:
    """The shared store's tables (D9); project keys mapped to the identity as the store maps them.

    From a worker thread the queries run on the store's pool, on the event loop that owns it: one connection each,
    so a page, a pruner's load and a wake's appends never share one (asyncpg runs one query at a time on a
    connection). Without that loop (or on it) they use the store's synchronous link, as a status does.
    """

    def __init__(self, store: PostgresSessionStore, loop: asyncio.AbstractEventLoop | None) -> None:
        self.store, self.loop = store, loop

    def _fetch(self, sql: str, *args: Any) -> list[Any]:
        try:
            here: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if self.loop is None or self.loop is here or self.loop.is_closed():
            found: list[Any] = self.store.link().call(lambda conn: conn.fetch(self.store.sql(sql), *args))
            return found
        future = asyncio.run_coroutine_threadsafe(self.store.fetch(sql, *args, wait=PG_WAIT), self.loop)
        try:
            return future.result(PG_WAIT + CONNECT_TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            raise

    def _key(self, project_key: str) -> str:
        return self.store.keys.get(project_key, project_key)

    def latest_seq(self) -> int:
        """The ordering column's maximum."""
        return int(self._fetch("SELECT coalesce(max(seq), 0) FROM {s}.entries")[0][0])

    def transcripts(self, project_key: str, session_ids: list[str]) -> list[tuple[int, str, int]]:
        """See Reader."""
        return [(r[0], r[1], r[2]) for r in self._fetch(
            "SELECT t.id, t.session_id, (SELECT count(*) FROM {s}.entries e WHERE e.transcript = t.id)"
            " FROM {s}.transcripts t WHERE t.project_key = $1 AND t.subpath = '' AND t.session_id = any($2::text[])"
            " ORDER BY t.id", self._key(project_key), session_ids)]

    def rows(self, transcripts: Sequence[int], before: int, limit: int) -> list[tuple[int, int, Body]]:
        """See Reader."""
        return [(r[0], r[1], _body(r[2], r[3])) for r in self._fetch(
            "SELECT seq, transcript, plain, body FROM {s}.entries WHERE transcript = any($1::bigint[]) AND seq < $2"
            " ORDER BY seq DESC LIMIT $3", list(transcripts), before, limit)]

    def session(self, project_key: str, session_id: str, before: int = LAST, limit: int | None = None) -> list[tuple[int, Body]]:
        """See Reader."""
        return [(r[0], _body(r[1], r[2])) for r in self._fetch(
            "SELECT e.seq, e.plain, e.body FROM {s}.transcripts t JOIN {s}.entries e ON e.transcript = t.id"
            " WHERE t.project_key = $1 AND t.session_id = $2 AND t.subpath = '' AND e.seq < $3"
            + (" ORDER BY e.seq DESC LIMIT $4" if limit is not None else " ORDER BY e.seq"),
            self._key(project_key), session_id, before, *(() if limit is None else (limit,)))]

    def count(self, project_key: str, session_id: str) -> int:
        """See Reader."""
        return int(self._fetch(
            "SELECT count(*) FROM {s}.transcripts t JOIN {s}.entries e ON e.transcript = t.id"
            " WHERE t.project_key = $1 AND t.session_id = $2 AND t.subpath = ''", self._key(project_key), session_id)[0][0])

    def close(self) -> None:
        """Nothing: the link stays open for the next read (the store closes it)."""


def _body(plain: bool, body: bytes) -> Body:
    return body.decode() if plain else body


def _decode(bodies: list[Body]) -> list[Any]:
    """A whole session decoded with the GC paused."""
    # No cycles are built here: a GC pass over a whole session just decoded would cost more than the
    # decoding, and in a thread would hold the GIL the event loop needs (as PruningSessionStore.load does).
    paused = gc.isenabled()
    gc.disable()
    try:
        return decode_bodies(bodies)
    finally:
        if paused:
            gc.enable()


def prune_session(db_path: str, project_key: str, session_id: str, trim: bool, spill_dir: str) -> Verdicts:
    """Load a whole session from sessions.db and prune it: CPU-bound, run in a worker (a process for large ones)."""
    entries: list[Any] = []
    if Path(db_path).exists():
        reader = SqliteReader(Path(db_path))
        try:
            rows = reader.session(project_key, session_id)
        finally:
            reader.close()
        entries = _decode([r[1] for r in rows])
    return prune_entries(entries, SqliteSessionStore(db_path), trim, spill_dir)


def prune_entries(entries: list[Any], store: Any, trim: bool, spill_dir: str) -> Verdicts:
    """The pruner's verdicts on a whole session's entries (CPU-bound)."""
    out = Verdicts(len(entries))
    if not entries:
        return out
    pruner = PruningSessionStore(store, trim=trim, spill_dir=spill_dir)
    result = pruner.prune(entries)
    out.verdicts = dict(result.verdicts)
    anchor: str | None = None
    for entry in result.entries:
        uuid = entry.get("uuid")
        verdict = out.verdicts.get(uuid) if isinstance(uuid, str) else None
        if verdict == "added":
            out.added.setdefault(anchor or "", []).append(entry)
            continue
        if verdict == "rewritten" and isinstance(uuid, str):
            blocks = items_of(entry)
            if blocks:
                out.texts[uuid] = blocks[0][3]
        if isinstance(uuid, str):
            anchor = uuid
    return out


class History:
    """A workspace's stored transcript, read from its store page by page (no model, no lock, no writes)."""

    def __init__(self, workspace: str | Path, run_dir: str | Path, *, trim: bool = True, store: Any = None) -> None:
        """`store` is the folder's raw store: a PostgresSessionStore is read over its link, anything else is run_dir/sessions.db."""
        self.workspace, self.run_dir = Path(workspace), Path(run_dir)
        self.db_path = self.run_dir / "sessions.db"
        self.pg = store if isinstance(store, PostgresSessionStore) else None
        self.project_key = project_key_for_directory(self.workspace)
        self.trim = trim
        self._pool: ProcessPoolExecutor | None = None
        self._steps: tuple[tuple[int, ...], tuple[Runs, dict[str, str]]] | None = None
        self._verdict: tuple[tuple[int, ...], tuple[int, bool, str] | None] | None = None
        self._runs: tuple[tuple[int, ...], list[StepRun]] | None = None
        self._verdicts: dict[str, Verdicts] = {}
        self._computing: dict[tuple[str, int], asyncio.Future[Verdicts]] = {}
        self._context: dict[str, tuple[tuple[int, ...], int | None]] = {}
        self._loop: asyncio.AbstractEventLoop | None = None
        """The event loop of the async calls, whose pool a shared store's reads in worker threads use."""

    # -- reading (sync: call from a worker thread unless noted) ----------------------------------
    def _connect(self) -> Reader | None:
        if self.pg is not None:
            return PgReader(self.pg, self._loop)
        return SqliteReader(self.db_path) if self.db_path.exists() else None

    def latest_seq(self) -> int:
        """The highest entry position in the store, 0 when there is none or it cannot be read now (fast)."""
        try:
            reader = self._connect()
        except Exception:  # a shared store not answering: its one line comes from the wake (D9)
            return 0
        if reader is None:
            return 0
        try:
            return reader.latest_seq()
        except Exception:  # sqlite3 or PostgreSQL: no entries known yet, the next page says more
            return 0
        finally:
            reader.close()

    def count(self, session_id: str) -> int:
        """How many entries the store holds for a session (0 when none)."""
        try:
            reader = self._connect()
        except Exception:
            return 0
        if reader is None:
            return 0
        try:
            return reader.count(self.project_key, session_id)
        except Exception:
            return 0
        finally:
            reader.close()

    def _stamps(self, *names: str) -> tuple[int, ...] | None:
        """The state of run_dir's record files, or None when a shared store holds them (read afresh each time)."""
        if shared.of(self.run_dir) is not None:
            return None
        return tuple(_stamp(self.run_dir / name) for name in names)

    def steps(self) -> tuple[Runs, dict[str, str]]:
        """Session → its runs from the manifest (oldest first), and the lineage's step → session (cached per file state)."""
        stamp = self._stamps("lineage.json", "manifest.json")
        if self._steps is not None and stamp is not None and self._steps[0] == stamp:
            return self._steps[1]
        lineage = Lineage.load(self.run_dir, self.workspace)
        runs: Runs = {}
        for row in Manifest(self.run_dir, run="history").rows():
            sid, step = row.get("session_id"), row.get("step")
            if isinstance(sid, str) and isinstance(step, str):
                start = row.get("started_at")
                runs.setdefault(sid, []).append((float(start) if isinstance(start, (int, float)) else 0.0, step))
        found = {sid: sorted(v) for sid, v in runs.items()}, dict(lineage.steps)
        if stamp is not None:
            self._steps = (stamp, found)
        return found

    def step_runs(self) -> list[StepRun]:
        """Every step run the manifest records, oldest first, with the judge's verdicts (cached per file state)."""
        stamp = self._stamps("manifest.json")
        if self._runs is not None and stamp is not None and self._runs[0] == stamp:
            return self._runs[1]
        out = []
        for row in Manifest(self.run_dir, run="history").rows():
            step, start = row.get("step"), row.get("started_at")
            if not isinstance(step, str):
                continue
            passed = None
            if parse_name(step)[1] == "judge":
                passed = bool(row.get("ok")) and verdict_of(str(row.get("text") or ""))[0]
            duration = row.get("duration_s")
            out.append(StepRun(step, row.get("session_id") if isinstance(row.get("session_id"), str) else None,
                               bool(row.get("ok")), float(row.get("cost_usd") or 0.0),
                               float(duration) if isinstance(duration, (int, float)) else None,
                               float(start) if isinstance(start, (int, float)) else None, passed))
        out.sort(key=lambda r: r.started_at or 0.0)
        if stamp is not None:
            self._runs = (stamp, out)
        return out

    def last_verdict(self) -> tuple[int, bool, str] | None:
        """The judge's last verdict on the current work session as the manifest recorded it: (round, passed, reasons)."""
        stamp = self._stamps("manifest.json", "lineage.json")
        if self._verdict is not None and stamp is not None and self._verdict[0] == stamp:
            return self._verdict[1]
        runs, lineage = self.steps()
        work = lineage.get(WORK)
        # A judge round before the current work session began judged another task (flower/new, S28).
        since = runs[work][0][0] if work is not None and work in runs else float("inf")
        found: tuple[float, int, bool, str] | None = None
        for row in Manifest(self.run_dir, run="history").rows() if work is not None else []:
            step, kind, n = parse_name(str(row.get("step") or ""))
            start = row.get("started_at")
            if kind != "judge" or step != WORK or not isinstance(start, (int, float)) or start < since:
                continue
            if found is None or start >= found[0]:
                error = row.get("error")
                passed, reasons = verdict_of(str(row.get("text") or "")) if row.get("ok") else (
                    False, f"the judge could not run: {error}")
                found = (float(start), n, passed, reasons)
        value = found[1:] if found is not None else None
        if stamp is not None:
            self._verdict = (stamp, value)
        return value

    def sessions(self, con: Reader | None = None, steps: tuple[Runs, dict[str, str]] | None = None) -> list[Session]:
        """Every session of the workspace that the store holds, oldest first, with its steps."""
        runs, lineage = steps or self.steps()
        current = set(lineage.values())
        names: dict[str, list[str]] = {}
        for sid, started in runs.items():
            names[sid] = list(dict.fromkeys(step for _, step in started))
        for step, sid in lineage.items():
            if step not in names.setdefault(sid, []):
                names[sid].append(step)
        own = con is None
        con = con or self._connect()
        if con is None:
            return []
        try:
            rows = con.transcripts(self.project_key, list(names))
        except sqlite3.OperationalError as err:
            if "no such table" in str(err):
                return []
            raise
        finally:
            if own:
                con.close()
        first = {sid: min((t for t, _ in runs.get(sid, [])), default=float("inf")) for sid in names}
        found = [Session(sid, names[sid], count, sid in current, tid) for tid, sid, count in rows]
        return sorted(found, key=lambda s: (first[s.session_id], s.transcript))

    def read(self, session_id: str | None, before: int | None, limit: int) -> tuple[list[Item], int | None, list[Session]]:
        """A page of items (oldest first) below `before`, the cursor for the page before it, and the sessions."""
        con = self._connect()
        if con is None:
            if session_id is not None:
                raise UnknownSession(session_id)
            return [], None, []
        try:
            steps = self.steps()
            sessions = self.sessions(con, steps)
            chosen = [s for s in sessions if session_id is None or s.session_id == session_id]
            if session_id is not None and not chosen:
                raise UnknownSession(session_id)
            items, next_before = self._page(con, chosen, steps[0], before if before is not None else LAST, limit)
        except sqlite3.DatabaseError as err:
            if isinstance(err, sqlite3.OperationalError) and "locked" in str(err):
                raise
            raise FlowerError("db_unreadable", db=self.db_path, reason=err) from err
        finally:
            con.close()
        return items, next_before, sessions

    def _page(self, con: Reader, chosen: Sequence[Session], runs: Runs, before: int,
              limit: int) -> tuple[list[Item], int | None]:
        if not chosen:
            return [], None
        by_id = {s.transcript: s for s in chosen}
        starts = {sid: ([t for t, _ in r], [n for _, n in r]) for sid, r in runs.items()}
        out: list[list[Item]] = []  # per producing row, newest first
        cursor, batch, read = before, limit + 1, 0
        while True:
            rows = con.rows(list(by_id), cursor, batch)
            if not rows:
                return _flatten(out), None
            for (seq, tid, _), entry in zip(rows, decode_bodies([r[2] for r in rows]), strict=True):
                cursor = seq
                blocks = items_of(entry) if isinstance(entry, dict) else []
                if not blocks:
                    continue
                if len(out) >= limit:  # one more row would show: there is an older page
                    return _flatten(out), out[-1][0].seq
                session = by_id[tid]
                step = _step_at(starts.get(session.session_id), _epoch(entry.get("timestamp")), session)
                out.append([Item(seq, session.session_id, step, uuid, role, kind, text, name, cut(data) if data is not None else None, use)
                            for uuid, role, kind, text, name, data, use in blocks])
            # The next batch from the share of rows shown so far, so few rows beyond the page are decoded.
            read += len(rows)
            shown = len(out) / read
            batch = max(16, min(5000, int((limit + 1 - len(out)) / max(shown, 0.05) * 1.2)))

    def context(self, session_id: str) -> int | None:
        """A session's last context size in tokens (its last model round), read from sessions.db; cached per db state."""
        stamp: tuple[int, ...] | None = None
        if self.pg is None:
            try:
                stamp = tuple(int(p.stat().st_mtime_ns) for p in (self.db_path, Path(f"{self.db_path}-wal")) if p.exists())
            except OSError:
                stamp = ()
        cached = self._context.get(session_id)
        if cached is not None and stamp is not None and cached[0] == stamp:
            return cached[1]
        value: int | None = None
        try:
            con = self._connect()
        except Exception:
            return None
        if con is not None:
            try:
                value = self._read_context(con, session_id)
            except Exception:  # sqlite3 or PostgreSQL: unknown for now
                value = None
            finally:
                con.close()
        if stamp is not None:
            self._context[session_id] = (stamp, value)
        return value

    def _read_context(self, con: Reader, session_id: str) -> int | None:
        cursor, batch = LAST, 32
        while True:  # the last model round is near the end: read backwards a few rows at a time
            rows = con.session(self.project_key, session_id, cursor, batch)
            if not rows:
                return None
            found = context_of(decode_bodies([b for _, b in reversed(rows)]))
            if found is not None:
                return found
            cursor, batch = rows[-1][0], min(batch * 4, 4096)

    # -- async (on the event loop) ---------------------------------------------------------------
    def verdicts(self, session_id: str, count: int | None = None) -> asyncio.Future[Verdicts]:
        """The pruner's verdicts for a session: cached when its entry count is unchanged, else computed in a thread."""
        loop = self._loop = asyncio.get_running_loop()
        ready = self._verdicts.get(session_id)
        if ready is not None and count is not None and ready.count >= count:
            done: asyncio.Future[Verdicts] = loop.create_future()
            done.set_result(ready)
            return done
        key = (session_id, count if count is not None else -1)
        running = self._computing.get(key)
        if running is not None:
            return running
        args = (str(self.db_path), self.project_key, session_id, self.trim, str(self.run_dir / "spill"))
        if self.pg is not None:
            future = asyncio.ensure_future(asyncio.to_thread(self._prune_pg, session_id))
        elif count is not None and count > LARGE:
            # The pruner is Python: in a thread it would hold the GIL for seconds of a large session,
            # and every request would wait behind it (benchmarks/editor.py). A process has its own.
            future = asyncio.ensure_future(self._in_process(args))
        else:
            future = asyncio.ensure_future(asyncio.to_thread(prune_session, *args))

        def keep(f: asyncio.Future[Verdicts]) -> None:
            self._computing.pop(key, None)
            if not f.cancelled() and f.exception() is None:
                known = self._verdicts.get(session_id)
                if known is None or f.result().count >= known.count:
                    self._verdicts[session_id] = f.result()

        future.add_done_callback(keep)
        self._computing[key] = future
        return future

    def _prune_pg(self, session_id: str) -> Verdicts:
        """A shared store's session pruned here (sync, in a thread): its rows come over the store's link."""
        reader = PgReader(self.pg, self._loop) if self.pg is not None else None
        entries = _decode([b for _, b in reader.session(self.project_key, session_id)]) if reader is not None else []
        return prune_entries(entries, self.pg, self.trim, str(self.run_dir / "spill"))

    async def _in_process(self, args: tuple[str, str, str, bool, str]) -> Verdicts:
        await asyncio.sleep(0.02)  # let the page that asked go out first: starting a worker costs a process spawn
        if self._pool is None:
            self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        return await asyncio.get_running_loop().run_in_executor(self._pool, prune_session, *args)

    def close(self) -> None:
        """Stop the worker process, if one was started (verdicts still being computed are dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    async def page(self, session_id: str | None = None, before: int | None = None, limit: int = 200,
                   wait: float = VERDICT_WAIT) -> Page:
        """A page of history with the pruner's verdicts of the sessions it shows (those not ready in `wait` are pending)."""
        self._loop = asyncio.get_running_loop()
        items, next_before, sessions = await asyncio.to_thread(self.read, session_id, before, limit)
        counts = {s.session_id: s.entries for s in sessions}
        futures = {sid: self.verdicts(sid, counts.get(sid)) for sid in dict.fromkeys(i.session_id for i in items)}
        small = [f for sid, f in futures.items() if not f.done() and counts.get(sid, 0) <= LARGE]
        if small and len(small) == sum(not f.done() for f in futures.values()):  # a large one would not be ready anyway
            await asyncio.wait([asyncio.shield(f) for f in small], timeout=wait)
        pending: dict[str, asyncio.Future[Verdicts]] = {}
        ready: dict[str, Verdicts] = {}
        for sid, future in futures.items():
            if future.done() and not future.cancelled() and future.exception() is None:
                ready[sid] = future.result()
            else:
                pending[sid] = future
        return Page(apply(items, ready), next_before, sessions, pending)


def apply(items: Iterable[Item], ready: dict[str, Verdicts]) -> list[Item]:
    """Items with their verdicts, and the pruner's added entries right after the entry they follow."""
    out: list[Item] = []
    for item in items:
        v = ready.get(item.session_id)
        if v is None:
            out.append(item)
            continue
        base = item.uuid.partition("#")[0]
        item.pruned = v.verdicts.get(base)
        item.pruned_text = v.texts.get(base) if item.pruned == "rewritten" else None
        out.append(item)
        if item.uuid == base:
            for entry in v.added.get(base, []):
                for uuid, role, kind, text, name, data, use in items_of(entry):
                    out.append(Item(item.seq, item.session_id, item.step, uuid, role, kind, text, name, data, use,
                                    pruned="added", pruned_text=text))
    return out


def _stamp(path: Path) -> int:
    try:
        st = path.stat()
    except OSError:
        return -1
    return st.st_mtime_ns ^ st.st_size ^ st.st_ino


def _flatten(rows: list[list[Item]]) -> list[Item]:
    return [item for row in reversed(rows) for item in row]


def _step_at(starts: tuple[list[float], list[str]] | None, when: float | None, session: Session) -> str | None:
    """The step running in `session` at time `when`: the last manifest run of it that started by then."""
    if not starts or not starts[0]:
        return session.steps[0] if session.steps else None
    times, names = starts
    if when is None:
        return names[-1]
    # A run's row is stamped before its CLI starts, so its entries come after its start; the CLI's stamps are
    # whole milliseconds, hence the small slack. (A second of slack gave a fast round's last entries to the next.)
    i = bisect.bisect_right(times, when + 0.002) - 1
    return names[max(i, 0)]
