"""A resume's config dir: the pruned view of a session written where the resumed CLI reads it (S23, D2).

The CLI resumes only from a local file. Given a SessionStore and `resume`, the SDK would load the session through the
store and write every entry again with the stdlib's `json.dumps` (its `materialize_resume_session`): on a 20k-entry,
62 MB session that write alone took longer than loading and pruning it (benchmarks/wake.py). flower lays out the same
dir itself, and the transcript is decoded once (by the store) and encoded once (by orjson, in the thread that prunes
it). The layout is the SDK's, which reconcile knows a killed resume's leftover by:
`<tmp>/claude-resume-*/projects/<project key>/<session>.jsonl`, beside the caller's auth files and the subagents'
transcripts (both written by the SDK's own helpers, so they stay exactly what the CLI expects). The CLI runs with
`CLAUDE_CONFIG_DIR` there and the dir is removed when it ends; a kill leaves it to the sweep (stores/reconcile.py).
The SDK is handed a `Mirror` of the store: it mirrors the CLI's new entries and, loading nothing, leaves the resume
to the CLI as it is.
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from claude_agent_sdk._internal.session_resume import _copy_auth_files, _materialize_subkeys
from claude_agent_sdk._internal.session_store_validation import _store_implements
from claude_agent_sdk._internal.sessions import _validate_uuid
from claude_agent_sdk.types import SessionKey, SessionStore, SessionStoreEntry

from .base import Store
from .prefetch import Prefetch
from .prune import PruningSessionStore
from .reconcile import RESUME_PREFIX

__all__ = ["Mirror", "Resume", "materialize"]


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
    if _validate_uuid(session_id) is None:  # it becomes a path component: nothing else is written under its name
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
        _copy_auth_files(config, dict(env))
        if _store_implements(view, "list_subkeys"):
            await _materialize_subkeys(view, config, project, project_key, session_id, timeout)
    except BaseException:  # also a cancellation: the dir may hold the credentials already
        shutil.rmtree(config, ignore_errors=True)
        raise
    finally:
        if prefetched is not None:
            prefetched.discard()
    return Resume(config)


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
