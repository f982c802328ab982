"""Reconcile: entries the CLI wrote to its own transcript but the store mirror never got are imported before a resume (D2).

The CLI writes every entry to its local JSONL first and only then hands it to the SDK, which mirrors it
to sessions.db; a kill between the two leaves sessions.db trailing the file. Before a resume, the
entries the file has and sessions.db lacks are appended to the raw store, in the file's order, so the
transcript materialised for the resumed CLI (from the store, through the pruned view: stores/resume.py) carries
them. The CLI's file is only ever read.

Facts read from the real CLI (2.1.332, tests/e2e/test_reconcile_resume.py pins them):
- a session started without `resume` writes `<config dir>/projects/<project key>/<session>.jsonl`, with
  the config dir the CLI's `CLAUDE_CONFIG_DIR` (else ~/.claude) and the key the SDK's
  `project_key_for_directory` of its cwd, even with a session store set;
- a resumed session runs on a temporary config dir materialised from the store (the SDK's layout, now written
  by flower: stores/resume.py)
  (`<tmp>/claude-resume-*/projects/<project key>/<session>.jsonl`: the pruned view, then the CLI's new
  entries); it is removed when the CLI ends, but a kill leaves it behind, holding the newest
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
remembers how far each file was read in `run_dir/reconciled.json` (size, mtime, offset, the session's
stored seq then) and reads only what a file gained since, compared with what was stored since: a clean
wake costs a `stat` per file, a wake after a kill the lines the kill left, not a load per session. Once a killed resume's temporary
dir is imported in full and no process uses it, the sweep removes it: the caller's credentials were copied
into it, and only its own cleanup (which the kill skipped) would have removed them.
"""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import shutil
import tempfile
import uuid as uuidlib
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, cast

import orjson

from ..core import host
from ..core.durable import write_atomic
from ..core.errors import FlowerError
from ..core.redact import redact

if TYPE_CHECKING:  # SDK-free at run time: a prefetch worker predicts a reconcile (stores/prefetch.py)
    from claude_agent_sdk.types import SessionKey, SessionStoreEntry

__all__ = [
    "SWEPT_FILE", "Target", "config_dir", "content_key", "is_local_only", "leftover_paths", "load_swept", "missing",
    "parse_jsonl", "reconcile", "remembered", "session_files", "sweep", "transcript_path",
]

RESUME_PREFIX = "claude-resume-"
"""How a resume's temporary config dir is named (the SDK's and flower's own, stores/resume.py): a killed resume's
leftovers are found by it."""
SWEPT_FILE = "reconciled.json"
"""Under run_dir: project key → {transcript path: FileRead as a list}: how far each file was last read."""

log = logging.getLogger("flower")

Entry = dict[str, Any]


class Target(Protocol):
    """What a reconcile reads of a session and appends to it: the raw store, or a worker's copy (stores/prefetch.py)."""

    async def entries_after(self, project_key: str, session_id: str, seq: int) -> list[SessionStoreEntry]:
        """The session's entries appended after `seq`, in append order."""
        ...

    async def latest_seq(self, project_key: str, session_id: str, skip: int = 0) -> int:
        """The seq of the session's newest entry, or of the one `skip` places before it (0: none)."""
        ...

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Append `entries` in order, skipping uuids the session holds already."""
        ...


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
    for path in base.glob(f"{RESUME_PREFIX}*/projects/{project_key}/{session_id}.jsonl"):
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
            if (entry := _entry(line)) is not None:
                entries.append(entry)
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


TAIL = 64
"""Bytes before a file's read offset remembered with it: the same bytes there later mean the file only grew since."""


@dataclass(frozen=True)
class FileRead:
    """How far one CLI transcript was read: its size and mtime then, the offset after its last whole line, the
    session's newest stored seq once that read was imported, and the file's last `TAIL` bytes before the offset."""

    size: int
    mtime_ns: int
    offset: int = 0
    seq: int = 0
    tail: str = ""

    def unchanged(self, now: FileRead | None) -> bool:
        """Whether the file is as this read left it (same size and mtime)."""
        return now is not None and (now.size, now.mtime_ns) == (self.size, self.mtime_ns)

    def to_json(self) -> list[Any]:
        """The compact form kept in `reconciled.json`."""
        return [self.size, self.mtime_ns, self.offset, self.seq, self.tail]

    @classmethod
    def of(cls, value: Any) -> FileRead | None:
        """A remembered read; None for anything else (an older flower's [size, mtime] included: that file is read whole)."""
        if (isinstance(value, list) and len(value) == 5 and all(type(v) is int for v in value[:4])
                and isinstance(value[4], str)):
            return cls(*value)
        return None


