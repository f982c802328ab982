"""Entry bodies at rest: one zstd frame each, against a dictionary trained from the database's own first entries (#26).

Measured on benchmarks/store.py's 20k-entry session (41.5 MB of JSON), as a fraction of the CLI's JSONL: one
level-3 frame per entry 0.37x, with a 112 KB dictionary trained on the first 500-5000 entries 0.13-0.14x, one frame
per append batch of 100 entries 0.14x. The dictionary is kept: as small as a batch's frame, and every entry stays
its own row (a tail read, a history page and a uuid check read only the rows they need, and nothing stored is
rewritten when a batch grows: D2). zstandard's reusable contexts compress and expand small frames 2-8x faster
than pyzstd or backports.zstd (which re-digest the dictionary at every call).

A body is raw JSON (it starts with ``{``: an entry is an object) until its database has a dictionary, then a zstd
frame (it starts with the zstd magic number and names its dictionary). Rows the stdlib wrote (TEXT, or
PostgreSQL's ``plain``) are kept as they are: rare, and read by another decoder.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from typing import Any

import orjson
import zstandard

__all__ = ["DICT_SIZE", "LEVEL", "PACK_BATCH", "SAMPLES", "Codec", "codec", "encode", "is_raw", "known", "train"]

LEVEL = 3
DICT_SIZE = 112 * 1024
"""zstd's default dictionary size: 0.14x on the benchmark's session, against 0.15x at 64 KB."""
SAMPLES = 1000
"""A database's dictionary is trained from its first this many entries, once it holds them (about 0.1 s, once)."""
PACK_BATCH = 500
"""Rows compressed per committed transaction when a database's earlier rows are converted (resumable: #26)."""

_OPEN_BRACE = 0x7B


def encode(entry: Mapping[str, Any]) -> bytes | str:
    """An entry's JSON: orjson's UTF-8 bytes, or the stdlib's text where orjson cannot encode it."""
    try:
        return orjson.dumps(entry)
    except TypeError:
        # orjson refuses lone surrogates (the CLI can cut text mid-emoji) and ints beyond
        # 64 bits. The stdlib escapes the one and keeps the other; stored as TEXT, such a row
        # is decoded by the stdlib too (orjson would fail on the escape, or round the int).
        return json.dumps(entry, separators=(",", ":"))


def is_raw(body: bytes) -> bool:
    """Whether a stored BLOB is the entry's JSON itself, not a frame."""
    return body[0] == _OPEN_BRACE


def train(samples: Sequence[bytes]) -> tuple[int, bytes]:
    """(id, content) of a dictionary trained from `samples` (the database's first entries, raw JSON)."""
    # k and d given (segment size, dmer length): one fastcover pass, 0.12 s for 1000 entries against 0.47 s for
    # zstd's search of them, for the same 0.139x (benchmarks/store.py's session).
    trained = zstandard.train_dictionary(DICT_SIZE, list(samples), k=1024, d=8, level=LEVEL)
    return trained.dict_id(), trained.as_bytes()


class Codec:
    """One database's dictionary: packs a body into a frame and unpacks it back, byte for byte (D2)."""

    def __init__(self, ident: int, data: bytes) -> None:
        """Hold the dictionary; contexts are made per thread (a zstd context serves one call at a time)."""
        self.ident = ident
        self._dict = zstandard.ZstdCompressionDict(data)
        self._dict.precompute_compress(level=LEVEL)  # digested once, not by every compressor
        self._local = threading.local()

    def _contexts(self) -> tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor]:
        made: tuple[zstandard.ZstdCompressor, zstandard.ZstdDecompressor] | None = getattr(self._local, "made", None)
        if made is None:
            made = (zstandard.ZstdCompressor(level=LEVEL, dict_data=self._dict),
                    zstandard.ZstdDecompressor(dict_data=self._dict))
            self._local.made = made
        return made

    def pack(self, body: bytes) -> bytes:
        """The frame of a raw body (a frame passes as it is)."""
        return self._contexts()[0].compress(body) if is_raw(body) else body

    def unpacker(self) -> zstandard.ZstdDecompressor:
        """This thread's decompressor (its `decompress` expands one frame)."""
        return self._contexts()[1]


_CODECS: dict[int, Codec] = {}
"""Dictionaries by id, each read once per process: a database's never changes once trained (zstd's id hashes it)."""


def known(ident: int) -> Codec | None:
    """The dictionary `ident` if this process read it already."""
    return _CODECS.get(ident)


def codec(ident: int, data: bytes) -> Codec:
    """The dictionary `ident` (`data` as read from its database), kept for the process."""
    found = _CODECS.get(ident)
    if found is None:
        found = _CODECS[ident] = Codec(ident, data)
    return found
