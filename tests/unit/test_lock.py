"""One writer per workspace (D5): a second driver refuses naming the holder; a dead holder blocks nobody."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from flower.core.lock import WorkspaceBusy, WorkspaceLock, exclusive

HOLDER = r"""
import sys, time
from flower.core.lock import WorkspaceLock
lock = WorkspaceLock(sys.argv[1]).acquire()
print("held", flush=True)
time.sleep(600)
"""


@pytest.fixture
def holder(tmp_path: Path):
    """A separate process holding the lock on tmp_path/runs; killed -9 at teardown if still alive."""
    run_dir = tmp_path / "runs"
    p = subprocess.Popen([sys.executable, "-c", HOLDER, str(run_dir)], stdout=subprocess.PIPE, text=True)
    try:
        assert p.stdout.readline().strip() == "held"
        yield p, run_dir
    finally:
        if p.poll() is None:
            p.kill()
        p.wait(timeout=10)
        p.stdout.close()


def test_second_driver_in_another_process_refuses_naming_the_pid(holder):
    p, run_dir = holder
    with pytest.raises(WorkspaceBusy) as busy:
        WorkspaceLock(run_dir).acquire()
    assert busy.value.pid == p.pid
    assert busy.value.started_at is not None
    message = str(busy.value)
    assert f"pid {p.pid}" in message and "since" in message and "wait" in message and "stop" in message


def test_lock_file_records_pid_and_start_time(tmp_path):
    with WorkspaceLock(tmp_path / "runs") as lock:
        info = json.loads(lock.path.read_text())
        assert info["pid"] == os.getpid() and isinstance(info["started_at"], float)


def test_killed_holder_never_blocks_anyone(holder):
    p, run_dir = holder
    with pytest.raises(WorkspaceBusy):
        WorkspaceLock(run_dir).acquire()
    p.kill()  # SIGKILL: no finally, no atexit; only the OS can let go
    p.wait(timeout=10)
    with WorkspaceLock(run_dir) as lock:
        assert lock.held
        assert json.loads(lock.path.read_text())["pid"] == os.getpid()


def test_second_lock_in_the_same_process_also_refuses(tmp_path):
    first = WorkspaceLock(tmp_path / "runs").acquire()
    try:
        with pytest.raises(WorkspaceBusy) as busy:
            WorkspaceLock(tmp_path / "runs").acquire()
        assert busy.value.pid == os.getpid()
    finally:
        first.release()
    WorkspaceLock(tmp_path / "runs").acquire().release()


def test_release_lets_the_next_one_in_and_keeps_the_file(tmp_path):
    lock = WorkspaceLock(tmp_path / "runs")
    lock.acquire()
    assert lock.acquire() is lock  # idempotent for the holder
    lock.release()
    lock.release()  # idempotent
    assert not lock.held and lock.path.exists()
    with WorkspaceLock(tmp_path / "runs"):
        pass


def test_holder_that_has_not_written_its_pid_yet_is_still_refused_clearly(tmp_path):
    import fcntl

    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    fd = os.open(run_dir / "flower.lock", os.O_RDWR | os.O_CREAT)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        with pytest.raises(WorkspaceBusy) as busy:
            WorkspaceLock(run_dir).acquire()
        assert busy.value.pid is None and "pid unknown" in str(busy.value)
    finally:
        os.close(fd)


def test_exclusive_gives_up_after_its_timeout_and_lets_the_next_in_once_released(tmp_path):
    # The manifest's lock (S8): a stopped holder must not hang a run, and a released one blocks nobody.
    path = tmp_path / "x.lock"
    with exclusive(path, 1):
        with pytest.raises(TimeoutError, match="held by another process"):
            with exclusive(path, 0.05):
                pass
    with exclusive(path, 0):
        pass
    assert path.exists()  # never deleted, like flower.lock
