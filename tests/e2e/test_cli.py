"""The `flower` console script as a person or a script uses it: real CLI, real SDK, scripted model (S1, S15, S19, S26–S30).

Every test runs `.venv/bin/flower` as a subprocess; the prompts are driven through a pseudo-terminal.
"""

from __future__ import annotations

import asyncio
import fcntl
import json
import os
import re
import signal
import socket
import subprocess
import sys
import termios
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from conftest import until
from flower import Runtime
from flower.testing import Reply, say, text, tool
from flower.workflow.flower import WAKE_SENTENCE, WORK_PROMPT, WORK_RESUME
from flowerscript import GOALS, REQUIREMENTS, clarify, first_run, goals, judge, work

FLOWER = Path(sys.executable).parent / "flower"
ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
TASK = "build a calculator"


# ------------------------------------------------------------------------------------ harness


def cli_env(env: dict[str, str], lang: str = "en", **extra: str) -> dict[str, str]:
    """The test process's env without credentials or locale overrides, plus the scripted model's, in `lang`."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("LC_ALL", "LC_MESSAGES") and not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    return {**base, **env, "LANG": "zh_CN.UTF-8" if lang == "zh" else "C.UTF-8", **extra}


@dataclass
class Done:
    code: int
    out: str
    err: str


async def flower(*args: str, env: dict[str, str], cwd: Path, lang: str = "en", timeout: float = 120.0,
                 child: Callable[[], None] | None = None) -> Done:
    """Run `flower *args` piped (not a terminal) and wait for it, bounded; `child` runs in the child before exec."""
    proc = await asyncio.create_subprocess_exec(
        str(FLOWER), *args, cwd=cwd, env=cli_env(env, lang), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True, preexec_fn=child,
    )
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        os.killpg(proc.pid, signal.SIGKILL)
        await proc.wait()
        raise
    return Done(proc.returncode, out.decode(), err.decode())


async def start(*args: str, env: dict[str, str], cwd: Path, lang: str = "en") -> asyncio.subprocess.Process:
    """Start `flower *args` piped, in its own process group, without waiting."""
    return await asyncio.create_subprocess_exec(
        str(FLOWER), *args, cwd=cwd, env=cli_env(env, lang), stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )


def _controlling_tty() -> None:
    """In the child: a new session whose controlling terminal is the pty on stdin (so Ctrl-C works)."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """`flower` attached to a pseudo-terminal: read what it shows, type lines, press Ctrl-C."""

    def __init__(self, proc: asyncio.subprocess.Process, master: int):
        self.proc, self.master = proc, master
        self.raw = b""
        self.seen = 0
        self.changed = asyncio.Event()
        asyncio.get_running_loop().add_reader(master, self._read)

    @classmethod
    async def open(cls, *args: str, env: dict[str, str], cwd: Path, lang: str = "en") -> Terminal:
        master, slave = os.openpty()
        proc = await asyncio.create_subprocess_exec(
            str(FLOWER), *args, cwd=cwd, env=cli_env(env, lang, TERM="xterm"),
            stdin=slave, stdout=slave, stderr=slave, preexec_fn=_controlling_tty,
        )
        os.close(slave)
        return cls(proc, master)

    def _read(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self.master)
        self.raw += data
        self.changed.set()

    @property
    def screen(self) -> str:
        """Everything shown so far, without colours and carriage returns."""
        return ANSI.sub("", self.raw.decode("utf-8", "replace")).replace("\r", "")

    async def expect(self, text: str, timeout: float = 60.0) -> None:
        """Wait (bounded) until `text` appears after what an earlier `expect` consumed."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        while (at := self.screen.find(text, self.seen)) < 0:
            left = deadline - loop.time()
            assert left > 0, f"timed out waiting for {text!r}; the terminal shows:\n{self.screen[-3000:]}"
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except TimeoutError:
                pass
        self.seen = at + len(text)

    def type(self, line: str) -> None:
        """Type a line and press Enter."""
        os.write(self.master, line.encode() + b"\r")

    def ctrl_c(self) -> None:
        os.write(self.master, b"\x03")

    async def wait(self, timeout: float = 120.0) -> int:
        """The exit code, after draining what it printed last."""
        try:
            code = await asyncio.wait_for(self.proc.wait(), timeout)
        except TimeoutError:
            self.proc.kill()
            raise AssertionError(f"flower did not exit; the terminal shows:\n{self.screen[-3000:]}") from None
        await until(lambda: self.master not in _readers(), timeout=10, what="the terminal to drain")
        return code

    def close(self) -> None:
        if self.proc.returncode is None:
            self.proc.kill()
        try:
            asyncio.get_running_loop().remove_reader(self.master)
        except Exception:
            pass
        os.close(self.master)


