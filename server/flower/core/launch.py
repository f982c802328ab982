"""The agent CLI's launcher (D5, issue #31): records the CLI's pid and start time, ties it to its flower, then becomes it.

Run as `python -I -S launch.py <the CLI's arguments>` by the `cli_path` script flower hands the SDK (core/children.py
writes both). Stdlib only and never imported by flower: it runs before the CLI in every agent start, so it must
cost milliseconds. `exec` keeps the pid, so the record written here names the CLI process itself.

On Linux it asks the kernel to SIGKILL it when its parent dies (PR_SET_PDEATHSIG, kept across exec): a flower killed
alone (a crashed terminal, the OOM killer, kill -9) takes its CLI with it, and no orphan sends the model one more
request. The signal fires when the parent *thread* that forked it exits; flower starts CLIs from its event loop's
thread, which lives as long as the process. Elsewhere the record lets the next wake end an orphan.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

CLI = "FLOWER_CLI"
"""The real CLI to exec."""
RECORD = "FLOWER_CLI_RECORD"
"""Where to write this CLI's record (a path under `<run_dir>/clis/`)."""
SESSION = "FLOWER_CLI_SESSION"
"""The session it resumes, when it resumes one."""
PR_SET_PDEATHSIG = 1


def started(pid: int) -> str | None:
    """The process's start time as the OS keeps it (an opaque token), or None if there is no such process (or a zombie)."""
    if not os.path.exists("/proc/self/stat"):
        return _ps(pid)  # no /proc: macOS, the BSDs
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    fields = stat[stat.rindex(b")") + 2:].split()  # the name may hold spaces and parentheses: after its last ')'
    return None if fields[0] == b"Z" else fields[19].decode()  # state, then field 22 of stat(5): start time in ticks


def _ps(pid: int) -> str | None:
    try:
        out = subprocess.run(["ps", "-o", "stat=,lstart=", "-p", str(pid)], capture_output=True, text=True, timeout=5).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    state, _, start = out.strip().partition(" ")
    return None if not start or state.startswith("Z") else " ".join(start.split())


def _tie_to_parent(parent: int) -> bool:
    """Ask for SIGKILL when the parent dies (Linux); False if the parent is already gone (it died before we asked)."""
    if sys.platform.startswith("linux"):
        import ctypes  # only here: 5 ms, and not every platform has prctl

        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, 9, 0, 0, 0)
    return os.getppid() == parent


def main() -> None:
    """Record, tie, exec the CLI with the arguments given; exits 1 if its flower died before the CLI could start."""
    env = dict(os.environ)
    cli, record, session = env.pop(CLI), env.pop(RECORD, None), env.pop(SESSION, None)
    parent = os.getppid()
    if not _tie_to_parent(parent):
        sys.exit(1)
    if record:
        me = os.getpid()
        info = {"pid": me, "start": started(me), "owner": parent, "owner_start": started(parent),
                "session": session or None, "at": time.time()}
        tmp = f"{record}.{me}.tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(info, f)
            os.replace(tmp, record)  # whole or absent: a kill never leaves half a record
        except OSError:
            pass  # the CLI runs anyway; the kernel's tie above still holds on Linux
    os.execve(cli, [cli, *sys.argv[1:]], env)


if __name__ == "__main__":
    main()
