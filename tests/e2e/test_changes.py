"""The run's changes (issue #25): before-images kept by flower's own PreToolUse hook while the real CLI writes,
Bash changes found by stamps, listed per wake with +/- counts, and put back by `flower/revert` and `flower revert`."""

from __future__ import annotations

import hashlib

import pytest
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from test_cli import Terminal, flower
from test_lsp import TASK, uri
from test_lsp import servers as servers  # noqa: F401 - the language-server fixture

import flowerscript as fs
from flower import AgentSpec, Runtime
from flower.core.changes import ChangeLog
from flower.lsp import protocol as p
from flower.testing import Reply, reply, say, text, tool, tool_use

ORIGINAL = "line one\nline two\nline three\n"
AGENT = AgentSpec("writer", allowed_tools=["Write", "Edit", "Read", "Bash"], permission_mode="acceptEdits")


async def test_hook_keeps_before_images_of_writes_and_bash_changes_and_revert_restores_them(model, env, workspace, run_dir):
    (workspace / "old.txt").write_text(ORIGINAL)
    (workspace / "doomed.txt").write_text("to be removed\n")
    (workspace / "touched.txt").write_text("a\n")
    model.push(
        reply(say("two writes"), tool_use("Write", {"file_path": str(workspace / "new.txt"), "content": "fresh\nfile\n"})),
        tool("Write", {"file_path": str(workspace / "old.txt"), "content": "line one\nline 2\nline three\nline four\n"}),
        # A second write to old.txt in the same wake: the before-image stays the wake's first.
        tool("Write", {"file_path": str(workspace / "old.txt"), "content": "line one\nline 2\nline three\nline four\n"}),
        tool("Bash", {"command": "echo b >> touched.txt && rm doomed.txt && printf 'x\\n' > made.txt"}),
        text("done"),
    )
    async with Runtime(workspace, run_dir, env=env) as rt:
        rt.changes.begin(1)
        result = await rt.run(AGENT, "change things")
        rt.changes.end()
    assert result.ok, result.error
    assert (workspace / "touched.txt").read_text() == "a\nb\n" and not (workspace / "doomed.txt").exists()

    [wake] = ChangeLog(run_dir, workspace).wakes()
    files = {f.path: f for f in wake.files}
    assert wake.wake == 1 and set(files) == {"new.txt", "old.txt", "touched.txt", "doomed.txt", "made.txt"}
    assert (files["new.txt"].change, files["new.txt"].added, files["new.txt"].removed, files["new.txt"].before) == ("created", 2, 0, None)
    old = files["old.txt"]
    assert (old.change, old.added, old.removed, old.tool) == ("edited", 2, 1, "Write")
    assert old.before == hashlib.sha256(ORIGINAL.encode()).hexdigest()
    assert (run_dir / "changes" / "objects" / old.before).read_text() == ORIGINAL  # content-addressed, in the run dir
    assert (files["touched.txt"].change, files["touched.txt"].tool, files["touched.txt"].added) == ("edited", "Bash", 1)
    assert (files["doomed.txt"].change, files["doomed.txt"].removed) == ("deleted", 1)
    assert files["made.txt"].change == "created"
    # Images Bash stamping kept of files that did not change are dropped when the wake ends.
    kept = {b.name for b in (run_dir / "changes" / "objects").iterdir()}
    assert kept == {f.before for f in wake.files if f.before}

    log = ChangeLog(run_dir, workspace)
    assert log.revert("old.txt") == ["old.txt"]
    assert (workspace / "old.txt").read_text() == ORIGINAL
    assert {f.path for f in log.wakes()[0].files} == {"new.txt", "touched.txt", "doomed.txt", "made.txt"}
    assert sorted(log.revert(wake=1)) == ["doomed.txt", "made.txt", "new.txt", "touched.txt"]
    assert not (workspace / "new.txt").exists() and not (workspace / "made.txt").exists()
    assert (workspace / "doomed.txt").read_text() == "to be removed\n" and (workspace / "touched.txt").read_text() == "a\n"
    assert log.wakes()[0].files == []


async def test_nothing_is_recorded_outside_a_wake_or_outside_the_workspace(model, env, workspace, run_dir, tmp_path):
    outside = tmp_path / "elsewhere.txt"
    model.push(tool("Write", {"file_path": str(outside), "content": "x\n"}),
               tool("Write", {"file_path": str(workspace / "a.txt"), "content": "x\n"}), text("done"))
    async with Runtime(workspace, run_dir, env=env) as rt:
        rt.changes.begin(3)
        assert (await rt.run(AGENT, "write")).ok
        rt.changes.end()
        model.push(tool("Write", {"file_path": str(workspace / "b.txt"), "content": "y\n"}), text("done"))
        assert (await rt.run(AGENT, "write again")).ok  # no wake set: a `flower once`-like run records nothing
    [wake] = ChangeLog(run_dir, workspace).wakes()
    assert wake.wake == 3 and [f.path for f in wake.files] == ["a.txt"]


