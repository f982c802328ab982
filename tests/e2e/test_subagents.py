"""Subagents and background work through the real CLI (issue 32, D12): the scripted model delegates, and flower runs
what it delegates as `claude` does."""

from __future__ import annotations

import asyncio
import os

import pytest

from conftest import until
from flower import AgentSpec, Runtime
from flower.core.approvals import Approval, Approvals, Decision
from flower.testing import background_bash, delegate, for_main, for_subagent, reply, text, tool

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

    async def person(approval: Approval) -> Decision:
        asked.append(approval)
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
    assert {(f.path, f.tool, f.agent) for f in wakes[0].files} == {
        ("sub.txt", "Write", "make files (general-purpose)"), ("made.txt", "Bash", "make files (general-purpose)")}
    assert not any(REFUSED in r.text for r in model.conversation)
    assert "SUB: made them" in model.main[-1].last_user_text

