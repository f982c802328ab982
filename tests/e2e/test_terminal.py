"""What a person sees in a real terminal (issue 34), read from tmux's screen (capture-pane), not from a pipe.

The live line is redrawn in place (carriage return, clear line), so only a terminal's own screen shows what is left
on it; tmux is that terminal here.
"""

from __future__ import annotations

import asyncio
import json
import re
import shlex
import shutil
import subprocess
import tempfile
import uuid
from pathlib import Path

import pytest
from test_approvals import bash_ids, result_for, result_text
from test_cli import FLOWER, TASK, cli_env, first_run_done, flower, seed_frozen
from test_engine import TIMEOUT, kill, place, terminal_env  # noqa: F401 - `place` is a fixture

from conftest import until
from flower.cli.console import SPINNER
from flower.core.records import SENTENCES_FILE
from flower.testing import Reply, overloaded, say, text, tool
from flower.workflow.flower import WAKE_SENTENCE
from flowerscript import goals, judge, work

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (apt-get install tmux)")


class Tmux:
    """One detached tmux server of its own (its own socket), a 100×`rows` window running one command."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path, rows: int = 30) -> None:
        self.socket = f"flower-test-{uuid.uuid4().hex[:8]}"
        # The exit status into a file of its own: tmux's #{pane_dead_status} is sometimes left empty for good once the
        # pane's pty closed before the process was reaped.
        self.status = Path(tempfile.mkdtemp(prefix="flower-tmux-")) / "status"
        line = ("env -i " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " + shlex.join(command)
                + f"; echo $? > {shlex.quote(str(self.status))}")
        # remain-on-exit: the screen stays readable after the command ends.
        self._tmux("new-session", "-d", "-x", "100", "-y", str(rows), "-c", str(cwd), line)
        self._tmux("set-option", "-t", "0", "remain-on-exit", "on")

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30,
                              check=True).stdout

    def screen(self, scrollback: bool = False) -> str:
        """The screen as the person sees it now (`scrollback`: with every line that scrolled off the top)."""
        return self._tmux("capture-pane", "-p", "-t", "0", *(("-S", "-") if scrollback else ()))

    def type(self, line: str) -> None:
        """Type `line` (literally) and press Enter."""
        self._tmux("send-keys", "-t", "0", "-l", line)
        self._tmux("send-keys", "-t", "0", "Enter")

    def keys(self, *keys: str) -> None:
        """Press `keys` (tmux key names: `q`, `Space`, `G`), no Enter."""
        self._tmux("send-keys", "-t", "0", *keys)

    def exit_code(self) -> int | None:
        """The command's exit status once it ended (remain-on-exit keeps the pane), else None."""
        try:
            written = self.status.read_text()
        except FileNotFoundError:
            return None
        return int(written) if written.endswith("\n") else None  # the line whole, not half written

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)
        shutil.rmtree(self.status.parent, ignore_errors=True)


@pytest.fixture
def tmux_of():
    opened: list[Tmux] = []

    def start(command: list[str], env: dict[str, str], cwd: Path, rows: int = 30) -> Tmux:
        opened.append(Tmux(command, env, cwd, rows))
        return opened[-1]

    yield start
    for t in opened:
        t.close()


def seconds_waited(screen: str) -> int | None:
    """The live line's count of seconds the model has been waited for, if the screen shows one."""
    found = re.findall(r"goals · waiting for the model · (\d+)s", screen)
    return int(found[-1]) if found else None


async def test_a_model_that_never_answers_shows_the_step_and_the_time_waited_moving(model, env, workspace, run_dir, tmux_of):
    """A server that accepts the request and never answers: the person sees the step and the wait grow, not a still screen."""
    seed_frozen(workspace)
    model.push(text("never sent", hold=True))
    term = tmux_of([str(FLOWER), TASK, "-r", str(run_dir)], cli_env(env, TERM="xterm"), workspace)
    try:
        try:
            await until(lambda: (seconds_waited(term.screen()) or 0) >= 2, 60, "the live line to count the wait")
        except AssertionError:
            raise AssertionError(f"no live line counting the wait; the screen:\n{term.screen()}") from None
        first = seconds_waited(term.screen())
        assert first is not None
        await until(lambda: (seconds_waited(term.screen()) or 0) > first, 10, "the count to move")
        shown = term.screen()
        assert "== goals " in shown  # the step's header above the line
        assert len(re.findall(r"waiting for the model", shown)) == 1, shown  # redrawn in place, not one line per tick
    finally:
        model.release()
        await asyncio.sleep(0)  # let the held reply go before the server closes


