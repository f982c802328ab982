"""The files a resumed CLI reads: its transcript as JSONL, and the spill files trimmed results point at (S26).

Free of the SDK: the prefetch worker (stores/prefetch.py) writes them too.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import orjson

from ..core.durable import write_atomic
from .bodies import encode

__all__ = ["write_jsonl", "write_spills"]


def write_jsonl(path: Path, entries: Iterable[Mapping[str, Any]]) -> None:
    """Write `entries` to `path` one JSON object a line (mode 0o600: a transcript can quote secrets), as the CLI reads them."""
    dumps, newline = orjson.dumps, orjson.OPT_APPEND_NEWLINE
    with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
        for entry in entries:
            try:
                f.write(dumps(entry, option=newline))
            except TypeError:  # lone surrogates, ints beyond 64 bits: the stdlib's text (as sessions.db keeps them)
                f.write(str(encode(entry)).encode() + b"\n")


def write_spills(spills: dict[Path, str]) -> None:
    """Write each trimmed result whole or not at all (S11): a later load never points at half a file (S26)."""
    for path, text in spills.items():
        write_atomic(path, text.encode("utf-8", errors="surrogatepass"))
