"""CLI-shaped model rounds for the stores' `last_context` tests, on both backends."""

from __future__ import annotations

from typing import Any


def assistant(uid: str, tokens: tuple[int, int, int], model: str = "claude-sonnet-4-5") -> dict[str, Any]:
    """An assistant entry whose usage says input, cache read and cache creation tokens."""
    usage = {"input_tokens": tokens[0], "cache_read_input_tokens": tokens[1], "cache_creation_input_tokens": tokens[2],
             "output_tokens": 7}
    return {"type": "assistant", "uuid": uid, "message": {"id": f"msg-{uid}", "role": "assistant", "model": model,
                                                          "content": [{"type": "text", "text": "ok"}], "usage": usage}}


def user(uid: str) -> dict[str, Any]:
    """A user entry (no usage)."""
    return {"type": "user", "uuid": uid, "message": {"role": "user", "content": "go on"}}


def session_ending_in_a_long_tool_run(tail: int) -> list[dict[str, Any]]:
    """Two real rounds, then a synthetic one and `tail` entries without usage: the last real round is 10+2+3."""
    return [user("u0"), assistant("a0", (1, 1, 1)), user("u1"), assistant("a1", (10, 2, 3)),
            assistant("syn", (999, 0, 0), model="<synthetic>"), *(user(f"t{i}") for i in range(tail)),
            {"type": "last-prompt", "lastPrompt": "go on"}]
