"""Opens a task's session store and its records together: the one place that picks files or PostgreSQL (D9)."""

from __future__ import annotations

from pathlib import Path

from ..core.identity import workspace_identity
from ..core.records import FileRecords, Records
from ..core.shared import is_sessions_db
from .base import Store
from .sqlite import SqliteSessionStore


def open_store(run_dir: Path, store: str | None, workspace: Path, local_key: str,
               project: str | None = None) -> tuple[Store, Records]:
    """The sessions and records of the task in `run_dir`.

    `store` = None or `sqlite`: run_dir/sessions.db and run_dir's files. A `postgresql://` URL: the shared store,
    where the workspace's sessions (its CLI's `local_key` mapped), lineage, manifest and lock are keyed by its
    identity (`project` overrides it).
    """
    if store is None or is_sessions_db(store):
        return SqliteSessionStore(run_dir / "sessions.db"), FileRecords(run_dir)
    from .shared import open_shared  # asyncpg is imported only for a shared store: a wake on sessions.db needs none

    return open_shared(store, run_dir, local_key, workspace_identity(workspace, project))
