"""Events that flow up from runtime and workflow to whichever front-end listens (D3).

`Event` is a closed union of small frozen dataclasses built with keyword arguments; a listener
dispatches on the class (`match event: case Banner(): …`). Each class also names itself on the
wire with a `kind` class variable, for front-ends that send or render events by name.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Literal

from .texts import Said


@dataclass(frozen=True, kw_only=True)
class SessionStarted:
    """A session id arrived for a step (new or resumed)."""

    kind: ClassVar[str] = "session"
    session_id: str
    resumed: bool
    step: str | None = None


@dataclass(frozen=True, kw_only=True)
class AssistantText:
    """Text the model wrote."""

    kind: ClassVar[str] = "text"
    text: str
    session_id: str | None = None
    uuid: str | None = None
    step: str | None = None
    parent: str | None = None
    """A subagent's words: the `Agent` call it works for (issue 32); None for the main agent's."""


@dataclass(frozen=True, kw_only=True)
class ToolCall:
    """The model called a tool."""

    kind: ClassVar[str] = "tool"
    name: str
    input: dict[str, Any]
    tool_use_id: str
    session_id: str | None = None
    uuid: str | None = None
    step: str | None = None
    parent: str | None = None
    """A subagent's call: the `Agent` call it works for (issue 32); None for the main agent's."""


@dataclass(frozen=True, kw_only=True)
class ContextSize:
    """The context size of a session after a round, in tokens."""

    kind: ClassVar[str] = "context"
    session_id: str
    tokens: int
    step: str | None = None


@dataclass(frozen=True, kw_only=True)
class Waiting:
    """The runtime is waiting before a retry: `reason` is "backoff" or "offline"."""

    kind: ClassVar[str] = "wait"
    reason: Literal["backoff", "offline"]
    attempt: int
    max_attempts: int
    seconds: float
    error: str = ""
    offline_since: float | None = None
    step: str | None = None


@dataclass(frozen=True, kw_only=True)
class StepStarted:
    """A workflow step begins: `index` of `total`, resuming `session_id` when set."""

    kind: ClassVar[str] = "step_start"
    index: int
    total: int
    session_id: str | None = None
    woke: int = 1
    step: str | None = None


@dataclass(frozen=True, kw_only=True)
class StepEnded:
    """A workflow step ended."""

    kind: ClassVar[str] = "step_end"
    ok: bool
    session_id: str | None = None
    error: str | None = None
    context: int | None = None
    step: str | None = None
    said: Said | None = None
    """`error` as a catalog sentence, for a front-end to show in the person's language (D4)."""
    cost_usd: float | None = None
    """What the step's run spent (every attempt)."""
    duration_s: float | None = None
    """How long it ran, in seconds."""


@dataclass(frozen=True, kw_only=True)
class Banner:
    """The wake banner (S19): one line proving the workspace was remembered."""

    kind: ClassVar[str] = "banner"
    text: str
    woke: int
    context: int | None = None
    """The work session's context size read from sessions.db, when readable."""
    step: str | None = None


@dataclass(frozen=True, kw_only=True)
class Header:
    """A step header line (S19), e.g. `== 干活 ====…  3/3  <- 接上次 · 第 3 次唤醒`."""

    kind: ClassVar[str] = "header"
    text: str
    step: str | None = None


@dataclass(frozen=True, kw_only=True)
class Verdict:
    """The judge's verdict on a work round (S14)."""

    kind: ClassVar[str] = "verdict"
    round: int
    passed: bool
    reasons: str
    step: str | None = None
    cost_usd: float | None = None
    """What the judge's round spent."""
    duration_s: float | None = None
    """How long the judge's round ran, in seconds."""


@dataclass(frozen=True, kw_only=True)
class Question:
    """The clarify step asks the person something (S16)."""

    kind: ClassVar[str] = "question"
    text: str
    step: str | None = None


@dataclass(frozen=True, kw_only=True)
class Handoff:
    """Work moved to a new session seeded with a handoff document (S26)."""

    kind: ClassVar[str] = "handoff"
    old_session: str
    new_session: str | None
    path: str
    step: str | None = None


@dataclass(frozen=True, kw_only=True)
class Notice:
    """A line of information for the person (wake sentence recorded, archive made, …)."""

    kind: ClassVar[str] = "notice"
    text: str
    step: str | None = None


Event = (SessionStarted | AssistantText | ToolCall | ContextSize | Waiting | StepStarted | StepEnded
         | Banner | Header | Verdict | Question | Handoff | Notice)
"""Everything a front-end may be told; a closed set, so a `match` over it can be checked complete."""

Listener = Callable[[Event], None]
"""Receives every event; an exception it raises is logged by the emitter and never changes the run."""


def emit_to(listeners: list[Listener], event: Event) -> None:
    """Hand `event` to each listener; one that raises is logged and skipped: a front-end's bug never breaks a run."""
    for listener in list(listeners):
        try:
            listener(event)
        except Exception:
            logging.getLogger("flower").exception("a listener failed on a %s event; the run goes on", event.kind)
