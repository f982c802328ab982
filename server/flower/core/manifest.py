"""The manifest: one row per StepResult, appended by every process that runs here (S6–S8)."""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import operator
import os
import re
import threading
import weakref
from collections.abc import Hashable, Mapping
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from .durable import stamp
from .lock import WorkspaceBusy
from .records import MANIFEST_FILE, WORK, FileRecords, Records
from .redact import redact
from .texts import Said

log = logging.getLogger(__name__)


@dataclass
class StepResult:
    """What one agent run produced; every field lands in a manifest row (S6)."""

    step: str
    session_id: str | None = None
    ok: bool = False
    cost_usd: float = 0.0
    num_turns: int = 0
    text: str = ""
    error: str | None = None
    started_at: float = 0.0
    ended_at: float = 0.0
    attempts: int = 1
    errors: list[str] = field(default_factory=list)
    resumed: bool = False
    retired: list[str] = field(default_factory=list)
    context: int | None = None
    window: int | None = None
    """The model's context window as the CLI reported it for this run, so a later process's gauge knows it."""
    model: str | None = None
    """The model the CLI reported for this run (`flower status` shows the model in use)."""
    said: Said | None = field(default=None, compare=False, repr=False)
    """`error` as a catalog sentence (`{key, fields}` in the row), for a front-end to show in the person's language (D4)."""

    @property
    def duration_s(self) -> float:
        """Wall time of the run in seconds."""
        return max(0.0, self.ended_at - self.started_at)

    def row(self, run: str) -> dict[str, Any]:
        """The manifest row: every field plus `duration_s` (asdict() misses properties) and `run`; API keys removed (D6)."""
        row: dict[str, Any] = redact({**dataclasses.asdict(self), "duration_s": round(self.duration_s, 3), "run": run})
        return row


@dataclass(frozen=True, kw_only=True)
class ManifestRow:
    """A stored row as its readers use it, parsed once at the edge: a field of the wrong type (an older or hand-edited row) is absent."""

    step: str
    run: str | None = None
    session_id: str | None = None
    ok: bool = False
    cost_usd: float = 0.0
    started_at: float = 0.0
    ended_at: float = 0.0
    text: str = ""
    error: str | None = None
    model: str | None = None
    window: int | None = None
    retired: tuple[str, ...] = ()
    """The sessions this run's handoff left behind (S26): work moved on to `session_id`."""
    context: int | None = None
    """The session's context size in tokens when the run ended (S19), for the forecast (issue 34)."""

    @cached_property
    def in_work(self) -> bool:
        """`in_work_session(step)`, worked out once per row: status's forecast asks it of every row at each change (issue 35)."""
        return in_work_session(self.step)

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> ManifestRow | None:
        """The row parsed, or None when it names no step."""
        step = row.get("step")
        if not isinstance(step, str):
            return None
        window, retired, context = row.get("window"), row.get("retired"), row.get("context")
        return cls(step=step, run=_str(row.get("run")), session_id=_str(row.get("session_id")), ok=row.get("ok") is True,
                   cost_usd=_number(row.get("cost_usd")), started_at=_number(row.get("started_at")),
                   ended_at=_number(row.get("ended_at")), text=_str(row.get("text")) or "", error=_str(row.get("error")),
                   model=_str(row.get("model")) or None,
                   window=window if isinstance(window, int) and not isinstance(window, bool) and window > 0 else None,
                   retired=tuple(r for r in retired if isinstance(r, str)) if isinstance(retired, list) else (),
                   context=context if isinstance(context, int) and not isinstance(context, bool) and context > 0 else None)


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _number(value: object) -> float:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else 0.0


# --- step names (S7) -------------------------------------------------------------------------

def retry_name(step: str, n: int) -> str:
    """`<step>#retry<n>`: an ordinary retry of the step."""
    return f"{step}#retry{n}"


def round_name(step: str, n: int) -> str:
    """`<step>#round<n>`: the judge failed the step and it went back to continue."""
    return f"{step}#round{n}"


def judge_name(step: str, n: int) -> str:
    """`<step>·判定#<n>`: the judge's n-th round on the step."""
    return f"{step}·判定#{n}"


