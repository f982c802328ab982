"""What a person sees in a real terminal (issue 34), read from tmux's screen (capture-pane), not from a pipe.

The live line is redrawn in place (carriage return, clear line), so only a terminal's own screen shows what is left
on it; tmux is that terminal here.
"""

from __future__ import annotations

import asyncio
import re
import shlex
import shutil
import subprocess
import uuid
from pathlib import Path

import pytest
from test_cli import FLOWER, TASK, cli_env, seed_frozen

from conftest import until
from flower.testing import text

pytestmark = pytest.mark.skipif(shutil.which("tmux") is None, reason="needs tmux (apt-get install tmux)")


class Tmux:
    """One detached tmux server of its own (its own socket), a 100×30 window running one command."""

    def __init__(self, command: list[str], env: dict[str, str], cwd: Path) -> None:
        self.socket = f"flower-test-{uuid.uuid4().hex[:8]}"
        line = "env -i " + " ".join(shlex.quote(f"{k}={v}") for k, v in env.items()) + " " + shlex.join(command)
        # remain-on-exit: the screen stays readable after the command ends.
        self._tmux("new-session", "-d", "-x", "100", "-y", "30", "-c", str(cwd), line)
        self._tmux("set-option", "-t", "0", "remain-on-exit", "on")

    def _tmux(self, *args: str) -> str:
        return subprocess.run(["tmux", "-L", self.socket, *args], capture_output=True, text=True, timeout=30,
                              check=True).stdout

    def screen(self) -> str:
        """The screen as the person sees it now."""
        return self._tmux("capture-pane", "-p", "-t", "0")

    def close(self) -> None:
        subprocess.run(["tmux", "-L", self.socket, "kill-server"], capture_output=True, timeout=30)


@pytest.fixture
def tmux_of():
    opened: list[Tmux] = []

    def start(command: list[str], env: dict[str, str], cwd: Path) -> Tmux:
        opened.append(Tmux(command, env, cwd))
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
