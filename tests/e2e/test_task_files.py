"""A used folder whose task files are gone or unreadable, and the last resort for bugs: one line, never a traceback (issue #22).

The real `flower` command, the real SDK and CLI, the scripted model; what the model received is the assertion target.
"""

from __future__ import annotations

import pytest
from pygls.exceptions import JsonRpcException
from test_cli import first_run_done, flower, lineage
from test_lsp import servers, uri  # noqa: F401 - the `servers` fixture

from flower.lsp import protocol as p
from flower.workflow.flower import CLARIFY_RESUME, GOALS_PROMPT
from flowerscript import clarify, goals, judge, work


def last_line(err: str) -> str:
    return err.strip().splitlines()[-1]


async def test_missing_requirements_in_a_used_folder_resumes_clarify_with_one_line(model, env, workspace, run_dir):
    await first_run_done(model, env, workspace, run_dir)
    clarify_sid = lineage(run_dir)["steps"]["澄清"]
    (workspace / "需求.md").unlink()
    before = len(model.conversation)
    model.push(*clarify(workspace), *work(workspace), *judge())
    done = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    assert "Traceback" not in done.err + done.out
    assert "需求.md is missing here; the clarify step continues its session to write it again" in done.out + done.err
    asked = model.conversation[before]
    # The step that makes it ran again, resumed (S16): its own session, told to continue, not started over.
    assert asked.session_id == clarify_sid and asked.last_user_text.endswith(CLARIFY_RESUME)
    assert (workspace / "需求.md").exists()


async def test_missing_goals_in_a_used_folder_rederives_them_in_the_goal_session(model, env, workspace, run_dir):
    await first_run_done(model, env, workspace, run_dir)
    goals_sid = lineage(run_dir)["steps"]["目标"]
    (workspace / "目标.md").unlink()
    before = len(model.conversation)
    model.push(*goals(workspace), *work(workspace), *judge())
    done = await flower("-r", str(run_dir), env=env, cwd=workspace, lang="zh")
    assert done.code == 0, done.err
    assert "Traceback" not in done.err + done.out
    assert "这里缺少 目标.md;目标步骤接着它的会话重新写出它" in done.out + done.err
    asked = model.conversation[before]
    assert asked.session_id == goals_sid and asked.last_user_text.endswith(GOALS_PROMPT)


async def test_unreadable_requirements_are_kept_aside_and_written_again(model, env, workspace, run_dir):
    await first_run_done(model, env, workspace, run_dir)
    junk = b"\xff\xfe not utf-8 \xc3\x28"
    (workspace / "需求.md").write_bytes(junk)
    model.push(*clarify(workspace), *work(workspace), *judge())
    done = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    assert "Traceback" not in done.err + done.out
    kept = [p for p in workspace.iterdir() if p.name.startswith("需求.md.unreadable-")]
    assert len(kept) == 1 and kept[0].read_bytes() == junk, list(workspace.iterdir())
    assert f"需求.md could not be read; kept aside as {kept[0].name}" in done.out + done.err


async def test_a_bug_is_one_line_exit_70_the_traceback_in_the_run_dirs_log_and_flower_continues(model, env, workspace,
                                                                                               run_dir):
    work_sid = await first_run_done(model, env, workspace, run_dir)
    # A real unexpected failure: the wake marker's path is a directory, and nothing in flower expects that.
    (run_dir / "wake.json").mkdir()
    done = await flower("-r", str(run_dir), env=env, cwd=workspace)
    log = run_dir / "logs" / "crash.log"
    assert done.code == 70, done.err
    assert "Traceback" not in done.err + done.out
    line = last_line(done.err)
    assert line.startswith("flower: stopped on an unexpected error (IsADirectoryError") and str(log) in line
    assert "Nothing was lost: run `flower` here again to continue." in line
    assert "Traceback (most recent call last)" in log.read_text() and "mark_wake" in log.read_text()
    assert "sk-ant-scripted-model" not in log.read_text()  # D6: the log is redacted like everything else
    # Chinese, too.
    zh = await flower("-r", str(run_dir), env=env, cwd=workspace, lang="zh")
    assert zh.code == 70 and "遇到意外错误而停下" in last_line(zh.err) and "Traceback" not in zh.err
    # Nothing was lost: with the cause gone, the same work session continues.
    (run_dir / "wake.json").rmdir()
    before = len(model.conversation)
    model.push(*work(workspace), *judge())
    again = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert again.code == 0, again.err
    assert model.conversation[before].session_id == work_sid


async def test_a_bug_in_the_editor_server_is_one_line_with_the_log_and_the_server_keeps_answering(servers, workspace):  # noqa: F811
    (workspace / "runs").mkdir()
    (workspace / "runs" / "wake.json").mkdir()  # the same real unexpected failure, under the editor
    client = await servers(workspace)
    folder = uri(workspace)
    with pytest.raises(JsonRpcException) as raised:
        await client.request(p.WAKE, {"folder": folder, "text": "build a calculator"})
    log = workspace / "runs" / "logs" / "crash.log"
    assert raised.value.code == p.UNEXPECTED and raised.value.data == {"key": "crash_editor", "log": str(log)}
    message = raised.value.message
    assert "\n" not in message and "Traceback" not in message and str(log) in message
    assert message.startswith("flower stopped on an unexpected error (IsADirectoryError")
    assert "Traceback (most recent call last)" in log.read_text()
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    assert status["running"] is False
