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
- a resumed session runs on a temporary config dir the SDK materialises from the store
  (`<tmp>/claude-resume-*/projects/<project key>/<session>.jsonl`: the pruned view, then the CLI's new
  entries); the SDK removes it when the CLI ends, but a kill leaves it behind, holding the newest
  entries. Both files are read; in the temporary one, the results pruning added (uuid5, transcript.py)
  are flower's view, not the CLI's, and are never imported;
- the mirror carries every line of the file, in order, except the CLI's request replay records
  (`api-request*`, kept out of the mirror by the CLI itself) and the `cost-state` line it writes at
  exit: those stay local and are never imported, since a resumed CLI has never been given them;
- the mirror trails the file even without a kill: a clean exit sometimes leaves the last `last-prompt`
  line out of sessions.db (seen 1 run in 4).

A resume reconciles its own session only. Sessions that are never resumed would keep what only their
file holds: a judge round (never resumed, S14) or a session killed before flower learned its id (never
in the lineage). `sweep` reconciles every transcript of the project key at the start of a wake; it
remembers each file's size and mtime in `run_dir/reconciled.json` and rereads only the files that
changed since, so a wake costs a `stat` per file, not a load per session. Once a killed resume's temporary
dir is imported in full and no process uses it, the sweep removes it: the SDK copied the caller's credentials
into it, and only its own cleanup (which the kill skipped) would have removed them.
"""

from __future__ import annotations

import gc
import json
import logging
import os
import shutil
import tempfile
import uuid as uuidlib
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import orjson
from claude_agent_sdk.types import SessionKey, SessionStoreEntry

from ..core.durable import write_atomic
from ..core.errors import FlowerError
from ..core.redact import redact

__all__ = [
    "SWEPT_FILE", "config_dir", "content_key", "is_local_only", "leftover_paths", "missing", "parse_jsonl", "reconcile",
    "session_files", "sweep", "transcript_path",
]

SWEPT_FILE = "reconciled.json"
"""Under run_dir: project key → {transcript path: [size, mtime_ns]} as the last sweep read it."""

log = logging.getLogger("flower")

Entry = dict[str, Any]


def config_dir(env: Mapping[str, str]) -> Path:
    """The CLI's config dir for an env: `CLAUDE_CONFIG_DIR`, else ~/.claude (as the SDK resolves it)."""
    return Path(env.get("CLAUDE_CONFIG_DIR") or Path.home() / ".claude")


def transcript_path(config: Path, project_key: str, session_id: str) -> Path:
    """Where the CLI keeps a session's own transcript under a config dir."""
    return config / "projects" / project_key / f"{session_id}.jsonl"


def leftover_paths(project_key: str, session_id: str, tmp: Path | None = None) -> list[Path]:
    """The session's files in temporary config dirs a killed resume left behind (the SDK's `claude-resume-*`), oldest first."""
    base = tmp if tmp is not None else Path(tempfile.gettempdir())
    found = []
    for path in base.glob(f"claude-resume-*/projects/{project_key}/{session_id}.jsonl"):
        try:
            found.append((path.stat().st_mtime_ns, path))
        except OSError:  # removed meanwhile: its resume ended cleanly
            continue
    return [path for _, path in sorted(found)]


def is_local_only(entry: Mapping[str, Any]) -> bool:
    """Whether the CLI keeps this line in its own file only (never mirrored): request replay records, cost-state."""
    kind = entry.get("type")
    return isinstance(kind, str) and (kind.startswith("api-request") or kind == "cost-state")


def _pruning_added(uid: str) -> bool:
    """Whether a uuid is one pruning gave a result it added (uuid5); the CLI's own are random (uuid4)."""
    try:
        return uuidlib.UUID(uid).version == 5
    except ValueError:
        return False


def _load_line(line: bytes) -> Any:
    try:
        return orjson.loads(line)
    except orjson.JSONDecodeError:
        # orjson refuses lone surrogates (the CLI can cut text mid-emoji), the stdlib takes them; both refuse a cut line.
        return json.loads(line)


def parse_jsonl(data: bytes) -> list[Entry]:
    """The JSON objects of a JSONL text in order; a line that does not parse (cut by a kill mid-write) is skipped."""
    entries: list[Entry] = []
    # JSON builds no cycles: GC passes over a large transcript's containers would cost more than the parsing.
    paused = gc.isenabled()
    gc.disable()
    try:
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                value = _load_line(line)
            except ValueError:  # also UnicodeDecodeError: a line cut mid-character
                continue
            if isinstance(value, dict):
                entries.append(value)
    finally:
        if paused:
            gc.enable()
    return entries


def content_key(entry: Mapping[str, Any]) -> bytes:
    """An entry's identity by content: its JSON with sorted keys."""
    try:
        return orjson.dumps(entry, option=orjson.OPT_SORT_KEYS)
    except TypeError:  # lone surrogates, ints beyond 64 bits: the stdlib's text is as good a key
        return json.dumps(entry, sort_keys=True, separators=(",", ":")).encode()


