"""LSP frames over an asyncio stream (the engine's socket), for both ends: reading (`core.frames.bodies`), and writing."""

from __future__ import annotations

import json
from typing import Any

from ..core.frames import bodies

__all__ = ["bodies", "frame"]


def frame(message: dict[str, Any]) -> bytes:
    """One message as an LSP frame (Content-Length in bytes of UTF-8 JSON)."""
    body = json.dumps(message, ensure_ascii=False).encode("utf-8")
    return b"Content-Length: %d\r\n\r\n" % len(body) + body
