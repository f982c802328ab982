"""Subagents and background work through the real CLI (issue 32, D12): the scripted model delegates, and flower runs
what it delegates as `claude` does."""

from __future__ import annotations

from flower import AgentSpec, Runtime
from flower.testing import delegate, for_main, for_subagent, text, tool

TOOLS = ["Agent", "Write", "Read", "Bash"]


def write(path, content: str):
    return tool("Write", {"file_path": str(path), "content": content})


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
