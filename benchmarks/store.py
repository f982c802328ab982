"""Append/load throughput of SqliteSessionStore vs the raw SQLite floor, and of PostgresSessionStore vs a raw asyncpg floor, same run (D7).

Usage: python benchmarks/store.py [--entries N] [--batch B] [--no-postgres] [--cli-rounds 0,1,28]

The transcript mimics a coding session written by the bundled Claude Code CLI
(2.1.332): entry shapes follow a real transcript (user prompts, attachments,
one assistant entry per content block sharing message.id and usage, tool_use /
tool_result pairs with toolUseResult, and uuid-less queue-operation,
api-request, last-prompt and cost-state lines). Tool results are mostly small,
with a few tens-of-KB file reads; their text is real Python source.
The raw floor is what any SQLite store must at least spend: orjson-encode each entry and
executemany the rows into a bare table, one committed transaction per batch, the store's
pragmas (WAL, synchronous=NORMAL, 4 KB pages); its load is one SELECT and orjson per row.
Targets: append >= 0.85x the floor and >= 50k entries/s, load >= 300 MB/s, a tail read (a status's last context size)
< 10 ms and history's first page < 100 ms (the budgets of benchmarks/status.py and editor.py), and sessions.db on disk
<= 0.2x the CLI's JSONL of every session (issue 35; #26: bodies are zstd frames against the database's own dictionary;
the floor stays uncompressed, so it is what compression costs). The same session also goes through a store of the
schema before issue 35 (v4: every entry its own frame, no string shared between entries), the baseline of each figure.
First, real-CLI sessions of long repeated strings (SHAPES: one 200 KB file read whole six times; six 150 KB files
written and two rewritten), each beside the same entries stored as v4 did. Then real-CLI sessions of 0, 1 and 28 rounds (`--cli-rounds`; entry_census.py's
workflow through the bundled CLI, below the 1,000 entries a database's own dictionary needs: their bodies are frames
against the built-in one; 0 rounds is a prompt, an answer and a resume, 24 entries as the smallest e2e test's) print
sessions.db against the CLI's JSONL of the same session, its page size (a new file has 512-byte pages until it trains
its dictionary or reaches 1 MB: SQLite gives every table and index a page, most of a small file), and the same rows
VACUUMed into 0.5, 1, 4 and 16 KB pages. `--compare` first prints the three ways of compressing that were
measured for #26 (one frame per entry, per entry with a trained dictionary, one frame per append batch).
Each SQLite rate is also given per CPU second of this process (all its threads, the store's worker too): on a shared
machine the wall time also holds what other processes took of the cores, and the load average is printed beside it.
PostgreSQL (issue #14) runs on a server this script starts from the [test] extras' wheel (tests/pg.py), over its Unix
socket; its raw floor is one `INSERT … SELECT FROM unnest(uuids, bodies)` per batch and transaction into a bare table
(bodies uncompressed, as the store keeps them),
and one SELECT with orjson per row. Postgres is the shared store, not the fast one: its speed is reported, with no target;
its size is held to the same <= 0.2x the CLI's JSONL on every session above (issue 35), each beside the same entries
stored as its v5 did (`pg_v5_size`: the v5 table, a frame per entry against bodies.zdict, then its own dictionary). A
real-CLI session's cost in a database that holds others (PostgreSQL is the shared store) is what one more copy of it
adds to the tables of its entries (heap, TOAST, indexes, and since v6 the index of repeated strings), measured over
the last four of eight copies in one schema; the first page each table, index and free-space map takes is no one
session's, and is printed apart as the eight copies' average share (`pg_share`).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import random
import sqlite3
import sys
import tempfile
import time
import uuid as uuidlib
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import asyncpg
import claude_agent_sdk
import orjson
import zstandard
from claude_agent_sdk import InMemorySessionStore

from entry_census import ROOT, cli_session, stored
from flower.stores.bodies import LEVEL, SAMPLES, builtin, codec, encode_all, raw, train
from flower.stores.postgres import PostgresSessionStore
from flower.stores.sqlite import BUSY_TIMEOUT_S, MIGRATIONS, SqliteSessionStore, decode_bodies
from flower.testing import reply, say, text, tool, tool_use

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pg import PgServer  # noqa: E402 - tests/pg.py: a real PostgreSQL from the [test] extras' wheel

SESSION = "90ab8268-68e8-48f0-b204-48bad2d7d557"
CWD = "/home/dev/project"
COMMON = {
    "userType": "external",
    "entrypoint": "sdk-cli",
    "cwd": CWD,
    "sessionId": SESSION,
    "version": "2.1.332",
    "gitBranch": "main",
}
USAGE = {
    "input_tokens": 6,
    "cache_creation_input_tokens": 1843,
    "cache_read_input_tokens": 48213,
    "output_tokens": 412,
    "output_tokens_details": {"thinking_tokens": 0},
    "server_tool_use": {"web_search_requests": 0, "web_fetch_requests": 0},
    "service_tier": "standard",
    "cache_creation": {"ephemeral_1h_input_tokens": 0, "ephemeral_5m_input_tokens": 1843},
    "inference_geo": "",
    "iterations": [],
    "speed": "standard",
    "fallback_credit": None,
}


class Transcript:
    """Builds a linear parentUuid chain of CLI-shaped entries."""

    def __init__(self, rng: random.Random, corpus: str) -> None:
        self.rng = rng
        self.corpus = corpus
        self.entries: list[dict[str, Any]] = []
        self.parent: str | None = None
        self.clock = datetime(2026, 11, 29, 9, 0, tzinfo=UTC)
        self.n_msg = 0

    def _ts(self) -> str:
        self.clock += timedelta(milliseconds=self.rng.randint(5, 4000))
        return self.clock.isoformat(timespec="milliseconds").replace("+00:00", "Z")

    def _uuid(self) -> str:
        return str(uuidlib.UUID(int=self.rng.getrandbits(128), version=4))

    def text(self, lo: int, hi: int) -> str:
        n = self.rng.randint(lo, hi)
        start = self.rng.randrange(0, max(1, len(self.corpus) - n))
        return self.corpus[start : start + n]

    def _chain(self, entry: dict[str, Any]) -> dict[str, Any]:
        uid = self._uuid()
        entry = {"parentUuid": self.parent, "isSidechain": False, **entry}
        entry.update(uuid=uid, timestamp=self._ts(), **COMMON)
        self.parent = uid
        self.entries.append(entry)
        return entry

    def plain(self, entry: dict[str, Any]) -> None:
        self.entries.append({**entry, "sessionId": SESSION})

    def prompt(self, text: str) -> None:
        self.plain({"type": "queue-operation", "operation": "enqueue", "timestamp": self._ts(), "content": text})
        self.plain({"type": "queue-operation", "operation": "dequeue", "timestamp": self._ts()})
        self._chain({
            "promptId": self._uuid(),
            "type": "user",
            "message": {"role": "user", "content": text},
            "permissionMode": "default",
            "promptSource": "sdk",
            "sentAtMs": int(self.clock.timestamp() * 1000),
            "rowSource": "local",
            "turnOrigin": "sdk",
            "turnPosition": {"promptIndex": 0, "turnIndex": 1},
        })
        self._chain({
            "attachment": {"type": "date", "date": "2026-11-29"},
            "type": "attachment",
            "rendered": [{"content": "<system-reminder>\nToday's date is 2026-11-29.\n</system-reminder>"}],
            "renderedRole": "system",
        })

    def response(self, blocks: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """One API response: an api-request line, then one assistant entry per block."""
        request_id = self._uuid()
        self.plain({
            "type": "api-request", "id": request_id, "timestamp": self._ts(),
            "version": "2.1.332", "querySource": "sdk",
            "shapeHash": "80de3671f7a5f1bef7d4357e2eb13746c820f84625ada6990355b20b76e22e22",
            "params": {"model": "claude-opus-5-5", "max_tokens": 128000,
                       "thinking": {"type": "adaptive", "display": "omitted"},
                       "output_config": {"effort": "medium"}},
            "tail": [f"{self.rng.getrandbits(256):064x}"],
        })
        self.n_msg += 1
        out = []
        for i, block in enumerate(blocks):
            out.append(self._chain({
                "message": {
                    "id": f"msg_{self.n_msg:06d}", "type": "message", "role": "assistant",
                    "model": "claude-opus-5-5", "content": [block],
                    "stop_reason": "tool_use" if block["type"] == "tool_use" else "end_turn",
                    "stop_sequence": None, "usage": USAGE, "stop_details": None,
                },
                "apiBlockIndex": i, "requestRef": request_id,
                "requestedModel": "claude-opus-5-5", "promptCacheRequested": "5m",
                "type": "assistant", "effort": "medium", "perTurnEffort": "medium",
                "madeBy": "model",
            }))
        return out

    def tool_step(self) -> None:
        tool_id = f"toolu_{self.rng.getrandbits(96):024x}"
        roll = self.rng.random()
        size = (self.rng.randint(20_000, 80_000) if roll < 0.03
                else self.rng.randint(2_000, 8_000) if roll < 0.15
                else self.rng.randint(100, 2_000))
        path = f"{CWD}/src/module_{self.rng.randint(1, 60)}.py"
        blocks: list[dict[str, Any]] = []
        if self.rng.random() < 0.5:
            blocks.append({"type": "text", "text": self.text(60, 600)})
        kind = self.rng.choice(["Read", "Read", "Bash", "Edit", "Grep"])
        body = self.text(size, size)
        tool_input: dict[str, Any]
        result: dict[str, Any]
        if kind == "Read":
            tool_input = {"file_path": path}
            result = {"type": "text", "file": {"filePath": path, "content": body,
                      "numLines": body.count("\n") + 1, "startLine": 1,
                      "totalLines": body.count("\n") + 1}}
        elif kind == "Bash":
            tool_input = {"command": "python -m pytest -q tests/", "description": "Run tests"}
            result = {"stdout": body, "stderr": "", "interrupted": False,
                      "isImage": False, "noOutputExpected": False}
        elif kind == "Edit":
            old, new = self.text(40, 400), self.text(40, 400)
            tool_input = {"file_path": path, "old_string": old, "new_string": new, "replace_all": False}
            body = f"The file {path} has been updated successfully."
            result = {"filePath": path, "oldString": old, "newString": new,
                      "originalFile": None, "structuredPatch": [], "userModified": False,
                      "replaceAll": False}
        else:
            tool_input = {"pattern": "def ", "path": f"{CWD}/src", "output_mode": "content"}
            result = {"mode": "content", "numFiles": 3, "filenames": [], "content": body,
                      "numLines": body.count("\n") + 1}
        blocks.append({"type": "tool_use", "id": tool_id, "name": kind, "input": tool_input})
        assistant = self.response(blocks)[-1]
        self._chain({
            "promptId": self._uuid(),
            "type": "user",
            "message": {"role": "user", "content": [
                {"tool_use_id": tool_id, "type": "tool_result", "content": body, "is_error": False}]},
            "toolUseResult": result,
            "sourceToolAssistantUUID": assistant["uuid"],
        })

    def turn(self) -> None:
        self.prompt(self.text(30, 300))
        for _ in range(self.rng.randint(3, 15)):
            self.tool_step()
        self.response([{"type": "text", "text": self.text(200, 1500)}])
        self.plain({"type": "last-prompt", "lastPrompt": "fix the failing test", "leafUuid": self.parent})
        self.plain({"type": "cost-state", "totalCostUSD": round(self.rng.random(), 4),
                    "totalAPIDuration": 81234, "totalDuration": 412345,
                    "modelUsage": {"claude-opus-5-5": {"inputTokens": 9123, "outputTokens": 20331}}})


def build(n: int, seed: int = 7) -> list[dict[str, Any]]:
    """A CLI-shaped transcript of exactly ``n`` entries."""
    sdk_dir = Path(claude_agent_sdk.__file__).parent
    corpus = "\n".join(p.read_text() for p in sorted(sdk_dir.rglob("*.py")))
    t = Transcript(random.Random(seed), corpus)
    while len(t.entries) < n:
        t.turn()
    return t.entries[:n]


def jsonl_bytes(entries: list[dict[str, Any]]) -> int:
    """The size of the CLI's own JSONL of these entries (JSON.stringify: compact, non-ASCII as it is, one line each)."""
    return sum(len(json.dumps(e, ensure_ascii=False, separators=(",", ":")).encode()) + 1 for e in entries)


