"""The forecast (issue 34): `flower status` says how many work rounds remain to the handoff and to the window, at the
slope the work session's context grew by, and what a round costs; `--json` carries the same numbers."""

from __future__ import annotations

import json
import math

from test_cli import TASK, flower

from flowerscript import clarify, goals, judge, work


async def test_status_forecasts_the_rounds_left_from_the_context_each_round_ended_at(model, env, workspace, run_dir):
    # Three work rounds (the judge fails twice): the work session ends them at 30K, 32.5K and 35K tokens (S26's growth).
    model.push(*clarify(workspace), *goals(workspace))
    for n, tokens in enumerate((30_000, 32_500, 35_000)):
        model.push(*work(workspace, input_tokens=tokens), *judge(passed=n == 2, reasons="subtraction is missing"))
    done = await flower(TASK, "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err

    shown = await flower("status", "--json", "-r", str(run_dir), env=env, cwd=workspace)
    st = json.loads(shown.out)
    f = st["forecast"]
    assert f["rounds"] == 3 and f["slope"] == 2_500
    assert f["to_handoff"] == math.ceil((st["handoff_at"] - st["context"]) / 2_500)
    assert f["to_window"] == math.ceil((st["window"] - st["context"]) / 2_500)
    assert f["task_per_round"] == f["wake_per_round"]  # one wake ran every round
    # The chart's series (the editor draws it): each round's context, one session, no handoff.
    assert f["points"] == [{"round": n, "context": c, "handoff": False} for n, c in ((1, 30_000), (2, 32_500), (3, 35_000))]

    said = await flower("status", "-r", str(run_dir), env=env, cwd=workspace)
    line = next(ln for ln in said.out.splitlines() if ln.startswith("forecast "))
    assert f"+2.5K a round: the handoff in {f['to_handoff']} rounds, the window in {f['to_window']}" in line, line
    assert "context   35.0K of " in said.out
    assert "  work  " in said.out and "干活" not in said.out  # the lineage's steps in the person's language
