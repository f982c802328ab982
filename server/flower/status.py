"""What a front-end shows about a workspace, and how a wake ended: typed, with one converter to JSON.

`flower status --json`, the editor's `flower/status` and `wake_state()` (S3) all start from the
same `Status`; `to_json` turns it (or a `WakeOutcome`) into the plain dict they send.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from .core import goals
from .core.approvals import Approval
from .core.forecast import Forecast
from .core.lineage import Lineage, task_began
from .core.manifest import ManifestRow, parsed_rows
from .core.records import FileRecords, Records
from .core.requirements import REQUIREMENTS_FILE
from .core.tally import Tally
from .core.texts import Said

WINDOW = 200_000
"""The context window assumed until the CLI reports the model's own, and the default handoff threshold's base (60%)."""


@dataclass(frozen=True, kw_only=True)
class Goal:
    """One line of the goal checklist `目标.md`."""

    text: str
    done: bool


@dataclass(frozen=True, kw_only=True)
class WaitState:
    """The retry wait in progress: an outage (`offline`) or a pause between attempts (`backoff`)."""

    reason: Literal["backoff", "offline"]
    seconds: float
    attempt: int
    max_attempts: int
    until: float | None = None
    """Unix time the wait ends (the retry, or the next probe), from when the wait began."""


@dataclass(frozen=True, kw_only=True)
class WaitingFor:
    """What the run waits for, since when: the person (a tool approval, a clarifying question) or the API (an outage)."""

    what: Literal["approval", "question", "outage"]
    since: float
    approval: Approval | None = None
    """The open tool question, for a front-end that attaches while it waits (issue 24)."""


@dataclass(frozen=True, kw_only=True)
class VerdictState:
    """The judge's last verdict in this process (S14)."""

    round: int
    passed: bool
    reasons: str


@dataclass(frozen=True, kw_only=True)
class Cost:
    """What was spent, in USD: by the current (or last) wake in this process, and by the whole task."""

    wake: float = 0.0
    task: float = 0.0
    """The sum of the task's manifest rows (every step, round and judge since it started)."""
    max: float | None = None
    """The spending cap of one wake (`--max-cost`), or None."""


@dataclass(frozen=True, kw_only=True)
class Status:
    """Everything a front-end shows about one workspace, answered from files and memory (no model request)."""

    workspace: str
    run_dir: str
    woke: int
    started: bool
    """A task was started here: the next wake continues it."""
    steps: dict[str, str]
    """The lineage: step → session id (S5)."""
    goals: list[Goal]
    context: int | None = None
    """The work session's last context size in tokens: live while running, else read back from sessions.db."""
    window: int = WINDOW
    running: bool = False
    step: str | None = None
    waiting: WaitState | None = None
    waiting_for: WaitingFor | None = None
    verdict: VerdictState | None = None
    handoff_at: int = int(WINDOW * 0.6)
    """Context size (tokens) of the work session above which work moves to a new session (S26)."""
    interrupted: bool = False
    """A wake here was cut off (its process died, a window reloaded, a server crashed) and none has continued or finished it since."""
    elsewhere: bool = False
    """A wake of this task is under way in another process (a terminal's, a closing window's server, another machine)."""
    model: str | None = None
    """The model in use: from the settings, else the one the CLI last reported (this process, else the manifest)."""
    cost: Cost = field(default_factory=Cost)
    settings: dict[str, Any] | None = None
    """The settings in effect and where each came from (`Settings.shown()`), when the front-end read them."""
    unreachable: Said | None = None
    """The task's store is not answering: the rest of this status is what was read before (D9)."""
    store_bytes: int | None = None
    """What the task's store takes on disk (sessions.db, or the shared schema's tables); None until read (#26)."""
    background: list[str] = field(default_factory=list)
    """The subagents and background shells the running wake's CLI runs now, as the person knows them (issue 32)."""
    forecast: Forecast | None = None
    """Work rounds left to the handoff threshold and to the window at the recent slope, and the cost per round (issue 34)."""


@dataclass(frozen=True, kw_only=True)
class Judged:
    """How the goal gate ended a wake: passed or not, after how many rounds, and why (S14)."""

    passed: bool
    rounds: int
    reasons: str


@dataclass(frozen=True, kw_only=True)
class WakeOutcome:
    """How a wake ended."""

    ok: bool
    error: str | None = None
    """Why it did not finish, in English (logs, JSON); `said` is the same sentence for the person's language (D4)."""
    said: Said | None = None
    woke: int | None = None
    """The wake count; None when the wake was cancelled."""
    sessions: dict[str, str] = field(default_factory=dict)
    verdict: Judged | None = None


def at_rest(workspace: str | os.PathLike[str], run_dir: str | os.PathLike[str],
            has_session: Callable[[str], bool] | None = None, *, records: Records | None = None,
            found: Recorded | None = None) -> Status:
    """The Status read from the records (run_dir's files unless `records` are given) and the workspace's files.

    The lineage's sessions are filtered by `has_session(sid)` when given (S10). `run_dir` is relative to the current
    directory (S4). `found`: `recorded(...)` of the same records, when the caller has it already (status's refresh
    needs its rows too: read and sorted once, issue 35). Raises when a shared store does not answer.
    """
    workspace, run_dir = Path(os.path.abspath(workspace)), Path(os.path.abspath(run_dir))
    records = records if records is not None else FileRecords(run_dir)
    lineage = Lineage.load(run_dir, workspace, has_session, records=records)
    found = found if found is not None else recorded(workspace, run_dir, records)
    marked, held = records.wake_mark()
    return Status(
        workspace=str(workspace), run_dir=str(run_dir), woke=lineage.woke,
        started=bool(lineage.steps) or (workspace / REQUIREMENTS_FILE).exists(),
        steps=dict(lineage.steps),
        goals=[Goal(text=g.text, done=g.done) for g in goals.read(workspace / goals.GOALS_FILE)],
        interrupted=marked and not held, elsewhere=marked and held, model=found.model,
        cost=Cost(wake=found.last, task=found.task),
    )


@dataclass(frozen=True, kw_only=True)
class Recorded:
    """What the manifest says of the current task."""

    task: float
    """USD the task has cost (every step, round and judge since it began)."""
    last: float
    """USD of its newest process's rows."""
    model: str | None
    """The model its newest run reported."""
    rows: list[ManifestRow]
    """The task's rows, oldest end first."""


def recorded(workspace: Path, run_dir: Path, records: Records | None = None) -> Recorded:
    """What the manifest says of the current task (run_dir's files unless `records` are given).

    The task began at the newest archive of `flower --new` (S28), if any: rows before it were another task's.
    A terminal `flower` is one wake per process, so its newest process's rows are the last wake's cost.
    The rows come through the manifest's one cache (`parsed_rows`), shared with history (issue 33).
    """
    rows = parsed_rows(records if records is not None else FileRecords(run_dir))
    return recorded_of(Tally().fold(rows, task_began(workspace)))


def recorded_of(tally: Tally) -> Recorded:
    """What a Tally of the task's rows says, as `recorded` returns it (the rows a copy: the tally goes on folding)."""
    return Recorded(task=round(tally.task_cost, 6), last=round(tally.wake_cost, 6), model=tally.model, rows=list(tally.rows))


def to_json(obj: Status | WakeOutcome) -> dict[str, Any]:
    """The plain dict of a Status or WakeOutcome (nested states as dicts), as `flower status --json` prints it.

    A WakeOutcome's `said` is left out: `error` is its English, and a front-end renders `said` itself (D4).
    """
    plain = dataclasses.asdict(obj)
    plain.pop("said", None)
    return plain
