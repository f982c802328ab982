"""The forecast (issue 34): work rounds left to the handoff threshold and to the window, and the cost per round."""

from __future__ import annotations

from flower.core.forecast import CHART, ContextPoint, forecast, rounds_of
from flower.core.manifest import ManifestRow


def row(step: str, at: float, context: int | None = None, sid: str = "s1", cost: float = 0.0, run: str = "w1") -> ManifestRow:
    parsed = ManifestRow.of({"step": step, "started_at": at, "ended_at": at + 1, "session_id": sid, "cost_usd": cost,
                             "run": run, "context": context, "ok": True})
    assert parsed is not None
    return parsed


def seed_rows() -> list[ManifestRow]:
    """S26's growth: 28.7K at the first work round, ~2.2K a round after; a judge and a clarify step between."""
    rows = [row("澄清", 0, 5_000, sid="c", cost=0.1), row("目标", 1, 6_000, sid="g", cost=0.1)]
    rows += [row("干活" if n == 1 else f"干活#round{n}", 10 + n, 28_700 + 2_200 * (n - 1), cost=0.5) for n in range(1, 6)]
    rows.append(row("干活·判定#1", 30, 9_000, sid="j", cost=0.2))
    return rows


def test_rounds_left_at_the_recent_slope_and_the_cost_per_round():
    f = forecast(seed_rows(), context=None, handoff_at=120_000, window=200_000, wake="w1")
    assert f.rounds == 5 and [r.context for r in rounds_of(seed_rows())][-1] == 37_500
    assert f.slope is not None and round(f.slope) == 2_200
    assert f.to_handoff == 38  # (120,000 − 37,500) / 2,200 = 37.5 → the 38th round crosses it
    assert f.to_window == 74  # (200,000 − 37,500) / 2,200 = 73.9: the 74th round reaches the wall
    assert f.task_per_round == (0.1 + 0.1 + 5 * 0.5 + 0.2) / 5
    assert f.wake_per_round == f.task_per_round  # one wake ran everything


def test_the_live_context_wins_and_a_handoff_starts_the_slope_again():
    rows = seed_rows()
    # A handoff (S26): round 6 runs in a new session at 30K, round 7 at 31K: the slope is this session's, not the drop.
    rows += [row("干活·交接#6", 31, sid="s1", cost=0.3, run="w2"), row("干活#round6", 32, 30_000, sid="s2", cost=0.4, run="w2"),
             row("干活#round7", 33, 31_000, sid="s2", cost=0.4, run="w2")]
    f = forecast(rows, context=41_000, handoff_at=120_000, window=200_000, wake="w2")
    assert [r.handoff for r in rounds_of(rows)] == [False] * 5 + [True, False]
    assert f.slope == 1_000 and f.to_handoff == 79 and f.to_window == 159  # from the live 41,000, not the row's 31,000
    assert f.wake_per_round == (0.3 + 0.4 + 0.4) / 2


def test_no_forecast_without_growth_or_rounds():
    assert forecast([], None, 120_000, 200_000, None).to_handoff is None
    one = forecast([row("干活", 1, 50_000)], None, 120_000, 200_000, "w1")
    assert one.slope is None and one.to_handoff is None and one.task_per_round == 0.0
    flat = forecast([row("干活", 1, 50_000), row("干活#round2", 2, 50_000)], None, 120_000, 200_000, "w1")
    assert flat.slope == 0 and flat.to_window is None
    past = forecast([row("干活", 1, 100_000), row("干活#round2", 2, 130_000)], None, 120_000, 200_000, "w1")
    assert past.to_handoff == 0 and past.to_window == 3


def test_a_row_without_a_recorded_context_is_a_round_without_a_point():
    rows = [row("干活", 1, None), row("干活#retry1", 2, 40_000), row("干活#round2", 3, 44_000)]
    assert [r.context for r in rounds_of(rows)] == [None, 40_000, 44_000]
    assert forecast(rows, None, 120_000, 200_000, "w1").slope == 4_000
    assert ManifestRow.of({"step": "干活", "context": True}).context is None  # a bool is no size


def test_the_charts_series_is_each_rounds_context_with_its_handoffs_the_newest_chart_rounds():
    rows = seed_rows() + [row("干活·交接#6", 31, sid="s1"), row("干活#round6", 32, 30_000, sid="s2"), row("干活#retry1", 33, None, sid="s2")]
    points = forecast(rows, context=None, handoff_at=120_000, window=200_000, wake="w1").points
    assert points[-3:] == [ContextPoint(5, 37_500, False), ContextPoint(6, 30_000, True), ContextPoint(7, None, False)]
    assert [p.round for p in points] == list(range(1, 8))  # judges and the handoff note are no rounds
    many = [row("干活" if n == 1 else f"干活#round{n}", n, 1_000 * n, sid="s1" if n <= 150 else "s2") for n in range(1, 201)]
    capped = forecast(many, None, 120_000, 200_000, "w1").points
    assert len(capped) == CHART and capped[0] == ContextPoint(201 - CHART, 1_000 * (201 - CHART), False)
    assert [p.round for p in capped if p.handoff] == [151] and capped[-1].round == 200
    assert forecast([], None, 120_000, 200_000, None).points == []
