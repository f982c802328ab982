"""A task's store: its raw sessions, the pruned view a resume reads, and its records, opened together (D2, D9).

SDK-free at import, below the runtime: `flower status`, `changes` and `gc` read a task's sessions, manifest and
lineage through it without importing the SDK (issue 34). The pruned view, an adapter to the SDK's SessionStore
protocol, is imported when a wake first asks for it.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from .core.projects import project_key
from .core.records import Records
from .stores.base import Store
from .stores.opener import open_store

if TYPE_CHECKING:
    from .stores.base import SessionStoreEntry
    from .stores.prune import PruningSessionStore


@dataclass(frozen=True)
class Sessions:
    """A task's store: the raw sessions (every entry as written), the pruned view the model resumes from (S23, D2), and the records.

    The records (lineage, manifest, lock, wake mark) are the same backend's as the sessions: run_dir's files beside
    sessions.db, or the shared store's tables (D9). Everything that reads or writes them is given this object's.
    """

    raw: Store
    records: Records
    trim: bool = False
    """Large-result trimming in the pruned view (S25)."""
    spill_dir: Path | None = None
    """Where the pruned view writes the results it trims (S26): `open` gives run_dir/spill."""

    @classmethod
    def open(cls, run_dir: str | os.PathLike[str], *, trim: bool = False, store: str | None = None,
             workspace: str | os.PathLike[str] | None = None, project: str | None = None) -> Sessions:
        """The store of `run_dir` (opened on first use); `trim` switches large-result trimming only (S25).

        `store` = None or `sqlite`: run_dir/sessions.db. A `postgresql://` URL: the shared store, where the
        workspace's sessions, lineage, manifest and lock are keyed by its identity (`project` overrides it, D9).
        """
        run_dir = Path(os.path.abspath(run_dir))
        where = Path(os.path.abspath(workspace if workspace is not None else os.getcwd()))
        raw, records = open_store(run_dir, store, where, project_key(where), project)
        return cls(raw, records, trim, run_dir / "spill")

    @functools.cached_property
    def pruned(self) -> PruningSessionStore:
        """The view a resume loads: what the model should see, pruned, while the raw entries stay as stored (S23)."""
        from .stores.prune import PruningSessionStore

        return PruningSessionStore(self.raw, trim=self.trim, spill_dir=self.spill_dir)

    async def __aenter__(self) -> Sessions:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    async def ready(self) -> None:
        """Open the store now: a bad store URL is one line (StoreError) before anything runs or is written."""
        await self.raw.open()

    def has(self, workspace: str | os.PathLike[str], session_id: str) -> bool:
        """Whether sessions.db holds this workspace's session (S10)."""
        return self.raw.has_session_sync(project_key(workspace), session_id)

    async def entries(self, workspace: str | os.PathLike[str], session_id: str) -> list[SessionStoreEntry] | None:
        """The raw stored transcript of a session, unpruned."""
        return await self.raw.load({"project_key": project_key(workspace), "session_id": session_id})

    def context(self, workspace: str | os.PathLike[str], session_id: str) -> int | None:
        """The session's last-round context size read back from sessions.db now (sync, read-only); None if unknown."""
        return self.raw.last_context_sync(project_key(workspace), session_id)

    async def close(self) -> None:
        """Close the database connection (the next use reopens it)."""
        await self.raw.close()

    async def rest(self) -> None:
        """No wake writes now: the store lets go of what only a writer needs (the next use reopens it)."""
        await self.raw.rest()
