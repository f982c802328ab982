"""Events that flow up from runtime and workflow to whichever front-end listens (D3)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Event:
    """Something a front-end may show; `kind` names it on the wire."""

    kind: str = field(init=False, default="event")
    step: str | None = field(default=None, kw_only=True)


@dataclass
class SessionStarted(Event):
    """A session id arrived for a step (new or resumed)."""

    session_id: str
    resumed: bool
    kind: str = field(init=False, default="session")


@dataclass
class AssistantText(Event):
    """Text the model wrote."""

    text: str
    session_id: str | None = None
    uuid: str | None = None
    kind: str = field(init=False, default="text")


@dataclass
class ToolCall(Event):
    """The model called a tool."""

    name: str
    input: dict[str, Any]
    tool_use_id: str
    session_id: str | None = None
    uuid: str | None = None
    kind: str = field(init=False, default="tool")


@dataclass
class ContextSize(Event):
    """The context size of a session after a round, in tokens."""

    session_id: str
    tokens: int
    kind: str = field(init=False, default="context")


@dataclass
class Waiting(Event):
    """The runtime is waiting before a retry: `reason` is "backoff" or "offline"."""

    reason: str
    attempt: int
    max_attempts: int
    seconds: float
    error: str = ""
    offline_since: float | None = None
    kind: str = field(init=False, default="wait")


@dataclass
class StepStarted(Event):
    """A workflow step begins: `index` of `total`, resuming `session_id` when set."""

    index: int
    total: int
    session_id: str | None = None
    woke: int = 1
    kind: str = field(init=False, default="step_start")


@dataclass
class StepEnded(Event):
    """A workflow step ended."""

    ok: bool
    session_id: str | None = None
    error: str | None = None
    context: int | None = None
    kind: str = field(init=False, default="step_end")


@dataclass
class Banner(Event):
    """The wake banner (S19): one line proving the workspace was remembered."""

    text: str
    woke: int
    context: int | None = None
    """The work session's context size read from sessions.db, when readable."""
    kind: str = field(init=False, default="banner")


@dataclass
class Header(Event):
    """A step header line (S19), e.g. `== 干活 ====…  3/3  <- 接上次 · 第 3 次唤醒`."""

    text: str
    kind: str = field(init=False, default="header")


@dataclass
class Verdict(Event):
    """The judge's verdict on a work round (S14)."""

    round: int
    passed: bool
    reasons: str
    kind: str = field(init=False, default="verdict")


@dataclass
class Question(Event):
    """The clarify step asks the person something (S16)."""

    text: str
    kind: str = field(init=False, default="question")


@dataclass
class Handoff(Event):
    """Work moved to a new session seeded with a handoff document (S26)."""

    old_session: str
    new_session: str | None
    path: str
    kind: str = field(init=False, default="handoff")


@dataclass
class Notice(Event):
    """A line of information for the person (wake sentence recorded, archive made, …)."""

    text: str
    kind: str = field(init=False, default="notice")


Listener = Callable[[Event], None]