def _stat(path: Path) -> FileRead | None:
    try:
        st = path.stat()
    except OSError:  # missing, or removed meanwhile: its resume ended cleanly, the store has it
        return None
    return FileRead(st.st_size, st.st_mtime_ns)


def _read_from(path: Path, start: int) -> bytes | None:
    """The file's bytes from `start`; None when it is missing or cannot be read (the resume goes on from the store)."""
    try:
        with path.open("rb") as f:
            f.seek(start)
            return f.read()
    except FileNotFoundError:
        return None
    except OSError as err:
        log.warning("reconcile: cannot read %s (%s); resuming from sessions.db as it is", path, err.strerror or err)
        return None


ANCHOR = 500
"""A file read from its start is first compared from its end with the session's newest stored entries, this many."""
SCAN = 32 << 20
"""Bytes read backwards from a file's end to find the newest line the store holds, before reading it whole."""
BLOCK = 1 << 20


def _backwards(path: Path, end: int, limit: int) -> Iterator[bytes]:
    """The whole lines of `path` before offset `end`, newest first, until `limit` bytes were read."""
    with path.open("rb") as f:
        rest, at = b"", end
        while at > 0 and end - at < limit:
            size = min(BLOCK, at)
            at -= size
            f.seek(at)
            lines = (f.read(size) + rest).split(b"\n")
            rest = lines[0]  # may continue in the block before
            yield from reversed(lines[1:])
        if at == 0 and rest:
            yield rest


def _whole_end(path: Path, size: int) -> int:
    """The offset after the file's last newline (a last line cut mid-write is read again once the file changes)."""
    with path.open("rb") as f:
        at = size
        while at > 0:
            step = min(BLOCK, at)
            f.seek(at - step)
            block = f.read(step)
            if (i := block.rfind(b"\n")) >= 0:
                return at - step + i + 1
            at -= step
    return 0


async def _from_end(store: Target, key: SessionKey, path: Path,
                    size: int) -> tuple[list[Entry], Sequence[Mapping[str, Any]], int, bytes] | None:
    """The file's lines from the newest one the store holds, the store's entries from some before it, the offset
    after the file's last whole line and the bytes before it; None when the file is to be read whole (a short
    session, or no such line near the end).

    A wake after a kill of a long run reads a file it never read (issue 35: 62 MB, 20,000 entries): comparing it
    whole with the whole session held both in memory (480 MB). The mirror stores the file's lines in order, so
    the lines before one it holds are held too: only the file's tail after it can be missing.
    """
    pk, sid = key["project_key"], key["session_id"]
    since = await store.latest_seq(pk, sid, skip=ANCHOR)
    if not since:
        return None
    stored = await store.entries_after(pk, sid, since)
    held = {u: i for i, e in enumerate(stored) if isinstance(u := e.get("uuid"), str)}
    end = _whole_end(path, size)
    local: list[Entry] = []
    for line in _backwards(path, end, SCAN):
        entry = _entry(line)
        if entry is None:
            continue
        local.append(entry)
        if (at := held.get(entry.get("uuid"))) is not None:  # type: ignore[arg-type]
            # Compared from that line on, on both sides: a stored copy of a uuid-less line before it stands for a line
            # of the file before it too (`missing` matches those by content, one copy for one line).
            local.reverse()
            return local, stored[at:], end, _tail_before(path, end)
    return None


def _entry(line: bytes) -> Entry | None:
    """One JSONL line's object; None for a blank line, a line cut by a kill mid-write, or JSON that is no object."""
    if not line.strip():
        return None
    try:
        value = _load_line(line)
    except ValueError:  # also UnicodeDecodeError: a line cut mid-character
        return None
    return value if isinstance(value, dict) else None


