"""PruningSessionStore: what the model sees on resume, cleaned of outage and interruption debris (S23, S25)."""

from __future__ import annotations

import os
from typing import Any


class PruningSessionStore:
    """Wraps a SessionStore; rewrites only what `load()` returns, never what is stored (S23)."""

    def __init__(self, inner: Any, keep_denials: int = 1, ephemeral: bool = True, trim: bool = False,
                 spill_dir: str | os.PathLike | None = None):
        self.inner = inner
        self.keep_denials = keep_denials
        self.ephemeral = ephemeral
        self.trim = trim
        self.spill_dir = spill_dir

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    async def append(self, key, entries) -> None:
        """Store entries unchanged."""
        await self.inner.append(key, entries)

    async def load(self, key):
        """Load (not yet pruned: placeholder until the pruning lands)."""
        return await self.inner.load(key)
