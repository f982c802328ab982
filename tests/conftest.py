"""Shared fixtures: the scripted model server, a workspace, and env that points the real CLI at it."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from pathlib import Path

import pytest

from flower.testing import ScriptedModel
from pg import pg, pg_url  # noqa: F401 - fixtures: a real PostgreSQL (tests/pg.py)

ROOT = Path(__file__).resolve().parent.parent
"""The repository."""
PROGRAMS = Path(__file__).parent / "programs"

# The tests send Ctrl-C and SIGHUP to the processes they start. A runner that starts the suite in
# the background (SIGINT ignored) or under nohup (SIGHUP ignored) would pass that "ignore" on to
# them, since an ignored disposition survives exec: give this process, and so them, the defaults.
signal.signal(signal.SIGINT, signal.default_int_handler)
signal.signal(signal.SIGHUP, signal.SIG_DFL)


@pytest.fixture
async def model():
    """A scripted model server on 127.0.0.1; push replies with `model.push(...)`."""
    async with ScriptedModel() as server:
        yield server


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    """An empty workspace folder."""
    path = tmp_path / "ws"
    path.mkdir()
    return path


@pytest.fixture
def run_dir(tmp_path: Path) -> Path:
    """The run_dir (`runs/`), outside the workspace as S4 allows."""
    return tmp_path / "runs"


@pytest.fixture
def env(model: ScriptedModel, tmp_path: Path) -> dict[str, str]:
    """Env for the CLI: offline against the scripted model, no retries inside the CLI (D1)."""
    config = tmp_path / "claude-config"
    config.mkdir(exist_ok=True)
    # An empty HOME: the CLI's Bash tool then sources no ~/.bashrc. This machine's runs `pyenv rehash`, whose lock a
    # kill mid-command leaves behind, and every later shell would print the lock's complaint into tool results.
    home = tmp_path / "home"
    home.mkdir(exist_ok=True)
    # flower's own trust record (D10) lives under XDG_CONFIG_HOME: the test's, never the machine's.
    return {**model.env(config), "CLAUDE_CODE_MAX_RETRIES": "0", "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config")}


async def run_program(name: str, args: dict, env: dict[str, str], cwd: Path, timeout: float = 90.0) -> dict:
    """Run `tests/programs/<name>.py` as a separate process with JSON args; return its JSON output (last line)."""
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(PROGRAMS / f"{name}.py"), json.dumps(args),
        cwd=cwd, env={**os.environ, **env},
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    out, err = await asyncio.wait_for(proc.communicate(), timeout)
    assert proc.returncode == 0, f"{name} exited {proc.returncode}: {err.decode()[-3000:]}"
    return json.loads(out.decode().strip().splitlines()[-1])


async def start_program(name: str, args: dict, env: dict[str, str], cwd: Path) -> asyncio.subprocess.Process:
    """Start `tests/programs/<name>.py` in its own process group without waiting (for kills mid-step)."""
    return await asyncio.create_subprocess_exec(
        sys.executable, str(PROGRAMS / f"{name}.py"), json.dumps(args),
        cwd=cwd, env={**os.environ, **env}, start_new_session=True,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )


async def kill_group(proc: asyncio.subprocess.Process, sig: int = signal.SIGKILL, timeout: float = 20.0) -> None:
    """Signal the program and its children (the CLI) as a terminal would, and wait for it to end."""
    os.killpg(proc.pid, sig)
    await asyncio.wait_for(proc.wait(), timeout)


async def until(condition, timeout: float = 20.0, what: str = "condition") -> None:
    """Poll `condition()` until true, failing after `timeout` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        assert loop.time() < deadline, f"timed out waiting for {what}"
        await asyncio.sleep(0.05)


def descriptors(prefix: Path) -> list[str]:
    """The paths this process has open whose path starts with `prefix` (one per descriptor), read from Linux's /proc."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:  # the descriptor listdir itself used, closed since
            continue
        if target.startswith(str(prefix)):
            found.append(target)
    return sorted(found)