async def test_after_the_backoff_the_live_line_waits_for_the_model_again(model, env, workspace, run_dir, tmux_of):
    """The retry is in flight once the backoff ends: the line counts the model's silence, not `retrying in 0s`."""
    seed_frozen(workspace)
    model.push(overloaded(), text("never sent", hold=True))
    term = tmux_of([str(FLOWER), TASK, "-r", str(run_dir)], cli_env(env, TERM="xterm"), workspace)
    try:
        await shows(term, "(attempt 2/6)", "the backoff after the 529")
        try:
            await until(lambda: (seconds_waited(term.screen()) or 0) >= 2, TIMEOUT, "the wait for the retry's answer")
        except AssertionError:
            raise AssertionError(f"no wait for the retried request; the screen:\n{term.screen()}") from None
        assert "retrying in" not in term.screen() and live_rows(term.screen()) == 1
    finally:
        model.release()
        await asyncio.sleep(0)


# -- a sentence typed while attached to the engine's run (issue 34) ------------------------------------------------
SENTENCE = "also handle negatives"
LINE = WAKE_SENTENCE.format(sentence=SENTENCE)
QUEUED = f"received; queued for the work session: {SENTENCE}"
GIVEN = f"the work session gets it in this round: {SENTENCE}"


async def attached_while_the_model_holds_a_round(place, model, workspace, tmux_of, *replies: Reply) -> Tmux:  # noqa: F811
    """The engine runs a frozen folder's work round, its reply held by the model (`replies`, the first held; by default
    "half way"); `flower` attached to it under tmux."""
    seed_frozen(workspace)
    model.push(*(replies or (Reply(blocks=[say("half way")], hold=True),)))
    assert (await place.serve()).returncode == 0
    env = terminal_env(place)
    started = await flower("--detach", env=env, cwd=workspace, timeout=TIMEOUT)
    assert started.code == 0, started.err
    await model.wait_for_requests(1, timeout=TIMEOUT)
    term = tmux_of([str(FLOWER)], cli_env(env, TERM="xterm"), workspace)
    await shows(term, "attached to the run in the flower engine", "the terminal to attach")
    return term


async def shows(term: Tmux, text: str, what: str, scrollback: bool = False) -> None:
    """Wait (bounded) until the terminal shows `text`; the screen in the failure."""
    try:
        await until(lambda: text in term.screen(scrollback), TIMEOUT, what)
    except AssertionError:
        raise AssertionError(f"timed out waiting for {what}; the screen:\n{term.screen(scrollback)}") from None


def pending_sentences(workspace: Path) -> list[str]:
    """The sentences `runs/sentences.json` holds (core/sentences.py): said, not yet in all three places."""
    path = workspace / "runs" / SENTENCES_FILE
    return [row["text"] for row in json.loads(path.read_text())] if path.exists() else []


def received_once(model, workspace: Path) -> None:
    """The work session got the sentence in exactly one request, and no request carried it twice (S15, issue 31)."""
    work_sid = json.loads((workspace / "runs" / "lineage.json").read_text())["steps"]["干活"]
    carrying = [r for r in model.conversation if r.session_id == work_sid and LINE in r.last_user_text]
    assert len(carrying) == 1, [r.last_user_text for r in model.conversation]
    assert all(r.text.count(LINE) <= 1 for r in model.conversation)
    assert (workspace / "需求.md").read_text(encoding="utf-8").count(SENTENCE) == 1  # recorded, once


