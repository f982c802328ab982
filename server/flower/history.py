"""The stored transcript of a workspace's sessions, a page at a time, with what the pruner makes of it (S23).

The domain logic of a history view: which step a stored entry belongs to, which blocks of it a transcript shows,
what the pruner's verdicts are, how a page is cut. Every read is the store's own (`stores/base.Store`: SQLite in
run_dir read-only, or the shared PostgreSQL store, D9), so any front-end can show the whole conversation after a
restart without a wake. Which session belongs to which step comes from the lineage (S5) and the manifest rows
(S6–S7, the judge's `<step>·判定#N` included), read from the task's records.
The pruner needs a whole session, so its verdicts are computed once per (session, entry count) and cached — in a
thread for small sessions, in a worker process for large ones when the store can be read from one (the pruner is
Python and would hold the GIL the event loop needs) — and a page never waits for them longer than a short budget:
the caller is told which sessions are still pending.
"""

from __future__ import annotations

import asyncio
import bisect
import gc
import multiprocessing
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any, Literal

from .core.lineage import Lineage
from .core.manifest import parse_name, parsed_rows
from .core.projects import project_key
from .core.records import Records
from .core.redact import cut
from .core.text import clip, tool_label
from .core.verdicts import verdict_of
from .sessions import Sessions
from .stores.base import Store
from .stores.transcript import is_denial, prune  # the pure pruner: stores/prune.py's adapter brings the SDK (issue 34)

TEXT_LIMIT = 4000
"""Tool results and tool-input strings are cut here, in history and live (a Write of a large file would flood a view)."""
VERDICT_WAIT = 0.03
"""How long a page waits for a small session's pruner verdicts before answering without them (seconds)."""
LARGE = 2000
"""Sessions with more entries are pruned in a worker process, and pages do not wait for their verdicts."""
LAST = 1 << 62
"""A `before` above every seq."""

Role = Literal["user", "assistant"]
Kind = Literal["text", "tool", "result"]
Pruned = Literal["hidden", "rewritten", "added"]


@dataclass
class Item:
    """One history entry: a content block of a stored entry, in the transcript notification's terms."""

    seq: int
    session_id: str
    step: str | None
    uuid: str
    role: Role
    kind: Kind
    text: str
    tool_name: str | None = None
    tool_input: dict[str, Any] | None = None
    tool_use_id: str | None = None
    pruned: Pruned | None = None
    pruned_text: str | None = None
    parent: str | None = None
    """A subagent's entry: the `Agent` call it works for (issue 32); None for the main conversation's."""
    denied: bool = False
    """A tool result that is a denial (the person's, a rule's), not the tool's output (issue 34)."""


@dataclass
class Session:
    """One session of the workspace: the steps that ran in it, and how many entries it stores."""

    session_id: str
    steps: list[str]
    entries: int
    current: bool
    transcript: int = 0
    """Its row id in the store's `transcripts`."""


@dataclass
class Verdicts:
    """What the pruner makes of one session: uuid → verdict, the new text of rewritten entries, added entries."""

    count: int
    verdicts: dict[str, Pruned] = field(default_factory=dict)
    texts: dict[str, str] = field(default_factory=dict)
    added: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    """Stored uuid → the synthesized entries the pruner places right after it."""


@dataclass
class Page:
    """A page of history: items oldest first, the cursor for the page before, and the sessions."""

    items: list[Item]
    next_before: int | None
    sessions: list[Session]
    pending: dict[str, asyncio.Future[Verdicts]]
    """Sessions in this page whose verdicts are still being computed."""


@dataclass(frozen=True)
class StepRun:
    """One manifest row as a transcript section head shows it."""

    step: str
    session_id: str | None
    ok: bool
    cost_usd: float
    duration_s: float | None
    started_at: float | None
    passed: bool | None
    """A judge round's verdict; None for other steps."""


class UnknownSession(ValueError):
    """A session id that is not one of the workspace's sessions."""