async def _import_file(store: Target, key: SessionKey, path: Path, known: FileRead | None) -> tuple[int, FileRead | None]:
    """Import what `path` gained since `known` and the store lacks; return how many, and how far the file is read now.

    Lines the CLI wrote after a read are mirrored after it too (it writes its file first), so what a file gained is
    compared with the entries stored since the seq noted at that read, never the whole session. The seq is noted
    after the read's own import: nothing else mirrors meanwhile, since a wake reads under the workspace lock, before
    its CLI starts (D5), and a killed flower's mirror died with it. A file that shrank or whose bytes before the
    offset changed is read from its end back to the newest line the store holds (`_from_end`), else whole, against
    the whole session.
    """
    now = _stat(path)  # stat'ed before it is read: a file growing meanwhile is read again next time
    if now is None:
        return 0, None
    if known is not None and known.unchanged(now):
        return 0, known
    grown = _grown(path, known)
    if grown is None:
        try:
            found = await _from_end(store, key, path, now.size)
        except OSError as err:
            log.warning("reconcile: cannot read %s (%s); resuming from sessions.db as it is", path, err.strerror or err)
            return 0, None
        if found is not None:
            local, stored, offset, tail = found
            return await _imported(store, key, missing(local, stored), now, offset, tail)
    start = grown or 0
    data = _read_from(path, start)
    if data is None:
        return 0, None
    whole = data[: data.rfind(b"\n") + 1]  # a last line cut mid-write is read again once the file changes
    since = known.seq if start and known is not None else 0
    todo = missing(parse_jsonl(whole), await store.entries_after(key["project_key"], key["session_id"], since)) if whole else []
    if len(whole) >= TAIL or not start:
        tail = whole[-TAIL:]
    else:  # a few bytes gained: the remembered tail ends where they begin
        tail = (bytes.fromhex(known.tail if known is not None else "") + whole)[-TAIL:]
    return await _imported(store, key, todo, now, start + len(whole), tail)


async def _imported(store: Target, key: SessionKey, todo: list[Entry], now: FileRead, offset: int,
                    tail: bytes) -> tuple[int, FileRead]:
    """Append `todo` and note how far the file is read, with the session's newest seq after that."""
    if todo:  # the CLI's own JSON objects: the SDK's TypedDict is a minimal view of them
        await store.append(key, cast("list[SessionStoreEntry]", todo))
    seq = await store.latest_seq(key["project_key"], key["session_id"])
    return len(todo), FileRead(now.size, now.mtime_ns, offset, seq, tail.hex())


def _grown(path: Path, known: FileRead | None) -> int | None:
    """The offset after which a file only grew since `known` (its bytes before it are the ones remembered); None when
    it is read from its start (new to this memory, truncated or rewritten)."""
    if known is None or not known.offset:
        return None
    try:
        with path.open("rb") as f:
            at = max(0, known.offset - TAIL)
            f.seek(at)
            return known.offset if f.read(known.offset - at).hex() == known.tail else None
    except OSError:
        return None


def _tail_before(path: Path, offset: int) -> bytes:
    """The `TAIL` bytes before `offset` (remembered with it: the same bytes there later mean the file only grew)."""
    with path.open("rb") as f:
        f.seek(max(0, offset - TAIL))
        return f.read(offset - max(0, offset - TAIL))


async def reconcile(store: Target, project_key: str, session_id: str, env: Mapping[str, str] | None = None,
                    run_dir: Path | None = None, memory: dict[str, FileRead] | None = None) -> int:
    """Import into `store` (the raw store) what the CLI's own transcripts of the session have and it lacks; return how many.

    `env` is the CLI's env over this process's (`CLAUDE_CONFIG_DIR` picks the config dir); the temporary
    dirs are this process's (stores/resume.py makes them here). The files are read oldest first, each against the
    store as the previous left it. The import goes through the store's `append`, which skips uuids
    already stored, so a rerun imports nothing. With `run_dir`, the memory of what was read of each file
    (`reconciled.json`, shared with the sweep) is used and kept: a file as it was read is not read again, one
    that grew is read from where the last read stopped (a resume right after the wake's sweep reads nothing
    twice). `memory` is that memory already loaded (the sweep's), updated in place and not saved here.
    """
    paths = [transcript_path(config_dir({**os.environ, **(env or {})}), project_key, session_id),
             *leftover_paths(project_key, session_id)]
    state: dict[str, Any] = {}
    if memory is None:
        # The memory holds every transcript the task ever had (a judge's session a round): read and written in a
        # worker thread, or each resume would hold the event loop, where status answers wait, for the whole task's
        # files (issue 35: ~5 ms at 1,000 rounds, once a round).
        if run_dir is not None:
            state, known = await asyncio.to_thread(_load_memory, run_dir / SWEPT_FILE, project_key)
        else:
            known = {}
    else:
        known = memory
    key: SessionKey = {"project_key": project_key, "session_id": session_id}
    imported = 0
    for path in paths:
        count, read = await _import_file(store, key, path, known.get(str(path)))
        imported += count
        if read is not None:
            known[str(path)] = read
    if imported:
        log.info("reconcile: imported %d entries of session %s from the CLI's own transcript", imported, session_id)
    if memory is None and run_dir is not None:
        await asyncio.to_thread(_save_swept, run_dir / SWEPT_FILE, state, project_key, known)
    return imported


