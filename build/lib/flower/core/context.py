"""A session's context size: the tokens its last real model round sent (input + cache read + cache creation)."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

__all__ = ["context_of", "tail_pages", "tokens_of"]


def tokens_of(usage: Mapping[str, Any]) -> int:
    """Context size of one API response: input + cache read + cache creation tokens."""
    return sum(int(usage.get(k) or 0) for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens"))


def context_of(entries: Sequence[Mapping[str, object]] | None) -> int | None:
    """Context size of a transcript: input + cache read + cache creation of its last real assistant message."""
    for entry in reversed(entries or []):
        message = entry.get("message") if entry.get("type") == "assistant" else None
        if not isinstance(message, dict) or message.get("model") == "<synthetic>":
            continue
        usage = message.get("usage")
        if isinstance(usage, dict):
            # One API response is several entries repeating one usage; the last one is enough (dedup by id).
            return tokens_of(usage)
    return None


def tail_pages() -> Iterator[int]:
    """Page sizes for reading a session backwards: the last model round is near the end, a long tool run further."""
    size = 16
    while True:
        yield size
        size = min(size * 4, 4096)

