"""Where a task's lineage, manifest rows and one-writer lock live when a shared store holds them (D9).

A run_dir is the local handle of a task. With `--store postgresql://…` the Sessions of a run_dir bind it to a
`Shared` backend here, and `Lineage`, `Manifest` and `WorkspaceLock` of that run_dir use it instead of their files,
so the workflow code stays as it is. Unbound run_dirs keep the files (the default, `sqlite`).
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Protocol
from urllib.parse import urlsplit, urlunsplit

from .taskfiles import TaskFiles


def is_postgres_url(url: str) -> bool:
    """Whether `url` names a PostgreSQL database (`postgresql://…` or `postgres://…`)."""
    return url.split(":", 1)[0].lower() in ("postgresql", "postgres")


def safe_url(url: str) -> str:
    """`url` with any password replaced by `***`: the form every message and log line shows (D6)."""
    try:
        parts = urlsplit(url)
        if parts.password is None:
            return url
        netloc = parts.netloc.rsplit("@", 1)
        user = netloc[0].split(":", 1)[0]
        return urlunsplit(parts._replace(netloc=f"{user}:***@{netloc[1]}"))
    except ValueError:
        return "<unparsable URL>"


class Shared(TaskFiles, Protocol):
    """A task's records in a shared database, keyed by the workspace identity; its files too (core/taskfiles.py)."""

    identity: str
    """The workspace identity (core/identity.py)."""
    where: str
    """The database as messages show it (no password)."""

    def load_lineage(self) -> dict[str, Any] | None:
        """The stored lineage (S5 shape), or None."""

    def save_lineage(self, data: dict[str, Any]) -> None:
        """Write the lineage in one transaction before returning (S11); raises on failure."""

    def manifest_rows(self) -> list[dict[str, Any]]:
        """Every manifest row of the task, all writers, in the order their writers first wrote."""

    def save_manifest(self, run: str, rows: list[dict[str, Any]]) -> None:
        """Replace the rows of writer `run` (S8); raises on failure."""

    def mark_wake(self, on: bool) -> None:
        """Record that a wake is under way (on) or ended (off); raises on failure."""

    def wake_mark(self) -> tuple[bool, bool]:
        """(a wake's mark is left, a live flower holds the lock); raises on failure."""

    def acquire(self) -> None:
        """Take the task's one-writer lock or raise WorkspaceBusy naming host and pid (D5)."""

    def release(self) -> None:
        """Give the lock up; idempotent."""


_bound: dict[Path, Shared] = {}


def bind(run_dir: str | os.PathLike[str], shared: Shared) -> None:
    """From now on the run_dir's lineage, manifest and lock are `shared`'s."""
    _bound[Path(os.path.abspath(run_dir))] = shared


def unbind(run_dir: str | os.PathLike[str]) -> None:
    """Back to the run_dir's files."""
    _bound.pop(Path(os.path.abspath(run_dir)), None)


def of(run_dir: str | os.PathLike[str]) -> Shared | None:
    """The backend bound to `run_dir`, or None (its files)."""
    return _bound.get(Path(os.path.abspath(run_dir)))
