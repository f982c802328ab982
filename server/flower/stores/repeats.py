"""Large strings a transcript repeats, stored once (issue 35): an entry names the earlier entry that holds the bytes.

A Read of the same 200 KB file three times, or a Write (its content is in the assistant's tool_use and again in the
CLI's toolUseResult), put the same long JSON string into several entries. Each entry's zstd frame only sees itself,
so every copy was stored again (0.29x the CLI's JSONL on such a session, against 0.18-0.23x elsewhere). Now the
first copy stays where it is, inline in its entry's frame, and a later entry of the same transcript stores, instead
of the bytes, where they are: (the earlier entry's seq, offset, length in that entry's stored JSON). Chosen over a
table of bodies by digest because an entry with no repeat is stored exactly as before (the dictionary's frames keep
the sharing inside one entry: a Read's numbered text and its raw copy compress together to 103 KB, 137 KB apart),
and because a reference never leaves its transcript, which is only ever deleted whole: retention frees the shared
bytes with the last entry that needs them, with nothing to count (D2: nothing stored is rewritten).

Stored body of an entry with references: a zstd skippable frame holding the references, then the entry's frame of its
JSON with the referenced strings cut out. A zstd frame starts with 28 B5 2F FD, raw JSON with ``{``, this with
50 2A 4D 18: readers tell the three apart by the first byte. A reference resolves against the referenced entry's
frame alone (its offsets are in that entry's stored JSON, whose copy is inline by construction), so never in chains.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from typing import Any

import orjson
import zstandard

__all__ = [
    "MAGIC", "MIN_LENGTH", "Cut", "Held", "Known", "Ref", "Span", "cut", "frame_of", "has_refs", "parse", "plan",
    "referred", "resolve", "spans", "still_held", "stored_bodies", "texts", "wrap",
]

MIN_LENGTH = 8192
"""Strings shorter than this (in characters) are never shared: an entry's own frame is cheaper than the bookkeeping."""

MAGIC = b"\x50\x2a\x4d\x18"
"""zstd's first skippable-frame magic number, little-endian: starts a body whose entry has references."""
_FIRST = MAGIC[0]
_REF = struct.Struct("<IqII")
"""One reference: offset in the cut JSON, the seq of the entry holding the bytes, offset and length there."""

Span = tuple[int, int, bytes]
"""A large string in an entry's JSON: (offset of its first byte after the quote, length in bytes, digest)."""
Ref = tuple[int, int, int, int]
"""(offset in this entry's cut JSON, seq of the entry holding the bytes, offset there, length)."""
Known = dict[bytes, tuple[int, int, int]]
"""A transcript's indexed strings: digest → (seq of the entry holding the first copy, offset there, length)."""
Cut = tuple[int, int, int, int, int]
"""A string an entry repeats: (offset in its JSON, length, seq of the entry holding it, offset there, length there)."""
Held = tuple[bytes, int, int, int]
"""An index row of a string an entry holds first: (digest, seq, offset in its stored JSON, length)."""


def has_refs(body: bytes | str) -> bool:
    """Whether a stored body carries references (it must be resolved before it is decoded)."""
    return type(body) is bytes and body[0] == _FIRST


def _strings(value: Any, out: list[str]) -> None:
    """The strings of MIN_LENGTH characters or more inside `value`, in the order orjson writes them."""
    if type(value) is str:
        if len(value) >= MIN_LENGTH:
            out.append(value)
    elif type(value) is dict:
        for v in value.values():
            if type(v) is not str or len(v) >= MIN_LENGTH:
                _strings(v, out)
    elif type(value) is list:
        for v in value:
            _strings(v, out)


def spans(entry: Mapping[str, Any], body: bytes) -> list[Span]:
    """The strings of MIN_LENGTH characters or more in `body` (orjson's JSON of `entry`), in order, each with its
    digest (SHA-256's first 16 bytes: the agent reads files anyone may have made, so no hash with known collisions)."""
    if len(body) < MIN_LENGTH:
        return []
    import hashlib  # here, not at import: the light commands never need it (issue 34)

    found: list[str] = []
    _strings(entry, found)
    out: list[Span] = []
    at = 0
    for s in found:
        length = len(orjson.dumps(s)) - 2
        # Found by its opening quote and first characters, not by all its bytes (a search for 200 KB costs 20x more).
        # Whatever bytes are taken, they are cut out and put back at the same offset: the entry's JSON is the same
        # bytes either way (D2). Not found, or its end not a quote (D6's redaction changed it since): left inline.
        where = body.find(orjson.dumps(s[:64])[:-1], at)
        end = where + 1 + length
        if where < 0 or end >= len(body) or body[end] != 0x22:
            continue
        out.append((where + 1, length, hashlib.sha256(body[where + 1:end]).digest()[:16]))
        at = end + 1
    return out


def plan(found: Sequence[Sequence[Span]], known: Known, seqs: Sequence[int]) -> tuple[list[list[Cut]], list[Held]]:
    """Per body of a batch (stored at `seqs`, in order), the strings it repeats from an earlier entry of the transcript
    (in `known`, checked by `still_held`) or of the batch, and the index rows of the strings it holds first."""
    known = dict(known)
    refs: list[list[Cut]] = []
    held: list[Held] = []
    for seq, found_ in zip(seqs, found, strict=True):
        mine: set[bytes] = set()
        here: list[Cut] = []
        cut_at = 0
        for start, length, digest in found_:
            there = known.get(digest)
            if there is not None and digest not in mine:
                here.append((start, length, *there))
                cut_at += length
                continue
            if digest not in mine:  # a second copy inside one entry stays inline: its own frame shares it
                mine.add(digest)
                known[digest] = (seq, start - cut_at, length)
                held.append((digest, seq, start - cut_at, length))
        refs.append(here)
    return refs, held


