"""LSP frames over an asyncio stream (the engine's socket), for both ends: reading as `framing.frames` expects, and writing."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

from ..lsp.framing import frames


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
    """Each frame's body until the stream ends (bad header blocks skipped, as on stdio)."""
    return frames(lambda limit: line(reader, limit), lambda n: exactly(reader, n))


def frame(message: dict[str, Any]) -> bytes:
    """One message as an LSP frame (Content-Length in bytes of UTF-8 JSON)."""
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
