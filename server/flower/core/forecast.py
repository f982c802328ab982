"""How far the work session is from the wall: context per work round, its recent slope, rounds left, cost per round.

S19 puts the context size on the wake line so that a person can start over before the wall; S26 records how it
grows (28.7K → 185.9K over 70 rounds, ~2.2K a round). From the manifest's rows (each work round records the
session's context when it ended) this says, at the recent slope, how many work rounds remain until the handoff
threshold and until the model's window, and what a round costs in this wake and in the whole task (issue 34); and the
series the editor's chart draws: the context each recent round ended at, with the rounds a handoff started.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from .manifest import ManifestRow

RECENT = 10
"""Rounds of the current session the slope is taken over: recent enough to follow a change of pace."""
CHART = 100
"""Work rounds the chart's series carries, the newest: status stays small however long the task (S26 saw 70 rounds to a
handoff, so one session's whole climb to the threshold fits)."""


@dataclass(frozen=True)
class Round:
    """One work round as the records hold it."""

    n: int
    """1 for the task's first work round."""
    context: int | None
    """The work session's context in tokens when the round ended (None: not recorded)."""
    session: str | None
    handoff: bool
    """The round ran in a new session: a handoff (S26) or a fresh start put the context back down before it."""
    started_at: float


@dataclass(frozen=True)
class ContextPoint:
    """One work round on the chart: its number, the context it ended at, whether a handoff started it."""

    round: int
    context: int | None
    """None: the round recorded no context (a gap in the line, not a zero)."""
    handoff: bool


@dataclass(frozen=True)
class Forecast:
    """Where the work session's context is heading, in work rounds and dollars (what status carries)."""

    rounds: int
    """Work rounds the task has run."""
    slope: float | None
    """Tokens the context grows per work round lately (the current session's last rounds); None with fewer than two."""
    to_handoff: int | None
    """Work rounds until the context reaches the handoff threshold at that slope (0: there already); None: not growing."""
    to_window: int | None
    """Work rounds until it reaches the model's window (the wall) at that slope; None: not growing."""
    wake_per_round: float | None
    """USD this wake spent per work round (every step and judge it ran, over its work rounds); None before one."""
    task_per_round: float | None
    """USD the task spent per work round since it began."""
    points: list[ContextPoint] = field(default_factory=list)
    """The context each of the last CHART work rounds ended at, oldest first: what the editor draws (issue 34)."""


def is_work_round(row: ManifestRow) -> bool:
    """A row of the work step (its first run, a retry or a round), not its judge or its handoff note: the one rule."""
    return row.in_work


def rounds_of(rows: Sequence[ManifestRow]) -> list[Round]:
    """The task's work rounds in the order they ran."""
    out: list[Round] = []
    for row in sorted((r for r in rows if is_work_round(r)), key=lambda r: r.started_at):
        out.append(next_round(out[-1] if out else None, row))
    return out


def next_round(last: Round | None, row: ManifestRow) -> Round:
    """The work round `row` ran, after `last` (None: the task's first)."""
    moved = last is not None and row.session_id is not None and row.session_id != last.session
    return Round(last.n + 1 if last else 1, row.context, row.session_id or (last.session if last else None), moved,
                 row.started_at)


def slope_of(rounds: Sequence[Round]) -> float | None:
    """Least-squares tokens per round over the current session's last RECENT rounds with a recorded context."""
    # From the newest back to the round the session began with (its handoff), at most RECENT points: a status refresh
    # must not pass over the whole task (issue 35).
    points: list[tuple[int, int]] = []
    for r in reversed(rounds):
        if r.context is not None:
            points.append((r.n, r.context))
        if len(points) == RECENT or r.handoff:
            break
    points.reverse()
    if len(points) < 2:
        return None
    mx = sum(n for n, _ in points) / len(points)
    my = sum(c for _, c in points) / len(points)
    spread = sum((n - mx) ** 2 for n, _ in points)
    return sum((n - mx) * (c - my) for n, c in points) / spread


def _left(context: int | None, limit: int, slope: float | None) -> int | None:
    if context is None or slope is None or slope <= 0 or limit <= 0:
        return None
    return max(0, math.ceil((limit - context) / slope))


@dataclass(frozen=True)
class Basis:
    """What the forecast takes from the task's rows, made once per change of the records rather than for every status
    answer, which would cost the whole task's rows each time (issue 35)."""

    rounds: int
    slope: float | None
    last_context: int | None
    """The context the newest work round that recorded one ended at."""
    wake_cost: float
    wake_rounds: int
    task_cost: float
    points: tuple[ContextPoint, ...]


def basis_of(rows: Sequence[ManifestRow], wake: str | None) -> Basis:
    """The forecast's part that depends on the task's manifest rows and the wake's run mark (`run`) only."""
    in_wake = [r for r in rows if wake is not None and r.run == wake]
    return basis_from(rounds_of(rows), sum(r.cost_usd for r in in_wake), sum(1 for r in in_wake if is_work_round(r)),
                      sum(r.cost_usd for r in rows))


def basis_from(rounds: Sequence[Round], wake_cost: float, wake_rounds: int, task_cost: float) -> Basis:
    """The Basis of the task's work rounds and its sums (what `basis_of` adds up, or a Tally keeps)."""
    return Basis(rounds=len(rounds), slope=slope_of(rounds),
                 last_context=next((r.context for r in reversed(rounds) if r.context is not None), None),
                 wake_cost=wake_cost, wake_rounds=wake_rounds, task_cost=task_cost,
                 points=tuple(ContextPoint(r.n, r.context, r.handoff) for r in rounds[-CHART:]))


def forecast(rows: Sequence[ManifestRow], context: int | None, handoff_at: int, window: int, wake: str | None) -> Forecast:
    """The forecast from the task's manifest rows, the work session's context now, and the wake's run mark (`run`)."""
    return forecast_of(basis_of(rows, wake), context, handoff_at, window)


def forecast_of(basis: Basis, context: int | None, handoff_at: int, window: int) -> Forecast:
    """The forecast from the rows' basis and the work session's context now: what a status answer computes."""
    slope = basis.slope
    now = context if context is not None else basis.last_context
    return Forecast(
        rounds=basis.rounds, slope=round(slope, 1) if slope is not None else None, to_handoff=_left(now, handoff_at, slope),
        to_window=_left(now, window, slope),
        wake_per_round=basis.wake_cost / basis.wake_rounds if basis.wake_rounds else None,
        task_per_round=basis.task_cost / basis.rounds if basis.rounds else None,
        points=list(basis.points))