def handoff_name(step: str, n: int) -> str:
    """`<step>·交接#<n>`: the outgoing session writes its handoff note before round n moves to a new session (S26)."""
    return f"{step}·交接#{n}"


_NAME = re.compile(r"^(?P<step>.*?)(?:#retry(?P<retry>\d+)|#round(?P<round>\d+)|·判定#(?P<judge>\d+)|·交接#(?P<handoff>\d+))$", re.S)


def parse_name(name: str) -> tuple[str, str, int]:
    """Split a manifest step name into `(step, kind, n)`, kind one of first/retry/round/judge/handoff (S7).

    `parse_name("干活#retry2") == ("干活", "retry", 2)`; a plain name gives `(name, "first", 0)`.
    """
    m = _NAME.match(name)
    if m:
        for kind in ("retry", "round", "judge", "handoff"):
            if m.group(kind) is not None:
                return m.group("step"), kind, int(m.group(kind))
    return name, "first", 0


def step_of(name: str) -> str:
    """The step a run's name belongs to (S7): `干活#round2#retry1` → `干活`; a judge's name (`干活·判定#1`) stays itself."""
    base, kind, _ = parse_name(name)
    while kind in ("retry", "round"):
        name = base
        base, kind, _ = parse_name(name)
    return name


def in_work_session(step: str | None) -> bool:
    """Whether a step run is the work session's: a work round or retry, not clarify, goals, a judge's round or a handoff note.

    The one rule for "the gauge follows the work session" (S19, S26): the service's context and every client use it
    through the server (issue 33).
    """
    return step is not None and step_of(step) == WORK


# --- the process mark ------------------------------------------------------------------------

def new_run_mark() -> str:
    """A fresh run mark `YYYYmmdd-HHMMSS-<6 hex>` (S6): one per manifest writer, i.e. per wake."""
    import secrets  # here, not at import: the light commands never need it (issue 34) (secrets brings hashlib and OpenSSL)

    return f"{stamp()}-{secrets.token_hex(3)}"


# --- the manifest file -----------------------------------------------------------------------


class Manifest:
    """`<run_dir>/manifest.json`: one row a line, shared by every process that runs here.

    Appending, never overwriting (S8): a write appends this process's rows that changed since its last write (a row
    written again, e.g. with a handoff's retired[], is a new line that replaces the earlier one for every reader), under
    an exclusive lock on `manifest.json.lock`, with one fsync, so it costs those rows and not the task's (issue 35;
    core/manifest_file.py). A failing disk is logged, never raised: a manifest failure must not break a run.
    """

    def __init__(self, run_dir: str | os.PathLike[str], run: str | None = None, *, records: Records | None = None) -> None:
        self.run_dir = Path(os.path.abspath(run_dir))
        self.records: Records = records if records is not None else FileRecords(self.run_dir)
        """Where the rows are kept: run_dir's manifest.json, or the task's shared store (D9)."""
        # One mark per writer: a long-lived process (the editor server) runs many wakes, and each
        # wake's rows must survive the next one's writes (S8 dedups by `run`).
        self.run = run or new_run_mark()
        self._mine: list[tuple[StepResult, dict[str, Any]]] = []
        self._slot: dict[int, int] = {}
        """id(result) → its index in `_mine` (the results are kept there, so an id is never reused meanwhile)."""
        self._unsaved: set[int] = set()
        """Indexes of `_mine` not written since they changed: the next write carries them (after a failed one too)."""
        self._lock = threading.Lock()

    @property
    def path(self) -> Path:
        """`<run_dir>/manifest.json`."""
        return self.run_dir / MANIFEST_FILE

    @property
    def lock_path(self) -> Path:
        """The sidecar lock file held across each write."""
        return self.run_dir / (MANIFEST_FILE + ".lock")

    def add(self, result: StepResult) -> bool:
        """Add the result's row to this process's rows and write; False if the write failed.

        Adding the same StepResult object again replaces its earlier row (a row can be
        written when a step starts and rewritten when it ends). A failed write is retried
        with the next add, since this process's rows are kept in memory.
        """
        with self._lock:
            row = result.row(self.run)
            slot = self._slot.get(id(result))
            if slot is None:
                slot = self._slot[id(result)] = len(self._mine)
                self._mine.append((result, row))
            else:
                self._mine[slot] = (result, row)
            self._unsaved.add(slot)
            return self._write_locked()

    async def save(self, result: StepResult) -> bool:
        """`add` in a worker thread: the write's fsync never holds the event loop, where status answers wait (issue 35)."""
        return await asyncio.to_thread(self.add, result)

    def flush(self) -> bool:
        """Write this process's rows not written yet (e.g. after an earlier failed write)."""
        with self._lock:
            return self._write_locked()

    def rows(self) -> list[dict[str, Any]]:
        """Every row, all processes; [] if they cannot be read (logged)."""
        try:
            return self.records.manifest_rows()
        except Exception as e:
            log.warning("could not read the manifest in %s (%s)", self.records.where, e)
            return []

    def parsed(self) -> list[ManifestRow]:
        """Every row that names a step, typed (see `rows`)."""
        return [r for r in map(ManifestRow.of, self.rows()) if r is not None]

    def _write_locked(self) -> bool:
        if not self._unsaved:
            return True
        try:
            self.records.save_manifest(self.run, [row for _, row in self._mine], sorted(self._unsaved))
        except WorkspaceBusy:  # a shared lock went to another flower in a database outage: that one drives now (D5)
            raise
        except Exception as e:  # a full disk, a held lock, a database not answering: the run goes on
            log.warning("could not write the manifest to %s (%s); the run goes on", self.records.where, e)
            return False
        self._unsaved.clear()
        return True


