"""sessions.db's rows read back: the queries and decoders the store and a prefetch worker share (stores/prefetch.py).

Free of the SDK on purpose: a worker process importing this module alone starts in tens of milliseconds, where
importing the SDK (its `mcp` and pydantic) takes half a second or more.
"""

from __future__ import annotations

import gc
import json
import sqlite3
import typing
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

import orjson
import zstandard

from .bodies import Codec, codec, expander, known, unpackers
from .repeats import has_refs, resolve

__all__ = [
    "BEFORE_NEWEST", "LATEST", "LOAD", "LOAD_SEQS", "codec_of", "decode_bodies", "read_transaction", "resolved", "without_gc",
]

T = TypeVar("T")

_TRANSCRIPT = """
FROM transcripts t JOIN entries e ON e.transcript = t.id
WHERE t.project_key = ? AND t.session_id = ? AND t.subpath = ?
ORDER BY e.seq
"""
LOAD = "SELECT e.body" + _TRANSCRIPT
"""A transcript's bodies in append order (project key, session id, subpath: '' for the main transcript)."""
LOAD_SEQS = "SELECT e.seq, e.body" + _TRANSCRIPT
"""The same, each with its seq."""

LATEST = """
SELECT coalesce(max(e.seq), 0) FROM entries e
WHERE e.transcript = (SELECT id FROM transcripts WHERE project_key = ? AND session_id = ? AND subpath = '')
"""
"""The seq of a main transcript's newest entry, 0 when it has none (project key, session id)."""

BEFORE_NEWEST = """
SELECT coalesce((SELECT e.seq FROM entries e
WHERE e.transcript = (SELECT id FROM transcripts WHERE project_key = ? AND session_id = ? AND subpath = '')
ORDER BY e.seq DESC LIMIT 1 OFFSET ?), 0)
"""
"""The seq of the entry `skip` places before a main transcript's newest, 0 when it has no more (key, session, skip)."""


def without_gc(decode: Callable[[], T]) -> T:
    """`decode()` with the cyclic GC paused."""
    # JSON builds no cycles, but its ~50 containers per entry would trigger GC
    # passes over the whole heap that cost as much as the parsing itself.
    if not gc.isenabled():
        return decode()
    gc.disable()
    try:
        return decode()
    finally:
        gc.enable()


def _blob(by: dict[int, zstandard.ZstdDecompressor]) -> Callable[[bytes], Any]:
    """One BLOB row's entry, by orjson: raw JSON as it is, a frame expanded first with the dictionary it names."""
    loads, named = orjson.loads, zstandard.get_frame_parameters
    return lambda body: loads(body) if body[0] == 0x7B else loads(by[named(body).dict_id].decompress(body))


CHUNK = 256
"""Frames expanded by one call of zstd, then parsed: about half a megabyte of JSON, still in the CPU's cache when
orjson reads it (2-3% faster than 2,000 frames at a time on benchmarks/store.py's session, 5% than 64)."""


def _decode_blobs(blobs: Sequence[bytes], by: dict[int, zstandard.ZstdDecompressor]) -> list[Any]:
    """The entries of BLOB rows: frames expanded CHUNK at a time, each chunk by the dictionary its first frame names."""
    # One multi-frame call per chunk instead of one call per frame: 5-10% of a load (benchmarks/store.py). Frames
    # of one chunk nearly always share a dictionary (a database switches once, when it trains its own); zstd refuses
    # a frame given another (its header names its dictionary), and such a chunk, or one holding raw JSON (a v3
    # file's before its conversion), is expanded frame by frame.
    loads, named, one = orjson.loads, zstandard.get_frame_parameters, _blob(by)
    out: list[Any] = []
    for at in range(0, len(blobs), CHUNK):
        chunk = blobs[at:at + CHUNK]
        # Raw JSON among the frames (an entry whose repeated strings were put back: stores/repeats.py, or a v3
        # file's rows before its conversion) is parsed as it is, the frames around it still expanded in one call.
        frames = [b for b in chunk if b[0] != 0x7B]
        try:
            if not frames:
                raise zstandard.ZstdError("raw JSON")
            # Its segments are buffers (iterable, though zstandard's stubs say not): read by orjson in place.
            expanded = typing.cast("list[bytes]", by[named(frames[0]).dict_id].multi_decompress_to_buffer(list(frames)))
        except (zstandard.ZstdError, ValueError):  # ValueError: no frame, or no size in one
            out += [one(b) for b in chunk]
            continue
        if len(frames) == len(chunk):
            out += [loads(memoryview(segment)) for segment in expanded]
        else:
            parsed = iter(expanded)
            out += [loads(b) if b[0] == 0x7B else loads(memoryview(next(parsed))) for b in chunk]
    return out


def decode_bodies(bodies: Sequence[bytes | str], codec: Codec | None = None) -> list[Any]:
    """The entries of stored ``bodies`` in order: BLOB rows by orjson (a frame expanded with the dictionary it names:
    the built-in one or ``codec``, the database's own), TEXT rows by the stdlib."""
    # orjson is fastest one row at a time: about twice its speed on the joined array.
    if all(type(b) is bytes for b in bodies):
        blobs = typing.cast("Sequence[bytes]", bodies)
        return without_gc(lambda: _decode_blobs(blobs, unpackers(codec)))
    # TEXT rows: written by an earlier flower (stdlib json), or orjson could not encode the
    # entry. The stdlib is fastest on one array.
    texts = [b for b in bodies if type(b) is str]

    blob = _blob(unpackers(codec))

    def decode() -> list[Any]:
        slow = iter(json.loads("[" + ",".join(texts) + "]"))
        return [blob(b) if type(b) is bytes else next(slow) for b in bodies]

    return without_gc(decode)


_BY_SEQ = "SELECT seq, body FROM entries WHERE seq IN (SELECT value FROM json_each(?))"


def resolved(conn: sqlite3.Connection, bodies: Sequence[bytes | str], codec: Codec | None,
             seqs: Sequence[int] = ()) -> list[bytes | str]:
    """`bodies` (of the entries `seqs`, when known) with the repeated strings they refer to put back (stores/repeats.py),
    the referenced entries read from `conn` when not among them: call it in the read transaction of the rows."""
    if not any(has_refs(b) for b in bodies):
        return list(bodies)

    def fetch(wanted: list[int]) -> list[tuple[int, bytes | str]]:
        return [(int(s), b) for s, b in conn.execute(_BY_SEQ, (json.dumps(wanted),))]

    return resolve(seqs, bodies, expander(codec), fetch)


def read_transaction(conn: sqlite3.Connection, work: Callable[[sqlite3.Connection], T]) -> T:
    """`work(conn)` in one read transaction (rows and the entries they refer to seen at one moment), or in the
    caller's when one is open."""
    opened = not conn.in_transaction
    if opened:
        conn.execute("BEGIN")
    try:
        return work(conn)
    finally:
        if opened and conn.in_transaction:
            conn.execute("COMMIT")


def codec_of(conn: sqlite3.Connection) -> Codec | None:
    """The database's dictionary, None while it has none (or no table for it: a file being created)."""
    try:
        row = conn.execute("SELECT id FROM dictionary").fetchone()
    except sqlite3.OperationalError as err:
        if "no such table" in str(err):
            return None
        raise
    if row is None:
        return None
    found = known(row[0])
    if found is None:
        (data,) = conn.execute("SELECT data FROM dictionary").fetchone()
        found = codec(row[0], data)
    return found