def session_files(config: Path, project_key: str, tmp: Path | None = None) -> list[Path]:
    """Every CLI transcript of the project key: the config dir's and those of leftover `claude-resume-*` dirs."""
    base = tmp if tmp is not None else Path(tempfile.gettempdir())
    found = [*(config / "projects" / project_key).glob("*.jsonl"), *base.glob(f"{RESUME_PREFIX}*/projects/{project_key}/*.jsonl")]
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

    The caller's credentials are copied into each (`.credentials.json`), which is removed when the CLI ends;
    a kill leaves it behind. One is removed only when every file under its `projects/` is a main transcript
    just imported (`imported`: path → stat) — a subagent's transcript, which reconcile does not read, keeps it
    — and no live process runs with it as its config dir (core/host.py reads /proc; without /proc none is removed).
    """
    base = tmp if tmp is not None else Path(tempfile.gettempdir())
    spent = []
    for root in base.glob(f"{RESUME_PREFIX}*/projects/{project_key}"):
        top = root.parent.parent
        try:
            files = [p for p in (top / "projects").rglob("*") if not p.is_dir()]
            others = [p for p in (top / "projects").iterdir() if p != root]
        except OSError:
            continue
        if not others and files and all(str(p) in imported for p in files) and not host.config_in_use(top):
            spent.append(top)
    return spent


def remembered(state: Mapping[str, Any], project_key: str) -> dict[str, FileRead]:
    """The memory of one project key's files (what cannot be understood is forgotten: that file is read whole)."""
    files = state.get(project_key)
    if not isinstance(files, dict):
        return {}
    return {path: read for path, value in files.items() if (read := FileRead.of(value)) is not None}


def _save_swept(path: Path, state: dict[str, Any], project_key: str, files: Mapping[str, FileRead]) -> None:
    """Write the memory with the project key's files replaced; a failure only makes the next read slower."""
    compact = {p: read.to_json() for p, read in files.items()}
    if state.get(project_key) == compact:
        return
    state[project_key] = compact
    try:
        write_atomic(path, json.dumps(state, sort_keys=True).encode())
    except OSError as err:
        log.warning("reconcile: cannot write %s (%s)", path, err.strerror or err)


def _load_memory(path: Path, project_key: str) -> tuple[dict[str, Any], dict[str, FileRead]]:
    """The sweep's memory file, and what it remembers of `project_key`'s files."""
    state = load_swept(path)
    return state, remembered(state, project_key)


def _changed(path: Path, project_key: str, config: Path) -> tuple[dict[str, Any], dict[str, FileRead], list[str]]:
    """The memory, what it remembers of the files still there, and the sessions whose files changed since (a stat each)."""
    state, known = _load_memory(path, project_key)
    files = session_files(config, project_key)
    present = {str(p) for p in files}
    memory = {p: read for p, read in known.items() if p in present}
    changed = sorted({p.stem for p in files if not ((read := memory.get(str(p))) is not None and read.unchanged(_stat(p)))})
    return state, memory, changed


def load_swept(path: Path) -> dict[str, Any]:
    """The sweep's memory; empty when absent or unreadable (the next sweep then rereads every file, which is only slower)."""
    try:
        value = json.loads(path.read_bytes())
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as err:
        log.warning("reconcile: cannot read %s (%s); every CLI transcript is read again", path, err)
        return {}
    return value if isinstance(value, dict) else {}


async def sweep(store: Target, project_key: str, run_dir: Path, env: Mapping[str, str] | None = None) -> int:
    """`reconcile` every session whose CLI transcript changed since it was last read; return how many entries came in.

    A file counts as unchanged while its size and mtime are those remembered, and one that grew is read from
    where the last read stopped (see `_import_file`). A session whose reconcile fails is forgotten (its files are
    read whole at the next sweep).
    """
    config = config_dir({**os.environ, **(env or {})})
    # A stat of every transcript the task ever had, and its memory read and written: in a worker thread (see reconcile).
    state, memory, changed = await asyncio.to_thread(_changed, run_dir / SWEPT_FILE, project_key, config)
    imported = 0
    for sid in changed:
        try:
            imported += await reconcile(store, project_key, sid, env, memory=memory)
        except FlowerError:  # the store refuses writes (full, read-only): every other import would fail alike
            raise
        except Exception:
            log.exception("reconcile: importing the CLI's own transcript of session %s failed", sid)
            for p in [p for p in memory if Path(p).stem == sid]:
                memory.pop(p)
    for root in await asyncio.to_thread(_spent_leftovers, project_key, memory):
        await asyncio.to_thread(shutil.rmtree, root, ignore_errors=True)
        memory = {p: read for p, read in memory.items() if not Path(p).is_relative_to(root)}
    await asyncio.to_thread(_save_swept, run_dir / SWEPT_FILE, state, project_key, memory)
    return imported