async def test_a_sentence_typed_while_attached_is_acknowledged_at_once_and_the_model_gets_it_next_round(
        place, model, workspace, tmux_of):  # noqa: F811
    term = await attached_while_the_model_holds_a_round(place, model, workspace, tmux_of)
    try:
        term.type(SENTENCE)
        await shows(term, QUEUED, "the acknowledgment")
        # The turn has not ended (its reply is still held) and the sentence is on disk already: acknowledged at once.
        assert len(model.conversation) == 1 and pending_sentences(workspace) == [SENTENCE]
        assert LINE not in model.conversation[0].text and GIVEN not in term.screen()
        model.push(*judge(), *goals(workspace), *work(workspace), *judge())  # the round ends; then one of its own
        model.release()
        await shows(term, "done · the judge passed it", "the run's end", scrollback=True)
    finally:
        model.release()
    shown = term.screen(scrollback=True)
    # When it reaches the model the terminal says so: under the header of the round that carries it, after the ack.
    assert shown.index(QUEUED) < shown.index("judge #1: passed") < shown.index(GIVEN) < shown.index("done · the judge")
    assert shown.rindex("== work ", 0, shown.index(GIVEN)) > shown.index("judge #1: passed")
    received_once(model, workspace)
    assert len(model.conversation) == 7 and pending_sentences(workspace) == []  # round, judge, goals 2, work 2, judge


async def test_an_attached_terminal_shows_the_live_line_of_the_round_in_flight(place, model, workspace, tmux_of):  # noqa: F811
    term = await attached_while_the_model_holds_a_round(place, model, workspace, tmux_of)
    try:
        waited = re.compile(r"work · [^\n]*waiting for the model · (\d+)s")
        await until(lambda: waited.search(term.screen()), TIMEOUT, "the live line of the attached run")
        first = int(waited.findall(term.screen())[-1])
        await until(lambda: int((waited.findall(term.screen()) or ["0"])[-1]) > first, 10, "the count to move")
        assert len(waited.findall(term.screen())) == 1  # redrawn in place
    finally:
        model.release()
        await asyncio.sleep(0)


async def test_a_sentence_acknowledged_before_the_engine_dies_reaches_the_model_at_the_next_wake(
        place, model, workspace, tmux_of):  # noqa: F811
    term = await attached_while_the_model_holds_a_round(place, model, workspace, tmux_of)
    try:
        term.type(SENTENCE)
        await shows(term, QUEUED, "the acknowledgment")
        pid = place.pid()
        assert pid is not None
        kill(pid)  # kill -9 the engine and its agent CLI, between the acknowledgment and the next round
        await shows(term, "the flower engine went away", "the terminal to say the engine left")
    finally:
        model.release()
    assert pending_sentences(workspace) == [SENTENCE]  # nothing typed is lost (issue 31)
    model.push(*goals(workspace), *work(workspace), *judge())
    again = await flower(env=terminal_env(place), cwd=workspace, timeout=TIMEOUT * 2)  # no engine answers: runs here
    assert again.code == 0, again.out + again.err
    assert GIVEN in again.out and "Traceback" not in again.out + again.err
    received_once(model, workspace)
    assert pending_sentences(workspace) == []


# -- `flower log` on a terminal: paged (issue 34) -------------------------------------------------------------------
@pytest.mark.skipif(shutil.which("less") is None, reason="the default pager is less (apt-get install less)")
async def test_the_log_on_a_terminal_is_paged_by_less_and_q_leaves_it(model, env, workspace, run_dir, tmux_of):
    await first_run_done(model, env, workspace, run_dir)
    # PAGER empty and LESS unset: flower's own choice of pager (`less -R -F -X`), in a window shorter than the log.
    term = tmux_of([str(FLOWER), "log", "-r", str(run_dir)], cli_env(env, TERM="xterm", PAGER="", LESS=""), workspace,
                   rows=12)
    await shows(term, "== clarify", "the log's first page")
    await until(lambda: term.screen().rstrip().endswith(":"), TIMEOUT, "less's prompt at the foot of the page")
    first = term.screen()
    assert first.lstrip().startswith("== clarify") and "VERDICT: PASS" not in first, first  # one page, from the top
    assert term.exit_code() is None  # the pager holds the screen until the person leaves it
    term.keys("G")  # to the end, as in any `less`
    await shows(term, "VERDICT: PASS", "the log's last page")
    term.keys("q")
    try:
        await until(lambda: term.exit_code() is not None, TIMEOUT, "flower log to end when the pager is left")
    except AssertionError:
        raise AssertionError(f"flower log went on after q; the screen:\n{term.screen()}") from None
    assert term.exit_code() == 0 and "Traceback" not in term.screen(scrollback=True)


