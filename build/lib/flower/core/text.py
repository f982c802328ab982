"""Short forms of text for people: one truncation and one tool-call label for every front-end and the pruner."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

LABEL_KEYS = ("file_path", "command", "path", "pattern", "url", "query", "description")
"""The input fields that say what a tool call does, most telling first."""


def clip(text: str, limit: int, *, count: bool = False) -> str:
    """`text` cut to at most `limit` characters with a trailing `…`; `count` says how many were left out."""
    if len(text) <= limit:
        return text
    if count:
        return text[:limit] + f"… [{len(text) - limit} more characters]"
    return text[: max(limit - 1, 0)] + "…"


def tool_arg(data: Any, *, limit: int = 80, path: Callable[[str], str] | None = None) -> str:
    """The one argument that says what a tool call does (a path, a command, a pattern), on one line."""
    if not isinstance(data, Mapping):
        return ""
    for key in LABEL_KEYS:
        value = data.get(key)
        if isinstance(value, str) and value.strip():
            if path is not None and key in ("file_path", "path"):
                value = path(value)
            return clip(" ".join(value.split()), limit)
    return ""


def tool_label(name: str, data: Any, *, limit: int = 80, path: Callable[[str], str] | None = None) -> str:
    """`Read(/path)`, `Bash(ls -la)`: a tool call as one short line (`path` shows a path argument differently)."""
    return f"{name}({tool_arg(data, limit=limit, path=path)})"
