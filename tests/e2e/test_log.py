"""`flower log` (issue 34): the task's transcript in the terminal, from the store, and `--follow` while a run writes it."""

from __future__ import annotations

import asyncio
import signal

from test_cli import FLOWER, cli_env, first_run_done, flower, seed_frozen

from flower.core.approvals import AWAY
from flower.testing import text, tool
from flowerscript import GOALS, goals, judge, work


async def test_the_log_prints_every_step_oldest_first_and_n_keeps_the_newest(model, env, workspace, run_dir):
    await first_run_done(model, env, workspace, run_dir)
    before = {p: p.stat().st_mtime_ns for p in [run_dir, *run_dir.rglob("*"), workspace, *workspace.iterdir()]}
    shown = await flower("log", "-r", str(run_dir), env=env, cwd=workspace)
    assert shown.code == 0 and shown.err == "", shown.err
    out = shown.out
    headers = [ln for ln in out.splitlines() if ln.startswith("== ")]
    assert [h.split(" =")[0] for h in headers] == ["== clarify", "== goals", "== work", "== judge · round 1"], headers
    assert "判定" not in out  # step names in the person's language (issue 34)
    assert out.index("> A person asked for this") < out.index("== goals")  # the clarify prompt's start, then a count
    assert "(+21 lines)" in out.split("== judge · round 1")[1]  # the judge's long prompt folded to its first lines
    assert out.index("· Write(") < out.index("calc.py written") < out.index("VERDICT: PASS")
    newest = await flower("log", "-n", "1", "-r", str(run_dir), env=env, cwd=workspace)
    assert newest.code == 0 and "VERDICT: PASS" in newest.out and "calc.py written" not in newest.out
    after = {p: p.stat().st_mtime_ns for p in [run_dir, *run_dir.rglob("*"), workspace, *workspace.iterdir()]}
    assert after == before  # a read-only command writes nothing: no file added, none changed (issue 34)


async def test_an_empty_folder_has_nothing_to_show_and_writes_nothing(env, workspace, run_dir):
    shown = await flower("log", "-r", str(run_dir), env=env, cwd=workspace)
    assert shown.code == 0 and "nothing stored here yet" in shown.out
    assert not run_dir.exists() and list(workspace.iterdir()) == []


async def test_follow_prints_what_the_next_wake_writes(model, env, workspace, run_dir):
    await first_run_done(model, env, workspace, run_dir)
    follow = await asyncio.create_subprocess_exec(
        str(FLOWER), "log", "--follow", "-n", "1", "-r", str(run_dir), cwd=workspace, env=cli_env(env),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        first = [await asyncio.wait_for(follow.stdout.readline(), 60) for _ in range(2)]  # the newest entry, its step first
        assert first[0].startswith("== judge · round 1 ".encode()) and b"Checked every goal." in first[1], first
        model.push(*goals(workspace, GOALS + "- [ ] calc.py prints four\n"), *work(workspace, "print(2 + 2)\n"), *judge())
        woke = await flower("print four too", "-r", str(run_dir), env=env, cwd=workspace)
        assert woke.code == 0, woke.err
        seen = b""
        while b"calc.py written" not in seen:  # the second wake's words, as they were stored
            line = await asyncio.wait_for(follow.stdout.readline(), 60)
            assert line, f"--follow ended: {seen.decode()}"
            seen += line
        assert b"> print four too" in seen or b"print four too" in seen
        follow.send_signal(signal.SIGINT)
        await asyncio.wait_for(follow.wait(), 30)
    finally:
        if follow.returncode is None:
            follow.kill()
            await follow.wait()
    assert follow.returncode == 130 and b"Traceback" not in await follow.stderr.read()


async def test_a_denied_call_is_marked_as_a_denial_with_what_the_model_was_told(model, env, workspace, run_dir):
    """A piped run denies a Bash call outside `allow` (nobody to approve it): the log says so, never `← output`."""
    seed_frozen(workspace)
    (workspace / ".flower.toml").write_text('allow = ["Read", "Write", "Edit", "Glob", "Grep"]\n')
    model.push(tool("Bash", {"command": f'sh -c "touch {workspace / "ran.txt"}"'}), text("went on without it"), *judge())
    ran = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert ran.code == 0 and "denied Bash" in ran.err, ran.err
    shown = await flower("log", "-r", str(run_dir), env=env, cwd=workspace)
    assert shown.code == 0, shown.err
    told = AWAY.format(tool="Bash")[:40]
    [denial] = [ln for ln in shown.out.splitlines() if told in ln]
    assert denial.startswith("  ✕ denied — " + told), denial  # issue 34: the editor's mark, with the reason
    assert shown.out.index("· Bash(") < shown.out.index(denial) < shown.out.index("went on without it")