# -- an outage, then an overloaded model: the live line's countdown and attempt move (issue 34) ---------------------
def live_rows(screen: str) -> int:
    """The rows of the screen that start with the live line's spinner: one while a line is live."""
    return sum(1 for row in screen.splitlines() if row and row[0] in SPINNER)


# The step first, as every live line names it (the requirements frozen: the outage meets the goals step).
OFFLINE = re.compile(r"goals · offline for (\w+), waiting for 127\.0\.0\.1:\d+ to answer · next probe in (\d+)s")
BACKOFF = re.compile(r"goals · retrying in (\d+)s \(attempt (\d+)/6\)")


async def test_an_outage_counts_down_to_the_next_probe_then_the_attempt_advances_and_the_run_finishes(
        model, env, workspace, run_dir, tmux_of):
    seed_frozen(workspace)
    await model.stop()  # refused connections: the CLI's first attempt fails and flower waits for the endpoint (S20)
    model.push(overloaded(), *goals(workspace), *work(workspace), *judge())  # back online, a 529 first: one more backoff
    term = tmux_of([str(FLOWER), TASK, "-r", str(run_dir)], cli_env(env, TERM="xterm"), workspace)
    probes: set[int] = set()

    def probe_in() -> bool:
        probes.update(int(n) for _, n in OFFLINE.findall(term.screen()))
        return len(probes) >= 2

    try:
        await until(probe_in, TIMEOUT, "the live line to count down to the next probe")
    except AssertionError:
        raise AssertionError(f"no countdown to the next probe ({probes}); the screen:\n{term.screen()}") from None
    assert len(OFFLINE.findall(term.screen())) == 1  # one line redrawn in place, not a line per second
    assert live_rows(term.screen()) == 1  # cut to the window's width: a wrapped line would leave a row at each redraw
    await model.start()
    attempts: set[int] = set()

    def attempt() -> bool:
        attempts.update(int(a) for _, a in BACKOFF.findall(term.screen()))
        return {2, 3} <= attempts

    try:
        await until(attempt, TIMEOUT, "the attempt to advance")  # after the outage 2/6, after the 529 3/6
    except AssertionError:
        raise AssertionError(f"attempts seen {attempts}; the screen:\n{term.screen()}") from None
    assert live_rows(term.screen()) == 1, term.screen()  # one row, however long the error it names
    await shows(term, "done · the judge passed it", "the run's end", scrollback=True)
    await until(lambda: term.exit_code() is not None, TIMEOUT, "flower to exit")
    assert term.exit_code() == 0
    shown = term.screen(scrollback=True)
    assert "Traceback" not in shown and not OFFLINE.search(shown) and not BACKOFF.search(shown)  # the line cleared


# -- a tool call waiting for the person's approval: the live line says so, below the prompt (issue 34) --------------
ASKED = re.compile(r"work · waiting for your approval · (\d+)s")


def asked_for(screen: str) -> int | None:
    found = ASKED.findall(screen)
    return int(found[-1]) if found else None


