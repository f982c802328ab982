"""Continuity across processes through the real CLI: each test names the seed requirement it pins."""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
from pathlib import Path

import pytest

from conftest import kill_group, run_program, start_program, until
from flower import Runtime, wake_state
from flower.core.manifest import Manifest
from flower.testing import Reply, overloaded, say, text

BRIEF = "build the parser"
RESUME = "carry on with the parser from where you are"


def args(workspace: Path, run_dir: Path, **step) -> dict:
    return {"workspace": str(workspace), "run_dir": str(run_dir), "steps": [{"name": "work", "prompt": BRIEF, **step}]}


def lineage(run_dir: Path) -> dict:
    return json.loads((run_dir / "lineage.json").read_text())


async def test_S2_second_process_wakes_the_same_session_with_its_history(model, env, workspace, run_dir):
    model.push(text("parser skeleton written"), text("parser finished"))
    first = await run_program("workflow", args(workspace, run_dir), env, workspace)
    second = await run_program("workflow", args(workspace, run_dir), env, workspace)
    assert first["_woke"] == 1 and second["_woke"] == 2
    assert second["_sessions"]["work"] == first["_sessions"]["work"]
    seen = model.conversation[1]  # the second process's first model request
    assert seen.session_id == first["_sessions"]["work"]
    assert "parser skeleton written" in seen.texts("assistant") and BRIEF in seen.text
    assert lineage(run_dir) == {"workspace": str(workspace), "woke": 2, "steps": {"work": first["_sessions"]["work"]}}
    rows = Manifest(run_dir).rows()
    assert [r["step"] for r in rows] == ["work", "work"] and len({r["run"] for r in rows}) == 2
    assert all(r["ok"] and r["session_id"] == first["_sessions"]["work"] for r in rows)
    assert wake_state(workspace, run_dir)["waking"] is True


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGHUP], ids=["kill-9", "SIGHUP"])
async def test_S11_killed_inside_the_first_step_resumes_its_session(model, env, workspace, run_dir, sig):
    model.push(Reply(blocks=[say("never finished")], hold=True), text("picked up again"))
    proc = await start_program("workflow", args(workspace, run_dir), env, workspace)
    try:
        await model.wait_for_requests(1, timeout=30)
        rt = Runtime(workspace, run_dir)
        # The lineage is written the moment the session id arrives, long before the step ends.
        await until(lambda: (run_dir / "lineage.json").exists() and "work" in lineage(run_dir)["steps"], what="lineage")
        sid = lineage(run_dir)["steps"]["work"]
        await until(lambda: rt.has_session(sid), what="session mirrored to sessions.db")
    finally:
        await kill_group(proc, sig)
    assert proc.returncode != 0
    ctx = await run_program("workflow", args(workspace, run_dir, resume_prompt=RESUME), env, workspace)
    assert ctx["_ok"] and ctx["_woke"] == 2 and ctx["_sessions"]["work"] == sid
    seen = model.last
    assert seen.session_id == sid and BRIEF in seen.text and seen.last_user_text.endswith(RESUME)


async def test_S11_unwritable_lineage_never_breaks_the_run(model, env, workspace, run_dir):
    model.push(text("one"), text("two"))
    await run_program("workflow", args(workspace, run_dir), env, workspace)
    before = (run_dir / "lineage.json").read_bytes()
    # Root ignores permission bits; an immutable file makes the atomic replace fail with EPERM.
    subprocess.run(["chattr", "+i", str(run_dir / "lineage.json")], check=True)
    try:
        ctx = await run_program("workflow", args(workspace, run_dir), env, workspace)
    finally:
        subprocess.run(["chattr", "-i", str(run_dir / "lineage.json")], check=True)
    assert ctx["_ok"] and ctx["_woke"] == 2
    assert (run_dir / "lineage.json").read_bytes() == before


async def test_S12_copied_workspace_starts_fresh_without_error(model, env, workspace, tmp_path):
    model.push(text("work in the original"), text("work in the copy"))
    runs = workspace / "runs"
    first = await run_program("workflow", args(workspace, runs), env, workspace)
    copy = tmp_path / "copy"
    shutil.copytree(workspace, copy)
    second = await run_program("workflow", args(copy, copy / "runs"), env, copy)
    assert second["_ok"] and second["_woke"] == 1
    assert second["_sessions"]["work"] != first["_sessions"]["work"]
    assert "work in the original" not in model.last.text
    assert lineage(runs)["steps"] == first["_sessions"]  # the original is untouched


async def test_S12_deleted_sessions_db_starts_fresh(model, env, workspace, run_dir):
    model.push(text("first"), text("second"))
    first = await run_program("workflow", args(workspace, run_dir), env, workspace)
    for path in run_dir.glob("sessions.db*"):
        path.unlink()
    second = await run_program("workflow", args(workspace, run_dir), env, workspace)
    assert second["_ok"] and second["_sessions"]["work"] != first["_sessions"]["work"]
    assert "first" not in model.last.texts("assistant")