Block = tuple[str, Role, Kind, str, str | None, Any, str | None, bool]
"""(uuid, role, kind, text, tool name, tool input, tool_use id, denied) of one shown content block."""
Runs = dict[str, list[tuple[float, str]]]
"""Session → its manifest runs as (start time, step name), oldest first."""


def _result_text(content: Any) -> str | None:
    """The text of a tool_result body; None when it holds something else (an image)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "\n".join(str(b.get("text") or "") for b in content)
    return None


def items_of(entry: dict[str, Any], sidechain: bool = False) -> list[Block]:
    """The blocks of a stored entry a transcript shows (text, tool calls, tool results), one uuid each; a subagent's
    entries (`isSidechain`) only when reading its own transcript (`sidechain`)."""
    kind, message, uuid = entry.get("type"), entry.get("message"), entry.get("uuid")
    if kind not in ("user", "assistant") or not isinstance(message, dict) or not isinstance(uuid, str):
        return []
    if entry.get("isMeta") or bool(entry.get("isSidechain")) != sidechain:
        return []
    content = message.get("content")
    blocks: list[Any] = [{"type": "text", "text": content}] if isinstance(content, str) else content or []
    role: Role = "user" if kind == "user" else "assistant"
    out: list[tuple[Role, Kind, str, str | None, Any, str | None, bool]] = []
    for block in blocks if isinstance(blocks, list) else []:
        if not isinstance(block, dict):
            continue
        btype = block.get("type")
        if btype == "text" and isinstance(block.get("text"), str) and block["text"]:  # as the runtime emits them live
            out.append((role, "text", block["text"], None, None, None, False))
        elif btype == "tool_use" and kind == "assistant":
            name = str(block.get("name") or "")
            out.append((role, "tool", tool_label(name, block.get("input")), name, block.get("input"), block.get("id"), False))
        elif btype == "tool_result" and kind == "user":
            body = _result_text(block.get("content"))
            text = clip(body, TEXT_LIMIT, count=True) if body is not None else "[a result that is not text]"
            out.append((role, "result", text, None, None, block.get("tool_use_id"), is_denial(entry, block)))
    # One uuid per item: the CLI stores one block per entry; should an entry hold more, they get `<uuid>#<i>`.
    return [(uuid if i == 0 else f"{uuid}#{i}", *rest) for i, rest in enumerate(out)]


def _epoch(stamp: Any) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


def _paused_gc(work: Callable[[], Verdicts]) -> Verdicts:
    # No cycles are built here: a GC pass over a whole session just decoded would cost more than the
    # pruning, and in a thread would hold the GIL the event loop needs (as PruningSessionStore.load does).
    paused = gc.isenabled()
    gc.disable()
    try:
        return work()
    finally:
        if paused:
            gc.enable()


def prune_loaded(load: Callable[[str, str], list[Any]], project_key: str, session_id: str, trim: bool,
                 spill_dir: str) -> Verdicts:
    """Load a whole session with the store's `loader()` and prune it: CPU-bound, run in a worker process."""
    return prune_entries(load(project_key, session_id), trim, spill_dir)


def prune_entries(entries: list[Any], trim: bool, spill_dir: str) -> Verdicts:
    """The pruner's verdicts on a whole session's entries, as the model's resume sees them (CPU-bound)."""
    out = Verdicts(len(entries))
    if not entries:
        return out
    return _paused_gc(lambda: _verdicts(prune(entries, trim=trim, spill_dir=Path(spill_dir)), out))


def _verdicts(result: Any, out: Verdicts) -> Verdicts:
    out.verdicts = dict(result.verdicts)
    anchor: str | None = None
    for entry in result.entries:
        uuid = entry.get("uuid")
        verdict = out.verdicts.get(uuid) if isinstance(uuid, str) else None
        if verdict == "added":
            out.added.setdefault(anchor or "", []).append(entry)
            continue
        if verdict == "rewritten" and isinstance(uuid, str):
            blocks = items_of(entry)
            if blocks:
                out.texts[uuid] = blocks[0][3]
        if isinstance(uuid, str):
            anchor = uuid
    return out


