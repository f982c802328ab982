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

from .bodies import Codec, codec, known, unpackers

__all__ = ["LATEST", "LOAD", "codec_of", "decode_bodies", "without_gc"]

T = TypeVar("T")

LOAD = """
SELECT e.body FROM transcripts t JOIN entries e ON e.transcript = t.id
WHERE t.project_key = ? AND t.session_id = ? AND t.subpath = ?
ORDER BY e.seq
"""
"""A transcript's bodies in append order (project key, session id, subpath: '' for the main transcript)."""

LATEST = """
SELECT coalesce(max(e.seq), 0) FROM entries e
WHERE e.transcript = (SELECT id FROM transcripts WHERE project_key = ? AND session_id = ? AND subpath = '')
"""
"""The seq of a main transcript's newest entry, 0 when it has none (project key, session id)."""


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


def _decoder(codec: Codec | None) -> Callable[[bytes | str], Any]:
    """One stored body's entry: a BLOB by orjson (expanded first if it is a frame), a TEXT row (stdlib json wrote it) by the stdlib."""
    loads, by, named = orjson.loads, unpackers(codec), zstandard.get_frame_parameters
    return lambda body: (
        (loads(body) if body[0] == 0x7B else loads(by[named(body).dict_id](body))) if type(body) is bytes
        else json.loads(body))


def decode_bodies(bodies: Sequence[bytes | str], codec: Codec | None = None) -> list[Any]:
    """The entries of stored ``bodies`` in order: BLOB rows by orjson (a frame expanded with the dictionary it names:
    the built-in one or ``codec``, the database's own), TEXT rows by the stdlib."""
    loads = orjson.loads
    # orjson is fastest one row at a time: about twice its speed on the joined array.
    if all(type(b) is bytes for b in bodies):
        # A frame's header names its dictionary (#26): reading the id costs about 4% of a load (benchmarks/store.py).
        by, named = unpackers(codec), zstandard.get_frame_parameters
        blobs = typing.cast("Sequence[bytes]", bodies)
        return without_gc(lambda: [loads(b) if b[0] == 0x7B else loads(by[named(b).dict_id](b)) for b in blobs])
    # TEXT rows: written by an earlier flower (stdlib json), or orjson could not encode the
    # entry. The stdlib is fastest on one array.
    texts = [b for b in bodies if type(b) is str]

    blob = _decoder(codec)

    def decode() -> list[Any]:
        slow = iter(json.loads("[" + ",".join(texts) + "]"))
        return [blob(b) if type(b) is bytes else next(slow) for b in bodies]

    return without_gc(decode)


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
