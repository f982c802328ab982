"""The task's rows folded as they come (issue 35): a Tally gives what the batch functions give from every row, at every
step of a task that grows, and a change that only appends costs the rows it added."""

from __future__ import annotations

import dataclasses
import random

import pytest

from flower.core.forecast import basis_of
from flower.core.manifest import ManifestRow, judge_name, round_name
from flower.core.tally import Tally
from flower.core.verdicts import judged

WORK = "干活"


def batch(parsed: list[ManifestRow], began: float) -> list[ManifestRow]:
    """The task's rows as status read them before the Tally: those since it began, sorted by their end (stable)."""
    return sorted((r for r in parsed if r.started_at >= began), key=lambda r: r.ended_at)


def grown(rng: random.Random, rows: list[ManifestRow], at: float, runs: list[str], sessions: list[str], odd: bool = True) -> float:
    """One more row, as a task writes them: in time order, or (`odd`) now and then out of it or ended before it started."""
    kind = rng.random()
    if kind < 0.05:
        runs.append(f"run-{len(runs)}")
    if kind > 0.93:
        sessions.append(f"work-{len(sessions)}")  # a handoff: the work moves to a new session
    n = len(rows) + 1
    step = rng.choice([WORK, round_name(WORK, n), round_name(WORK, n), judge_name(WORK, n), "澄清", "目标"])
    start = at + rng.uniform(-3, 1) if odd and rng.random() < 0.1 else at
    end = start - 1 if odd and rng.random() < 0.02 else start + rng.uniform(0, 1)
    judge = step.startswith(WORK + "·")
    rows.append(ManifestRow(
        step=step, run=runs[-1], session_id=f"judge-{n}" if judge else rng.choice([sessions[-1], sessions[-1], None]),
        ok=rng.random() < 0.9, cost_usd=round(rng.uniform(0, 0.2), 4), started_at=start, ended_at=end,
        text=f"VERDICT: {rng.choice(['PASS', 'FAIL not yet'])}", model=rng.choice(["m-1", "m-2", None]),
        window=rng.choice([None, 200_000, 1_000_000]), context=rng.choice([None, 1_000 * n])))
    return at + rng.uniform(0.5, 2)


@pytest.mark.parametrize("seed", range(6))
def test_a_tally_folded_change_by_change_gives_what_the_batch_gives_from_every_row(seed: int) -> None:
    rng = random.Random(seed)
    rows: list[ManifestRow] = []
    runs, sessions, at, began = ["run-0"], ["work-0"], 100.0, 0.0
    tally = Tally()
    for _ in range(120):
        for _ in range(rng.randint(1, 4)):
            at = grown(rng, rows, at, runs, sessions)
        change = rng.random()
        if change < 0.05 and len(rows) > 3:  # a row written again: a new object in its place
            i = rng.randrange(len(rows))
            old = rows[i]
            rows[i] = ManifestRow(step=old.step, run=old.run, session_id=old.session_id, ok=True, cost_usd=old.cost_usd + 1,
                                  started_at=old.started_at, ended_at=old.ended_at + 2, context=old.context)
        elif change < 0.08:  # flower --new: the task begins anew
            began = at - rng.uniform(0, 10)
        parsed = list(rows)  # the cache hands out a new list at each change
        tally = tally.fold(parsed, began)
        expect = batch(parsed, began)
        assert tally.rows == expect
        assert tally.task_cost == pytest.approx(sum(r.cost_usd for r in expect))
        newest = expect[-1].run if expect else None
        assert tally.wake_cost == pytest.approx(sum(r.cost_usd for r in expect if r.run == newest))
        assert tally.model == next((r.model for r in reversed(expect) if r.model), None)
        assert tally.window == next((r.window for r in reversed(expect) if r.window), None)
        for session in {*sessions, None, "no-such-session"}:
            assert tally.judged(WORK, session) == judged(expect, WORK, session)
        if not expect:
            assert tally.basis() is None
            continue
        basis, want = tally.basis(), basis_of(expect, newest)
        assert basis is not None
        assert (basis.rounds, basis.last_context, basis.wake_rounds, basis.points) == \
            (want.rounds, want.last_context, want.wake_rounds, want.points)
        assert basis.slope == pytest.approx(want.slope) and basis.wake_cost == pytest.approx(want.wake_cost)
        assert basis.task_cost == pytest.approx(want.task_cost)


def test_a_change_that_appends_folds_its_rows_only_and_anything_else_folds_every_row() -> None:
    # What made status's refresh grow with the task (3.2 ms at 2,000 rows against 0.7 at 100, issue 35): every row
    # sorted and summed again at each change. Counted, not timed: the rows a fold adds.
    added: list[ManifestRow] = []

    class Counting(Tally):
        def _add(self, row: ManifestRow) -> None:
            added.append(row)
            super()._add(row)

    rng, rows, runs, sessions, at = random.Random(1), [], ["run-0"], ["work-0"], 100.0
    for _ in range(2_000):
        at = grown(rng, rows, at, runs, sessions, odd=False)
    tally = Counting().fold(list(rows), 0.0)
    assert len(added) == 2_000
    for _ in range(3):
        at = grown(rng, rows, at, runs, sessions, odd=False)
    added.clear()
    again = tally.fold(list(rows), 0.0)
    assert again is tally and added == rows[-3:]  # the three appended rows, nothing else
    added.clear()
    assert tally.fold(list(rows), 0.0) is tally and added == []  # a change of another file: nothing to fold
    rows[5] = dataclasses.replace(rows[5], cost_usd=rows[5].cost_usd + 1)  # a row written again
    renewed = tally.fold(list(rows), 0.0)
    assert renewed is not tally and len(added) == len(rows)
