"""FlowerService: one per workspace; wake, say, new and status over the flower path, with events (D3)."""

from __future__ import annotations

import asyncio
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .core import goals, texts
from .core.errors import FlowerError
from .core.events import Event, Listener, Notice
from .core.lineage import Lineage
from .core.lock import WorkspaceLock
from .core.requirements import REQUIREMENTS_FILE
from .core.resilience import Resilience
from .runtime import Runtime
from .workflow.flower import WORK, Ask, FlowerPath, NothingToDo

WINDOW = 200_000
"""The context window assumed until the CLI reports the model's own, and the default handoff threshold's base (60%)."""


class FlowerService:
    """Drives the flower path in one workspace for any front-end; events go to every subscriber."""

    def __init__(self, workspace: str | os.PathLike, run_dir: str | os.PathLike | None = None, *,
                 locale: str = "en", trim: bool = True, rounds: int | None = None, env: dict[str, str] | None = None,
                 resilience: Resilience | None = None, handoff_at: int | None = None, window: int = WINDOW):
        self.workspace = Path(os.path.abspath(workspace))
        self.run_dir = Path(os.path.abspath(run_dir)) if run_dir else self.workspace / "runs"
        self.locale, self.trim, self.rounds, self.env = locale, trim, rounds or 10, env
        self.resilience, self.window = resilience, window
        self.handoff_at = handoff_at or int(window * 0.6)
        self.ask: Ask | None = None
        """Set by a front-end to put clarify questions to the person; None means nobody is there."""
        self._listeners: list[Listener] = []
        self._task: asyncio.Task | None = None
        self._path: FlowerPath | None = None
        self._state: dict[str, Any] = {"step": None, "waiting": None, "verdict": None, "context": None}
        self._reader: Runtime | None = None
        self._runtime: Runtime | None = None

    # -- events ----------------------------------------------------------------------------
    def subscribe(self, listener: Listener) -> Callable[[], None]:
        """Receive every event; returns the function that unsubscribes."""
        self._listeners.append(listener)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def _emit(self, event: Event) -> None:
        kind = event.kind
        if self._runtime is not None and self._runtime.window:
            self.window = self._runtime.window  # the gauge follows the model actually used
        if kind == "step_start":
            self._state["step"] = event.step
        elif kind == "context" and (event.step or "").partition("#")[0] == WORK:  # not the judge's
            self._state["context"] = event.tokens
        elif kind == "banner" and event.context is not None:  # read from sessions.db at wake
            self._state["context"] = event.context
        elif kind == "verdict":
            self._state["verdict"] = {"round": event.round, "passed": event.passed, "reasons": event.reasons}
        self._state["waiting"] = {"reason": event.reason, "seconds": event.seconds, "attempt": event.attempt,
                                  "max_attempts": event.max_attempts} if kind == "wait" else None
        for listener in list(self._listeners):
            listener(event)

    # -- commands --------------------------------------------------------------------------
    @property
    def running(self) -> bool:
        """Whether a wake is in progress in this process."""
        return self._task is not None and not self._task.done()

    async def wake(self, text: str | None = None) -> dict[str, Any]:
        """Continue here (text = a wake sentence), or start (text = the task); joins a wake already running (D5)."""
        if self.running:
            if text and text.strip():
                await self.say(text)
            return await asyncio.shield(self._task)
        self._task = asyncio.create_task(self._run(text))
        return await asyncio.shield(self._task)

    async def say(self, text: str) -> None:
        """A sentence for the work session: delivered at its next turn while running, else a wake (S15)."""
        if self.running and self._path is not None:
            self._path.inbox.put_nowait(text.strip())
            self._emit(Notice(texts.text("queued", self.locale, sentence=text.strip())))
        else:
            await self.wake(text)

    async def new(self, text: str) -> dict[str, Any]:
        """Start something else: archive lineage, 需求.md and 目标.md (S28), then start `text` as the task."""
        if not text or not text.strip():
            raise FlowerError("say what the new task is, e.g. flower --new \"write the docs\"")
        if self.running:
            self.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        with WorkspaceLock(self.run_dir):
            lineage = Lineage.load(self.run_dir, self.workspace)
            extra = [self.workspace / REQUIREMENTS_FILE, self.workspace / goals.GOALS_FILE]
            into = lineage.archive(self.workspace / "notes" / "archive", extra=extra)
        self._emit(Notice(texts.text("archived", self.locale, path=into)))
        return await self.wake(text)

    def cancel(self) -> None:
        """Stop the running wake cleanly; the lineage keeps its sessions, so the next wake resumes."""
        if self.running:
            self._task.cancel()

    async def close(self) -> None:
        """Cancel any running wake and wait for it to end."""
        if self._task is not None:
            self.cancel()
            await asyncio.gather(self._task, return_exceptions=True)
        if self._reader is not None:
            await self._reader.close()
            self._reader = None

    async def pruned(self, session_id: str) -> dict[str, str] | None:
        """How the pruner treats a session's stored entries on resume: {uuid: "hidden" | "rewritten" | "added"} (S23).

        None when sessions.db holds nothing for the session.
        """
        if self._reader is None:
            self._reader = Runtime(self.workspace, self.run_dir, trim=self.trim, env=self.env)
        entries = await self._reader.entries(session_id)
        if not entries:
            return None
        return dict((await asyncio.to_thread(self._reader.store.prune, entries)).verdicts)

    async def _run(self, text: str | None) -> dict[str, Any]:
        rt = Runtime(self.workspace, self.run_dir, trim=self.trim, resilience=self.resilience, env=self.env)
        rt.listeners.append(self._emit)
        self._runtime = rt
        self._path = FlowerPath(rt, self.locale, self.rounds, self.handoff_at, ask=self._ask)
        try:
            ctx = await self._path.wake(text)
            return {"ok": ctx["_ok"], "error": ctx.get("_error"), "woke": ctx["_woke"],
                    "sessions": dict(ctx["_sessions"]), "verdict": ctx.get("verdict")}
        except NothingToDo as exc:
            raise FlowerError(str(exc)) from None
        except asyncio.CancelledError:
            return {"ok": False, "error": "cancelled; wake again to resume", "woke": None, "sessions": {}, "verdict": None}
        finally:
            self._state["step"] = self._state["waiting"] = None
            self.window = rt.window or self.window
            self._runtime = None
            await rt.close()

    async def _ask(self, question: str) -> str | None:
        return await self.ask(question) if self.ask else None

    # -- status ----------------------------------------------------------------------------
    def status(self) -> dict[str, Any]:
        """Everything a front-end shows, answered at once from files and memory (no model request)."""
        lineage = Lineage.load(self.run_dir, self.workspace)
        return {
            "workspace": str(self.workspace),
            "run_dir": str(self.run_dir),
            "woke": lineage.woke,
            "started": bool(lineage.steps) or (self.workspace / REQUIREMENTS_FILE).exists(),
            "steps": dict(lineage.steps),
            "goals": [{"text": g.text, "done": g.done} for g in goals.read(self.workspace / goals.GOALS_FILE)],
            "context": self._state["context"],
            "window": self.window,
            "running": self.running,
            "step": self._state["step"],
            "waiting": self._state["waiting"],
            "verdict": self._state["verdict"],
        }