class History:
    """A workspace's stored transcript, read from its store page by page (no model, no lock, no writes)."""

    def __init__(self, workspace: str | Path, run_dir: str | Path, *, trim: bool = True, store: Store | None = None,
                 records: Records | None = None) -> None:
        """`store` and `records` are the folder's (`Sessions.raw`, `Sessions.records`); none given: run_dir's files."""
        self.workspace, self.run_dir = Path(workspace), Path(run_dir)
        self.project_key = project_key(self.workspace)  # the runtime's: the SDK stays behind the runtime and stores (D3)
        if store is None or records is None:
            opened = Sessions.open(self.run_dir, workspace=self.workspace)
            store, records = store or opened.raw, records or opened.records
        self.store, self.records = store, records
        self.trim = trim
        self._pool: ProcessPoolExecutor | None = None
        self._verdicts: dict[str, Verdicts] = {}
        self._computing: dict[tuple[str, int], asyncio.Future[Verdicts]] = {}

    async def latest_seq(self) -> int:
        """The highest entry position in the store, 0 when there is none or it cannot be read now."""
        try:
            return await self.store.newest_seq()
        except Exception:  # a store not answering: no entries known yet, the next page says more
            return 0

    async def count(self, session_id: str) -> int:
        """How many entries the store holds for a session (0 when none, or it cannot be read now)."""
        try:
            return await self.store.count(self.project_key, session_id)
        except Exception:
            return 0

    def steps(self) -> tuple[Runs, dict[str, str]]:
        """Session → its runs from the manifest (oldest first), and the lineage's step → session (sync: a worker thread).

        The manifest's rows come through its one cache (`parsed_rows`, shared with status: issue 33).
        """
        lineage = Lineage.load(self.run_dir, self.workspace, records=self.records)
        runs: Runs = {}
        for row in parsed_rows(self.records):
            if row.session_id is not None:
                runs.setdefault(row.session_id, []).append((row.started_at, row.step))
        return {sid: sorted(v) for sid, v in runs.items()}, dict(lineage.steps)

    def step_runs(self) -> list[StepRun]:
        """Every step run the manifest records, oldest first, with the judge's verdicts (rows from the one cache)."""
        out = []
        for row in parsed_rows(self.records):
            passed = row.ok and verdict_of(row.text)[0] if parse_name(row.step)[1] == "judge" else None
            duration = row.ended_at - row.started_at if row.ended_at and row.started_at else None
            out.append(StepRun(row.step, row.session_id, row.ok, row.cost_usd, duration, row.started_at or None, passed))
        out.sort(key=lambda r: r.started_at or 0.0)
        return out

    async def sessions(self, steps: tuple[Runs, dict[str, str]] | None = None) -> list[Session]:
        """Every session of the workspace that the store holds, oldest first, with its steps."""
        runs, lineage = steps if steps is not None else await asyncio.to_thread(self.steps)
        current = set(lineage.values())
        names: dict[str, list[str]] = {}
        for sid, started in runs.items():
            names[sid] = list(dict.fromkeys(step for _, step in started))
        for step, sid in lineage.items():
            if step not in names.setdefault(sid, []):
                names[sid].append(step)
        rows = await self.store.transcripts(self.project_key, list(names))
        first = {sid: min((t for t, _ in runs.get(sid, [])), default=float("inf")) for sid in names}
        found = [Session(sid, names[sid], count, sid in current, tid) for tid, sid, count in rows]
        return sorted(found, key=lambda s: (first[s.session_id], s.transcript))

    async def read(self, session_id: str | None, before: int | None, limit: int) -> tuple[list[Item], int | None, list[Session]]:
        """A page of items (oldest first) below `before`, the cursor for the page before it, and the sessions."""
        steps = await asyncio.to_thread(self.steps)
        sessions = await self.sessions(steps)
        chosen = [s for s in sessions if session_id is None or s.session_id == session_id]
        if session_id is not None and not chosen:
            raise UnknownSession(session_id)
        items, next_before = await self._page(chosen, steps[0], before if before is not None else LAST, limit)
        return items, next_before, sessions

    async def _page(self, chosen: Sequence[Session], runs: Runs, before: int, limit: int) -> tuple[list[Item], int | None]:
        if not chosen:
            return [], None
        by_id = {s.transcript: s for s in chosen}
        starts = {sid: ([t for t, _ in r], [n for _, n in r]) for sid, r in runs.items()}
        out: list[list[Item]] = []  # per producing row, newest first
        cursor, batch, read = before, limit + 1, 0
        while True:
            rows = await self.store.page(list(by_id), cursor, batch)
            if not rows:
                return _flatten(out), None
            for seq, tid, entry in rows:
                cursor = seq
                blocks = items_of(entry) if isinstance(entry, dict) else []
                if not blocks:
                    continue
                if len(out) >= limit:  # one more row would show: there is an older page
                    return _flatten(out), out[-1][0].seq
                session = by_id[tid]
                step = _step_at(starts.get(session.session_id), _epoch(entry.get("timestamp")), session)
                out.append([Item(seq, session.session_id, step, uuid, role, kind, text, name, cut(data) if data is not None else None, use,
                                 denied=denied)
                            for uuid, role, kind, text, name, data, use, denied in blocks])
            # The next batch from the share of rows shown so far, so few rows beyond the page are decoded.
            read += len(rows)
            shown = len(out) / read
            batch = max(16, min(5000, int((limit + 1 - len(out)) / max(shown, 0.05) * 1.2)))

    async def context(self, session_id: str) -> int | None:
        """A session's last context size in tokens (its last real model round), read backwards from the store's newest entry."""
        return await self.store.last_context(self.project_key, session_id)

    # -- the pruner's verdicts (on the event loop) --------------------------------------------------
    def verdicts(self, session_id: str, count: int | None = None) -> asyncio.Future[Verdicts]:
        """The pruner's verdicts for a session: cached when its entry count is unchanged, else computed off the loop."""
        loop = asyncio.get_running_loop()
        ready = self._verdicts.get(session_id)
        if ready is not None and count is not None and ready.count >= count:
            done: asyncio.Future[Verdicts] = loop.create_future()
            done.set_result(ready)
            return done
        key = (session_id, count if count is not None else -1)
        running = self._computing.get(key)
        if running is not None:
            return running
        load = self.store.loader()
        spill = str(self.run_dir / "spill")
        if load is not None and count is not None and count > LARGE:
            # The pruner is Python: in a thread it would hold the GIL for seconds of a large session,
            # and every request would wait behind it (benchmarks/editor.py). A process has its own.
            future = asyncio.ensure_future(self._in_process(load, session_id, spill))
        else:
            future = asyncio.ensure_future(self._in_thread(session_id, spill))

        def keep(f: asyncio.Future[Verdicts]) -> None:
            self._computing.pop(key, None)
            if not f.cancelled() and f.exception() is None:
                known = self._verdicts.get(session_id)
                if known is None or f.result().count >= known.count:
                    self._verdicts[session_id] = f.result()

        future.add_done_callback(keep)
        self._computing[key] = future
        return future

    async def _in_thread(self, session_id: str, spill: str) -> Verdicts:
        entries = await self.store.session(self.project_key, session_id)
        return await asyncio.to_thread(prune_entries, entries, self.trim, spill)

    async def _in_process(self, load: Callable[[str, str], list[Any]], session_id: str, spill: str) -> Verdicts:
        await asyncio.sleep(0.02)  # let the page that asked go out first: starting a worker costs a process spawn
        if self._pool is None:
            self._pool = ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("spawn"))
        return await asyncio.get_running_loop().run_in_executor(
            self._pool, prune_loaded, load, self.project_key, session_id, self.trim, spill)

    def close(self) -> None:
        """Stop the worker process, if one was started (verdicts still being computed are dropped)."""
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None

    async def page(self, session_id: str | None = None, before: int | None = None, limit: int = 200,
                   wait: float = VERDICT_WAIT) -> Page:
        """A page of history with the pruner's verdicts of the sessions it shows (those not ready in `wait` are pending)."""
        items, next_before, sessions = await self.read(session_id, before, limit)
        counts = {s.session_id: s.entries for s in sessions}
        futures = {sid: self.verdicts(sid, counts.get(sid)) for sid in dict.fromkeys(i.session_id for i in items)}
        small = [f for sid, f in futures.items() if not f.done() and counts.get(sid, 0) <= LARGE]
        if small and len(small) == sum(not f.done() for f in futures.values()):  # a large one would not be ready anyway
            await asyncio.wait([asyncio.shield(f) for f in small], timeout=wait)
        pending: dict[str, asyncio.Future[Verdicts]] = {}
        ready: dict[str, Verdicts] = {}
        for sid, future in futures.items():
            if future.done() and not future.cancelled() and future.exception() is None:
                ready[sid] = future.result()
            else:
                pending[sid] = future
        return Page(await self.nest(apply(items, ready)), next_before, sessions, pending)

    async def nest(self, items: list[Item]) -> list[Item]:
        """Each `Agent` call's subagent (its stored transcript `subagents/agent-<id>`, D12) right after the call: its
        prompt, tool calls, results and words, with `parent` = the call's id and the call's seq (issue 32)."""
        calls = {i.tool_use_id: i for i in items if i.kind == "tool" and i.tool_name == "Agent" and i.tool_use_id}
        nested: dict[str, list[Item]] = {}
        for sid in dict.fromkeys(i.session_id for i in calls.values()):
            key: Any = {"project_key": self.project_key, "session_id": sid}
            try:
                subpaths = [s for s in await self.store.list_subkeys(key) if s.startswith("subagents/")]
                for sub in subpaths:
                    sub_key: Any = {**key, "subpath": sub}
                    entries: list[dict[str, Any]] = [dict(e) for e in await self.store.load(sub_key) or []]
                    meta: dict[str, Any] = next((e for e in entries if e.get("type") == "agent_metadata"), {})
                    call = calls.get(str(meta.get("toolUseId")))
                    if call is not None and call.tool_use_id is not None:
                        nested[call.tool_use_id] = [
                            Item(call.seq, sid, call.step, uuid, role, kind, text, name, cut(data) if data is not None else None,
                                 use, parent=call.tool_use_id, denied=denied)
                            for e in entries for uuid, role, kind, text, name, data, use, denied in items_of(e, sidechain=True)]
            except Exception:  # a store not answering now: the page goes out without its subagents
                continue
        out: list[Item] = []
        for item in items:
            out.append(item)
            out.extend(nested.pop(item.tool_use_id or "", []) if item.kind == "tool" and item.parent is None else [])
        return out