async def test_flower_changes_and_revert_over_the_editor_protocol(servers, model, workspace):
    (workspace / "calc.py").write_text("print(0)\n")
    held = Reply(blocks=[say("calc.py written")], hold=True)
    model.push(*fs.clarify(workspace), *fs.goals(workspace), fs.work(workspace, "print(1 + 2)\nprint(3)\n")[0], held,
               *fs.judge())
    client = await servers(workspace)
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": TASK})
    await model.wait_for_requests(6, timeout=60)

    # While the wake runs: listed (running), and a revert is refused with a key the client can branch on.
    listed = await client.request(p.CHANGES, {"folder": folder})
    [running] = listed["wakes"]
    assert running["running"] is True and running["wake"] == 1
    with pytest.raises(JsonRpcException) as refused:
        await client.request(p.REVERT, {"folder": folder, "path": "calc.py"})
    assert refused.value.code == p.FLOWER_ERROR and "running" in refused.value.message
    model.release()
    await client.ended(folder)
    ends = client.seen(p.STEP_END, folder) + client.seen(p.VERDICT, folder)
    assert len(ends) == 4 and all(e["durationS"] >= 0 and e["costUsd"] is not None for e in ends)  # the section heads

    result = await client.request(p.CHANGES, {"folder": folder})
    [wake] = result["wakes"]
    files = {f["path"]: f for f in wake["files"]}
    assert wake["running"] is False and set(files) == {"需求.md", "目标.md", "calc.py"}
    calc = files["calc.py"]
    assert (calc["change"], calc["added"], calc["removed"], calc["tool"]) == ("edited", 2, 1, "Write")
    assert open(calc["beforePath"], encoding="utf-8").read() == "print(0)\n"
    assert files["目标.md"]["change"] == "created" and files["目标.md"]["beforePath"] is None

    reverted = await client.request(p.REVERT, {"folder": folder, "path": str(workspace / "calc.py"), "wake": 1})
    assert reverted == {"folder": folder, "reverted": ["calc.py"]}
    assert (workspace / "calc.py").read_text() == "print(0)\n"
    with pytest.raises(JsonRpcException) as nothing:
        await client.request(p.REVERT, {"folder": folder, "path": "calc.py"})
    assert nothing.value.code == p.FLOWER_ERROR and "flower changes" in nothing.value.message
    with pytest.raises(JsonRpcInvalidParams):
        await client.request(p.REVERT, {"folder": folder})
    with pytest.raises(JsonRpcInvalidParams):
        await client.request(p.CHANGES, {"folder": folder, "wake": "1"})
    assert (await client.request(p.REVERT, {"folder": folder, "wake": 1}))["reverted"] == ["目标.md", "需求.md"]
    assert not (workspace / "目标.md").exists() and (await client.request(p.CHANGES, {"folder": folder}))["wakes"] == []


async def test_cli_changes_summarises_per_wake_and_revert_asks_or_needs_yes(model, env, workspace):
    (workspace / "calc.py").write_text("print(0)\n")
    model.push(*fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace), *fs.judge())
    assert (await flower(TASK, env=env, cwd=workspace)).code == 0

    shown = await flower("changes", env=env, cwd=workspace)
    assert shown.code == 0
    assert "wake #1: 3 files" in shown.out
    assert "E calc.py  +1 -1  (Write)" in shown.out and "C 目标.md" in shown.out and "E 需求.md" in shown.out and str(workspace) not in shown.out

    refused = await flower("revert", "calc.py", env=env, cwd=workspace)  # not a terminal, no --yes
    assert refused.code == 2 and "--yes" in refused.err and "Traceback" not in refused.err
    assert (workspace / "calc.py").read_text() == "print(1 + 2)\n"
    term = await Terminal.open("revert", "calc.py", env=env, cwd=workspace)  # on a terminal it asks; "n" keeps it
    try:
        await term.expect("before wake 1? [y/N]")
        term.type("n")
        await term.expect("nothing restored")
        assert await term.wait() == 0, term.screen
    finally:
        term.close()
    assert (workspace / "calc.py").read_text() == "print(1 + 2)\n"
    done = await flower("revert", "calc.py", "--yes", env=env, cwd=workspace)
    assert done.code == 0 and "restored calc.py" in done.out
    assert (workspace / "calc.py").read_text() == "print(0)\n"
    again = await flower("revert", "--wake", "1", "--yes", env=env, cwd=workspace)
    assert again.code == 0 and not (workspace / "目标.md").exists()
    assert "No changes recorded" in (await flower("changes", env=env, cwd=workspace)).out
    nothing = await flower("revert", "calc.py", "--yes", env=env, cwd=workspace)
    assert nothing.code == 1 and "flower changes" in nothing.err and "Traceback" not in nothing.err
