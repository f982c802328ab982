"""An entry's uuid is stored once per transcript, kept so by the writer rather than by an index (both stores).

A unique index on (transcript, uuid) costs every append a page per entry (uuids are random): SQLite dropped it in its
v2 (twice an append's cost), PostgreSQL in its v6 (issue 35: 1.2 MB of the 10 MB its entries table took for the
benchmark's 20k-entry session). Instead the writer holds the transcript's lock (SQLite's write lock, PostgreSQL's row
lock on the transcript), then checks the batch against the uuids stored, which it keeps in memory as of the
transcript's mtime: every append that stores moves the mtime and never to a value it had, so an unchanged mtime
means nobody wrote to the transcript since, and a changed one that the uuids are read again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

__all__ = ["Seen", "fresh"]


@dataclass
class Seen:
    """The uuids stored in one transcript (its row id), as of the transcript's ``mtime``."""

    tid: int
    mtime: int
    uuids: set[str]


def fresh(uuids: Sequence[str | None], stored: set[str]) -> tuple[list[int], set[str]]:
    """The places of the batch's entries to store (no uuid, or one neither stored nor earlier in the batch: a uuid
    repeated within a batch counts once), and the uuids they add."""
    added: set[str] = set()
    out: list[int] = []
    for i, u in enumerate(uuids):
        if u is not None:
            if u in stored or u in added:
                continue
            added.add(u)
        out.append(i)
    return out, added
