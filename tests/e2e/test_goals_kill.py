"""A step's session outlives a kill that lands before flower wrote it down (chaos, lap 1 of seed 7, issue 31).

The CLI does not wait for flower to read its init message: it sends the step's first model request at once. On a
loaded machine flower was still in the lineage's fsync when it was killed alone (SIGTERM, 87 ms after that request
arrived); the model had answered and the CLI's own transcript held the answer, but lineage.json never named the
session, so the next wake started the goals step afresh and the answer was abandoned. Made deterministic here with
the same slow disk: strace holds each fsync of flower's main thread (not its CLI's) for seconds, and flower is killed
alone once the model's answer is in the CLI's own transcript.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import signal
from pathlib import Path

import pytest
from test_cli import TASK, flower, lineage, start

import flowerscript as fs
from flower.testing import tool


async def poll(condition, timeout: float, what: str) -> None:
    """Poll `condition()` every 2 ms until true, failing after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.002)


SLOW_FSYNC_US = 4_000_000
"""How long each fsync of flower's main thread is held: far longer than the CLI needs to ask and store the answer."""


def traced(pid: int) -> bool:
    """Whether a tracer is attached to `pid` (its TracerPid)."""
    status = Path(f"/proc/{pid}/status").read_text()
    return next(line for line in status.splitlines() if line.startswith("TracerPid:")).split()[1] != "0"


async def slow_disk(pid: int) -> asyncio.subprocess.Process:
    """strace attached to `pid`'s main thread only, holding each fsync (a loaded disk); returns once attached."""
    if shutil.which("strace") is None:
        pytest.skip("no strace here to slow flower's disk")
    proc = await asyncio.create_subprocess_exec(
        "strace", "-qq", "-o", os.devnull, "-p", str(pid), "-e", "trace=fsync", "-e",
        f"inject=fsync:delay_enter={SLOW_FSYNC_US}", stderr=asyncio.subprocess.PIPE)
    await poll(lambda: traced(pid) or proc.returncode is not None, 30, "strace to attach")
    if not traced(pid):
        assert proc.stderr is not None
        pytest.skip(f"strace cannot attach here: {(await proc.stderr.read()).decode().strip()}")
    return proc


def answered_in_transcript(config: Path, sid: str, tool_id: str) -> bool:
    """Whether the CLI's own transcript of `sid` holds the model's answer (the tool call), as the chaos run's did."""
    return any(tool_id in path.read_text(encoding="utf-8") for path in (config / "projects").glob(f"*/{sid}.jsonl"))


async def test_killed_alone_before_it_could_record_the_goals_session_the_next_wake_resumes_it(
        model, env, workspace, run_dir):
    # The goal setter's first answer reads the requirements: had it written 目标.md, a CLI quicker than the kill (a
    # loaded CI) would have finished the step's work, and the next wake rightly skips a step whose file exists (S17).
    first_goals = tool("Read", {"file_path": str(workspace / "需求.md")})
    model.push(*fs.clarify(workspace), first_goals)
    proc = await start(TASK, "-r", str(run_dir), env=env, cwd=workspace)
    strace = None
    try:
        await model.wait_for_requests(2, timeout=90)  # clarify's last request: the goals CLI starts after it
        strace = await slow_disk(proc.pid)
        request = await model.wait_for_requests(3, timeout=90)
        sid = request.session_id
        assert sid is not None and "目标.md" in request.last_user_text
        config = Path(env["CLAUDE_CONFIG_DIR"])
        tool_id = first_goals.blocks[0]["id"]
        await poll(lambda: answered_in_transcript(config, sid, tool_id), 60, "the answer in the CLI's transcript")
    finally:
        os.kill(proc.pid, signal.SIGTERM)  # flower alone, as the chaos harness did (its CLI dies with it)
        await asyncio.wait_for(proc.wait(), 30)
        if strace is not None:
            await asyncio.wait_for(strace.wait(), 30)
    assert proc.returncode == -signal.SIGTERM

    at = len(model.conversation)
    model.push(*fs.goals(workspace), *fs.work(workspace), *fs.judge())
    done = await flower("-r", str(run_dir), env=env, cwd=workspace, timeout=120)
    assert "Traceback" not in done.err + done.out
    woken = model.conversation[at]
    assert "目标.md" in woken.text  # the goals step's next request ...
    assert woken.session_id == sid  # ... continues the session the model answered in ...
    assert tool_id in [u["id"] for u in woken.tool_uses()]  # ... and carries that answer
    assert done.code == 0, done.err
    assert lineage(run_dir)["steps"]["目标"] == sid
    assert json.loads((run_dir / "lineage.json").read_text())["woke"] == 2
