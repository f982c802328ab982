"""Every client can answer a question (issue 31), with the real engine, the real CLI and the scripted model.

An engine run's tool question goes to the terminal attached to it and is answered there, as in a foreground run;
with no client able to answer, the approvals rule applies at once, and `flower ps` / `flower status` say the run
waits for the person and how to attach; `status`, `ps` and `stop` agree on what runs, foreground or in the engine,
and name its pid. What the model received (the tool result of its next request) is the witness.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

from test_approvals import NO_BASH, bash_ids, result_for, result_text, touch
from test_cli import Terminal, flower, seed_frozen, start
from test_engine import TIMEOUT, Place, place, terminal_env, uri  # noqa: F401 - `place` is the fixture

import flowerscript as fs
from conftest import until
from flower.core.approvals import AWAY
from flower.lsp import protocol as p
from flower.testing import Reply, ScriptedModel

__all__ = ["place"]


def held(*replies: Reply) -> list[Reply]:
    """The replies, the first held until `model.release()` (so a terminal attaches before the question)."""
    first, *rest = replies
    return [dataclasses.replace(first, hold=True), *rest]


async def detached(place: Place, model: ScriptedModel, workspace: Path, settings: str, *replies: Reply) -> dict[str, str]:
    """A frozen task (work + judge) whose Bash calls are asked, started with `flower --detach`; its first reply held."""
    seed_frozen(workspace)
    (workspace / ".flower.toml").write_text(settings)
    model.push(*held(*replies))
    assert (await place.serve()).returncode == 0
    env = terminal_env(place)
    started = await flower("--detach", env=env, cwd=workspace, timeout=TIMEOUT)
    assert started.code == 0, started.err
    await model.wait_for_requests(1, timeout=TIMEOUT)
    return env


async def status_until(observer: Any, workspace: Path, ok: Any, timeout: float = TIMEOUT) -> dict[str, Any]:
    """The folder's status once `ok(status)`, asked again every 0.1 s (bounded)."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        [status] = (await observer.request(p.STATUS, {"folder": uri(workspace)}))["folders"]
        if ok(status):
            return status
        assert loop.time() < deadline, f"the status never matched; last: {status}"
        await asyncio.sleep(0.1)


async def at_a_terminal(env: dict[str, str], workspace: Path, marker: Path, answer: str | None,
                        then: Callable[[], None] = lambda: None) -> None:
    """`flower` at a terminal in `workspace`, attaching to the engine's run: `then()` once attached, the tool question
    about `touch(marker)` shown with the foreground run's own prompt, `answer` typed (None: Ctrl-C, leaving), to the end."""
    term = await Terminal.open(env=env, cwd=workspace)
    try:
        await term.expect("attached to the run in the flower engine")
        then()
        await term.expect(f"Allow Bash: {touch(marker)}? [y]es/[a]lways/[N]o:")
        if answer is None:
            term.ctrl_c()
            await term.expect("detached: the run goes on in the flower engine")
        else:
            term.type(answer)
            await term.expect("done")
        assert await term.wait() == 0
    finally:
        term.close()


def touching(marker: Path) -> list[Reply]:
    """The work step asks for a Bash call that touches `marker`, then ends; the judge passes."""
    return [fs.tool("Bash", {"command": touch(marker)}), fs.text("carried on"), *fs.judge()]


def result_of_the_call(model: ScriptedModel) -> str:
    """The tool result the model received for its one Bash call."""
    [asked] = bash_ids(model)
    return result_text(result_for(model, asked))


async def test_a_terminal_attached_to_an_engine_run_answers_its_tool_question_inline(place, model, workspace):
    marker = workspace / "ran.txt"
    env = await detached(place, model, workspace, NO_BASH, *touching(marker))
    await at_a_terminal(env, workspace, marker, "n not in this folder", then=model.release)
    assert not marker.exists()
    assert "not in this folder" in result_of_the_call(model)  # the sentence typed there reached the model


async def test_with_no_client_able_to_answer_the_rule_applies_at_once(place, model, workspace):
    marker = workspace / "ran.txt"
    await detached(place, model, workspace, NO_BASH, *touching(marker))
    observer = await place.client(workspace)  # attached, but it declared no answers: it is not asked
    await observer.request(p.ATTACH, {"folder": uri(workspace)})
    model.release()
    end = await observer.ended(timeout=TIMEOUT)
    assert end["ok"] is True
    assert not marker.exists()
    assert AWAY.format(tool="Bash") in result_of_the_call(model)
    assert observer.seen(p.APPROVED)[-1]["by"] == "unattended"