def _readers() -> set[int]:
    selector = asyncio.get_running_loop()._selector  # type: ignore[attr-defined]
    return set(selector.get_map().keys())


async def session_on_disk(workspace: Path, run_dir: Path) -> str:
    """Wait until the lineage names the work session (S11) and sessions.db holds it (S10): a kill now loses nothing."""
    await until(lambda: (run_dir / "lineage.json").exists() and "干活" in lineage(run_dir)["steps"], what="lineage")
    sid = lineage(run_dir)["steps"]["干活"]
    await until(lambda: Runtime(workspace, run_dir).has_session(sid), what="the session in sessions.db")
    return sid


def lineage(run_dir: Path) -> dict:
    return json.loads((run_dir / "lineage.json").read_text())


def judges(model) -> list:
    """The judge's requests (its instructions are in the system prompt)."""
    return [r for r in model.conversation if "You are the judge" in r.system]


def seed_frozen(ws: Path) -> None:
    """Complete 需求.md and 目标.md: clarify and goal definition are frozen and skipped (S17)."""
    (ws / "需求.md").write_text(REQUIREMENTS, encoding="utf-8")
    (ws / "目标.md").write_text(GOALS, encoding="utf-8")


async def first_run_done(model, env, ws: Path, run_dir: Path) -> str:
    """A whole first run, piped; returns the work session id."""
    model.push(*first_run(ws))
    done = await flower(TASK, "-r", str(run_dir), env=env, cwd=ws)
    assert done.code == 0, done.err
    return lineage(run_dir)["steps"]["干活"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ------------------------------------------------------------------------------------ S1, S15, S19


async def test_task_then_a_sentence_then_nothing_continue_one_conversation(model, env, workspace, run_dir):
    model.push(*first_run(workspace))
    first = await flower(TASK, "-r", str(run_dir), env=env, cwd=workspace)
    assert first.code == 0, first.err
    assert "== clarify" in first.out and "== work" in first.out and "judge #1: passed" in first.out
    assert "wake #" not in first.out  # a first run has nothing to resume
    assert "\x1b[" not in first.out + first.err  # quiet when piped: no colours, no live line
    assert "· Write 需求.md" in first.out  # tool calls, one line each
    assert "calc.py written" in first.out  # the assistant's text
    sid = lineage(run_dir)["steps"]["干活"]

    # S15: a sentence at wake lands in the work session, 需求.md, and a re-derived 目标.md.
    model.push(*goals(workspace, GOALS + "- [ ] calc.py multiplies\n"), *work(workspace), *judge())
    before = len(model.conversation)
    second = await flower("also multiply", "-r", str(run_dir), env=env, cwd=workspace)
    assert second.code == 0, second.err
    assert "· wake #2" in second.out and "requirements confirmed · 2 goals" in second.out  # S19 banner
    assert "== work ==============================  3/3  <- resumed · wake #2" in second.out  # S19 header
    assert "also multiply" in (workspace / "需求.md").read_text()
    assert "calc.py multiplies" in (workspace / "目标.md").read_text()
    work_request = next(r for r in model.conversation[before:] if r.session_id == sid)
    assert work_request.last_user_text.endswith(WAKE_SENTENCE.format(sentence="also multiply"))

    # S1: no text continues where it stopped; S15: an empty wake re-derives nothing.
    model.push(*work(workspace), *judge())
    before = len(model.conversation)
    third = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert third.code == 0, third.err
    assert "wake #3" in third.out
    woken = model.conversation[before:]
    assert len(woken) == 3  # two work requests and the judge: no goal definition
    assert woken[0].session_id == sid and woken[0].last_user_text.endswith(WORK_RESUME)
    assert lineage(run_dir) == {"workspace": str(workspace), "woke": 3, "steps": lineage(run_dir)["steps"]}


async def test_kill_9_then_flower_again_resumes_the_same_session(model, env, workspace, run_dir):
    seed_frozen(workspace)
    model.push(Reply(blocks=[say("half way")], hold=True), *work(workspace), *judge())
    proc = await start("-r", str(run_dir), env=env, cwd=workspace)
    try:
        await model.wait_for_requests(1, timeout=60)
        sid = await session_on_disk(workspace, run_dir)
        # D5: while it runs, a second flower here is refused with who holds it.
        busy = await flower("-r", str(run_dir), env=env, cwd=workspace)
        assert busy.code == 3 and f"pid {proc.pid}" in busy.err and "Traceback" not in busy.err
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        await asyncio.wait_for(proc.wait(), 30)
    again = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert again.code == 0, again.err
    assert "wake #2" in again.out and "<- resumed · wake #2" in again.out
    woken = model.conversation[1]
    assert woken.session_id == sid and WORK_PROMPT in woken.text and woken.last_user_text.endswith(WORK_RESUME)
    assert lineage(run_dir)["steps"]["干活"] == sid


async def test_a_task_recorded_but_never_clarified_is_continued_not_asked_again(model, env, workspace, run_dir):
    # A kill before any session id landed leaves only the person's words in 需求.md: `flower` carries on from them.
    (workspace / "需求.md").write_text(f"# 需求\n\n## 请求 Request\n\n{TASK}\n", encoding="utf-8")
    model.push(*clarify(workspace), *goals(workspace), *work(workspace), *judge())
    done = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    assert TASK in model.conversation[0].text and "== clarify" in done.out


async def test_chinese_locale_speaks_the_seeds_strings(model, env, workspace, run_dir):
    await first_run_done(model, env, workspace, run_dir)
    model.push(*work(workspace), *judge())
    done = await flower("-r", str(run_dir), env=env, cwd=workspace, lang="zh")
    assert done.code == 0, done.err
    assert "接上上次  需求已确认 · 目标 2 条" in done.out and "第 2 次唤醒" in done.out
    assert "<- 接上次 · 第 2 次唤醒" in done.out and "判定 #1: 通过" in done.out and "完成" in done.out


# ------------------------------------------------------------------------------------ the wake prompt (S28)


@pytest.mark.parametrize("lang, prompt, banner", [
    ("en", "Continue? Enter = carry on; or say something new; /new = start something else (Ctrl-C to quit)", "wake #2"),
    ("zh", "接着上次? 直接回车 = 接着做;也可以说点新的;/new = 重开一件事(Ctrl-C 退出)", "第 2 次唤醒"),
])
async def test_enter_at_the_wake_prompt_carries_on(model, env, workspace, run_dir, lang, prompt, banner):
    sid = await first_run_done(model, env, workspace, run_dir)
    model.push(*work(workspace), *judge())
    before = len(model.conversation)
    term = await Terminal.open("-r", str(run_dir), env=env, cwd=workspace, lang=lang)
    try:
        await term.expect(prompt)
        term.type("")
        await term.expect(banner)
        assert await term.wait() == 0, term.screen
    finally:
        term.close()
    woken = model.conversation[before:]
    assert len(woken) == 3 and woken[0].session_id == sid and woken[0].last_user_text.endswith(WORK_RESUME)


async def test_text_at_the_wake_prompt_is_a_wake_sentence(model, env, workspace, run_dir):
    sid = await first_run_done(model, env, workspace, run_dir)
    model.push(*goals(workspace), *work(workspace), *judge())
    term = await Terminal.open("-r", str(run_dir), env=env, cwd=workspace)
    try:
        await term.expect("Continue?")
        term.type("handle division by zero")
        await term.expect("wake #2")
        assert await term.wait() == 0, term.screen
    finally:
        term.close()
    assert "handle division by zero" in (workspace / "需求.md").read_text()
    assert any(r.session_id == sid and r.last_user_text.endswith(WAKE_SENTENCE.format(sentence="handle division by zero"))
               for r in model.conversation)


async def test_slash_new_at_the_wake_prompt_archives_and_starts_over(model, env, workspace, run_dir):
    old = await first_run_done(model, env, workspace, run_dir)
    old_requirements = (workspace / "需求.md").read_text()
    model.push(*first_run(workspace))
    before = len(model.conversation)
    term = await Terminal.open("-r", str(run_dir), env=env, cwd=workspace)
    try:
        await term.expect("Continue?")
        term.type("/new")
        await term.expect("What should it do? One sentence is enough; Enter to start (Ctrl-C to quit)")
        term.type("write the docs")
        await term.expect("== clarify")
        assert await term.wait() == 0, term.screen
    finally:
        term.close()
    assert "wake #" not in term.screen
    archived = list((workspace / "notes" / "archive").iterdir())
    assert len(archived) == 1
    assert {p.name for p in archived[0].iterdir()} == {"lineage.json", "需求.md", "目标.md"}
    assert (archived[0] / "需求.md").read_text() == old_requirements
    assert json.loads((archived[0] / "lineage.json").read_text())["steps"]["干活"] == old
    assert "write the docs" in model.conversation[before].last_user_text
    assert lineage(run_dir)["woke"] == 1 and lineage(run_dir)["steps"]["干活"] != old


async def test_nothing_ran_here_asks_what_to_do_on_a_terminal(model, env, workspace, run_dir):
    model.push(*first_run(workspace))
    term = await Terminal.open("-r", str(run_dir), env=env, cwd=workspace, lang="zh")
    try:
        await term.expect("要做什么? 一句话就够,回车开始(Ctrl-C 退出)")
        term.type(TASK)
        await term.expect("判定 #1: 通过")
        assert await term.wait() == 0, term.screen
    finally:
        term.close()
    assert TASK in model.conversation[0].last_user_text


async def test_clarify_question_is_answered_at_the_terminal(model, env, workspace, run_dir):
    model.push(text("Which operations should it support?"), *clarify(workspace), *goals(workspace), *work(workspace), *judge())
    term = await Terminal.open(TASK, "-r", str(run_dir), env=env, cwd=workspace)
    try:
        await term.expect("Which operations should it support?")
        await term.expect("Your answer")
        term.type("add and subtract only")
        await term.expect("judge #1: passed")
        assert await term.wait() == 0, term.screen
        # The clarify session this wake began goes on after the answer: nothing was resumed (issue #25).
        assert "resumed" not in term.screen, term.screen
    finally:
        term.close()
    answered = model.conversation[1]
    assert answered.session_id == model.conversation[0].session_id
    assert answered.last_user_text.strip() == "add and subtract only"


async def test_a_line_typed_while_it_works_reaches_the_work_session(model, env, workspace, run_dir):
    seed_frozen(workspace)
    model.push(Reply(blocks=[say("half way")], hold=True), *judge(), *goals(workspace), *work(workspace), *judge())
    term = await Terminal.open("-r", str(run_dir), env=env, cwd=workspace)
    try:
        await term.expect("Continue?")
        term.type("")
        await model.wait_for_requests(1, timeout=60)
        term.type("also handle negatives")
        await term.expect("queued for the work session: also handle negatives")
        model.release()
        await term.expect("done")
        assert await term.wait() == 0, term.screen
    finally:
        term.close()
    sid = lineage(run_dir)["steps"]["干活"]
    assert "also handle negatives" in (workspace / "需求.md").read_text()  # S15: recorded with the requirements
    said = [r for r in model.conversation if r.session_id == sid and "also handle negatives" in r.last_user_text]
    assert said, "the work session never received the sentence"


async def test_ctrl_c_exits_130_and_flower_again_continues(model, env, workspace, run_dir):
    seed_frozen(workspace)
    model.push(Reply(blocks=[say("half way")], hold=True), *work(workspace), *judge())
    term = await Terminal.open("-r", str(run_dir), env=env, cwd=workspace)
    try:
        await term.expect("Continue?")
        term.type("")
        await model.wait_for_requests(1, timeout=60)
        await session_on_disk(workspace, run_dir)
        term.ctrl_c()
        assert await term.wait(timeout=30) == 130
    finally:
        term.close()
    assert "Interrupted. Run `flower` here again to continue" in term.screen and "Traceback" not in term.screen
    sid = lineage(run_dir)["steps"]["干活"]
    again = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert again.code == 0, again.err
    assert "wake #2" in again.out and model.conversation[1].session_id == sid


# ------------------------------------------------------------------------------------ flags


async def test_new_flag_archives_and_starts_the_text_as_a_new_task(model, env, workspace, run_dir):
    old = await first_run_done(model, env, workspace, run_dir)
    model.push(*first_run(workspace))
    before = len(model.conversation)
    done = await flower("--new", "write the docs", "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    assert "archived the previous task" in done.out and "wake #" not in done.out
    archive = next((workspace / "notes" / "archive").iterdir())
    assert json.loads((archive / "lineage.json").read_text())["steps"]["干活"] == old
    assert (archive / "需求.md").exists() and (archive / "目标.md").exists()
    assert "write the docs" in model.conversation[before].last_user_text
    assert lineage(run_dir)["woke"] == 1
    assert (run_dir / "sessions.db").exists()  # S28: the archive of transcripts is not touched


async def test_new_flag_without_text_when_piped_is_a_usage_error(env, workspace, run_dir):
    done = await flower("--new", "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 2 and "new task" in done.err and len(done.err.strip().splitlines()) == 1


async def test_rounds_caps_work_rounds_and_resets_every_wake(model, env, workspace, run_dir):
    seed_frozen(workspace)
    model.push(*work(workspace), *judge(False, "adds is missing"), *work(workspace), *judge(False, "still missing"))
    capped = await flower("--rounds", "2", "-r", str(run_dir), env=env, cwd=workspace)
    assert capped.code == 1
    assert len(judges(model)) == 2
    assert capped.err.strip().splitlines()[-1].startswith("flower: the judge did not pass the work in 2 rounds")
    assert "judge #2: not passed — still missing" in capped.out
    # S27: a new wake is a new intent: the count starts again (one more round is allowed, not zero).
    model.push(*work(workspace), *judge())
    again = await flower("--rounds", "1", "-r", str(run_dir), env=env, cwd=workspace)
    assert again.code == 0, again.err
    assert len(judges(model)) == 3


async def test_trim_is_on_by_default_and_no_trim_keeps_results_resident(model, env, workspace, run_dir):
    seed_frozen(workspace)
    big = workspace / "big.log"
    big.write_text("".join(f"line {n:04d} MARKER-{n:04d} " + "x" * 40 + "\n" for n in range(600)))
    model.push(
        tool("Read", {"file_path": str(big)}),
        tool("Write", {"file_path": str(workspace / "a.txt"), "content": "a"}),
        tool("Write", {"file_path": str(workspace / "b.txt"), "content": "b"}),
        text("read and noted"), *judge(),
    )
    first = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert first.code == 0, first.err
    sid = lineage(run_dir)["steps"]["干活"]

    model.push(*work(workspace), *judge())
    before = len(model.conversation)
    kept = await flower("--no-trim", "-r", str(run_dir), env=env, cwd=workspace)
    assert kept.code == 0, kept.err
    resumed = model.conversation[before]
    assert resumed.session_id == sid and "MARKER-0599" in resumed.text and "[trimmed:" not in resumed.text

    model.push(*work(workspace), *judge())
    before = len(model.conversation)
    trimmed = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert trimmed.code == 0, trimmed.err
    resumed = model.conversation[before]
    assert resumed.session_id == sid and "MARKER-0599" not in resumed.text and "[trimmed:" in resumed.text
    assert any("MARKER-0599" in p.read_text() for p in (run_dir / "spill").iterdir())  # not lost, only not resident


async def test_run_dir_defaults_to_runs_of_the_current_directory_and_r_picks_another(model, env, workspace, tmp_path):
    model.push(*first_run(workspace))
    default = await flower(TASK, env=env, cwd=workspace)
    assert default.code == 0, default.err
    runs = workspace / "runs"
    assert {p.name for p in runs.iterdir()} >= {"lineage.json", "manifest.json", "sessions.db"}  # S4
    original = (runs / "lineage.json").read_bytes()
    other = tmp_path / "elsewhere"
    model.push(*work(workspace), *judge())
    moved = await flower("--run-dir", str(other), env=env, cwd=workspace)
    assert moved.code == 0, moved.err
    assert lineage(other)["woke"] == 1  # S13: another run_dir does not resume
    assert lineage(other)["steps"]["干活"] != json.loads(original)["steps"]["干活"]
    assert (runs / "lineage.json").read_bytes() == original


async def test_once_prints_reply_and_session_and_resume_carries_the_history(model, env, workspace, run_dir):
    model.push(text("I will remember PERIWINKLE"), text("The word was PERIWINKLE"))
    timed = {**env, "PYTHONPROFILEIMPORTTIME": "1"}
    first = await flower("once", "remember the word PERIWINKLE", "-r", str(run_dir), env=timed, cwd=workspace)
    assert first.code == 0, first.err
    # One turn through the Runtime: the workflow's service is never made, so its module is never even imported.
    loaded = {ln.rsplit("|", 1)[1].strip() for ln in first.err.splitlines() if ln.startswith("import time:")}
    assert "flower.runtime" in loaded and "flower.service" not in loaded
    assert "I will remember PERIWINKLE" in first.out
    sid = re.search(r"^session: (\S+)$", first.out, re.MULTILINE).group(1)
    second = await flower("once", "--resume", sid, "what was the word?", "-r", str(run_dir), env=env, cwd=workspace)
    assert second.code == 0, second.err
    assert "The word was PERIWINKLE" in second.out and f"session: {sid}" in second.out
    seen = model.last
    assert seen.session_id == sid and "remember the word PERIWINKLE" in seen.text
    assert "I will remember PERIWINKLE" in seen.texts("assistant")
    assert not (run_dir / "lineage.json").exists()  # S29: no workflow, no lineage


async def test_once_resume_of_an_unknown_session_is_a_usage_error(env, workspace, run_dir):
    done = await flower("once", "--resume", "no-such-session", "hi", "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 2 and "no session no-such-session" in done.err and "Traceback" not in done.err


async def test_status_shows_what_the_next_run_resumes(model, env, workspace, run_dir):
    sid = await first_run_done(model, env, workspace, run_dir)
    shown = await flower("status", "-r", str(run_dir), env=env, cwd=workspace)
    assert shown.code == 0, shown.err
    assert "the next run resumes (wake #2)" in shown.out and sid in shown.out and "goals 0/2 done" in shown.out
    data = json.loads((await flower("status", "--json", "-r", str(run_dir), env=env, cwd=workspace)).out)
    assert data["woke"] == 1 and data["steps"]["干活"] == sid and len(data["goals"]) == 2
    # The store's size on disk (#26): no flower process runs, so it is the file alone (its WAL checkpointed away; the
    # -shm a read-only status leaves beside it holds no entry and is not counted), the same for every status.
    files = [f for f in run_dir.glob("sessions.db*") if not f.name.endswith("-shm")]
    assert data["store_bytes"] == sum(f.stat().st_size for f in files) > 16384
    assert f"store     {data['store_bytes'] / 1e6:.1f} MB on disk" in shown.out


async def test_demo_runs_to_the_end_offline(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES") and not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    proc = await asyncio.create_subprocess_exec(
        str(FLOWER), "demo", cwd=tmp_path, env={**env, "LANG": "C.UTF-8"},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, start_new_session=True,
    )
    out, err = await asyncio.wait_for(proc.communicate(), 300)
    shown = out.decode()
    assert proc.returncode == 0, shown + err.decode()
    assert "killed (kill -9)" in shown and "· wake #2" in shown and "<- resumed · wake #2" in shown
    assert "judge #1: passed" in shown and "What happened:" in shown


# ------------------------------------------------------------------------------------ bad input, expected failures


@pytest.mark.parametrize("args, fragment", [
    (["--frobnicate", TASK], "--frobnicate"),
    (["--rounds", "0", TASK], "--rounds: must be at least 1"),
    (["--rounds", "-3", TASK], "--rounds: must be at least 1"),
    (["--rounds", "many", TASK], "--rounds: takes a whole number"),
    (["once"], "prompt"),
    (["status", "--frobnicate"], "--frobnicate"),
])
async def test_bad_input_is_one_clear_line_and_exit_2_with_nothing_written(env, workspace, args, fragment):
    (workspace / "keep.txt").write_text("mine")
    done = await flower(*args, env=env, cwd=workspace)
    assert done.code == 2
    lines = done.err.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("flower: ") and fragment in lines[0], done.err
    assert sorted(p.name for p in workspace.iterdir()) == ["keep.txt"]


async def test_output_piped_into_a_reader_that_left_ends_quietly(env, workspace, run_dir):
    # `flower status | head -1`: the reader closes its end; the command stops with the shell's code, no crash line.
    read, write = os.pipe()
    os.close(read)
    try:
        done = await asyncio.to_thread(subprocess.run, [str(FLOWER), "status"], cwd=workspace, env=cli_env(env),
                                       stdin=subprocess.DEVNULL, stdout=write, stderr=subprocess.PIPE, timeout=60)
    finally:
        os.close(write)
    assert done.returncode == 128 + signal.SIGPIPE and done.stderr == b""
    assert not list(run_dir.glob("**/crash*")) and not list(run_dir.glob("**/*.log"))


async def test_nothing_to_continue_when_piped_is_exit_2(env, workspace, run_dir):
    done = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 2 and "nothing to continue here" in done.err and len(done.err.strip().splitlines()) == 1
    assert not run_dir.exists()
    here = await flower(env=env, cwd=workspace)  # the default run dir, runs/ in the folder (issue 34)
    assert here.code == 2 and "nothing to continue here" in here.err
    assert list(workspace.iterdir()) == []  # nothing to continue writes nothing: no empty runs/ left behind


async def test_unwritable_run_dir_is_a_clear_message_and_nothing_is_lost(model, env, workspace, run_dir, tmp_path):
    # Under a regular file: the directory cannot exist at all.
    blocker = tmp_path / "a-file"
    blocker.write_text("mine")
    done = await flower(TASK, "-r", str(blocker / "runs"), env=env, cwd=workspace)
    assert done.code == 2 and "cannot write the run dir" in done.err and "-r DIR" in done.err
    assert blocker.read_text() == "mine"
    # An existing run dir that refuses writes (immutable; root ignores permission bits).
    await first_run_done(model, env, workspace, run_dir)
    files = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    subprocess.run(["chattr", "+i", str(run_dir)], check=True)
    try:
        refused = await flower("more", "-r", str(run_dir), env=env, cwd=workspace)
    finally:
        subprocess.run(["chattr", "-i", str(run_dir)], check=True)
    assert refused.code == 2 and "cannot write the run dir" in refused.err and "Traceback" not in refused.err
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == files


async def test_corrupt_lineage_is_named_kept_aside_and_work_goes_on(model, env, workspace, run_dir):
    seed_frozen(workspace)
    run_dir.mkdir()
    garbage = b'{"workspace": "/x", "woke": 3, "steps": {"work": '
    (run_dir / "lineage.json").write_bytes(garbage)
    model.push(*work(workspace), *judge())
    done = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    assert "lineage.json" in done.err and "aside" in done.err and "Traceback" not in done.err
    kept = list(run_dir.glob("lineage.json.corrupt-*"))
    assert len(kept) == 1 and kept[0].read_bytes() == garbage
    assert lineage(run_dir)["woke"] == 1


async def test_unusable_sessions_db_is_one_line_and_left_as_it_is(model, env, workspace, run_dir):
    run_dir.mkdir()
    junk = b"not a database " * 100
    (run_dir / "sessions.db").write_bytes(junk)
    model.push(*first_run(workspace))
    done = await flower(TASK, "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 1 and "Traceback" not in done.err
    assert done.err.strip().splitlines()[-1].startswith("flower: ") and "sessions.db is not a usable SQLite database" in done.err
    assert (run_dir / "sessions.db").read_bytes() == junk


async def test_missing_api_key_is_one_line_without_traceback(workspace, run_dir, tmp_path):
    env = {"CLAUDE_CONFIG_DIR": str(tmp_path / "empty-config")}
    done = await flower(TASK, "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 2  # bad input, as the README's exit codes say (issue 34)
    assert not run_dir.exists()  # nothing ran: no empty run dir left behind (issue 34)
    assert "ANTHROPIC_API_KEY" in done.err and "flower demo" in done.err and "Traceback" not in done.err


async def test_unreachable_endpoint_shows_the_wait_and_ctrl_c_exits_130(env, workspace, run_dir):
    seed_frozen(workspace)
    port = free_port()
    proc = await asyncio.create_subprocess_exec(
        str(FLOWER), "-r", str(run_dir), cwd=workspace,
        env=cli_env({**env, "ANTHROPIC_BASE_URL": f"http://127.0.0.1:{port}"}),
        stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    shown = b""
    try:
        while b", waiting for 127.0.0.1:%d to answer" % port not in shown:
            line = await asyncio.wait_for(proc.stdout.readline(), 60)
            assert line, f"flower ended before waiting: {shown.decode()}"
            shown += line
        proc.send_signal(signal.SIGINT)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
    finally:
        if proc.returncode is None:
            proc.kill()
            await proc.wait()
    assert proc.returncode == 130
    assert "Interrupted. Run `flower` here again" in err.decode() and "Traceback" not in err.decode()
