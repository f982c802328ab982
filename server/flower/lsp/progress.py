"""A folder's `$/progress`: one work-done progress per step, created with the client, reported to and ended (D4).

Each step of a wake gets its own token (`window/workDoneProgress/create`, bounded), so the client shows the step
with a Cancel button; what the agent says and does is reported on it in one short line. Every text is redacted
(D6). A client that does not support work-done progress simply gets none: the step runs without it.
"""

from __future__ import annotations

import asyncio
import logging
import uuid
from typing import Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException

from ..core.banner import label
from ..core.events import StepStarted
from ..core.text import clip
from . import protocol as p

log = logging.getLogger(__name__)

CREATE_TIMEOUT = 10.0
"""Bound on the client's answer to `window/workDoneProgress/create`."""
REPORT_LIMIT = 120
"""Longest `$/progress` message, in characters."""


class StepProgress:
    """The progress of the step running now in one folder, over a server (or the engine's fan-out) that sends it."""

    def __init__(self, ls: Any, locale: str) -> None:
        self.ls, self.locale = ls, locale
        self.token: str | None = None
        """The token of the step running now."""
        self.tokens: set[str] = set()
        """Every token made here (for `window/workDoneProgress/cancel`)."""

    @property
    def supported(self) -> bool:
        """The client said at initialize that it shows work-done progress."""
        caps = getattr(self.ls.protocol, "client_capabilities", None)
        return bool(caps and caps.window and caps.window.work_done_progress)

    async def begin(self, e: StepStarted, header: str | None) -> str | None:
        """End the previous step's progress and begin this step's; its token, or None when the client has none."""
        self.end("done")
        if not self.supported:
            return None
        token = f"flower/{uuid.uuid4()}"
        try:
            await asyncio.wait_for(self.ls.work_done_progress.create_async(token), CREATE_TIMEOUT)
        except (TimeoutError, JsonRpcException) as exc:
            log.warning("the client did not create progress %s (%s); the step runs without it", token, exc)
            return None
        self.tokens.add(token)
        self.token = token
        name = label(self.locale, e.step or "")
        self.ls.work_done_progress.begin(token, types.WorkDoneProgressBegin(
            title=f"flower: {name}", message=p.redact(header or name), cancellable=True,
            percentage=int(100 * (e.index - 1) / max(e.total, 1))))
        return token

    def report(self, message: str) -> None:
        """One line on the running step's progress (nothing when there is none, or nothing to say)."""
        if self.token and message:
            self.ls.work_done_progress.report(self.token, types.WorkDoneProgressReport(
                message=p.redact(clip(message, REPORT_LIMIT))))

    def end(self, message: str) -> None:
        """End the running step's progress with `message` (idempotent)."""
        token, self.token = self.token, None
        if token:
            self.ls.work_done_progress.end(token, types.WorkDoneProgressEnd(message=p.redact(clip(message, REPORT_LIMIT))))