def apply(items: Iterable[Item], ready: dict[str, Verdicts]) -> list[Item]:
    """Items with their verdicts, and the pruner's added entries right after the entry they follow."""
    out: list[Item] = []
    for item in items:
        v = ready.get(item.session_id)
        if v is None:
            out.append(item)
            continue
        base = item.uuid.partition("#")[0]
        item.pruned = v.verdicts.get(base)
        item.pruned_text = v.texts.get(base) if item.pruned == "rewritten" else None
        out.append(item)
        if item.uuid == base:
            for entry in v.added.get(base, []):
                for uuid, role, kind, text, name, data, use, denied in items_of(entry):
                    out.append(Item(item.seq, item.session_id, item.step, uuid, role, kind, text, name, data, use,
                                    pruned="added", pruned_text=text, denied=denied))
    return out


def _flatten(rows: list[list[Item]]) -> list[Item]:
    return [item for row in reversed(rows) for item in row]


def _step_at(starts: tuple[list[float], list[str]] | None, when: float | None, session: Session) -> str | None:
    """The step running in `session` at time `when`: the last manifest run of it that started by then."""
    if not starts or not starts[0]:
        return session.steps[0] if session.steps else None
    times, names = starts
    if when is None:
        return names[-1]
    # A run's row is stamped before its CLI starts, so its entries come after its start; the CLI's stamps are
    # whole milliseconds, hence the small slack. (A second of slack gave a fast round's last entries to the next.)
    i = bisect.bisect_right(times, when + 0.002) - 1
    return names[max(i, 0)]
