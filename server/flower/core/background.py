"""What a step started in the background, as the CLI's stream reports it, and when the step may end (issue 32, D12).

The CLI (2.1.332) runs subagents in the background by default, and `Bash` with `run_in_background`: the tool
answers at once, the main agent may end its turn (a ResultMessage) while the work goes on, and when it ends the CLI
wakes the main agent for another turn in the same process (a new `init`, a second ResultMessage) that carries the
work's result. `claude -p` holds its exit until all of it ended and was told to the model; so does flower: a step
ends at a result only once the CLI reports `session_state_changed` "idle" (no turn owed; asked for with
STATE_EVENTS), no background task it reported is still running, and none ended since the CLI last said so. The wait
between turns is bounded by the CLI's own ceiling for it (CEILING_ENV, 10 minutes unless set; 0 = no bound), after
which the CLI is stopped with its background work (and the journal says which, for the next wake's note).

Pure Python: the runtime feeds it the system messages' `data` and each result.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

STATE_EVENTS = "CLAUDE_CODE_EMIT_SESSION_STATE_EVENTS"
"""Env var that makes the CLI stream `session_state_changed` (running / requires_action / idle) to the caller."""
CEILING_ENV = "CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS"
"""The CLI's own bound on its wait for background work, in ms (the SDK bounds its wait for "idle" by it too)."""
DEFAULT_CEILING = 600.0
"""Seconds, when CEILING_ENV is not set (the CLI's default)."""
TERMINAL = frozenset({"completed", "failed", "killed", "stopped", "cancelled", "error"})
"""Task statuses after which a task runs no more."""
AGENT = "local_agent"
SHELL = "local_bash"


@dataclass
class Task:
    """One piece of background work: a subagent or a shell (the CLI's task)."""

    id: str
    """The CLI's task id (a subagent's is its agent id, as hooks and permission prompts name it)."""
    tool_use_id: str | None
    """The `Agent` or `Bash` call that started it."""
    type: str
    """`local_agent` (a subagent), `local_bash` (a background shell), or another CLI task type."""
    description: str
    background: bool
    subagent_type: str | None = None
    status: str = "running"

    @property
    def running(self) -> bool:
        """Not ended yet."""
        return self.status not in TERMINAL

    @property
    def label(self) -> str:
        """How the person knows it: its description, and a subagent's type (`write the docs (general-purpose)`)."""
        name = self.description or self.id
        return f"{name} ({self.subagent_type})" if self.subagent_type else name


def ceiling(env: Mapping[str, str]) -> float | None:
    """Seconds a step waits between turns for background work, from `env` then the process's; None = no bound."""
    raw = env.get(CEILING_ENV, os.environ.get(CEILING_ENV))
    try:
        ms = int(str(raw)) if raw is not None else None
    except ValueError:
        ms = None
    if ms is None or ms < 0:
        return DEFAULT_CEILING
    return None if ms == 0 else ms / 1000


class Background:
    """The background work of one CLI run and the CLI's session state; `done` says when the step may end."""

    def __init__(self) -> None:
        self.tasks: dict[str, Task] = {}
        self.state: str | None = None
        """The CLI's last `session_state_changed` state; None while it reported none (an older CLI)."""
        self.results = 0
        """ResultMessages seen: each ends one turn of the main agent."""
        self.turn = False
        """A turn of the main agent is under way (its message arrived, its result not yet)."""
        self._stale = False
        """A task ended since the CLI last reported its state: a turn may be owed that it has not said yet."""

    def see(self, subtype: str, data: Mapping[str, Any]) -> Task | None:
        """Take in one system message (its subtype and raw data); the task it started or ended, if any."""
        if subtype == "session_state_changed":
            self.state = str(data.get("state"))
            self._stale = False
            return None
        task_id = data.get("task_id")
        if not isinstance(task_id, str):
            return None
        task = self.tasks.get(task_id)
        if subtype == "task_started":
            task = self.tasks[task_id] = Task(
                task_id, _str(data.get("tool_use_id")), str(data.get("task_type") or ""),
                str(data.get("description") or ""), bool(data.get("is_backgrounded")), _str(data.get("subagent_type")))
        elif task is None:
            return None
        elif subtype == "task_updated":
            patch = data.get("patch")
            status = patch.get("status") if isinstance(patch, Mapping) else None
            if isinstance(patch, Mapping) and patch.get("is_backgrounded"):
                task.background = True
            return task if isinstance(status, str) and self._set(task, status) else None
        elif subtype == "task_notification":
            return task if self._set(task, str(data.get("status") or "completed")) else None
        else:
            return None
        return task

    def result(self) -> None:
        """A ResultMessage arrived: one turn of the main agent ended."""
        self.results += 1
        self.turn = False

    @property
    def running(self) -> list[Task]:
        """The tasks not ended yet, oldest first."""
        return [t for t in self.tasks.values() if t.running]

    @property
    def done(self) -> bool:
        """The step may end: a turn ended, the CLI owes no other (it said "idle", or says nothing and runs no
        subagent), nothing it started still runs, and nothing ended since it last said so."""
        if not self.results or self.running or self._stale:
            return False
        return self.state == "idle" or self.state is None

    def _set(self, task: Task, status: str) -> bool:
        """Set a task's status; whether that ended it."""
        was = task.running
        task.status = status
        if was and not task.running:
            self._stale = self.state is not None
            return True
        return False


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) and value else None
