"""Whom one wake runs for: its environment, its credentials and who answers its questions (D3, issue 33).

A task's service is shared by every front-end attached to it (a terminal, each editor window, the engine's
clients). What differs from one request to the next travels with that request's wake as a `Caller`, never
assigned onto the shared service: otherwise the last client to send its variables would decide the API key of
every wake after it. Pure Python: no SDK, no front-end.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field

from .approvals import Asker

Ask = Callable[[str], Awaitable[str | None]]
"""Puts a clarify question to the person: their answer, or None when nobody answers."""


@dataclass(frozen=True)
class Caller:
    """One wake's own inputs from the front-end that started it."""

    env: Mapping[str, str] = field(default_factory=dict)
    """Variables the wake's agents and CLI get over this process's own (an API key among them); empty: this process's."""
    ask: Ask | None = None
    """Who answers a clarify question; None: nobody is there, the agent assumes."""
    approve: Asker | None = None
    """Who answers a tool question besides any other window asked; None: nobody here can (the approvals rule decides)."""
    wait: float | None = None
    """How long this wake's tool questions wait for an answer; None: the settings' `approvals.wait` (issue 24)."""