def texts(rows: Iterable[tuple[int, bytes]], expand: Callable[[bytes], bytes]) -> dict[int, bytes]:
    """The stored JSON (what a reference's offsets count in) of entries read as (seq, stored body)."""
    out: dict[int, bytes] = {}
    for seq, body in rows:
        frame = frame_of(body)
        out[seq] = frame if frame[0] == 0x7B else expand(frame)
    return out


def still_held(known: Known, held: Mapping[int, bytes]) -> Known:
    """The indexed strings whose entry still holds them (`held`: its stored JSON by seq, from `texts`), checked by
    digest: a reference is only ever made to bytes read just now (rows deleted by hand leave the index stale)."""
    import hashlib  # here, not at import: the light commands never need it (issue 34)

    return {d: (s, a, n) for d, (s, a, n) in known.items()
            if s in held and hashlib.sha256(held[s][a:a + n]).digest()[:16] == d}


def cut(body: bytes, refs: Sequence[Cut]) -> tuple[bytes, list[Ref]]:
    """`body` without the referenced strings ((offset, length, seq, offset there, length there) each, in order) and
    the references to put back."""
    parts: list[bytes] = []
    out: list[Ref] = []
    at = size = 0
    for start, length, seq, there, _ in refs:
        parts.append(body[at:start])
        size += start - at
        out.append((size, seq, there, length))
        at = start + length
    parts.append(body[at:])
    return b"".join(parts), out


def stored_bodies(bodies: Sequence[bytes | str], refs: Sequence[Sequence[Cut]],
                  pack: Callable[[list[bytes | str]], list[bytes | str]]) -> list[bytes | str]:
    """A batch's bodies as stored: each cut of the strings it repeats (`refs`, from `plan`), packed into its frame by
    `pack`, its references in front."""
    cuts = [cut(b, r) if r and type(b) is bytes else (b, []) for b, r in zip(bodies, refs, strict=True)]
    packed = pack([c for c, _ in cuts])
    return [wrap(r, f) if r and type(f) is bytes else f for (_, r), f in zip(cuts, packed, strict=True)]


def wrap(refs: Sequence[Ref], frame: bytes) -> bytes:
    """The stored body: the references in a skippable frame, then the frame of the cut JSON."""
    table = b"".join(_REF.pack(*r) for r in refs)
    return MAGIC + struct.pack("<I", len(table)) + table + frame


def parse(body: bytes) -> tuple[list[Ref], bytes]:
    """(references, frame of the cut JSON) of a body with references."""
    (size,) = struct.unpack_from("<I", body, 4)
    return list(_REF.iter_unpack(body[8:8 + size])), body[8 + size:]


def frame_of(body: bytes) -> bytes:
    """A stored body without its references: the frame (or raw JSON) its entry's offsets count in."""
    return parse(body)[1] if body[0] == _FIRST else body


def _iter_seqs(bodies: Sequence[bytes | str]) -> Iterator[int]:
    for b in bodies:
        if type(b) is bytes and b[0] == _FIRST:
            for _, seq, _, _ in parse(b)[0]:
                yield seq


def referred(seqs: Sequence[int], bodies: Sequence[bytes | str]) -> list[int]:
    """The seqs of the entries `bodies` (of entries `seqs`) refer to and do not hold themselves, in order."""
    return sorted(set(_iter_seqs(bodies)) - set(seqs))


def resolve(
    seqs: Sequence[int], bodies: Sequence[bytes | str], expand: Callable[[bytes], bytes],
    fetch: Callable[[list[int]], Sequence[tuple[int, bytes | str]]],
) -> list[bytes | str]:
    """`bodies` (of entries `seqs`) with each one carrying references replaced by its entry's whole JSON.

    `expand` turns a stored frame into its JSON (dictionary by the id it names); `fetch` reads the bodies of
    referenced entries not among `bodies` (inside the caller's read transaction)."""
    if not any(type(b) is bytes and b[0] == _FIRST for b in bodies):
        return list(bodies)
    wanted = set(_iter_seqs(bodies))
    held: dict[int, bytes | str] = {s: b for s, b in zip(seqs, bodies, strict=True) if s in wanted}
    missing = sorted(wanted - held.keys())
    if missing:
        held.update(fetch(missing))
    plain: dict[int, bytes] = {}

    def text(seq: int) -> bytes:
        found = plain.get(seq)
        if found is None:
            stored = held.get(seq)
            if type(stored) is not bytes:
                raise zstandard.ZstdError(f"a stored entry refers to entry {seq}, which its transcript does not hold")
            found = plain[seq] = frame_of(stored) if stored[0] == 0x7B else expand(frame_of(stored))
        return found

    out: list[bytes | str] = []
    for b in bodies:
        if type(b) is not bytes or b[0] != _FIRST:
            out.append(b)
            continue
        refs, frame = parse(b)
        body = expand(frame)
        parts: list[bytes] = []
        at = 0
        for where, seq, there, length in refs:
            parts += (body[at:where], text(seq)[there:there + length])
            at = where
        parts.append(body[at:])
        out.append(b"".join(parts))
    return out
