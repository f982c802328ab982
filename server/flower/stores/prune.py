"""PruningSessionStore: a SessionStore whose `load()` returns what the model should see on resume (S23, S25, S26).

The adapter between the SDK and the pure algorithm in `transcript.py`: it loads from the inner
store, prunes, writes the spill files trimmed results point at (S26), and delegates the rest.
`write()` puts the same pruned transcript in a file, as the CLI's JSONL (how a resume reads it:
stores/resume.py). Stored entries are never altered (D2): only what `load()` returns is pruned.
"""

from __future__ import annotations

import asyncio
import gc
import os
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, cast

from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStore,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from .jsonl import write_jsonl, write_spills

if TYPE_CHECKING:
    from .base import Store
from .transcript import (
    EPHEMERAL_COMMANDS,
    INTERRUPTED_NOTE,
    INTERRUPTED_REPLY,
    TRIM_KEEP_ROUNDS,
    TRIM_THRESHOLD,
    Entry,
    PruneResult,
    is_ephemeral,
    prune,
)

__all__ = [
    "EPHEMERAL_COMMANDS", "INTERRUPTED_NOTE", "INTERRUPTED_REPLY", "PruneResult", "PruningSessionStore", "implements",
    "is_ephemeral", "prune", "write_jsonl",
]

_OPTIONAL = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")


class PruningSessionStore(SessionStore):
    """Wraps a SessionStore; rewrites only what `load()` returns, never what is stored (S23, D2)."""

    def __new__(cls, inner: Store, *args: Any, **kwargs: Any) -> PruningSessionStore:
        # The SDK probes optional methods on the class (as `implements` does): offer exactly the inner's.
        missing = tuple(m for m in _OPTIONAL if not implements(inner, m))
        if missing:
            cls = _without(cls, missing)
        return super().__new__(cls)

    def __init__(self, inner: Store, keep_denials: int = 1, ephemeral: bool | Iterable[str] = True, trim: bool = False,
                 spill_dir: str | os.PathLike[str] | None = None, *, trim_threshold: int = TRIM_THRESHOLD,
                 trim_keep_rounds: int = TRIM_KEEP_ROUNDS) -> None:
        # `inner` is flower's store (stores/base.Store); its other attributes pass through to it.
        if trim and spill_dir is None:
            raise ValueError("trim=True needs a spill_dir (the Runtime uses run_dir/spill)")
        self.inner = inner
        self.keep_denials = keep_denials
        self.ephemeral = ephemeral
        self.trim = trim
        self.spill_dir = Path(spill_dir) if spill_dir is not None else None
        self.trim_threshold = trim_threshold
        self.trim_keep_rounds = trim_keep_rounds

    def prune(self, entries: list[SessionStoreEntry] | list[Entry]) -> PruneResult:
        """`prune` with this store's settings (for views that show what the model will see)."""
        # The SDK's TypedDict is a minimal view of the same JSON objects the algorithm reads.
        return prune(cast("list[Entry]", entries), keep_denials=self.keep_denials, ephemeral=self.ephemeral, trim=self.trim,
                     spill_dir=self.spill_dir, trim_threshold=self.trim_threshold, trim_keep_rounds=self.trim_keep_rounds)

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Store entries unchanged."""
        await self.inner.append(key, entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """The stored transcript, pruned; spilled results are on disk before it is returned."""
        entries: list[SessionStoreEntry] | None = await self.inner.load(key)
        if not entries:
            return entries
        # In a worker thread: a large transcript takes the pruner a second or more, and the event loop (an editor
        # server's status, other folders' streams) must go on meanwhile.
        result, fresh = await asyncio.to_thread(self._pruned, entries)
        if fresh:
            await asyncio.to_thread(write_spills, fresh)
        # A string type: `list[...]` would allocate, and the first allocation after `gc.enable()` runs
        # the GC pass over the whole transcript that pausing it was meant to spare (measured: 50 ms).
        return cast("list[SessionStoreEntry]", result.entries)

    async def write(self, key: SessionKey, path: Path) -> bool:
        """Write the stored transcript, pruned, to `path` as the CLI's JSONL; False (nothing written) when none is stored.

        What `load()` returns, without handing it back: pruned and written in one worker thread, so the event loop
        never holds the transcript and no second encoder (the SDK's stdlib `json.dumps` per entry) runs over it.
        """
        entries: list[SessionStoreEntry] | None = await self.inner.load(key)
        if not entries:
            return False
        fresh = await asyncio.to_thread(self._written, entries, path)
        if fresh:
            await asyncio.to_thread(write_spills, fresh)
        return True

    def _written(self, entries: list[SessionStoreEntry], path: Path) -> dict[Path, str]:
        """Prune `entries` and write the result to `path`; the spill files it points at that are not written yet."""
        return self._pruned(entries, lambda pruned: write_jsonl(path, pruned.entries))[1]

    def _pruned(self, entries: list[SessionStoreEntry],
                then: Callable[[PruneResult], None] | None = None) -> tuple[PruneResult, dict[Path, str]]:
        """The pruned transcript (given to `then` first) and the spill files it points at that are not written yet."""
        # Pruning builds no cycles: a GC pass over the transcript just loaded would cost more than
        # the pruning itself, so it waits until after, as it does after the inner store's decode.
        paused = gc.isenabled()
        gc.disable()
        try:
            result = self.prune(entries)
            if then is not None:
                then(result)
            return result, {path: text for path, text in result.spills.items() if not path.exists()}
        finally:
            if paused:
                gc.enable()

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """Delegated."""
        return await self.inner.list_sessions(project_key)

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """Delegated."""
        return await self.inner.list_session_summaries(project_key)

    async def delete(self, key: SessionKey) -> None:
        """Delegated."""
        await self.inner.delete(key)

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """Delegated."""
        return await self.inner.list_subkeys(key)

    def has_session_sync(self, project_key: str, session_id: str) -> bool:
        """Delegated."""
        return bool(self.inner.has_session_sync(project_key, session_id))

    async def close(self) -> None:
        """Delegated."""
        await self.inner.close()

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (e.g. during unpickling): do not recurse
            raise AttributeError(name)
        return getattr(self.inner, name)


def implements(store: Any, method: str) -> bool:
    """Whether `store` offers the Protocol's optional `method`: its class overrides the default (which raises)."""
    impl = getattr(type(store), method, None)
    return impl is not None and impl is not getattr(SessionStore, method)


_variants: dict[tuple[type, tuple[str, ...]], type] = {}


def _without(cls: type, missing: tuple[str, ...]) -> type:
    """A subclass whose `missing` methods are the Protocol's defaults, so the SDK sees them as absent."""
    key = (cls, missing)
    if key not in _variants:
        _variants[key] = type(cls.__name__, (cls,), {m: getattr(SessionStore, m) for m in missing})
    return _variants[key]