# --- the one reader of the rows (issue 33) ---------------------------------------------------

def parsed_rows(records: Records) -> list[ManifestRow]:
    """The task's rows, typed, parsed once per change of the records' stamp; readers share the list and never modify it.

    Status (the gauge asks often) and history (section heads, which step ran in a session) read the same manifest
    through this one cache (issue 33). It is keyed weakly by the records object, so every reader of one task shares
    it and an entry goes when its task's records do. A row the records hand back as the same object as at the last
    read (run_dir's file keeps the rows it read) is not parsed again: a change costs its new rows (issue 35).
    """
    stamp = records.stamp()
    cached = _parsed.get(records)
    if cached is None or cached.stamp != stamp:
        try:
            raw = records.manifest_rows()
        except Exception as e:  # as Manifest.rows: a manifest that cannot be read is an empty one (logged)
            log.warning("could not read the manifest in %s (%s)", records.where, e)
            raw = []
        if cached is not None and len(raw) >= len(cached.raw) and all(map(operator.is_, cached.raw, raw)):
            # Rows appended only (the usual change: the current wake's writer, last in the file): the check runs at C
            # speed, and only the new rows are parsed and added.
            new = [ManifestRow.of(r) for r in raw[len(cached.raw):]]
            cached = _parsed[records] = _Parsed(stamp, raw, cached.each + new,
                                                cached.rows + [r for r in new if r is not None])
        else:
            # The earlier raw rows are alive in `cached` while this runs, so an id met again is the same object.
            known = {id(r): p for r, p in zip(cached.raw, cached.each, strict=True)} if cached is not None else {}
            each = [known[id(r)] if id(r) in known else ManifestRow.of(r) for r in raw]
            cached = _parsed[records] = _Parsed(stamp, raw, each, [r for r in each if r is not None])
    return cached.rows


@dataclass(frozen=True)
class _Parsed:
    stamp: Hashable
    """The records' change stamp when read."""
    raw: list[dict[str, Any]]
    """The rows as the records gave them (kept: their ids key `each` at the next read)."""
    each: list[ManifestRow | None]
    """`raw` parsed, one for one."""
    rows: list[ManifestRow]
    """The rows that name a step: what readers get."""


_parsed: weakref.WeakKeyDictionary[Records, _Parsed] = weakref.WeakKeyDictionary()
"""records → what was read of them last."""