def on_disk(db: Path) -> int:
    """sessions.db and whatever lies beside it (-wal, -shm) in bytes."""
    return sum(f.stat().st_size for f in db.parent.glob(db.name + "*"))


def compare(entries: list[dict[str, Any]], batch: int, jsonl: int) -> None:
    """The ways of compressing the bodies measured for #26: size against the JSONL, compress and expand speed."""
    bodies = [orjson.dumps(e) for e in entries]
    mb = sum(map(len, bodies)) / 1e6
    _, data = train(bodies[:SAMPLES])
    trained = zstandard.ZstdCompressionDict(data)
    ways = {
        f"one frame per entry, level {LEVEL}": (zstandard.ZstdCompressor(level=LEVEL), zstandard.ZstdDecompressor(), 1),
        f"per entry, a dictionary of the first {SAMPLES}": (zstandard.ZstdCompressor(level=LEVEL, dict_data=trained),
                                                              zstandard.ZstdDecompressor(dict_data=trained), 1),
        f"one frame per append batch ({batch})": (zstandard.ZstdCompressor(level=LEVEL), zstandard.ZstdDecompressor(), batch),
    }
    print("compression of the bodies, level", LEVEL, "(zstandard):")
    for name, (cctx, dctx, per) in ways.items():
        chunks = [b"\n".join(bodies[j : j + per]) for j in range(0, len(bodies), per)]
        t0 = time.perf_counter()
        frames = [cctx.compress(c) for c in chunks]
        packing = time.perf_counter() - t0
        t0 = time.perf_counter()
        for f in frames:
            dctx.decompress(f)
        expanding = time.perf_counter() - t0
        size = sum(map(len, frames)) + (len(data) if "dictionary" in name else 0)
        print(f"  {name:<44} {size / jsonl:.3f}x the JSONL   compress {mb / packing:6.0f} MB/s   expand {mb / expanding:6.0f} MB/s")


