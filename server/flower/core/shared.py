"""The shared store's URL (D9): recognised, and shown without its password.

The records of a task in a shared store are `stores/shared.py`'s PgRecords, opened with its sessions
(`runtime.Sessions.open`) and passed down explicitly; nothing here remembers which run_dir uses which.
"""

from __future__ import annotations

from urllib.parse import urlsplit, urlunsplit


def is_sessions_db(store: str | None) -> bool:
    """Whether a `store` setting names run_dir's sessions.db (None, empty or `sqlite`), not a shared store."""
    return store is None or store.strip().lower() in ("", "sqlite")


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
