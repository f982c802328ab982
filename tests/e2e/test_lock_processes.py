"""lock: the tests that run separate processes (moved from tests/unit/test_lock.py)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from flower.core.lock import WorkspaceBusy, WorkspaceLock

SPAWNING_HOLDER = r"""
import subprocess, sys, time
from flower.core.lock import WorkspaceLock
lock = WorkspaceLock(sys.argv[1]).acquire()
agent = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"], close_fds=False)
print(agent.pid, flush=True)
time.sleep(600)
"""


def test_agent_subprocess_outliving_a_killed_flower_does_not_keep_the_lock(tmp_path):
    """The agent CLI that flower starts must not inherit the lock: kill -9 of flower frees the workspace."""
    run_dir = tmp_path / "runs"
    p = subprocess.Popen([sys.executable, "-c", SPAWNING_HOLDER, str(run_dir)], stdout=subprocess.PIPE, text=True)
    agent_pid = None
    try:
        agent_pid = int(p.stdout.readline())
        with pytest.raises(WorkspaceBusy):
            WorkspaceLock(run_dir).acquire()
        p.kill()
        p.wait(timeout=10)
        os.kill(agent_pid, 0)  # the orphaned agent is still alive...
        WorkspaceLock(run_dir).acquire().release()  # ...and the workspace is free
    finally:
        if p.poll() is None:
            p.kill()
            p.wait(timeout=10)
        p.stdout.close()
        if agent_pid:
            os.kill(agent_pid, 9)
