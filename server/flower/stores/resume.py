"""A resume's config dir: the pruned view of a session written where the resumed CLI reads it (S23, D2).

The CLI resumes only from a local file. Given a SessionStore and `resume`, the SDK would load the session through the
store and write every entry again with the stdlib's `json.dumps` (its `materialize_resume_session`): on a 20k-entry,
62 MB session that write alone took longer than loading and pruning it (benchmarks/wake.py). flower lays out the same
dir itself, and the transcript is decoded once (by the store) and encoded once (by orjson, in the thread that prunes
it). The layout is the SDK's, which reconcile knows a killed resume's leftover by:
`<tmp>/claude-resume-*/projects/<project key>/<session>.jsonl`, beside the caller's auth files (stores/credentials.py)
and the subagents' transcripts, `<session>/subagents/agent-<id>.jsonl` with their `.meta.json`, where the CLI looks for
them when an agent is continued. Both are flower's own code over the SessionStore protocol: the SDK's helpers for them
are private and may move in its next release (D3, issue 33). The CLI runs with
`CLAUDE_CONFIG_DIR` there and the dir is removed when it ends; a kill leaves it to the sweep (stores/reconcile.py).
The SDK is handed a `Mirror` of the store: it mirrors the CLI's new entries and, loading nothing, leaves the resume
to the CLI as it is.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from claude_agent_sdk.types import SessionKey, SessionStore, SessionStoreEntry

from .base import Store
from .credentials import copy_auth_files
from .jsonl import write_jsonl
from .prefetch import Prefetch
from .prune import PruningSessionStore, implements
from .reconcile import RESUME_PREFIX

__all__ = ["Mirror", "Resume", "is_session_id", "materialize"]

log = logging.getLogger("flower")

_UUID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}", re.IGNORECASE)
METADATA = "agent_metadata"  # how a subagent's `.meta.json` travels in its transcript's entries (the SDK's mirror)


def is_session_id(text: str) -> bool:
    """Whether `text` is a session id the CLI would name a transcript by (a uuid): nothing else becomes a path."""
    return _UUID.fullmatch(text) is not None


@dataclass(frozen=True)
class Resume:
    """A materialised resume: the config dir the resumed CLI runs on."""

    config_dir: Path

    def remove(self) -> None:
        """Remove the dir (it holds a copy of the caller's credentials); once its CLI has ended."""
        shutil.rmtree(self.config_dir, ignore_errors=True)


async def materialize(view: PruningSessionStore, project_key: str, session_id: str, env: Mapping[str, str],
                      timeout: float, prefetched: Prefetch | None = None) -> Resume | None:
    """Write the session's pruned view, the caller's auth files and its subagents' transcripts to a new config dir.

    None when there is nothing to resume from the store (no entries, or an id that is no uuid): the CLI is then given
    `resume` as it is, as the SDK does. `env` is the CLI's (it names the config dir the auth files come from);
    `timeout` bounds each store read, as the SDK's `load_timeout_ms` does. `prefetched`: this session's view prepared
    by a worker (stores/prefetch.py), taken when it is still the store's; it is discarded either way.
    """
    if not is_session_id(session_id):  # it becomes a path component: nothing else is written under its name
        if prefetched is not None:
            prefetched.discard()
        return None
    config = Path(tempfile.mkdtemp(prefix=RESUME_PREFIX))
    try:
        project = config / "projects" / project_key
        project.mkdir(parents=True)
        key: SessionKey = {"project_key": project_key, "session_id": session_id}
        jsonl = project / f"{session_id}.jsonl"
        ready = await prefetched.take(view, project_key, env, timeout) if prefetched is not None else None
        if ready is not None:
            os.replace(ready, jsonl)  # both in the temp dir: a rename
        elif not await asyncio.wait_for(view.write(key, jsonl), timeout):
            shutil.rmtree(config, ignore_errors=True)
            return None
        copy_auth_files(config, env)
        if implements(view, "list_subkeys"):
            await _subagents(view, project / session_id, key, timeout)
    except BaseException:  # also a cancellation: the dir may hold the credentials already
        shutil.rmtree(config, ignore_errors=True)
        raise
    finally:
        if prefetched is not None:
            prefetched.discard()
    return Resume(config)


async def _subagents(view: PruningSessionStore, into: Path, key: SessionKey, timeout: float) -> None:
    """Write each subkey stored under the session (`subagents/agent-<id>`) to `into/<subpath>.jsonl`, as the CLI
    wrote it: the transcript pruned like the session's, its metadata entry as the `.meta.json` beside it."""
    for subpath in await asyncio.wait_for(view.list_subkeys(key), timeout):
        if not _inside(subpath):
            log.warning("resume: subkey %r of %s skipped: not a path inside the session", subpath, key["session_id"])
            continue
        entries = await asyncio.wait_for(view.load({**key, "subpath": subpath}), timeout)
        # The last metadata entry is the sidecar as the CLI last wrote it; every other entry is a transcript line.
        meta = [e for e in entries or () if e.get("type") == METADATA]
        lines = [e for e in entries or () if e.get("type") != METADATA]
        path = into.joinpath(*PurePosixPath(subpath).parts)
        if lines or meta:
            path.parent.mkdir(parents=True, exist_ok=True)
        if lines:
            await asyncio.to_thread(write_jsonl, path.with_name(path.name + ".jsonl"), lines)
        if meta:
            sidecar = {k: v for k, v in meta[-1].items() if k != "type"}
            write_jsonl(path.with_name(path.name + ".meta.json"), [sidecar])


def _inside(subpath: str) -> bool:
    """Whether a store's subpath names a file inside the session's dir: relative, `/`-separated, no `.`/`..` part, no
    drive, backslash or NUL (a shared store's rows come from other machines; none of flower's or the CLI's do this)."""
    parts = subpath.split("/")
    return bool(subpath) and all(p not in ("", ".", "..") for p in parts) and not any(c in subpath for c in "\\:\0")


class Mirror(SessionStore):
    """The SDK's session store for a run: the CLI's entries are appended to `inner` as written; nothing is loaded
    (flower materialises a resume itself, `materialize`)."""

    # The Protocol's own defaults: the SDK probes these on the class and, seeing them, knows they are not offered.
    list_sessions = SessionStore.list_sessions
    list_session_summaries = SessionStore.list_session_summaries
    delete = SessionStore.delete
    list_subkeys = SessionStore.list_subkeys

    def __init__(self, inner: Store) -> None:
        self.inner = inner

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Store entries unchanged."""
        await self.inner.append(key, entries)

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """Nothing: a resume's transcript is on disk already, where the CLI reads it."""
        return None