async def test_an_approval_waiting_shows_the_wait_below_the_prompt_and_leaves_the_prompt_and_the_typing_alone(
        model, env, workspace, run_dir, tmux_of):
    seed_frozen(workspace)
    (workspace / ".flower.toml").write_text('allow = ["Read", "Write", "Edit", "Glob", "Grep"]\n')  # Bash is asked
    command = 'sh -c "touch ran.txt"'  # short: the prompt on one row of the window (the folder is the shell's cwd)
    model.push(tool("Bash", {"command": command}), text("went on without it"), *judge())
    term = tmux_of([str(FLOWER), "-r", str(run_dir)], cli_env(env, TERM="xterm"), workspace)
    await shows(term, "Continue? Enter = carry on", "the wake prompt")
    term.keys("Enter")
    prompt = f"Allow Bash: {command}? [y]es/[a]lways/[N]o:"
    await shows(term, prompt, "the approval question")
    try:
        await until(lambda: (asked_for(term.screen()) or 0) >= 1, TIMEOUT, "the live line to count the person's wait")
    except AssertionError:
        raise AssertionError(f"no live line for the approval; the screen:\n{term.screen()}") from None
    term.keys("-l", "n not n")  # typing, not yet Enter: the redraws below must leave it be
    first = asked_for(term.screen()) or 0
    await until(lambda: (asked_for(term.screen()) or 0) > first, 10, "the count to move while they type")
    rows = term.screen().splitlines()
    [at] = [i for i, row in enumerate(rows) if prompt in row]
    assert rows[at].rstrip().endswith(f"{prompt} n not n"), rows[at]  # the prompt and the typing as they were
    assert ASKED.search(rows[at + 1]) and live_rows(term.screen()) == 1, term.screen()  # the row below, once
    term.keys("-l", "ow")
    term.keys("Enter")
    await shows(term, "done · the judge passed it", "the run's end", scrollback=True)
    await until(lambda: term.exit_code() is not None, TIMEOUT, "flower to exit")
    shown = term.screen(scrollback=True)
    assert term.exit_code() == 0 and "waiting for your approval" not in shown, shown  # gone once answered
    assert f"{prompt} n not now\n" in shown and not (workspace / "ran.txt").exists()
    assert "not now" in result_text(result_for(model, bash_ids(model)[0]))  # the reason typed reached the model


async def test_an_attached_terminal_asks_the_engine_runs_tool_question_with_its_wait_below_and_the_answer_runs_it(
        place, model, workspace, tmux_of):  # noqa: F811
    """`flower` attached to the engine's run (issue 31) asks its tool question on the screen as a foreground run does:
    the question on its row, the wait counted below it, `y` runs the tool and the line goes."""
    (workspace / ".flower.toml").write_text('allow = ["Read", "Write", "Edit", "Glob", "Grep"]\n')  # Bash is asked
    command = 'sh -c "touch ran.txt"'  # short: the question on one row of the 100-column window
    term = await attached_while_the_model_holds_a_round(place, model, workspace, tmux_of,
                                                        tool("Bash", {"command": command}, hold=True), text("carried on"), *judge())
    try:
        model.release()  # the question comes to the terminal attached, not before
        prompt = f"Allow Bash: {command}? [y]es/[a]lways/[N]o:"
        await shows(term, prompt, "the approval question")
        await until(lambda: (asked_for(term.screen()) or 0) >= 1, TIMEOUT, "the live line to count the wait")
        first = asked_for(term.screen()) or 0
        await until(lambda: (asked_for(term.screen()) or 0) > first, 10, "the count to move")
        rows = term.screen().splitlines()
        [at] = [i for i, row in enumerate(rows) if prompt in row]
        assert rows[at].rstrip().endswith(prompt), rows[at]  # the question whole on its row, the cursor after it
        assert ASKED.search(rows[at + 1]) and live_rows(term.screen()) == 1, term.screen()  # the wait below, once
        assert not (workspace / "ran.txt").exists()  # nothing ran before the answer
        term.type("y")
        await shows(term, "done · the judge passed it", "the run's end", scrollback=True)
        await until(lambda: term.exit_code() is not None, TIMEOUT, "flower to exit")
    finally:
        model.release()
    shown = term.screen(scrollback=True)
    assert term.exit_code() == 0, shown
    assert f"{prompt} y\n" in shown and "waiting for your approval" not in shown, shown  # the answer stays, the wait goes
    assert (workspace / "ran.txt").exists() and "Traceback" not in shown
