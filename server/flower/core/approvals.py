"""Tool approvals: a tool call outside the rules is a question to the person, wherever they are (D6, D11).

The Runtime turns the CLI's permission prompt (the SDK's `can_use_tool`) into an `Approval`; `Approvals`
puts it to every front-end that can answer, takes the first answer, and applies the rule for when nobody
does: wait `wait` seconds (None: as long as it takes), then `unattended` = "deny" (the model is told the
person was away) or "wait" (go on waiting). When nobody can even be asked (no front-end, or every one said
it cannot ask) and no `wait` is set, `unattended` applies at once (issue 31). A timeout never allows.
Pure Python: no SDK, no front-end.
"""

from __future__ import annotations

import asyncio
import difflib
import json
import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

log = logging.getLogger(__name__)

DEFAULT_ALLOW = ["Read", "Write", "Edit", "Glob", "Grep", "Bash"]
"""What the work agent may use without asking (the `allow` setting's default: what worked before approvals)."""
DEFAULT_MODE = "acceptEdits"
MODES = ("default", "acceptEdits", "plan", "dontAsk", "bypassPermissions")
"""Permission modes a person may set; `bypassPermissions` only ever when they write it (D6)."""

Choice = Literal["allow", "allowAlways", "deny"]
CHOICES: tuple[Choice, ...] = ("allow", "allowAlways", "deny")
AWAY = ("The person who supervises this run was away and could not approve this {tool} call, so it was not run. "
        "Carry on with what you can do without it, and say at the end what still needs their approval.")
"""What the model is told when nobody answered in time (neutral: no blame, no retry storm; S23b keeps the newest)."""
DENIED = "The person denied this {tool} call."


@dataclass(frozen=True)
class Approval:
    """One tool call waiting for the person: what it is, in a form every front-end can show."""

    id: str
    """The tool call's id (the SDK's tool_use_id): how an answer finds its question."""
    step: str
    tool: str
    input: dict[str, Any]
    summary: str
    """One line: the command, the path, the URL."""
    detail_kind: Literal["command", "diff", "url", "input"]
    detail: str
    """The command, a unified diff for Write/Edit, the URL, or the input as JSON."""
    suggestions: list[str] = field(default_factory=list)
    """The rules the CLI suggests for "always" (Claude Code syntax, e.g. `Bash(npm test:*)`)."""
    since: float = field(default_factory=time.time)
    agent: str | None = None
    """The subagent asking (its `Agent` call's description and type); None when the main agent asks (issue 32)."""


@dataclass(frozen=True)
class Decision:
    """The answer: allow once, allow always (the suggested rules kept), or deny with the sentence the model receives."""

    choice: Choice
    message: str | None = None
    by: Literal["person", "unattended"] = "person"

    @classmethod
    def parse(cls, raw: object) -> Decision:
        """A front-end's answer `{"decision": …, "message"?: …}`; anything that does not parse is a denial, never an allow."""
        if isinstance(raw, dict) and raw.get("decision") in CHOICES:
            message = raw.get("message")
            return cls(raw["decision"], message.strip() or None if isinstance(message, str) else None)
        return cls("deny", None)

    def reason(self, tool: str) -> str:
        """What the model receives for a denial."""
        if self.by == "unattended":
            return AWAY.format(tool=tool)
        return self.message or DENIED.format(tool=tool)


Asker = Callable[[Approval], Awaitable[Decision | None]]
"""A front-end's way to ask: its person's answer, or None when it cannot ask (no such client, closed)."""


