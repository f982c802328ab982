"""Reconcile: entries the CLI wrote to its own transcript but the store mirror never got are imported before a resume (D2).

The CLI writes every entry to its local JSONL first and only then hands it to the SDK, which mirrors it
to sessions.db; a kill between the two leaves sessions.db trailing the file. Before a resume, the
entries the file has and sessions.db lacks are appended to the raw store, in the file's order, so the
transcript the SDK materialises for the resumed CLI (from the store, through the pruned view) carries
them. The CLI's file is only ever read.

Facts read from the real CLI (2.1.332, tests/e2e/test_reconcile_resume.py pins them):
- a session started without `resume` writes `<config dir>/projects/<project key>/<session>.jsonl`, with
  the config dir the CLI's `CLAUDE_CONFIG_DIR` (else ~/.claude) and the key the SDK's
  `project_key_for_directory` of its cwd, even with a session store set;
- a resumed session runs on a temporary config dir the SDK materialises from the store, so its new
  entries reach that file only, not this one;
- the mirror carries every line of the file except the CLI's request replay records (`api-request*`)
  and the `cost-state` line it writes at exit: those stay local and are never imported (restoring
  `cost-state` would make the resumed CLI carry the earlier cost totals on).
"""

from __future__ import annotations

import json
import logging
import os
from collections import Counter
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from claude_agent_sdk.types import SessionKey, SessionStoreEntry

from ..core.redact import redact

__all__ = ["config_dir", "content_key", "is_local_only", "missing", "parse_jsonl", "reconcile", "transcript_path"]

log = logging.getLogger("flower")

Entry = dict[str, Any]


def config_dir(env: Mapping[str, str]) -> Path:
    """The CLI's config dir for an env: `CLAUDE_CONFIG_DIR`, else ~/.claude (as the SDK resolves it)."""
    return Path(env.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def transcript_path(config: Path, project_key: str, session_id: str) -> Path:
    """Where the CLI keeps a session's own transcript under a config dir."""
    return config / "projects" / project_key / f"{session_id}.jsonl"


def is_local_only(entry: Mapping[str, Any]) -> bool:
    """Whether the CLI keeps this line in its own file only (never mirrored): request replay records, cost-state."""
    kind = entry.get("type")
    return isinstance(kind, str) and (kind.startswith("api-request") or kind == "cost-state")


def parse_jsonl(data: bytes) -> list[Entry]:
    """The JSON objects of a JSONL text in order; a line that does not parse (cut by a kill mid-write) is skipped."""
    entries: list[Entry] = []
    for line in data.split(b"\n"):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except ValueError:  # also UnicodeDecodeError: a line cut mid-character
            continue
        if isinstance(value, dict):
            entries.append(value)
    return entries


def content_key(entry: Mapping[str, Any]) -> str:
    """An entry's identity by content: its JSON with sorted keys, API keys redacted as the store wrote them (D6)."""
    return json.dumps(redact(entry), sort_keys=True, separators=(",", ":"))


def missing(local: Sequence[Mapping[str, Any]], stored: Sequence[Mapping[str, Any]]) -> list[Entry]:
    """The entries of `local` that `stored` lacks, in `local`'s order.

    Matched by `uuid` where the entry has one, otherwise by content, each stored copy standing for one
    local line (the CLI repeats identical metadata lines). Local-only lines are never returned. Nothing
    is returned when `stored` has gone on past `local` (its newest uuid is not in `local`): the session
    continued without those entries, and appending them now would graft a stale branch onto its end.
    """
    uuids = {u for e in stored if isinstance(u := e.get("uuid"), str)}
    copies = Counter(content_key(e) for e in stored if not isinstance(e.get("uuid"), str))
    todo: list[Entry] = []
    for entry in local:
        if is_local_only(entry):
            continue
        uid = entry.get("uuid")
        if isinstance(uid, str):
            if uid in uuids:
                continue
            uuids.add(uid)  # a uuid repeated in the file is imported once
        else:
            key = content_key(entry)
            if copies[key] > 0:
                copies[key] -= 1
                continue
        todo.append(dict(entry))
    if todo:
        newest = next((u for e in reversed(stored) if isinstance(u := e.get("uuid"), str)), None)
        if newest is not None and not any(e.get("uuid") == newest for e in local):
            return []
    return todo


def _read(path: Path) -> bytes | None:
    """The file's bytes, or None when it is missing or cannot be read (the resume goes on from the store)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        log.warning("reconcile: cannot read %s (%s); resuming from sessions.db as it is", path, err.strerror or err)
        return None


async def reconcile(store: Any, project_key: str, session_id: str, env: Mapping[str, str] | None = None) -> int:
    """Import into `store` (the raw store) what the CLI's own transcript of the session has and it lacks; return how many.

    `env` is the CLI's env over this process's (`CLAUDE_CONFIG_DIR` picks the config dir). The import goes
    through the store's `append`, which skips uuids already stored, so a rerun imports nothing.
    """
    path = transcript_path(config_dir({**os.environ, **(env or {})}), project_key, session_id)
    data = _read(path)
    if not data:
        return 0
    local = parse_jsonl(data)
    key: SessionKey = {"project_key": project_key, "session_id": session_id}
    stored: list[SessionStoreEntry] = await store.load(key) or []
    todo = missing(local, stored)
    if todo:
        await store.append(key, todo)
        log.info("reconcile: imported %d entries of session %s from the CLI's own transcript", len(todo), session_id)
    return len(todo)
