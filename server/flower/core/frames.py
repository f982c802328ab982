"""LSP frames read from a stream: each body by its Content-Length, bad header blocks skipped (D4, issue 34).

Apart from pygls: the editor server's stdio (`lsp/framing.py`) and the engine's socket, both ends, read with it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import AsyncIterator, Awaitable, Callable

log = logging.getLogger("flower.lsp.framing")  # the name its warnings always had

MAX_FRAME = 64 * 2**20
"""Largest body accepted, in bytes; a header claiming more is treated as a bad header (skipped)."""
LINE_LIMIT = 64 * 2**10
"""Longest header line read at once; longer lines are garbage, read in pieces."""
async def frames(readline: Callable[[int], Awaitable[bytes]], read: Callable[[int], Awaitable[bytes]]) -> AsyncIterator[bytes]:
    """Each frame's body until end of input; a header block without a usable Content-Length is skipped to the next header."""
    length: int | None = None
    header = False  # the current block has a Content-Length header (usable or not)
    lines = 0  # lines in the current block
    carry = b""
    while True:
        piece = await readline(LINE_LIMIT)
        if not piece:
            return
        line, carry = carry + piece, b""
        if not line.endswith(b"\n"):
            carry = line[-64:]  # a header cut at LINE_LIMIT is whole in the next piece
            lines += 1
            continue
        if not line.strip():
            if length is not None:
                body = await read(length)
                if len(body) < length:  # end of input mid-body
                    return
                yield body
            elif lines and not header:
                log.warning("a frame without a Content-Length header: skipped to the next header")
            length, header, lines = None, False, 0
            continue
        lines += 1
        # The last header on the line: a truncated frame's header or a body without headers may come before it.
        at = line.lower().rfind(b"content-length:")
        if at >= 0:  # a new frame starts here, whatever came before it
            value = line[at + len(b"content-length:"):].strip()
            length = int(value) if value.isdigit() and len(value) < 12 and int(value) <= MAX_FRAME else None
            header = True
            if length is None:
                log.warning("bad header Content-Length: %s; skipped to the next header",
                            value[:40].decode("ascii", "replace"))


async def line(reader: asyncio.StreamReader, limit: int) -> bytes:
    """A line up to `limit` bytes (less at end of input); a longer one comes in pieces."""
    try:
        return await reader.readuntil(b"\n")
    except asyncio.IncompleteReadError as exc:
        return exc.partial
    except asyncio.LimitOverrunError as exc:
        return await reader.read(min(exc.consumed, limit) or limit)


async def exactly(reader: asyncio.StreamReader, n: int) -> bytes:
    """`n` bytes, or fewer at end of input."""
    try:
        return await reader.readexactly(n)
    except asyncio.IncompleteReadError as exc:
        return exc.partial


def bodies(reader: asyncio.StreamReader) -> AsyncIterator[bytes]:
    """Each frame's body from an asyncio stream until it ends (bad header blocks skipped, as on stdio)."""
    return frames(lambda limit: line(reader, limit), lambda n: exactly(reader, n))
