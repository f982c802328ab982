"""What flower needs of a session store: the SDK's SessionStore protocol, the reads a view makes (History), its lifecycle.

flower's own protocol, not a subclass of the SDK's: the stores are imported by commands that only read a task's
records (`flower status`, `changes`, `gc`), which import no SDK (issue 34). The SDK's types are annotations only; mypy
checks each store against this protocol where it is opened (stores/opener.py). What the runtime hands the SDK is
the SDK's own SessionStore: stores/resume.py's Mirror over the raw store, imported with the runtime.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

from ..core.errors import FlowerError

if TYPE_CHECKING:
    # Re-exported: the stores and the layers above name the SDK's types from here, as annotations only (D3).
    from claude_agent_sdk.types import SessionKey as SessionKey
    from claude_agent_sdk.types import SessionListSubkeysKey as SessionListSubkeysKey
    from claude_agent_sdk.types import SessionStoreEntry as SessionStoreEntry
    from claude_agent_sdk.types import SessionStoreListEntry as SessionStoreListEntry
    from claude_agent_sdk.types import SessionSummaryEntry as SessionSummaryEntry


class SessionUsage(NamedTuple):
    """What one stored session takes: its entries (subagent transcripts included), their bytes as stored, its last write."""

    session_id: str
    entries: int
    bytes: int
    mtime: int
    """The newest storage write of any of its transcripts, Unix epoch ms."""


class Store(Protocol):
    """A session store (SQLite in run_dir, or the shared PostgreSQL), as the runtime, reconcile and History use it."""

    # The SDK's SessionStore protocol, every optional method included: both stores offer them all.
    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Store a batch of transcript entries (the SDK's mirror calls it as the CLI writes them)."""

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """A transcript's entries as stored, in order; None when none is stored."""

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """The main transcripts of `project_key` with their last write (epoch ms)."""

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The SDK's summary of each main transcript of `project_key`."""

    async def delete(self, key: SessionKey) -> None:
        """Delete a transcript (a main one with its subagents' and its summary)."""

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """The subpaths (subagent transcripts) stored under a session."""

    @property
    def path(self) -> str | Path:
        """Where the sessions are, as messages show it (no password)."""

    @property
    def refused(self) -> FlowerError | None:
        """The last append the store refused (a full disk, read-only), a new object each time; None if none."""

    async def open(self) -> None:
        """Open now: a store that cannot be used says so in one line (FlowerError) before anything runs."""

    async def close(self) -> None:
        """Close its connections (a later call reopens them)."""

    async def rest(self) -> None:
        """No wake writes now: let go of what only a writer needs (a later call reopens it)."""

    def has_session_sync(self, project_key: str, session_id: str) -> bool:
        """Whether a main transcript is stored for the session (sync, read-only)."""

    def load_sync(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """`load` for synchronous callers (read-only)."""

    async def last_context(self, project_key: str, session_id: str) -> int | None:
        """The session's last-round context size, read backwards from its newest entry; None if unknown."""

    def last_context_sync(self, project_key: str, session_id: str) -> int | None:
        """`last_context` for synchronous callers (read-only)."""

    def size_on_disk(self) -> int:
        """Bytes the store takes on disk now (sync, read-only; 0 before anything was stored)."""

    async def latest_seq(self, project_key: str, session_id: str, skip: int = 0) -> int:
        """The append order (seq) of the session's newest entry, or of the one `skip` places before it; 0 if none."""

    async def entries_after(self, project_key: str, session_id: str, seq: int) -> list[SessionStoreEntry]:
        """The session's entries appended after `seq`, in append order."""

    async def newest_seq(self) -> int:
        """The highest entry position of the whole store, 0 when there is none."""

    async def transcripts(self, project_key: str, session_ids: Sequence[str]) -> list[tuple[int, str, int]]:
        """(row id, session id, entry count) of the main transcripts of these sessions, in the order first stored."""

    async def page(self, transcripts: Sequence[int], before: int, limit: int) -> list[tuple[int, int, Any]]:
        """(seq, transcript row id, entry) of these transcripts' entries below `before`, newest first, at most `limit`."""

    async def count(self, project_key: str, session_id: str) -> int:
        """How many entries a session's main transcript stores."""

    async def session(self, project_key: str, session_id: str) -> list[Any]:
        """A session's whole main transcript, unpruned ([] when none)."""

    def loader(self) -> Callable[[str, str], list[Any]] | None:
        """`session` as a picklable function for a worker process, or None when it must be read here."""

    async def usage(self, project_key: str) -> list[SessionUsage]:
        """Per stored session of `project_key`: entries, bytes as stored and last write (`flower gc`, #26)."""

    async def delete_sessions(self, project_key: str, session_ids: Sequence[str]) -> None:
        """Delete these sessions whole (subagent transcripts and summaries too), in one transaction."""

    async def reclaim(self) -> None:
        """Give the space of deleted rows back (SQLite: VACUUM; PostgreSQL: VACUUM of the store's tables), off the event loop."""