def vacuumed(db: Path, page: int) -> int:
    """The size of a copy of `db` rewritten by VACUUM into pages of `page` bytes."""
    with tempfile.TemporaryDirectory() as tmp:
        copy = Path(tmp) / db.name
        copy.write_bytes(db.read_bytes())
        conn = sqlite3.connect(copy, isolation_level=None)
        conn.execute("PRAGMA journal_mode = DELETE").fetchone()  # a WAL file keeps its page size
        conn.execute(f"PRAGMA page_size = {page:d}")
        conn.execute("VACUUM")
        conn.close()
        return copy.stat().st_size


V4 = MIGRATIONS[:4]
"""The schema before issue 35: every entry its own frame, a repeated string stored again (the baseline of `shapes`)."""


def source_text(n: int) -> str:
    """`n` characters of flower's own source, none repeated (files the built-in dictionary was not trained on)."""
    src = "\n".join(p.read_text() for p in sorted((ROOT / "server" / "flower").rglob("*.py")))
    src += "\n".join(p.read_text() for p in sorted((ROOT / "tests").rglob("*.py")))
    assert len(src) >= n, f"{len(src)} characters of source, {n} wanted"
    return src[:n]


def rereads(ws: Path, times: int = 6, size: int = 200_000) -> list[Any]:
    """The model reads one 200 KB file whole `times` times, a Bash between (allow_large: the CLI refuses a file over 25k
    tokens otherwise). The CLI stores each read as a 445 KB entry: the numbered text, and the file again raw."""
    big = ws / "big.py"
    big.write_text(source_text(size))
    replies: list[Any] = []
    for i in range(times):
        replies += [reply(say(f"reading it again ({i})"), tool_use("Read", {"file_path": str(big), "allow_large": True})),
                    tool("Bash", {"command": f"echo pass {i}; wc -l {big}", "description": "count lines"})]
    return [*replies, text("read it all")]