def missing(local: Sequence[Mapping[str, Any]], stored: Sequence[Mapping[str, Any]]) -> list[Entry]:
    """The entries of `local` that `stored` lacks, in `local`'s order.

    Matched by `uuid` where the entry has one, otherwise by content, each stored copy standing for one
    local line (the CLI repeats identical metadata lines). Local-only lines and the results pruning added
    to a materialised resume are never returned. Nothing is returned when `stored` has gone on without
    them (`_went_on`): appending them now would graft a stale branch onto the session's end.
    """
    uuids = {u for e in stored if isinstance(u := e.get("uuid"), str)}
    copies = Counter(content_key(e) for e in stored if not isinstance(e.get("uuid"), str))
    local = [e for e in local if not is_local_only(e)]
    # The store redacted what it wrote (D6): a local line quoting a key matches its stored copy once redacted too
    # (in one call: redact reads the env once per call).
    keys = iter([content_key(e) for e in redact([e for e in local if not isinstance(e.get("uuid"), str)])])
    todo: list[Entry] = []
    for entry in local:
        uid = entry.get("uuid")
        if isinstance(uid, str):
            if uid in uuids or _pruning_added(uid):
                continue
            uuids.add(uid)  # a uuid repeated in the file is imported once
        else:
            key = next(keys)
            if copies[key] > 0:
                copies[key] -= 1
                continue
        todo.append(dict(entry))
    return [] if todo and _went_on(local, stored, todo) else todo


def _went_on(local: Sequence[Mapping[str, Any]], stored: Sequence[Mapping[str, Any]], todo: list[Entry]) -> bool:
    """Whether `stored` holds entries `local` lacks that are newer than the missing ones (a later resume went on without them).

    Stored entries older than the missing ones may be absent from `local` for good reasons: a materialised
    resume starts from the pruned view, which hides some. Without a timestamp to compare, the newest stored
    uuid must be in `local`.
    """
    mine = {u for e in local if isinstance(u := e.get("uuid"), str)}
    since = min((t for e in todo if isinstance(e.get("uuid"), str) and isinstance(t := e.get("timestamp"), str)), default=None)
    if since is not None:
        return any(isinstance(u := e.get("uuid"), str) and u not in mine and isinstance(t := e.get("timestamp"), str)
                   and t > since for e in stored)
    newest = next((u for e in reversed(stored) if isinstance(u := e.get("uuid"), str)), None)
    return newest is not None and newest not in mine


def _read(path: Path) -> bytes | None:
    """The file's bytes, or None when it is missing or cannot be read (the resume goes on from the store)."""
    try:
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as err:
        log.warning("reconcile: cannot read %s (%s); resuming from sessions.db as it is", path, err.strerror or err)
        return None


async def reconcile(store: Any, project_key: str, session_id: str, env: Mapping[str, str] | None = None,
                    run_dir: Path | None = None) -> int:
    """Import into `store` (the raw store) what the CLI's own transcripts of the session have and it lacks; return how many.

    `env` is the CLI's env over this process's (`CLAUDE_CONFIG_DIR` picks the config dir); the temporary
    dirs are this process's (the SDK makes them here). The files are read oldest first, each against the
    store as the previous left it. The import goes through the store's `append`, which skips uuids
    already stored, so a rerun imports nothing. With `run_dir`, files the sweep's memory holds as they
    are now are not read again (a resume right after the wake's sweep loads nothing twice), and the
    files read are remembered.
    """
    paths = [transcript_path(config_dir({**os.environ, **(env or {})}), project_key, session_id),
             *leftover_paths(project_key, session_id)]
    state: dict[str, Any] = {}
    now = _stats(paths)  # stat'ed before they are read: a file growing meanwhile is read again next time
    if run_dir is not None:
        state = _load_swept(run_dir / SWEPT_FILE)
        old = _of(state, project_key)
        if now and all(old.get(p) == seen for p, seen in now.items()):
            return 0
    key: SessionKey = {"project_key": project_key, "session_id": session_id}
    imported = 0
    for path in paths:
        data = _read(path)
        if not data:
            continue
        stored: list[SessionStoreEntry] = await store.load(key) or []
        todo = missing(parse_jsonl(data), stored)
        if todo:
            await store.append(key, todo)
            imported += len(todo)
    if imported:
        log.info("reconcile: imported %d entries of session %s from the CLI's own transcript", imported, session_id)
    if run_dir is not None and now:
        _save_swept(run_dir / SWEPT_FILE, state, project_key, {**_of(state, project_key), **now})
    return imported


def session_files(config: Path, project_key: str, tmp: Path | None = None) -> list[Path]:
    """Every CLI transcript of the project key: the config dir's and those of leftover `claude-resume-*` dirs."""
    base = tmp if tmp is not None else Path(tempfile.gettempdir())
    found = [*(config / "projects" / project_key).glob("*.jsonl"), *base.glob(f"claude-resume-*/projects/{project_key}/*.jsonl")]
    return [path for path in found if _is_session_id(path.stem)]


