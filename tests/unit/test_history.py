"""Which step an entry of the stored transcript belongs to, from the manifest's run start times."""

from __future__ import annotations

from flower.history import Session, _step_at

WORK = Session(session_id="s", steps=["干活", "干活#round2"], entries=10, current=True)


def test_an_entry_belongs_to_the_last_run_started_before_it():
    starts = ([100.0, 100.5], ["干活", "干活#round2"])
    # Round 2 started half a second after round 1's last entry: that entry is still round 1's.
    assert _step_at(starts, 100.2, WORK) == "干活"
    assert _step_at(starts, 100.6, WORK) == "干活#round2"


def test_millisecond_stamps_just_before_a_start_still_count_for_it():
    starts = ([100.0, 100.5], ["干活", "干活#round2"])
    assert _step_at(starts, 100.4995, WORK) == "干活#round2"  # the CLI stamps whole milliseconds


def test_without_times_the_session_s_first_step_or_latest_run():
    assert _step_at(None, 100.0, WORK) == "干活"
    assert _step_at(([100.0], ["干活"]), None, WORK) == "干活"