def writes(ws: Path, files: int = 6, size: int = 150_000) -> list[Any]:
    """The model writes `files` new files of 150 KB of distinct text, then rewrites two of them with a line changed: the
    CLI stores a Write's content in the tool call and again in its result."""
    src = source_text(files * size)
    bodies = [src[i * size:(i + 1) * size] for i in range(files)]
    replies: list[Any] = [reply(say(f"writing part {i}"), tool_use("Write", {"file_path": str(ws / f"part{i}.py"), "content": b}))
                          for i, b in enumerate(bodies)]
    for i in (0, 1):
        changed = bodies[i][: size // 2] + f"\n# revised {i}\n" + bodies[i][size // 2:]
        replies.append(tool("Write", {"file_path": str(ws / f"part{i}.py"), "content": changed}))
    return [*replies, text("written")]


SHAPES = {"one 200 KB file read whole 6 times": rereads, "six 150 KB files written, two rewritten": writes}
"""Real-CLI sessions dominated by long strings that repeat (issue 35)."""


async def replayed(entries: list[Any], schema: Any, batch: int = 10) -> int:
    """Bytes on disk of `entries` appended in batches of `batch` (the SDK's eager flushes are small) to a fresh store."""
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "sessions.db"
        async with SqliteSessionStore(db, migrations=schema) as store:
            key: Any = {"project_key": "-bench", "session_id": SESSION}
            for j in range(0, len(entries), batch):
                await store.append(key, entries[j : j + batch])
            assert await store.load(key) == entries
        return on_disk(db)


_V5_TABLE = """
CREATE TABLE {t} (seq bigserial PRIMARY KEY, transcript bigint NOT NULL, uuid text, plain boolean NOT NULL, body bytea NOT NULL);
ALTER TABLE {t} ALTER COLUMN body SET STORAGE EXTERNAL;
CREATE INDEX ON {t} (transcript, seq);
CREATE UNIQUE INDEX ON {t} (transcript, uuid) WHERE uuid IS NOT NULL
"""
"""PostgreSQL's entries table as its v5 made it (before issue 35)."""
_TABLES = "SELECT sum(pg_total_relation_size(c))::bigint FROM unnest(array[to_regclass($1 || '.entries'), to_regclass($1 || '.repeats')]) c"
_SCHEMAS = iter(range(1 << 30))


async def pg_v5_size(conn: Any, entries: list[Any], copies: int, batch: int) -> list[int]:
    """Bytes the v5 table takes after each of `copies` of `entries` (under their own transcript ids) appended in batches
    of `batch` as a v5 store wrote them: a frame per entry against bodies.zdict until SAMPLES entries, then against the
    dictionary trained from them; the empty table's first."""
    table = f"v5_{next(_SCHEMAS)}"
    await conn.execute(_V5_TABLE.replace("{t}", table))
    try:
        encoded = encode_all(entries)
        plain = [isinstance(b, str) for b in encoded]
        bodies = [b.encode() if isinstance(b, str) else b for b in encoded]
        packer, count = builtin(), 0
        sizes = [int(await conn.fetchval(f"SELECT pg_total_relation_size('{table}')"))]
        for c in range(copies):
            for j in range(0, len(entries), batch):
                part = range(j, min(j + batch, len(entries)))
                await conn.execute(
                    f"INSERT INTO {table} (transcript, uuid, plain, body) SELECT $1, u, p, b"
                    " FROM unnest($2::text[], $3::boolean[], $4::bytea[]) WITH ORDINALITY AS x(u, p, b, o) ORDER BY o",
                    c, [entries[i].get("uuid") for i in part], [plain[i] for i in part],
                    [bodies[i] if plain[i] else packer.pack(bodies[i]) for i in part])
                count += sum(not plain[i] for i in part)
                if count >= SAMPLES and packer is builtin():  # v5 trained at the append that reached SAMPLES
                    samples = [bytes(r[0]) for r in await conn.fetch(f"SELECT body FROM {table} WHERE NOT plain ORDER BY seq LIMIT {SAMPLES}")]
                    packer = codec(*train(raw(samples, None)))
            sizes.append(int(await conn.fetchval(f"SELECT pg_total_relation_size('{table}')")))
        return sizes
    finally:
        await conn.execute(f"DROP TABLE {table}")


async def pg_size(url: str, entries: list[Any], copies: int, batch: int = 10) -> tuple[list[int], list[int]]:
    """(now, v5): bytes PostgreSQL's tables of entries take after each of `copies` of a session, each under its own
    session id, appended in batches of `batch` (the SDK's eager flushes are small) to a fresh schema, the empty tables'
    first. Each copy is read back byte for byte (D2), or an AssertionError."""
    schema = f"size{next(_SCHEMAS)}"
    async with PostgresSessionStore(url, schema=schema) as store:
        pool = await store._ensure_pool()
        async with pool.acquire() as conn:
            sizes = [int(await conn.fetchval(_TABLES, schema))]
        for c in range(copies):
            key: Any = {"project_key": "-bench", "session_id": f"s{c}"}
            for j in range(0, len(entries), batch):
                await store.append(key, entries[j : j + batch])
            loaded = await store.load(key)
            assert loaded is not None and [orjson.dumps(e) for e in loaded] == [orjson.dumps(e) for e in entries]
            async with pool.acquire() as conn:
                sizes.append(int(await conn.fetchval(_TABLES, schema)))
        async with pool.acquire() as conn:
            v5 = await pg_v5_size(conn, entries, copies, batch)
            await conn.execute(f"DROP SCHEMA {schema} CASCADE")
    return sizes, v5


PG_COPIES = 8
"""Copies of a real-CLI session in one schema when its share of PostgreSQL is measured (`pg_share`)."""


async def pg_share(url: str, entries: list[Any], cli: int) -> float:
    """Print a real-CLI session's cost in PostgreSQL (`pg_size`) against its CLI's JSONL of `cli` bytes, now and as v5
    stored it: what each of the last half of PG_COPIES copies added (a session stored into a database that holds some
    already: the target), and the average share of all of them (the first page each table, index and free-space map
    takes counted in); the first ratio."""
    now, v5 = await pg_size(url, entries, PG_COPIES)
    half = PG_COPIES // 2

    def added(sizes: list[int]) -> float:
        return (sizes[-1] - sizes[half]) / half

    def share(sizes: list[int]) -> float:
        return (sizes[-1] - sizes[0]) / PG_COPIES

    print(f"    PostgreSQL: each of copies {half + 1}-{PG_COPIES} of it in one schema added {added(now) / 1e3:,.0f} KB ="
          f" {added(now) / cli:.3f}x (as v5 stored it {added(v5) / 1e3:,.0f} KB = {added(v5) / cli:.3f}x); the"
          f" {PG_COPIES} copies' average share {share(now) / 1e3:,.0f} KB = {share(now) / cli:.3f}x"
          f" (v5 {share(v5) / 1e3:,.0f} KB = {share(v5) / cli:.3f}x)")
    return added(now) / cli


async def shapes(pg_url: str | None) -> list[tuple[str, float]]:
    """sessions.db against the CLI's JSONL of each of SHAPES, and the same entries stored as before issue 35 (v4), in
    one run: the ratios (PostgreSQL's too, now and as v5 stored them, with `pg_url`)."""
    out = []
    print("real-CLI sessions of long repeated strings (issue 35), against the CLI's JSONL:")
    for name, replies in SHAPES.items():
        with tempfile.TemporaryDirectory() as tmp:
            jsonl, db = await cli_session(Path(tmp), 0, "", replies)
            cli, size = jsonl.stat().st_size, db.stat().st_size
            entries = stored(db)
            before, after = await replayed(entries, V4), await replayed(entries, MIGRATIONS)
        print(f"  {name}: {len(entries)} entries, JSONL {cli / 1e3:,.0f} KB; sessions.db {size / 1e3:,.0f} KB ="
              f" {size / cli:.3f}x;  replayed: shared {after / cli:.3f}x, every entry its own frame (v4) {before / cli:.3f}x")
        out.append((name, size / cli))
        if pg_url is not None:
            out.append((f"PostgreSQL {name}", await pg_share(pg_url, entries, cli)))
    return out


async def small_sessions(rounds: list[int], pg_url: str | None) -> list[float]:
    """sessions.db against the CLI's JSONL of real-CLI sessions (entry_census.py's workflow, reading stores/postgres.py:
    a file the built-in dictionary was not trained on), as the e2e tests' sessions are; the ratios (PostgreSQL's too,
    with `pg_url`)."""
    module = (ROOT / "server" / "flower" / "stores" / "postgres.py").read_text()[:30_000]
    ratios = []
    print("real-CLI sessions (bundled CLI against flower.testing.ScriptedModel), sessions.db against the CLI's JSONL:")
    for n in rounds:
        with tempfile.TemporaryDirectory() as tmp:
            jsonl, db = await cli_session(Path(tmp), n, module)
            conn = sqlite3.connect(db)
            entries, frames = conn.execute("SELECT count(*), sum(length(body)) FROM entries").fetchone()
            (page,) = conn.execute("PRAGMA page_size").fetchone()
            conn.close()
            cli, size, beside = jsonl.stat().st_size, db.stat().st_size, on_disk(db) - db.stat().st_size
            pages = "  ".join(f"{p / 1024:g} KB {vacuumed(db, p) / cli:.3f}x" for p in (512, 1024, 4096, 16384))
            print(f"  {entries} entries, JSONL {cli / 1e3:,.0f} KB: sessions.db {size / 1e3:,.0f} KB = {size / cli:.3f}x"
                  f" in {page:,} B pages"
                  f" (bodies {frames / 1e3:,.0f} KB = {frames / cli:.3f}x; -wal/-shm left beside it {beside / 1e3:,.0f} KB)"
                  f"\n    VACUUMed into pages of {pages}")
            ratios.append(size / cli)
            if pg_url is not None:
                ratios.append(await pg_share(pg_url, stored(db), cli))
    return ratios


def dispatch_cost(db: Path, repeat: int) -> tuple[float, float]:
    """(decode_bodies, one dictionary's decompressor) in MB/s of JSON, best of 3 * `repeat`, on the same rows of `db`:
    the frames stored after the database trained its own dictionary (what a reader that did not read a frame's
    dictionary id from its header would decode), so the difference is what the dispatch by id costs a load."""
    conn = sqlite3.connect(db)
    ident, data, trained = conn.execute("SELECT id, data, trained FROM dictionary").fetchone()
    rows = [b for (b,) in conn.execute("SELECT body FROM entries WHERE seq > ? AND typeof(body) = 'blob' ORDER BY seq",
                                       (trained,))]
    conn.close()
    own = codec(ident, data)
    expand, loads = own.unpacker().decompress, orjson.loads
    mb = sum(len(expand(b)) for b in rows) / 1e6
    best = [float("inf"), float("inf")]
    ways = [(0, lambda: decode_bodies(rows, own)), (1, lambda: [loads(expand(b)) for b in rows])]
    gc.disable()
    for i in range(3 * repeat):  # each goes first every other time
        for k, decode in ways if i % 2 else ways[::-1]:
            t0 = time.perf_counter()
            decode()
            best[k] = min(best[k], time.perf_counter() - t0)
    gc.enable()
    return mb / best[0], mb / best[1]


class Timed:
    """Wall seconds and this process's CPU seconds (all its threads) of a `with` block."""

    def __enter__(self) -> Timed:
        self.wall, self.cpu = time.perf_counter(), time.process_time()
        return self

    def __exit__(self, *exc: object) -> None:
        self.wall, self.cpu = time.perf_counter() - self.wall, time.process_time() - self.cpu


async def store_append(store: SqliteSessionStore | PostgresSessionStore, key: Any, entries: list[Any], batch: int) -> Timed:
    """The time to append ``entries`` in batches of ``batch``."""
    with Timed() as took:
        for j in range(0, len(entries), batch):
            await store.append(key, entries[j : j + batch])
    return took


def floor_append(path: Path, entries: list[dict[str, Any]], batch: int) -> Timed:
    """The raw floor: orjson-encode every entry and executemany it into a bare table (no index),
    one committed transaction per batch, with the store's pragmas."""
    conn = sqlite3.connect(path, isolation_level=None, timeout=BUSY_TIMEOUT_S)
    conn.execute("PRAGMA page_size = 4096")
    conn.execute("PRAGMA journal_mode = WAL").fetchone()
    conn.execute("PRAGMA synchronous = NORMAL")
    conn.execute("CREATE TABLE entries (seq INTEGER PRIMARY KEY, uuid TEXT, body BLOB NOT NULL)")
    with Timed() as took:
        for j in range(0, len(entries), batch):
            rows = [(e.get("uuid"), orjson.dumps(e)) for e in entries[j : j + batch]]
            conn.execute("BEGIN IMMEDIATE")
            conn.executemany("INSERT INTO entries (uuid, body) VALUES (?, ?)", rows)
            conn.execute("COMMIT")
    conn.close()
    return took


def floor_load(path: Path) -> Timed:
    """The raw floor of a load: one SELECT of the bodies in order, orjson per row, GC paused."""
    conn = sqlite3.connect(path, isolation_level=None)
    with Timed() as took:
        bodies = [r[0] for r in conn.execute("SELECT body FROM entries ORDER BY seq")]
        gc.disable()
        loaded = [orjson.loads(b) for b in bodies]
        gc.enable()
    del loaded
    conn.close()
    return took


async def pg_floor(url: str, entries: list[dict[str, Any]], batch: int, loads: int) -> tuple[float, float]:
    """The raw Postgres floor: (append s, best load s) of bare rows over the same socket, no keys, no dedup."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("DROP TABLE IF EXISTS floor; CREATE TABLE floor (seq bigserial PRIMARY KEY, uuid text, body bytea NOT NULL);"
                           " ALTER TABLE floor ALTER COLUMN body SET STORAGE EXTERNAL")  # as the store's entries
        t0 = time.perf_counter()
        for j in range(0, len(entries), batch):
            part = entries[j : j + batch]
            async with conn.transaction():
                await conn.execute("INSERT INTO floor (uuid, body) SELECT u, b FROM unnest($1::text[], $2::bytea[]) AS x(u, b)",
                                   [e.get("uuid") for e in part], [orjson.dumps(e) for e in part])
        append = time.perf_counter() - t0
        load = float("inf")
        for _ in range(loads):
            t0 = time.perf_counter()
            rows = await conn.fetch("SELECT body FROM floor ORDER BY seq")
            gc.disable()
            loaded = [orjson.loads(r[0]) for r in rows]
            gc.enable()
            load = min(load, time.perf_counter() - t0)
            del loaded, rows
        return append, load
    finally:
        await conn.close()


async def postgres_rounds(url: str, entries: list[dict[str, Any]], key: Any, batch: int, repeat: int,
                          keep: Any) -> bool:
    """Store and floor on a fresh schema / table each round; False if a load differs."""
    for i in range(repeat):
        async with PostgresSessionStore(url, schema=f"bench{i}") as store:
            keep("pg store append", (await store_append(store, key, entries, batch)).wall)
            pool = await store._ensure_pool()
            async with pool.acquire() as conn:  # the entries with their TOAST and indexes, and (v6) the repeats index
                keep("pg store disk", await conn.fetchval(_TABLES, f"bench{i}"))
                if i == 0:
                    keep("pg v5 disk", (await pg_v5_size(conn, entries, 1, batch))[-1])
            for _ in range(repeat):
                t0 = time.perf_counter()
                loaded = await store.load(key)
                keep("pg store load", time.perf_counter() - t0)
                if loaded != entries:
                    return False
                del loaded
            store.last_context_sync(key["project_key"], SESSION)  # the link's connection opened first, as a status finds it
            ((tid, _, _),) = await store.transcripts(key["project_key"], [SESSION])
            for _ in range(repeat):
                with Timed() as took:
                    store.last_context_sync(key["project_key"], SESSION)
                keep("pg store tail", took.wall)
                with Timed() as took:
                    await store.page([tid], 1 << 62, 201)
                keep("pg store page", took.wall)
            async with pool.acquire() as conn:
                await conn.execute(f"DROP SCHEMA bench{i} CASCADE")
        append, load = await pg_floor(url, entries, batch, repeat)
        keep("pg floor append", append)
        keep("pg floor load", load)
    return True


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=20_000)
    ap.add_argument("--batch", type=int, default=100, help="entries per append() call")
    ap.add_argument("--repeat", type=int, default=5,
                    help="fresh databases filled, and loads per database (the best time is kept)")
    ap.add_argument("--no-postgres", dest="postgres", action="store_false", help="skip PostgresSessionStore")
    ap.add_argument("--compare", action="store_true", help="first measure the ways of compressing the bodies (#26)")
    ap.add_argument("--cli-rounds", default="0,1,28",
                    help="real-CLI sessions of these many rounds to measure on disk first ('' for none; 0: 24 entries,"
                         " 1: 46, 28: ~500)")
    ap.add_argument("--no-shapes", dest="shapes", action="store_false", help="skip the real-CLI sessions of SHAPES")
    args = ap.parse_args()
    server = PgServer() if args.postgres else None
    try:
        return await measure(args, server)
    finally:
        if server is not None:
            server.remove()


async def measure(args: argparse.Namespace, server: PgServer | None) -> int:
    """Everything main() prints, with PostgreSQL on `server` (None: without it)."""
    pg_url = None
    if server is not None:
        server.init().start()
        pg_url = server.url(server.new_database())
    shaped = await shapes(pg_url) if args.shapes else []
    small = await small_sessions([int(r) for r in args.cli_rounds.split(",") if r], pg_url)

    entries = build(args.entries)
    n = len(entries)
    mb = sum(len(json.dumps(e, separators=(",", ":"))) for e in entries) / 1e6
    sizes = sorted(len(json.dumps(e)) for e in entries)
    print(f"transcript: {n} entries, {mb:.1f} MB JSON, "
          f"median {sizes[len(sizes) // 2]} B, max {sizes[-1] / 1e3:.0f} KB, "
          f"{sum(1 for e in entries if 'uuid' not in e)} without uuid; batches of {args.batch}")
    key: Any = {"project_key": "-home-dev-project", "session_id": SESSION}
    jsonl = jsonl_bytes(entries)
    if args.compare:
        compare(entries, args.batch, jsonl)

    mem = InMemorySessionStore()
    t0 = time.perf_counter()
    for j in range(0, n, args.batch):
        await mem.append(key, entries[j : j + args.batch])  # type: ignore[arg-type]
    mem_append = time.perf_counter() - t0

    # Store and floor take turns, each on a fresh file, so that machine noise hits both alike.
    best: dict[str, float] = {}

    def keep(name: str, seconds: float | Timed) -> None:
        if isinstance(seconds, Timed):  # the CPU time says how much of the wall time the machine's load took
            best[f"{name} cpu"] = min(best.get(f"{name} cpu", float("inf")), seconds.cpu)
            seconds = seconds.wall
        best[name] = min(best.get(name, float("inf")), seconds)

    start_load = os.getloadavg()[0]

    async def reads(name: str, store: SqliteSessionStore) -> None:
        """A tail read (a status's last context size, read-only from the end) and history's first page of 201 rows."""
        for _ in range(args.repeat):
            with Timed() as took:
                store.last_context_sync(key["project_key"], SESSION)
            keep(f"{name} tail", took.wall)
            ((tid, _, _),) = await store.transcripts(key["project_key"], [SESSION])
            with Timed() as took:
                await store.page([tid], 1 << 62, 201)
            keep(f"{name} page", took.wall)

    async def v4_round(db: Path) -> None:
        """The same session in a store of the schema before issue 35 (every entry its own frame): the baseline."""
        async with SqliteSessionStore(db, migrations=V4) as store:
            keep("v4 append", await store_append(store, key, entries, args.batch))
            for _ in range(args.repeat):
                with Timed() as took:
                    loaded = await store.load(key)
                keep("v4 load", took)
                del loaded
            await reads("v4", store)
        keep("v4 disk", on_disk(db))

    with tempfile.TemporaryDirectory() as tmp:
        for i in range(args.repeat):
            floor_db, store_db = Path(tmp) / f"floor{i}.db", Path(tmp) / f"run{i}" / "sessions.db"
            floor_first = i % 2 == 1  # each goes first every other round: neither always gets a fresh disk
            if not floor_first:
                await v4_round(Path(tmp) / f"v4-{i}" / "sessions.db")
            if floor_first:
                keep("floor append", floor_append(floor_db, entries, args.batch))
            async with SqliteSessionStore(store_db) as store:
                keep("store append", await store_append(store, key, entries, args.batch))
                if not floor_first:
                    keep("floor append", floor_append(floor_db, entries, args.batch))
                for _ in range(args.repeat):
                    with Timed() as took:
                        loaded = await store.load(key)
                    keep("store load", took)
                    if loaded != entries:
                        print("ERROR: SqliteSessionStore.load() differs from what was appended")
                        return 1
                    del loaded  # freed before the next load, as a caller would
                    keep("floor load", floor_load(floor_db))
                await reads("store", store)
            keep("store disk", on_disk(store_db))  # closed: the WAL is checkpointed into the file
            if floor_first:
                await v4_round(Path(tmp) / f"v4-{i}" / "sessions.db")
            if i == 0:
                dispatched, single = dispatch_cost(store_db, args.repeat)
                conn = sqlite3.connect(store_db)
                (page,) = conn.execute("PRAGMA page_size").fetchone()  # rewritten from 512 B when it trained
                conn.close()
            keep("floor disk", on_disk(floor_db))
            for f in Path(tmp).rglob("*.db*"):
                f.unlink()  # a tmpfs would otherwise fill with every run's copy

    if pg_url is not None and not await postgres_rounds(pg_url, entries, key, args.batch, args.repeat, keep):
        print("ERROR: PostgresSessionStore.load() differs from what was appended")
        return 1

    def row(name: str, seconds: float, floor: float) -> None:
        print(f"  {name:<7} store {n / seconds:>9,.0f} entries/s {mb / seconds:>7.1f} MB/s"
              f"   raw floor {n / floor:>9,.0f} entries/s {mb / floor:>7.1f} MB/s"
              f"   store/floor {floor / seconds:.2f}x")

    def cpu_row(name: str) -> None:
        store, floor = best[f"store {name} cpu"], best[f"floor {name} cpu"]
        print(f"          as much per CPU second: store {n / store:>9,.0f} entries/s {mb / store:>7.1f} MB/s"
              f"   raw floor {n / floor:>9,.0f} entries/s {mb / floor:>7.1f} MB/s")

    print(f"SqliteSessionStore, {os.cpu_count()} cores, load average {start_load:.1f} at the start, "
          f"{os.getloadavg()[0]:.1f} now:")
    row("append", best["store append"], best["floor append"])
    cpu_row("append")
    row("load", best["store load"], best["floor load"])
    cpu_row("load")
    disk = best["store disk"] / jsonl
    print(f"  disk    sessions.db {best['store disk'] / 1e6:.1f} MB = {disk:.3f}x the CLI's JSONL ({jsonl / 1e6:.1f} MB)"
          f" in {page:,} B pages   raw floor {best['floor disk'] / 1e6:.1f} MB = {best['floor disk'] / jsonl:.3f}x")
    print(f"  beside the schema before issue 35 (v4, no shared strings), same run: append {best['v4 append'] / best['store append']:.2f}x"
          f" its speed ({n / best['v4 append']:,.0f} entries/s), load {best['v4 load'] / best['store load']:.2f}x"
          f" ({mb / best['v4 load']:.1f} MB/s), disk {best['store disk'] / best['v4 disk']:.3f}x its size")
    print(f"  tail read (last context size, from the end) {best['store tail'] * 1e3:.2f} ms (v4 {best['v4 tail'] * 1e3:.2f} ms);"
          f" history's first page of 201 rows {best['store page'] * 1e3:.2f} ms (v4 {best['v4 page'] * 1e3:.2f} ms)")
    print(f"  decode of the frames against the database's own dictionary: by the id each names {dispatched:.0f} MB/s,"
          f" all with that one dictionary {single:.0f} MB/s ({dispatched / single:.2f}x)")
    print(f"  (InMemorySessionStore append: {n / mem_append:,.0f} entries/s, for scale)")
    if pg_url is not None:
        print("PostgresSessionStore (Unix socket, fsync off as in the tests' server):")
        row("append", best["pg store append"], best["pg floor append"])
        row("load", best["pg store load"], best["pg floor load"])
        print(f"  postgres/sqlite: append {best['store append'] / best['pg store append']:.2f}x,"
              f" load {best['store load'] / best['pg store load']:.2f}x;"
              f" postgres/in-memory append {mem_append / best['pg store append']:.2f}x")
        pg_disk = best["pg store disk"] / jsonl
        print(f"  disk    entries (and v6's repeats) with their TOAST and indexes {best['pg store disk'] / 1e6:.2f} MB ="
              f" {pg_disk:.3f}x the JSONL; as v5 stored them {best['pg v5 disk'] / 1e6:.2f} MB = {best['pg v5 disk'] / jsonl:.3f}x")
        print(f"  tail read (last context size, from the end) {best['pg store tail'] * 1e3:.2f} ms;"
              f" history's first page of 201 rows {best['pg store page'] * 1e3:.2f} ms")

    def verdict(ok: bool) -> str:
        return "met" if ok else "NOT met"

    ratio = best["floor append"] / best["store append"]
    print(f"targets: append >= 0.85x floor {verdict(ratio >= 0.85)}, "
          f"append >= 50k entries/s {verdict(n / best['store append'] >= 50_000)}, "
          f"load >= 300 MB/s {verdict(mb / best['store load'] >= 300)}, "
          f"disk <= 0.2x the JSONL {verdict(disk <= 0.2)}"
          + "".join(f", real-CLI session {r:.3f}x {verdict(r <= 0.2)}" for r in small)
          + "".join(f", {name} {r:.3f}x {verdict(r <= 0.2)}" for name, r in shaped)
          + f", tail read < 10 ms {verdict(best['store tail'] < 0.010)}, page < 100 ms {verdict(best['store page'] < 0.100)}"
          + (f", PostgreSQL disk {pg_disk:.3f}x {verdict(pg_disk <= 0.2)}" if pg_url is not None else ""))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