def _is_session_id(name: str) -> bool:
    """Whether a file stem is a session id (a uuid); other files there are not sessions of their own."""
    try:
        uuidlib.UUID(name)
    except ValueError:
        return False
    return True


def _spent_leftovers(project_key: str, imported: Mapping[str, Any], tmp: Path | None = None) -> list[Path]:
    """The `claude-resume-*` dirs of this project key that a killed resume left and the store now holds in full.

    The SDK copies the caller's credentials into each (`.credentials.json`) and removes it when the CLI ends;
    a kill leaves it behind. One is removed only when every file under its `projects/` is a main transcript
    just imported (`imported`: path → stat) — a subagent's transcript, which reconcile does not read, keeps it
    — and no live process runs with it as its config dir (read from /proc; without /proc none is removed).
    """
    base = tmp if tmp is not None else Path(tempfile.gettempdir())
    spent = []
    for root in base.glob(f"claude-resume-*/projects/{project_key}"):
        top = root.parent.parent
        try:
            files = [p for p in (top / "projects").rglob("*") if not p.is_dir()]
            others = [p for p in (top / "projects").iterdir() if p != root]
        except OSError:
            continue
        if not others and files and all(str(p) in imported for p in files) and not _in_use(top):
            spent.append(top)
    return spent


def _in_use(config: Path) -> bool:
    """Whether a live process has `config` as its CLI config dir (`CLAUDE_CONFIG_DIR` in /proc/<pid>/environ)."""
    proc = Path("/proc")
    if not (proc / "self" / "environ").exists():
        return True  # cannot tell: keep it
    needle = b"\0CLAUDE_CONFIG_DIR=" + os.fsencode(config) + b"\0"
    for environ in proc.glob("[0-9]*/environ"):
        try:
            if needle in b"\0" + environ.read_bytes():
                return True
        except OSError:  # gone meanwhile, or another user's (whose config dir this is not)
            continue
    return False


def _stats(paths: Iterable[Path]) -> dict[str, list[int]]:
    """Path → [size, mtime_ns] of the files that exist."""
    found: dict[str, list[int]] = {}
    for path in paths:
        try:
            st = path.stat()
        except OSError:  # missing, or removed meanwhile: its resume ended cleanly, the store has it
            continue
        found[str(path)] = [st.st_size, st.st_mtime_ns]
    return found


def _of(state: Mapping[str, Any], project_key: str) -> dict[str, Any]:
    """The sweep's memory of one project key's files."""
    remembered = state.get(project_key)
    return remembered if isinstance(remembered, dict) else {}


def _save_swept(path: Path, state: dict[str, Any], project_key: str, files: dict[str, Any]) -> None:
    """Write the sweep's memory with the project key's files replaced; a failure only makes the next sweep slower."""
    if state.get(project_key) == files:
        return
    state[project_key] = files
    try:
        write_atomic(path, json.dumps(state, sort_keys=True).encode())
    except OSError as err:
        log.warning("reconcile: cannot write %s (%s)", path, err.strerror or err)


def _load_swept(path: Path) -> dict[str, Any]:
    """The sweep's memory; empty when absent or unreadable (the next sweep then rereads every file, which is only slower)."""
    try:
        value = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        log.warning("reconcile: cannot read %s (%s); every CLI transcript is read again", path, err)
        return {}
    return value if isinstance(value, dict) else {}


async def sweep(store: Any, project_key: str, run_dir: Path, env: Mapping[str, str] | None = None) -> int:
    """`reconcile` every session whose CLI transcript changed since the last sweep of this run_dir; return how many entries came in.

    A file counts as unchanged while its size and mtime are those remembered; it is stat'ed before it is
    read, so a file that grows meanwhile is read again next time. A session whose reconcile fails is not
    remembered (it is tried again at the next sweep).
    """
    config = config_dir({**os.environ, **(env or {})})
    state = _load_swept(run_dir / SWEPT_FILE)
    old = _of(state, project_key)
    now = _stats(session_files(config, project_key))
    changed = sorted({Path(p).stem for p, seen in now.items() if old.get(p) != seen})
    imported = 0
    for sid in changed:
        try:
            imported += await reconcile(store, project_key, sid, env)
        except FlowerError:  # the store refuses writes (full, read-only): every other import would fail alike
            raise
        except Exception:
            log.exception("reconcile: importing the CLI's own transcript of session %s failed", sid)
            for p in [p for p in now if Path(p).stem == sid]:
                now.pop(p)
    for root in _spent_leftovers(project_key, now):
        shutil.rmtree(root, ignore_errors=True)
        now = {p: seen for p, seen in now.items() if not Path(p).is_relative_to(root)}
    _save_swept(run_dir / SWEPT_FILE, state, project_key, now)
    return imported
