"""Subagents and background work through the real CLI (issue 32, D12): the scripted model delegates, and flower runs
what it delegates as `claude` does."""

from __future__ import annotations

import asyncio
import json
import os
import signal
from pathlib import Path

import pytest
from test_cli import flower, lineage, seed_frozen, start

from conftest import until
from flower import AgentSpec, Runtime
from flower.core.approvals import Approval, Approvals, Decision
from flower.core.journal import NOTE_END
from flower.history import History
from flower.runtime import Sessions, project_key
from flower.testing import MAIN, SUBAGENT, Reply, background_bash, delegate, for_main, for_subagent, reply, say, text, tool
from flowerscript import judge

TOOLS = ["Agent", "Write", "Read", "Bash"]


def write(path, content: str, **kw):
    return tool("Write", {"file_path": str(path), "content": content}, **kw)


async def test_the_scripted_model_answers_a_real_foreground_subagent_apart_from_the_main_agent(model, env, workspace, run_dir):
    target = workspace / "sub.txt"
    model.push(*for_main(delegate("write sub.txt", background=False), text("main: it is written")),
               *for_subagent(write(target, "from the subagent\n"), text("SUB: wrote sub.txt")))
    async with Runtime(workspace, run_dir, env=env) as rt:
        result = await rt.run(AgentSpec("worker", allowed_tools=TOOLS), "delegate the file")
    assert result.ok, result.error
    assert target.read_text() == "from the subagent\n"
    assert [r.agent_prompt for r in model.subagents] == ["write sub.txt", "write sub.txt"]
    assert "File created successfully" in model.subagents[1].last_user_text  # the subagent's Write ran
    assert len(model.main) == 2 and "SUB: wrote sub.txt" in model.main[1].last_user_text  # its hand-back
    assert result.text == "main: it is written"


REFUSED = "doesn't want to take this action"
"""What the CLI tells a subagent whose tool call's hook could no longer be answered (flower had stopped reading)."""


async def test_a_background_subagent_writes_its_file_and_its_result_reaches_the_main_conversation(
        model, env, workspace, run_dir):
    # The subagent's Write comes after the main agent ended its turn (its first ResultMessage): the model takes 2 s.
    target = workspace / "sub.txt"
    model.push(*for_main(delegate("write sub.txt"), text("main: the subagent works on it"), text("main: it is done")),
               *for_subagent(write(target, "from the subagent\n", delay=2.0), text("SUB: wrote sub.txt")))
    async with Runtime(workspace, run_dir, env=env) as rt:
        result = await rt.run(AgentSpec("worker", allowed_tools=TOOLS), "delegate the file")
    assert result.ok, result.error
    assert target.read_text() == "from the subagent\n"
    assert not any(REFUSED in r.text for r in model.conversation)
    assert "Async agent launched" in model.main[1].last_user_text  # the CLI's default: in the background
    assert len(model.main) == 3 and "SUB: wrote sub.txt" in model.main[2].last_user_text  # its result, told later
    assert result.text == "main: it is done"  # the step's answer is the main agent's last turn


async def test_a_background_shell_ends_before_the_step_does_and_the_model_hears_of_it(model, env, workspace, run_dir):
    done = workspace / "done.txt"
    model.push(reply(background_bash(f"sleep 1; echo finished > {done}")), text("main: it runs"), text("main: it finished"))
    async with Runtime(workspace, run_dir, env=env) as rt:
        result = await rt.run(AgentSpec("worker", allowed_tools=TOOLS), "run it in the background")
    assert result.ok, result.error
    assert done.read_text() == "finished\n"
    assert len(model.main) == 3 and "<task-notification>" in model.main[2].last_user_text
    assert result.text == "main: it finished"


