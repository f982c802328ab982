"""The agent CLI's launcher (D5, issue #31): records the CLI's pid and start time, ties it to its flower, then becomes it.

Run as `python -I -S launch.py <the CLI's arguments>` by the `cli_path` script flower hands the SDK (core/children.py
writes both). Stdlib only and never imported by flower: it runs before the CLI in every agent start, so it must
cost milliseconds. `exec` keeps the pid, so the record written here names the CLI process itself.

On Linux it asks the kernel to SIGKILL it when its parent dies (PR_SET_PDEATHSIG, kept across exec; core/host.py): a
flower killed alone (a crashed terminal, the OOM killer, kill -9) takes its CLI with it, and no orphan sends the model
one more request. The signal fires when the parent *thread* that forked it exits; flower starts CLIs from its event
loop's thread, which lives as long as the process. Elsewhere the record lets the next wake end an orphan.
"""

from __future__ import annotations

import json
import os
import sys
import time

if __package__:
    from . import host
else:  # run as a script: -I leaves this directory off sys.path; host.py is stdlib-only too
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import host  # type: ignore[no-redef, import-not-found]
    del sys.path[0]

CLI = "FLOWER_CLI"
"""The real CLI to exec."""
RECORD = "FLOWER_CLI_RECORD"
"""Where to write this CLI's record (a path under `<run_dir>/clis/`)."""
SESSION = "FLOWER_CLI_SESSION"
"""The session it resumes, when it resumes one."""


def main() -> None:
    """Record, tie, exec the CLI with the arguments given; exits 1 if its flower died before the CLI could start."""
    env = dict(os.environ)
    cli, record, session = env.pop(CLI), env.pop(RECORD, None), env.pop(SESSION, None)
    parent = os.getppid()
    if not host.die_with_parent(parent):
        sys.exit(1)
    if record:
        me = os.getpid()
        info = {"pid": me, "start": host.started(me), "owner": parent, "owner_start": host.started(parent),
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