async def test_S12_garbage_lineage_is_rebuilt_from_the_manifest_and_kept_aside(model, env, workspace, run_dir):
    # Issue 31: a corrupt lineage.json no longer loses the task while the manifest and sessions.db name and hold it.
    model.push(text("first"), text("second"))
    first = await run_program("workflow", args(workspace, run_dir), env, workspace)
    garbage = b'{"workspace": "/x", "woke": 3, "steps": {"work": '
    (run_dir / "lineage.json").write_bytes(garbage)
    ctx = await run_program("workflow", args(workspace, run_dir), env, workspace)
    assert ctx["_ok"] and ctx["_woke"] == 2 and ctx["_sessions"] == first["_sessions"]
    kept = list(run_dir.glob("lineage.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == garbage
    assert "first" in model.last.texts("assistant")  # the same session resumed: its first answer is on the wire


async def test_S9_S29_not_continuous_starts_a_new_session_every_process(model, env, workspace, run_dir):
    model.push(text("a"), text("b"), text("c"))
    first = await run_program("workflow", args(workspace, run_dir), env, workspace)
    on_disk = (run_dir / "lineage.json").read_bytes()
    fresh = {**args(workspace, run_dir), "continuous": False}
    second = await run_program("workflow", fresh, env, workspace)
    third = await run_program("workflow", fresh, env, workspace)
    sessions = {first["_sessions"]["work"], second["_sessions"]["work"], third["_sessions"]["work"]}
    assert len(sessions) == 3 and second["_woke"] == third["_woke"] == 1
    assert len(model.last.texts("assistant")) == 0
    assert (run_dir / "lineage.json").read_bytes() == on_disk  # a clean run leaves the continuity alone


async def test_S18_without_resume_prompt_the_prompt_is_reused(model, env, workspace, run_dir):
    model.push(text("a"), text("b"))
    await run_program("workflow", args(workspace, run_dir), env, workspace)
    await run_program("workflow", args(workspace, run_dir), env, workspace)
    assert model.last.last_user_text.endswith(BRIEF)
    assert model.last.text.count(BRIEF) == 2  # once from history, once re-sent


async def test_S18_resume_prompt_replaces_the_brief(model, env, workspace, run_dir):
    model.push(text("a"), text("b"))
    await run_program("workflow", args(workspace, run_dir, resume_prompt=RESUME), env, workspace)
    await run_program("workflow", args(workspace, run_dir, resume_prompt=RESUME), env, workspace)
    assert model.last.last_user_text.endswith(RESUME)
    assert model.last.text.count(BRIEF) == 1  # only the history carries it


async def test_S7_ordinary_retry_is_named_and_resumes(model, env, workspace, run_dir):
    model.push(text("started"), overloaded(), text("done on retry"))
    await run_program("workflow", args(workspace, run_dir), env, workspace)
    ctx = await run_program("workflow", {**args(workspace, run_dir, retries=1), "max_attempts": 1}, env, workspace)
    assert ctx["_ok"]
    rows = Manifest(run_dir).rows()
    assert [(r["step"], r["ok"]) for r in rows] == [("work", True), ("work", False), ("work#retry1", True)]
    assert rows[2]["session_id"] == rows[0]["session_id"]


async def test_D5_second_process_is_refused_until_the_first_dies(model, env, workspace, run_dir):
    model.push(Reply(blocks=[say("slow")], hold=True), text("after the kill"))
    proc = await start_program("workflow", args(workspace, run_dir), env, workspace)
    try:
        await model.wait_for_requests(1, timeout=30)
        refused = await run_program("workflow", args(workspace, run_dir), env, workspace)
        assert f"pid {proc.pid}" in refused["refused"]
    finally:
        await kill_group(proc)
    ctx = await run_program("workflow", args(workspace, run_dir), env, workspace)
    assert ctx["_ok"]


async def test_S3_wake_state_says_whether_the_next_run_resumes(model, env, workspace, run_dir):
    assert wake_state(workspace, run_dir) | {"workspace": None, "run_dir": None} == {
        "waking": False, "checks": 0, "woke": 0, "steps": {}, "workspace": None, "run_dir": None}
    model.push(text("done"))
    ctx = await run_program("workflow", args(workspace, run_dir), env, workspace)
    (workspace / "目标.md").write_text("# goals\n- [x] parse\n- [ ] print\n* [ ] test\n")
    state = wake_state(workspace, run_dir)
    assert state["waking"] and state["woke"] == 1 and state["checks"] == 3
    assert state["steps"] == ctx["_sessions"]
    assert wake_state(workspace, run_dir.parent / "other-runs")["waking"] is False  # S13: same run_dir only
