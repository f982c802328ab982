"""The judge's last verdict on the work session (S14, S27), and what reading it costs as the task grows (issue 35)."""

from __future__ import annotations

import pytest

from flower.core import verdicts
from flower.core.manifest import ManifestRow, judge_name, round_name
from flower.core.verdicts import judged

WORK = "干活"


def task(rounds: int, sessions: int) -> list[ManifestRow]:
    """`rounds` work rounds each judged (FAIL, the last PASS), the work moving to a new session every rounds/sessions."""
    rows, per = [], rounds // sessions
    for n in range(1, rounds + 1):
        sid, at = f"work-{(n - 1) // per}", float(n * 10)
        rows.append(ManifestRow(step=round_name(WORK, n), session_id=sid, ok=True, started_at=at, ended_at=at + 4))
        verdict = "PASS" if n == rounds else f"FAIL round {n} not yet"
        rows.append(ManifestRow(step=judge_name(WORK, n), session_id=f"judge-{n}", ok=True, started_at=at + 5,
                                ended_at=at + 9, text=f"checked\nVERDICT: {verdict}"))
    return rows


def test_the_last_verdict_on_the_current_session_and_none_from_an_earlier_one():
    rows = task(rounds=40, sessions=4)
    assert judged(rows, WORK, "work-3") == (40, True, "checked\nVERDICT: PASS")
    assert judged(rows[:-2], WORK, "work-3") == (39, False, "round 39 not yet")
    assert judged(rows, WORK, "no-such-session") is None
    assert judged(rows[:61], WORK, "work-3") is None  # its first round not judged yet: round 30's verdict was work-2's


def test_a_status_refresh_reads_the_names_of_the_current_sessions_rows_only(monkeypatch: pytest.MonkeyPatch):
    # Every status refresh asks this (service.py `_read_rest`, in a worker thread holding the GIL status answers need):
    # parsing the whole task's step names made its cost grow with the task's length (issue 35).
    parsed: list[str] = []
    real = verdicts.parse_name
    monkeypatch.setattr(verdicts, "parse_name", lambda name: parsed.append(name) or real(name))
    for rounds in (100, 1000):
        parsed.clear()
        rows = task(rounds=rounds, sessions=rounds // 50)
        assert judged(rows, WORK, rows[-2].session_id) == (rounds, True, "checked\nVERDICT: PASS")
        assert len(parsed) == 100  # the last session's 50 rounds and their judges, whatever came before