async def test_a_background_shell_that_never_ends_is_ended_with_the_cli_after_the_ceiling(model, env, workspace, run_dir):
    # The wait between turns is bounded by the CLI's own ceiling for background work (here 1.5 s): the step ends,
    # the CLI is stopped, and its shell with it: nothing is left running.
    pid = workspace / "shell.pid"
    model.push(reply(background_bash(f"echo $$ > {pid}; exec sleep 1000")), text("main: it runs"))
    env = {**env, "CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "1500"}
    async with Runtime(workspace, run_dir, env=env) as rt:
        result = await asyncio.wait_for(rt.run(AgentSpec("worker", allowed_tools=TOOLS), "start a server"), 60)
    assert result.ok, result.error
    assert result.text == "main: it runs" and len(model.main) == 2
    shell = int(pid.read_text())
    await until(lambda: not alive(shell), what="the background shell to end with the CLI")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


@pytest.mark.parametrize("background", [True, False], ids=["background", "foreground"])
async def test_a_subagents_tool_calls_go_through_the_approvals_and_the_changes_ledger_naming_it(
        model, env, workspace, run_dir, background):
    # Bash is not in the agent's allowed tools: the subagent's call is a question to the person, who is told it is
    # the subagent's; its Write and its Bash are recorded as the subagent's in the changes ledger.
    made, written = workspace / "made.txt", workspace / "sub.txt"
    model.push(*for_main(delegate("make the files", description="make files", background=background),
                         text("main: waiting"), text("main: done")),
               *for_subagent(write(written, "by the subagent\n", delay=1.0), tool("Bash", {"command": f'sh -c "touch {made}"'}),
                             text("SUB: made them")))
    asked: list[Approval] = []
    running: list[list[str]] = []

    async def person(approval: Approval) -> Decision:
        asked.append(approval)
        running.append([t.label for t in rt.delegated.values() if t.running])  # what `flower status` names (issue 32)
        return Decision("allow")

    approvals = Approvals()
    approvals.askers.append(person)
    async with Runtime(workspace, run_dir, env=env, approvals=approvals) as rt:
        rt.changes.begin(1)
        result = await rt.run(AgentSpec("worker", allowed_tools=["Agent", "Write"]), "delegate the files")
        rt.changes.end()
        wakes = rt.changes.wakes()
    assert result.ok, result.error
    assert made.exists() and written.read_text() == "by the subagent\n"
    assert [(a.tool, a.agent) for a in asked] == [("Bash", "make files (general-purpose)")]
    assert running == [["make files (general-purpose)"]] and not [t for t in rt.delegated.values() if t.running]
    assert {(f.path, f.tool, f.agent) for f in wakes[0].files} == {
        ("sub.txt", "Write", "make files (general-purpose)"), ("made.txt", "Bash", "make files (general-purpose)")}
    assert not any(REFUSED in r.text for r in model.conversation)
    assert "SUB: made them" in model.main[-1].last_user_text



async def forget_subagents(run_dir, workspace) -> None:
    """Drop every subagent transcript from sessions.db: the state a kill before the mirror's write leaves."""
    async with Sessions.open(run_dir) as sessions:
        for sid in {lineage(run_dir)["steps"]["干活"]}:
            key = {"project_key": project_key(workspace), "session_id": sid}
            for sub in await sessions.raw.list_subkeys(key):
                await sessions.raw.delete({**key, "subpath": sub})
            assert await sessions.raw.list_subkeys(key) == []


def pgroup(pgid: int) -> list[int]:
    """The live processes of a process group (the CLI a kill of flower alone leaves running, and its children)."""
    out = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.getpgid(int(entry)) == pgid:
                    out.append(int(entry))
            except ProcessLookupError:
                continue
    return out


@pytest.mark.parametrize("mirrored", [True, False], ids=["as-killed", "store-lacks-the-sidechain"])
async def test_a_wake_after_a_kill_inside_a_foreground_subagent_tells_what_the_subagent_had_done(
        model, env, workspace, run_dir, mirrored):
    # The subagent wrote sub.txt and said so; flower is killed (kill -9, the process alone) while the model holds
    # the subagent's second reply. The next wake's main request carries what the subagent did (its Write with the
    # input, the head of its result, its last words), so the model goes on from there: no subagent runs again.
    seed_frozen(workspace)
    target = workspace / "sub.txt"
    call = write(target, "from the subagent\n")
    model.push(*for_main(delegate("write sub.txt", description="write the file", background=False)),
               *for_subagent(reply(say("SUB: writing sub.txt now"), call.blocks[0]), Reply(blocks=[say("never sent")], hold=True)))
    proc = await start("-r", str(run_dir), env=env, cwd=workspace)
    try:
        await model.wait_for_requests(2, timeout=90, agent=SUBAGENT)  # the Write ran: its result is in this request
        # What the note can tell is what was kept somewhere: the result as it streamed (flower's journal) and the
        # subagent's words (the CLI streams no foreground subagent's words: its own file has them). The kernel now
        # ends the CLI with flower (issue 31), so the kill waits until both are written, not a moment later.
        config = Path(env["CLAUDE_CONFIG_DIR"])
        await until(lambda: _kept(run_dir, config, call.blocks[0]["id"], "SUB: writing sub.txt now"), 30,
                    "the subagent's result in the journal and its words in the CLI's file")
        os.kill(proc.pid, signal.SIGKILL)  # flower alone; the kernel ends its CLI with it
        await asyncio.wait_for(proc.wait(), 30)
        assert target.read_text() == "from the subagent\n"
        if not mirrored:  # the kill landed before the mirror stored the subagent (timing): its words are in the CLI's file
            await forget_subagents(run_dir, workspace)
        subagent_requests = len(model.subagents)
        before = len(model.main)
        model.push(*for_main(text("the subagent had written sub.txt"), *judge()))
        done = await flower("-r", str(run_dir), env=env, cwd=workspace, timeout=120)
        assert done.code == 0, done.err
    finally:
        for pid in pgroup(proc.pid):  # the orphaned CLI of the killed flower
            os.kill(pid, signal.SIGKILL)
        model.release()
    woken = model.main[before]
    told = woken.last_user_text
    assert NOTE_END in told, told[-3000:]
    assert f"called Write with {json.dumps(call.blocks[0]['input'], ensure_ascii=False)}" in told
    assert "File created successfully" in told and "SUB: writing sub.txt now" in told and "write the file" in told
    assert len(model.subagents) == subagent_requests  # the delegation was not redone


async def test_a_ctrl_c_inside_a_foreground_subagent_still_tells_what_the_subagent_had_done(model, env, workspace, run_dir):
    # chaos (test_ten_seeded_kills, once): SIGINT to flower's group right after a subagent's Bash ran. The CLI stores its
    # refusal ("The user doesn't want to proceed ...", an error) as the Agent call's result; taken for the subagent's
    # hand-back, it kept the next wake from telling anything of the subagent: its Bash was lost to the model.
    seed_frozen(workspace)
    call = tool("Bash", {"command": "echo sub > sub.txt", "description": "write sub.txt"}).blocks[0]
    model.push(*for_main(delegate("write sub.txt", description="sub-task", background=False)),
               *for_subagent(reply(say("SUB: writing sub.txt"), call), Reply(blocks=[say("never sent")], hold=True)))
    proc = await start("-r", str(run_dir), env=env, cwd=workspace)
    try:
        await model.wait_for_requests(2, timeout=90, agent=SUBAGENT)  # the Bash ran: its result is in this request
        await until(lambda: _journaled(run_dir, call["id"]), 30, "the subagent's Bash result in the journal")
        os.killpg(proc.pid, signal.SIGINT)  # Ctrl-C at the terminal: flower and its CLI
        await asyncio.wait_for(proc.wait(), 30)
        assert (workspace / "sub.txt").read_text() == "sub\n"
        subagent_requests, before = len(model.subagents), len(model.main)
        model.push(*for_main(text("the subagent had written sub.txt"), *judge()))
        done = await flower("-r", str(run_dir), env=env, cwd=workspace, timeout=120)
        assert done.code == 0, done.err
    finally:
        for pid in pgroup(proc.pid):
            os.kill(pid, signal.SIGKILL)
        model.release()
    told = model.main[before].last_user_text
    assert NOTE_END in told, told[-3000:]
    assert 'The subagent "sub-task" that your Agent call' in told
    assert f"It called Bash with {json.dumps(call['input'], ensure_ascii=False)}" in told
    assert len(model.subagents) == subagent_requests  # the delegation was not redone


def _journaled(run_dir: Path, call: str) -> bool:
    """Whether the journal holds the result of tool call `call`."""
    return any(r.get("k") == "result" and r.get("tool") == call
               for p in (run_dir / "journal").glob("*.jsonl")
               for r in (json.loads(line) for line in p.read_text(encoding="utf-8").splitlines() if line.endswith("}")))


def _kept(run_dir: Path, config: Path, call: str, words: str) -> bool:
    """Whether the journal holds the result of the subagent's `call` and the CLI's sidechain file holds its `words`."""
    return _journaled(run_dir, call) and any(words in p.read_text(encoding="utf-8") for p in config.glob("projects/*/*/subagents/*.jsonl"))


async def test_a_wake_after_a_kill_names_the_background_shell_the_kill_ended(model, env, workspace, run_dir):
    # The model must not wait on a shell id that no longer exists: the next wake tells it the shell was ended.
    seed_frozen(workspace)
    pid = workspace / "shell.pid"
    call = reply(background_bash(f"echo $$ > {pid}; exec sleep 1000", description="serve the app"))
    model.push(*for_main(call, Reply(blocks=[say("never sent")], hold=True)))
    proc = await start("-r", str(run_dir), env=env, cwd=workspace)
    try:
        await model.wait_for_requests(2, timeout=90, agent=MAIN)  # the shell runs: the model was told its id
        os.kill(proc.pid, signal.SIGKILL)
        await asyncio.wait_for(proc.wait(), 30)
        for leftover in pgroup(proc.pid):  # its CLI too, as a crash of the machine's session would: no CLI answers any more
            os.kill(leftover, signal.SIGKILL)
        before = len(model.main)
        model.push(*for_main(text("the server is not running any more; starting it again is not needed"), *judge()))
        done = await flower("-r", str(run_dir), env=env, cwd=workspace, timeout=120)
        assert done.code == 0, done.err
    finally:
        for leftover in pgroup(proc.pid):
            os.kill(leftover, signal.SIGKILL)
        if pid.exists() and alive(int(pid.read_text())):  # the shell runs in its own session: a CLI killed outright
            os.kill(int(pid.read_text()), signal.SIGKILL)   # leaves it running (the note says to check)
        model.release()
    told = model.main[before].last_user_text
    assert NOTE_END in told
    assert (f'Your background shell "serve the app" (your Bash call {call.blocks[0]["id"]}, shell id ' in told
            and "was cut off by the interruption" in told), told


async def test_history_shows_a_subagents_prompt_and_tool_calls_nested_under_its_agent_call(model, env, workspace, run_dir):
    seed_frozen(workspace)
    target = workspace / "sub.txt"
    model.push(*for_main(delegate("write sub.txt", background=False), text("delegated and done"), *judge()),
               *for_subagent(reply(say("SUB: writing"), write(target, "x\n").blocks[0]), text("SUB: wrote sub.txt")))
    done = await flower("-r", str(run_dir), env=env, cwd=workspace, timeout=120)
    assert done.code == 0, done.err
    history = History(workspace, run_dir)
    try:
        page = await history.page()
    finally:
        history.close()
    items = page.items
    at = next(i for i, item in enumerate(items) if item.tool_name == "Agent")
    call = items[at]
    nested = [i for i in items if i.parent == call.tool_use_id]
    assert nested and items[at + 1:at + 1 + len(nested)] == nested  # right after the call
    assert [(i.role, i.kind) for i in nested][:1] == [("user", "text")] and nested[0].text == "write sub.txt"
    assert ("tool", "Write") in [(i.kind, i.tool_name) for i in nested]
    assert "SUB: writing" in [i.text for i in nested] and all(i.seq == call.seq for i in nested)
    assert not any(i.parent is None and i.text == "SUB: writing" for i in items)  # not also in the main conversation