async def test_unattended_wait_with_nobody_able_says_waiting_for_you_and_a_terminal_attaching_answers(
        place, model, workspace):
    marker = workspace / "ran.txt"
    env = await detached(place, model, workspace, NO_BASH + '[approvals]\nunattended = "wait"\n', *touching(marker))
    model.release()
    engine = place.pid()
    observer = await place.client(workspace)
    status = await status_until(observer, workspace, lambda s: (s["waitingFor"] or {}).get("what") == "approval")
    assert status["running"] is True

    ps = await flower("ps", env=env, cwd=workspace, timeout=TIMEOUT)
    assert ps.code == 0, ps.err
    [line] = [ln for ln in ps.out.splitlines() if str(workspace) in ln]
    assert "waiting for you" in line and f"cd {workspace} && flower" in line, ps.out
    said = await flower("status", env=env, cwd=workspace, timeout=TIMEOUT)
    assert said.code == 0, said.err
    assert "waiting for you" in said.out and f"pid {engine}" in said.out and f"cd {workspace} && flower" in said.out, said.out
    shown = json.loads((await flower("status", "--json", env=env, cwd=workspace, timeout=TIMEOUT)).out)
    assert shown["held_by"] == {"pid": engine, "engine": True, "waiting_for": "approval"}, shown["held_by"]

    await at_a_terminal(env, workspace, marker, "y")  # attaching now: the open question is put to it
    assert marker.exists()
    assert AWAY.format(tool="Bash") not in result_of_the_call(model)


async def test_a_terminal_leaving_with_the_question_open_leaves_it_open_for_the_next_one(place, model, workspace):
    """Asked, then gone (Ctrl-C here, a window's reload) is not "nobody can answer": the question waits for them."""
    marker = workspace / "ran.txt"
    env = await detached(place, model, workspace, NO_BASH, *touching(marker))
    await at_a_terminal(env, workspace, marker, None, then=model.release)
    observer = await place.client(workspace)
    status = await status_until(observer, workspace, lambda s: (s["waitingFor"] or {}).get("what") == "approval")
    assert status["running"] is True  # still open: not denied when its only asker left
    await at_a_terminal(env, workspace, marker, "y")
    assert marker.exists()
    assert AWAY.format(tool="Bash") not in result_of_the_call(model)


async def test_status_ps_and_stop_agree_on_a_foreground_run_and_name_its_pid(place, model, workspace):
    model.push(*held(*fs.first_run(workspace)))
    env = terminal_env(place)
    proc = await start("build a calculator", env=env, cwd=workspace)  # a foreground run, no engine
    try:
        await model.wait_for_requests(1, timeout=TIMEOUT)
        said = await flower("status", env=env, cwd=workspace, timeout=TIMEOUT)
        assert said.code == 0 and f"running now in pid {proc.pid}" in said.out, said.out + said.err
        ps = await flower("ps", env=env, cwd=workspace, timeout=TIMEOUT)
        assert ps.code == 0, ps.err
        [line] = [ln for ln in ps.out.splitlines() if str(workspace) in ln]
        assert line.startswith("running") and f"pid {proc.pid}" in line, ps.out
        stopped = await flower("stop", env=env, cwd=workspace, timeout=TIMEOUT)
        assert stopped.code == 0 and f"pid {proc.pid}" in stopped.out, stopped.out + stopped.err
        await until(lambda: proc.returncode is not None, timeout=TIMEOUT, what="the foreground flower to stop")
    finally:
        if proc.returncode is None:
            proc.kill()
        await proc.wait()
    after = await flower("status", env=env, cwd=workspace, timeout=TIMEOUT)
    assert "running now" not in after.out, after.out
    again = await flower("stop", env=env, cwd=workspace, timeout=TIMEOUT)
    assert again.code == 1 and again.err.startswith("flower: nothing runs here"), again.err


async def test_status_ps_and_stop_agree_on_an_engine_run_and_name_its_pid(place, model, workspace):
    model.push(*held(*fs.first_run(workspace)))
    assert (await place.serve()).returncode == 0
    env = terminal_env(place)
    assert (await flower("--detach", "build a calculator", env=env, cwd=workspace, timeout=TIMEOUT)).code == 0
    await model.wait_for_requests(1, timeout=TIMEOUT)
    engine = place.pid()
    said = await flower("status", env=env, cwd=workspace, timeout=TIMEOUT)
    assert said.code == 0 and f"running now in the flower engine (pid {engine})" in said.out, said.out + said.err
    ps = await flower("ps", env=env, cwd=workspace, timeout=TIMEOUT)
    [line] = [ln for ln in ps.out.splitlines() if str(workspace) in ln]
    assert line.startswith("running") and f"pid {engine}" in line, ps.out
    assert line.split()[1] == "clarify" and not [raw for raw in ("澄清", "目标", "干活", "判定") if raw in ps.out], ps.out  # issue 34
    stopped = await flower("stop", env=env, cwd=workspace, timeout=TIMEOUT)
    assert stopped.code == 0 and f"pid {engine}" in stopped.out, stopped.out + stopped.err
    after = await flower("status", env=env, cwd=workspace, timeout=TIMEOUT)
    assert "running now" not in after.out, after.out