class Approvals:
    """The questions of one workspace: who may answer them, the first answer wins, and the rule for nobody (issue 24)."""

    def __init__(self, wait: float | None = None, unattended: Literal["deny", "wait"] = "deny") -> None:
        self.wait, self.unattended = wait, unattended
        self.askers: list[Asker] = []
        """Askers of every wake (a program's own); a front-end's come with its wake instead (`decide(askers=)`, issue 33)."""
        self.pending: dict[str, tuple[Approval, asyncio.Future[Decision]]] = {}
        self.on_change: list[Callable[[Approval, Decision | None], None]] = []
        """Told when a question opens (None) and when it closes (its decision): status, notifications."""
        self.always: list[str] = []
        """Rules the person allowed always here: every later run of this workspace gets them unasked."""

    def waiting(self) -> Approval | None:
        """The oldest open question, if any."""
        return min((a for a, _ in self.pending.values()), key=lambda a: a.since, default=None)

    def answer(self, approval_id: str, decision: Decision) -> bool:
        """Answer an open question (from any front-end, in any order); False when it is closed or unknown."""
        found = self.pending.get(approval_id)
        if found is None or found[1].done():
            return False
        found[1].set_result(decision)
        return True

    async def decide(self, approval: Approval, askers: Sequence[Asker] = (), wait: float | None = None) -> Decision:
        """Ask everyone who can answer and wait by the rules; the first answer wins, a timeout never allows.

        `askers` and `wait` are the asking wake's own (core/caller.py): its front-end, and a wait that replaces
        `self.wait` for its questions (a terminal with nobody at it: 0).

        With no `wait` set, a question nobody can be asked (no front-end, or each said it cannot ask: a terminal
        with no person at it, no attached client that declared it answers) gets the `unattended` rule at once, as a
        run nobody watches does, instead of waiting forever for nobody (issue 31). A `wait` the person set is theirs:
        they expect an answer from elsewhere (a window or terminal attaching meanwhile answers it by id).
        """
        future: asyncio.Future[Decision] = asyncio.get_running_loop().create_future()
        self.pending[approval.id] = (approval, future)
        self._tell(approval, None)
        asks = [asyncio.create_task(self._ask(asker, approval)) for asker in [*self.askers, *askers]]
        wait = self.wait if wait is None else wait
        try:
            if wait is None:
                if await self._nobody(asks, future):
                    self._unattended(approval)
                return await future  # "wait", or someone may answer: as long as it takes
            try:
                return await asyncio.wait_for(asyncio.shield(future), wait)
            except TimeoutError:
                self._unattended(approval)
                return await future  # "wait": go on waiting for the person, however long
        finally:
            for task in asks:
                task.cancel()
            self.pending.pop(approval.id, None)
            self._tell(approval, future.result() if future.done() and not future.cancelled() else Decision("deny"))

    @staticmethod
    async def _nobody(asks: list[asyncio.Task[None]], future: asyncio.Future[Decision]) -> bool:
        """Wait until the question is answered (False) or every front-end has said it cannot ask (True)."""
        if asks:
            everyone: asyncio.Future[Any] = asyncio.gather(*asks)
            try:
                await asyncio.wait([future, everyone], return_when=asyncio.FIRST_COMPLETED)
            finally:
                if not everyone.done():
                    everyone.cancel()
        return not future.done()

    def _unattended(self, approval: Approval) -> None:
        """The rule for nobody: "deny" answers now (the model is told the person was away); "wait" leaves it open."""
        if self.unattended == "deny":
            self.answer(approval.id, Decision("deny", by="unattended"))

    async def _ask(self, asker: Asker, approval: Approval) -> None:
        try:
            decision = await asker(approval)
        except asyncio.CancelledError:
            raise
        except Exception:  # a front-end that fails to ask is one that cannot answer: the rules decide
            log.exception("approvals: a front-end failed to ask about %s", approval.tool)
            return
        if decision is not None:
            self.answer(approval.id, decision)

    def _tell(self, approval: Approval, decision: Decision | None) -> None:
        for listener in list(self.on_change):
            try:
                listener(approval, decision)
            except Exception:
                log.exception("approvals: a listener failed")


# -- what a front-end shows ------------------------------------------------------------------------------------

def describe(tool: str, tool_input: dict[str, Any]) -> tuple[str, Literal["command", "diff", "url", "input"], str]:
    """(summary, detail kind, detail) of a tool call: the command; the path and a diff for Write/Edit; the URL."""
    if tool == "Bash" and isinstance(tool_input.get("command"), str):
        command = tool_input["command"]
        return _line(command), "command", command
    path = tool_input.get("file_path") or tool_input.get("notebook_path")
    if tool in ("Write", "Edit", "MultiEdit") and isinstance(path, str):
        return path, "diff", _diff(tool, tool_input, path)
    if isinstance(tool_input.get("url"), str):
        return tool_input["url"], "url", tool_input["url"]
    shown = json.dumps(tool_input, ensure_ascii=False, indent=2)
    return _line(next((str(v) for v in tool_input.values() if isinstance(v, str)), tool)), "input", shown


def _line(text: str, limit: int = 160) -> str:
    one = " ".join(text.split())
    return one if len(one) <= limit else one[: limit - 1] + "…"


def _diff(tool: str, tool_input: dict[str, Any], path: str) -> str:
    """What the call would change, as a unified diff of the texts it names (a new file's lines all added)."""
    if tool == "Write":
        old, new = _read(path), str(tool_input.get("content", ""))
    elif tool == "Edit":
        old, new = str(tool_input.get("old_string", "")), str(tool_input.get("new_string", ""))
    else:
        edits = [e for e in tool_input.get("edits") or [] if isinstance(e, dict)]
        old = "\n".join(str(e.get("old_string", "")) for e in edits)
        new = "\n".join(str(e.get("new_string", "")) for e in edits)
    lines = difflib.unified_diff(old.splitlines(), new.splitlines(), path, path, lineterm="", n=2)
    return "\n".join(list(lines)[2:])  # without the ---/+++ header: the path is the summary


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read(1 << 20)
    except OSError:
        return ""


# -- rules -------------------------------------------------------------------------------------------------------

def tool_of(rule: str) -> str:
    """The tool a rule names: `Bash(npm test:*)` → `Bash`."""
    return rule.split("(", 1)[0].strip()


def narrows(rules: list[str], allowed: list[str]) -> bool:
    """Whether every rule in `rules` is covered by a whole-tool rule in `allowed` (so `rules` can only narrow it)."""
    whole = {r for r in allowed if "(" not in r}
    return all(r in allowed or tool_of(r) in whole for r in rules)
