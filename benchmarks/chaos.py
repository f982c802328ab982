"""Chaos: the real `flower` command killed at N seeded random moments, run again until the work is done.

Usage: python benchmarks/chaos.py [--kills N] [--seed S] [--keep DIR]

The scenario is the whole flower path on a pseudo-terminal, as a person runs it: clarify with a
question that is answered at the terminal, goals, work rounds whose tool calls take time
(`sleep 0.3` in Bash), a judge that reads the workspace and fails the first work, a handoff (a
work reply whose usage crosses the default handoff threshold) and a judge that passes. The
scripted model (`ChaosModel`) answers each request from what the request *is* — which agent
(system prompt), what its conversation already holds — never from a global order, so it serves
the right reply to the right step after any kill.

At seeded random moments (after the model server received k more requests, or flower printed k
more lines, or after a random time, each plus a random sub-delay: between events, mid-tool,
mid-request, during lineage writes and the judge; and at the model's edge: the instant the k-th
request arrives, before it is answered, or 0–200 ms after a request that carries a tool result) the process group, or the
flower process alone (as a crashed terminal or the OOM killer does: its CLI is not signalled), gets SIGKILL, SIGTERM,
SIGHUP or SIGINT (seeded), then `flower` runs again in the same folder. The work agent delegates one task to a
foreground subagent (the CLI's `Agent` tool), and kills land inside it too (0–500 ms after one of its requests). Once the goals exist, one wake of each lap says
one more sentence (S15) and is killed 0–1 s after the goal setter's re-derivation request arrives. When a lap's work is
done and kills are left, the next lap starts in a new folder. Afterwards it reports and checks:
every lap finished and passed; 0 sessions lost (no step started a fresh session while its
earlier one held model output, handoffs aside); 0 turns lost (every uuid of every CLI local
transcript — the test's CLAUDE_CONFIG_DIR and the SDK's resume copies under TMPDIR — is in
sessions.db); 0 answers lost (every answer the CLI acted on in a run a kill ended — the scripted
model knows what it sent — is carried by the step's first request of the next run, as transcript or
as flower's note of what the cut-off attempt did: a turn the CLI never wrote down counts too); lineage.json and manifest.json parse after every kill; 0 manifest rows lost; the
model never received an invalid transcript (flower.testing validates like the API) nor error
debris (API-error or interruption text). Issue #31's figures, counted at the model: 0 requests after a kill (the model
server finds each request's sending process from its socket and asks whether a live flower is its ancestor), 0 turns
lost at the model (an answer a CLI acted on is carried by every later request of its session: one writer), 0 sentences
lost (in the work session, 需求.md and the re-derived 目标.md, each once); and issue #32's: 0 answers lost in
subagents (what a subagent did in a run a kill ended before it handed back reaches the work agent's next run). `tests/e2e/test_chaos.py` runs the same
`chaos()` short. Target for --kills 100: 100/100 survived, and every figure lost 0.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import fcntl
import json
import logging
import os
import random
import re
import shutil
import signal
import sqlite3
import sys
import tempfile
import termios
import time
import uuid
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from flower.core.journal import NOTE_END
from flower.core.manifest_file import ManifestFile
from flower.testing import Reply, ScriptedModel, delegate, say, text, tool_use
from flower.testing import reply as reply_of
from flower.testing.agents import is_subagent

FLOWER = Path(sys.executable).parent / "flower"
TASK = "build a line counter"
QUESTION = "Should blank lines count?"
ANSWER = "yes, blank lines count"
REQUIREMENTS = (
    "# 需求\n\n## 目标 Goal\nA line counter.\n\n## 范围 Scope\nCount lines, blank ones too.\n\n"
    "## 约束 Constraints\nPython only.\n\n## 验收 Acceptance\n`count.py f` prints the line count.\n"
)
GOALS = "# 目标\n\n- [ ] count.py counts lines\n- [ ] result.txt says phase2-done\n"
HANDOFF_AT = 120_000
"""The service's default handoff threshold (60% of a 200K window): the first work round's last reply crosses it."""
BIG = HANDOFF_AT + 10_000
DEBRIS = ("API Error", "[Tool call interrupted", "[Request interrupted", "No response requested.")
"""Text that must never reach the model: outage replies and the CLI's interruption filler (S23)."""
KINDS = ("request", "request", "line", "time", "arrival", "tool", "subagent", "rederive")
"""The kill moments drawn from (see `Kill.draw`)."""
SENTENCE = "also count the words"
"""Said at a wake once the goals exist (S15): it must reach the work session once, 需求.md, and a re-derived 目标.md."""
SENTENCE_GOAL = "- [ ] count.py counts words too"
GOALS_AGAIN = GOALS + SENTENCE_GOAL + "\n"
SIGNALS = (signal.SIGKILL, signal.SIGTERM, signal.SIGHUP, signal.SIGINT)
ANSI = re.compile(rb"\x1b\[[0-9;?]*[A-Za-z]")


# ------------------------------------------------------------------------------ the scripted model


SUB_TASK = "write sub.txt (sub-task)"
"""The work agent delegates this to a foreground subagent (issue 32): kills land inside it too."""
SUB_WRITE = "sub-write"


def _agent(system: str) -> str:
    """Which agent a request comes from, by the instructions flower appends to its system prompt (a subagent's by the
    CLI's own mark, flower.testing.agents)."""
    if is_subagent({"system": system}):
        return "subagent"
    for marker, agent in (("You clarify requirements", "clarify"), ("You turn requirements into", "goals"),
                          ("careful coding agent", "work"), ("You are the judge", "judge")):
        if marker in system:
            return agent
    return "other"


def _done(messages: list[dict[str, Any]], marker: str) -> bool:
    """Whether a tool call whose input holds `marker` got a result that is not an error (interrupted calls are redone),
    in the conversation or as flower's note of what a cut-off attempt did (flower.core.journal)."""
    if _told(messages, marker):
        return True
    ids = set()
    for message in messages:
        for block in message.get("content") if isinstance(message.get("content"), list) else []:
            if block.get("type") == "tool_use" and marker in json.dumps(block.get("input", {}), ensure_ascii=False):
                ids.add(block.get("id"))
            elif block.get("type") == "tool_result" and block.get("tool_use_id") in ids and not block.get("is_error"):
                body = json.dumps(block.get("content", ""), ensure_ascii=False)
                if "interrupted" not in body:
                    return True
    return False


def _told(messages: list[dict[str, Any]], marker: str) -> bool:
    """Whether flower's note says a call whose input holds `marker` returned (a call cut off while it ran is redone)."""
    said = _user_texts(messages)
    if NOTE_END not in said:
        return False
    lines = [line.strip() for line in said.splitlines()]
    for i, line in enumerate(lines):  # its own call, or its subagent's ("- It called …" under the Agent call)
        if line.startswith(("- You called ", "- It called ")) and marker in line and i + 1 < len(lines) \
                and lines[i + 1].startswith("It returned"):
            return True
    return False


def _user_texts(messages: list[dict[str, Any]], results_only: bool = False) -> str:
    """What the user side said (prompts and tool results), or only the tool results."""
    out = []
    for message in messages:
        if message.get("role") != "user":
            continue
        content = message.get("content")
        for block in [{"type": "text", "text": content}] if isinstance(content, str) else content or []:
            if block.get("type") == "text" and not results_only:
                out.append(block.get("text", ""))
            elif block.get("type") == "tool_result":
                out.append(json.dumps(block.get("content", ""), ensure_ascii=False))
    return "\n".join(out)


def _delegated() -> Reply:
    """The work agent starts a foreground subagent (the CLI's `Agent` tool)."""
    return delegate(SUB_TASK, background=False, description="sub-task")


def _marker(step: Reply) -> str:
    """What marks a plan step done: a Bash call's description, a delegation's prompt."""
    call = step.blocks[-1]["input"]
    return str(call.get("description") if "command" in call else call["prompt"])


def _bash(marker: str, command: str) -> Reply:
    return reply_of(say(f"running {marker}"), tool_use("Bash", {"command": f"sleep 0.3 && {command} # {marker}",
                                                                "description": marker}))


_peer: ContextVar[tuple[int, int] | None] = ContextVar("peer", default=None)


def _holders(ends: tuple[int, int] | None) -> list[int]:
    """The pids (this one aside) holding the client end of the loopback connection (client port, server port), from
    /proc, in its order; none once the sender has closed it.

    Both ports are matched: a process of another test on the other core may use the same client port towards another
    server, and was once taken for this request's sender."""
    if ends is None:
        return []
    port, server = ends
    inodes = set()
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            cols = line.split()
            if int(cols[1].rsplit(":", 1)[1], 16) == port and int(cols[2].rsplit(":", 1)[1], 16) == server:
                inodes.add(f"socket:[{cols[9]}]")
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            if any(os.readlink(fd) in inodes for fd in (proc / "fd").iterdir()):
                found.append(int(proc.name))
        except OSError:
            continue
    return found


def _sender(ends: tuple[int, int] | None) -> int | None:
    """The pid whose socket is the client end of the connection (None if gone)."""
    return next(iter(_holders(ends)), None)


def _stat(pid: int) -> list[str] | None:
    """/proc/<pid>/stat's fields from the state on (field 3; the command name before it may hold spaces), None if gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat[stat.rindex(")") + 2:].split()


def _state(pid: int) -> str:
    """The process's state letter (Z: a zombie, dead but not yet reaped), or `gone`."""
    fields = _stat(pid)
    return fields[0] if fields else "gone"


def _started(pid: int) -> int | None:
    """When the process started (clock ticks since boot: /proc/<pid>/stat field 22), None if gone."""
    fields = _stat(pid)
    return int(fields[19]) if fields else None


def _status(pid: int) -> dict[str, str]:
    """/proc/<pid>/status as a dict (empty if gone)."""
    try:
        lines = Path(f"/proc/{pid}/status").read_text().splitlines()
    except OSError:
        return {}
    return {k: v.strip() for k, _, v in (line.partition(":") for line in lines)}


def _sigkilled(status: dict[str, str]) -> bool:
    """Whether SIGKILL is pending on the process (its main thread's or its thread group's signals, status SigPnd/ShdPnd).

    PR_SET_PDEATHSIG queues it at the very moment the kernel re-parents the process, and a SIGKILLed process runs no
    more of its own code: it only has to be scheduled to exit and close its sockets, which on a loaded machine takes a
    while. Stays set while it exits (the thread group's SIGKILL is cleared when it is reaped)."""
    return any(int(status.get(key, "0") or "0", 16) & 1 << (signal.SIGKILL - 1) for key in ("SigPnd", "ShdPnd"))


def _comm(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return "?"


def _explain(pid: int, ends: tuple[int, int] | None, flower: int | None) -> str:
    """Why a request was taken for an orphan's: its sender (cmdline, state, pending signals, ancestors with comm), the
    flower of the run, and every process holding the connection's client end (read now: what the check saw, give or
    take the moments between)."""
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode("utf-8", "replace").strip()
    except OSError:
        cmdline = "?"
    status = _status(pid)
    signals = (f"state {status.get('State', 'gone')}, threads {status.get('Threads', '?')}, "
               f"SigPnd {status.get('SigPnd', '?')}, ShdPnd {status.get('ShdPnd', '?')}")
    chain = " <- ".join(f"{p} {_comm(p)}" for p in _ancestors(pid))
    state = "none" if flower is None else f"{flower} {_comm(flower)} (state {_state(flower)})"
    holders = ", ".join(f"{p} {_comm(p)}" for p in _holders(ends)) or "none"
    return f"sender {pid} `{cmdline[:120]}` ({signals}); chain {chain}; flower {state}; ends {ends}; holders {holders}"


def _ancestors(pid: int) -> list[int]:
    """`pid` and its parents up to init (bounded)."""
    chain = []
    for _ in range(64):
        chain.append(pid)
        fields = _stat(pid)
        if fields is None:
            break
        pid = int(fields[1])
        if pid <= 1:
            break
    return chain


class ChaosModel(ScriptedModel):
    """The scripted model of the chaos run: each reply is decided by the request (agent + conversation), not by order."""

    def __init__(self, workspace: Path, rng: random.Random) -> None:
        super().__init__()
        self.workspace = workspace
        self.rng = rng
        self.answers: dict[int, Reply] = {}
        """Conversation index of a request → what the model answered it (the witness of "answers lost")."""
        self.arrived: Callable[[dict[str, Any]], None] | None = None
        """Called the instant a request arrives, before it is answered (kills timed at the model's edge)."""
        self._flower: tuple[int, int | None] | None = None
        self.orphans: list[int] = []
        """Conversation indexes of requests sent by a CLI whose flower was dead (issue #31: must stay empty)."""
        self.why: dict[int, str] = {}
        """Of the orphans' requests, who sent each and what the check saw (the defect line says it)."""

    @property
    def flower(self) -> int | None:
        """The pid of the flower run now on the terminal (None between runs)."""
        return self._flower[0] if self._flower is not None else None

    @flower.setter
    def flower(self, pid: int | None) -> None:
        self._flower = (pid, _started(pid)) if pid is not None else None  # set right after it started: it lives

    def owned(self, pid: int) -> bool:
        """Whether `pid` runs below the live flower of this run (else its flower is dead: it is an orphan's)."""
        return self.flower is not None and self.flower in _ancestors(pid)

    def killed_with_flower(self, pid: int) -> bool:
        """Whether `pid` is a process of this run killed as its flower died: SIGKILL pending on it (PR_SET_PDEATHSIG, or
        the kill of the whole group), this run's flower dead, `pid` started after it. Such a process ran none of its own
        code after its flower's death, so a request of its that is read now was sent before: in flight, not an orphan's.

        Seen on a loaded machine (clean-clone `make test`): flower SIGTERMed alone 87 ms after a request, the goals CLI
        sent its next one, the kernel re-parented it and queued its SIGKILL; the model server read the request while the
        dying CLI still held its socket. Nothing else sends SIGKILL to this run's processes while its flower is dead and
        the next run has not started: the next wake ends strays (SIGINT first) only once it runs, and only CLIs started
        before it; the lap ends its groups after `flower` is set to None."""
        if self._flower is None or _state(self._flower[0]) not in ("Z", "X", "gone"):
            return False
        started, flower_started = _started(pid), self._flower[1]
        return (started is not None and flower_started is not None and started >= flower_started
                and _sigkilled(_status(pid)))

    def orphaned(self, pid: int) -> bool:
        """Whether the request `pid` sent came from a CLI whose flower was dead when it was sent (issue #31)."""
        return not self.owned(pid) and not self.killed_with_flower(pid)

    def decide(self, body: dict[str, Any]) -> Reply:
        """What this agent says next, given the conversation it sent."""
        messages: list[dict[str, Any]] = body.get("messages", [])
        system = body.get("system", "")
        system = system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system)
        ws = self.workspace
        agent = _agent(system)
        if agent == "clarify":
            if _done(messages, "## 验收 Acceptance"):
                return text("requirements written")
            if ANSWER in _user_texts(messages):
                return reply_of(tool_use("Write", {"file_path": str(ws / "需求.md"), "content": REQUIREMENTS}))
            return text(QUESTION)
        if agent == "goals":
            if SENTENCE in _user_texts(messages):  # a re-derivation: the checklist gains the sentence's goal (S15)
                if _done(messages, SENTENCE_GOAL):
                    return text("goals re-derived")
                return reply_of(tool_use("Write", {"file_path": str(ws / "目标.md"), "content": GOALS_AGAIN}))
            if _done(messages, "result.txt says phase2-done"):
                return text("goals written")
            return reply_of(tool_use("Write", {"file_path": str(ws / "目标.md"), "content": GOALS}))
        if agent == "subagent":  # writes sub.txt (its Bash takes time: kills land mid-tool), then hands back
            if _done(messages, SUB_WRITE):
                return text("SUB: wrote sub.txt")
            return _bash(SUB_WRITE, "echo sub > sub.txt")
        if agent == "work":
            handed = "You take over this work from an earlier session" in _user_texts(messages)
            plan = ([_bash("p2-a", "echo p2-a >> work.log"), _bash("p2-b", "echo phase2-done > result.txt")] if handed else
                    [_bash("p1-a", "echo p1-a >> work.log"), _delegated(),
                     _bash("p1-b", "echo p1-b >> work.log"),
                     _bash("p1-c", "printf 'import sys\\nprint(len(open(sys.argv[1]).readlines()))\\n' > count.py")])
            for step in plan:
                marker = _marker(step)
                # A delegation cut off by a kill is done once flower's note says its subagent's write returned.
                if not (_done(messages, marker) or marker == SUB_TASK and _told(messages, SUB_WRITE)):
                    return step
            # The first session's last reply crosses the handoff threshold; the next round hands off (S26).
            return text("phase 2 done" if handed else "phase 1 done", input_tokens=100 if handed else BIG)
        if agent == "judge":
            if not any(b.get("type") == "tool_use" for m in messages if m.get("role") == "assistant"
                       for b in m.get("content") or [] if isinstance(b, dict)):
                return reply_of(tool_use("Read", {"file_path": str(ws / "result.txt")}))
            if "phase2-done" in _user_texts(messages, results_only=True):
                return text("Checked every goal.\nVERDICT: PASS")
            return text("VERDICT: FAIL result.txt does not say phase2-done")
        return text("ok")

    async def _messages(self, http: Any) -> Any:
        peer = http.transport.get_extra_info("peername") if http.transport is not None else None
        own = http.transport.get_extra_info("sockname") if http.transport is not None else None
        _peer.set((peer[1], own[1]) if peer and own else None)  # this request's task only: requests are handled concurrently
        return await super()._messages(http)

    def _next_reply(self, body: dict[str, Any]) -> Reply | None:
        sender = _sender(_peer.get())
        if sender is not None and self.orphaned(sender):
            self.orphans.append(len(self.conversation))
            self.why[len(self.conversation)] = _explain(sender, _peer.get(), self.flower)
        if self.arrived is not None:
            self.arrived(body)
        reply = self.decide(body)
        reply.delay = self.rng.choice((0.0, 0.0, self.rng.uniform(0.0, 0.3)))  # room for kills mid-request
        self.answers[len(self.conversation)] = reply  # recorded right after this, as the next conversation entry
        return reply


# ------------------------------------------------------------------------------ flower on a terminal


def _controlling_tty() -> None:
    """In the child: a new session (so a process group to signal) whose terminal is the pty on stdin."""
    os.setsid()
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


class Terminal:
    """`flower` on a pseudo-terminal: it answers the prompts a person would (task, Enter to continue, the answer)."""

    PROMPTS = ((b"What should it do?", TASK), (b"Continue?", ""), (b"Your answer", ANSWER))

    def __init__(self, proc: asyncio.subprocess.Process, master: int) -> None:
        self.proc, self.master = proc, master
        self.raw = b""
        self.answered = 0
        asyncio.get_running_loop().add_reader(master, self._read)

    @classmethod
    async def open(cls, args: list[str], env: dict[str, str], cwd: Path) -> Terminal:
        master, slave = os.openpty()
        proc = await asyncio.create_subprocess_exec(str(FLOWER), *args, cwd=cwd, env=env, stdin=slave, stdout=slave,
                                                    stderr=slave, preexec_fn=_controlling_tty)
        os.close(slave)
        return cls(proc, master)

    def _read(self) -> None:
        try:
            data = os.read(self.master, 65536)
        except OSError:  # EIO: the child closed the terminal
            data = b""
        if not data:
            asyncio.get_running_loop().remove_reader(self.master)
            return
        self.raw += data
        plain = ANSI.sub(b"", self.raw)
        while True:
            found = [(at, line) for prompt, line in self.PROMPTS if (at := plain.find(prompt, self.answered)) >= 0]
            if not found:
                break
            at, line = min(found)
            self.answered = at + 1
            os.write(self.master, line.encode() + b"\r")

    @property
    def lines(self) -> int:
        """Lines shown so far."""
        return self.raw.count(b"\n")

    @property
    def screen(self) -> str:
        return ANSI.sub(b"", self.raw).decode("utf-8", "replace").replace("\r", "")

    def close(self) -> None:
        """Kill what is left of the group and close the terminal (twice is harmless)."""
        if self.master < 0:
            return
        if self.proc.returncode is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        try:
            asyncio.get_running_loop().remove_reader(self.master)
        except Exception:
            pass
        os.close(self.master)
        self.master = -1


# ------------------------------------------------------------------------------ what is checked


@dataclass
class Figures:
    """What a chaos run found."""

    kills: int = 0
    survived: int = 0
    laps: int = 0
    laps_passed: int = 0
    sessions_lost: int = 0
    turns_lost: int = 0
    rows_lost: int = 0
    unreadable: int = 0
    invalid_requests: int = 0
    debris: int = 0
    runs: int = 0
    signals: collections.Counter[str] = field(default_factory=collections.Counter)
    moments: collections.Counter[str] = field(default_factory=collections.Counter)
    judge_failed_then_passed: int = 0
    judge_unmirrored: int = 0
    """Of the turns lost, entries of judge rounds (never resumed, S14)."""
    handoffs: int = 0
    answers: int = 0
    """Model answers the CLI acted on (it sent that session's next request) before a kill ended its run."""
    answers_by_note: int = 0
    """Of those, answers the next run carried only in flower's note (the CLI had not written them down, issue #22)."""
    answers_lost: int = 0
    """Of those, answers whose content the step's first request of the next flower run did not carry (issue #22)."""
    alone: int = 0
    """Of the kills, those of the flower process alone (not its group)."""
    requests_after_kill: int = 0
    """Requests the model received from a CLI whose flower was dead (issue #31)."""
    model_turns_lost: int = 0
    """Answers a CLI acted on that a later request of the same session did not carry (issue #31: one writer)."""
    sidechain_answers: int = 0
    """Subagent answers the CLI acted on in a run a kill ended, before the subagent handed back (issue 32)."""
    sidechain_answers_lost: int = 0
    """Of those, answers the next run's first work request did not carry (as flower's note of the subagent)."""
    sentences: int = 0
    """Laps in which a sentence was said at a wake (S15)."""
    sentences_lost: int = 0
    """Of those, sentences missing from the work session, 需求.md or the re-derived 目标.md."""
    sentences_twice: int = 0
    """Of those, sentences delivered more than once."""
    wall_s: float = 0.0
    defects: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        """Every lap passed and nothing was lost, invalid or left unreadable."""
        return (self.laps_passed == self.laps and self.survived == self.kills and not self.defects
                and not (self.sessions_lost or self.turns_lost or self.answers_lost or self.rows_lost or self.unreadable
                         or self.invalid_requests or self.debris or self.requests_after_kill or self.model_turns_lost
                         or self.sentences_lost or self.sentences_twice or self.sidechain_answers_lost))

    def report(self) -> str:
        """The figures, one per line."""
        signals = ", ".join(f"{name} {self.signals[name]}" for name in ("SIGKILL", "SIGTERM", "SIGHUP", "SIGINT"))
        moments = ", ".join(f"{k} {v}" for k, v in sorted(self.moments.items()))
        lines = [
            f"kills survived   {self.survived}/{self.kills}   ({signals}; {self.alone} of flower alone, not its group)",
            f"moments          {moments}",
            f"laps passed      {self.laps_passed}/{self.laps}   (flower runs {self.runs}, judge failed then passed in "
            f"{self.judge_failed_then_passed}, handoffs {self.handoffs})",
            f"sessions lost    {self.sessions_lost}",
            f"turns lost       {self.turns_lost}   (of which judge rounds' entries: {self.judge_unmirrored})",
            f"answers lost     {self.answers_lost}   (of {self.answers} model answers acted on in a run a kill ended; "
            f"{self.answers_by_note} carried by flower's note of a cut-off attempt)",
            f"answers lost in subagents {self.sidechain_answers_lost}   (of {self.sidechain_answers} a subagent acted on in a "
            f"run a kill ended before it handed back)",
            f"requests after a kill {self.requests_after_kill}   (from a CLI whose flower was dead)",
            f"turns lost at the model {self.model_turns_lost}   (an answer acted on, missing from a later request of its session)",
            f"sentences lost   {self.sentences_lost}   (of {self.sentences} said at a wake; {self.sentences_twice} delivered twice)",
            f"manifest rows lost {self.rows_lost}; unreadable lineage/manifest after a kill {self.unreadable}",
            f"model received   {self.invalid_requests} invalid transcripts, {self.debris} with error debris",
            f"wall time        {self.wall_s:.0f} s",
        ]
        lines += [f"DEFECT: {d}" for d in self.defects]
        return "\n".join(lines)


def _stored_uuids(db: Path) -> dict[str, set[str]]:
    """session id → uuids of its main transcript in sessions.db (read-only)."""
    if not db.exists():
        return {}
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True, timeout=30)
    try:
        rows = conn.execute("SELECT t.session_id, e.uuid FROM entries e JOIN transcripts t ON e.transcript = t.id "
                            "WHERE t.subpath = '' AND e.uuid IS NOT NULL").fetchall()
    except sqlite3.OperationalError:
        return {}
    finally:
        conn.close()
    out: dict[str, set[str]] = collections.defaultdict(set)
    for sid, uid in rows:
        out[sid].add(uid)
    return out


def _local_entries(roots: list[Path]) -> dict[str, list[dict[str, Any]]]:
    """session id → entries of the CLI's own transcripts (`projects/*/<sid>.jsonl`) under each root; torn lines skipped."""
    out: dict[str, list[dict[str, Any]]] = collections.defaultdict(list)
    for root in roots:
        for path in root.glob("**/projects/*/*.jsonl"):
            for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
                try:
                    entry = json.loads(line)
                except ValueError:
                    continue
                if isinstance(entry, dict):
                    out[path.stem].append(entry)
    return out


def _pruner_made(uid: str) -> bool:
    """The pruner's own closing entries (uuid5, S23c) live only in the view it serves; the CLI's uuids are random (v4)."""
    try:
        return uuid.UUID(uid).version == 5
    except ValueError:
        return False


def _local_uuids(roots: list[Path]) -> set[tuple[str, str]]:
    """(session, uuid) of every CLI local transcript entry under the roots (the pruner's own left out)."""
    return {(sid, e["uuid"]) for sid, entries in _local_entries(roots).items() for e in entries
            if isinstance(e.get("uuid"), str) and not _pruner_made(e["uuid"])}


def _missing(seen: set[tuple[str, str]], db: Path) -> set[tuple[str, str]]:
    """Of the entries `seen` in CLI local transcripts, those sessions.db does not hold."""
    stored = _stored_uuids(db)
    return {(sid, uid) for sid, uid in seen if uid not in stored.get(sid, set())}


def _has_output(sid: str, roots: list[Path], db: Path) -> bool:
    """Whether a session held model output anywhere it could be resumed from (the CLI's file or sessions.db)."""
    def real(entry: dict[str, Any]) -> bool:
        message = entry.get("message")
        return entry.get("type") == "assistant" and isinstance(message, dict) and message.get("model") != "<synthetic>"
    if any(real(e) for e in _local_entries(roots).get(sid, [])):
        return True
    if not db.exists():
        return False
    conn = sqlite3.connect(db.resolve().as_uri() + "?mode=ro", uri=True, timeout=30)
    try:
        bodies = conn.execute("SELECT e.body FROM entries e JOIN transcripts t ON e.transcript = t.id "
                              "WHERE t.session_id = ? AND t.subpath = ''", (sid,)).fetchall()
    finally:
        conn.close()
    return any(real(json.loads(b)) for (b,) in bodies)


def _readable(path: Path) -> bool:
    """Absent, or valid JSON."""
    try:
        json.loads(path.read_bytes())
    except FileNotFoundError:
        return True
    except ValueError:
        return False
    return True


def _rows(path: Path) -> set[tuple[Any, ...]]:
    """The manifest's rows as flower reads them (one a line since issue 35, or the older JSON list)."""
    rows = ManifestFile(path).rows()
    return {(r.get("run"), r.get("step"), r.get("started_at")) for r in rows if isinstance(r, dict)}


# ------------------------------------------------------------------------------ the run


@dataclass
class Kill:
    """One planned kill: when (kind, count, sub-delay) and with what."""

    kind: str
    count: int
    delay: float
    sig: signal.Signals
    alone: bool = False
    """The flower process alone, as a crashed terminal or the OOM killer does (its CLI is not signalled); else its group."""
    sent: bool = False
    """Already sent by the model server's arrival hook (kinds `arrival`, `tool` and `rederive`)."""

    def send(self, pid: int) -> None:
        """Signal flower (alone) or its process group."""
        try:
            os.kill(pid, self.sig) if self.alone else os.killpg(pid, self.sig)
        except ProcessLookupError:
            pass

    @classmethod
    def rederive(cls, rng: random.Random) -> Kill:
        """A kill while the goals are re-derived for a sentence said at wake: 0-1 s after such a request arrives (S15)."""
        return cls("rederive", rng.randint(1, 2), rng.uniform(0.0, 1.0), rng.choice(SIGNALS), rng.random() < 0.5)

    @classmethod
    def draw(cls, rng: random.Random, kinds: tuple[str, ...] = KINDS) -> Kill:
        """`request`/`line`/`time` are polled (10 ms) plus a sub-delay; `arrival` fires inside the model server the instant
        the k-th request arrives, before it is answered; `tool` fires 0–200 ms after the k-th request that carries a
        tool result arrived (the tool just ran: the CLI's lazy transcript window, issue #22); `subagent` 0–500 ms
        after the k-th request of a subagent arrived (inside the delegation, mid-tool: issue #32)."""
        kind = rng.choice(kinds)
        count = {"request": rng.randint(1, 4), "line": rng.randint(1, 12), "time": 0, "arrival": rng.randint(1, 4),
                 "tool": rng.randint(1, 3), "subagent": rng.randint(1, 2)}[kind]
        delay = (rng.uniform(0.3, 5.0) if kind == "time" else 0.0 if kind == "arrival" else rng.uniform(0.0, 0.2)
                 if kind == "tool" else rng.uniform(0.0, 0.5) if kind == "subagent"
                 else rng.choice((0.0, rng.uniform(0.0, 0.5), rng.uniform(0.0, 1.5))))
        return cls(kind, count, delay, rng.choice(SIGNALS), rng.random() < 0.5)


def _after_tool(body: dict[str, Any]) -> bool:
    """Whether a request's newest user turn carries a tool result: the tool ran just before it was sent."""
    messages = body.get("messages") or [{}]
    content = messages[-1].get("content")
    return isinstance(content, list) and any(isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def _rederiving(body: dict[str, Any]) -> bool:
    """Whether a request is the goal setter's, re-deriving the checklist for the sentence."""
    system = body.get("system", "")
    system = system if isinstance(system, str) else "\n".join(b.get("text", "") for b in system)
    return _agent(system) == "goals" and SENTENCE in _user_texts(body.get("messages", []))


def _arm(kill: Kill, term: Terminal, model: ChaosModel) -> None:
    """Let the model server send the kill of kind `arrival` / `tool` itself, at its moment."""
    seen = 0

    def send() -> None:
        if term.proc.returncode is None and not kill.sent:
            kill.sent = True
            kill.send(term.proc.pid)

    def arrived(body: dict[str, Any]) -> None:
        nonlocal seen
        if kill.kind == "tool" and not _after_tool(body):
            return
        if kill.kind == "rederive" and not _rederiving(body):
            return
        if kill.kind == "subagent" and not is_subagent(body):
            return
        seen += 1
        if seen == kill.count:
            model.arrived = None
            if kill.delay:
                asyncio.get_running_loop().call_later(kill.delay, send)
            else:
                send()  # now, inside the server's handler: before this request is answered

    model.arrived = arrived


async def _moment(kill: Kill, term: Terminal, model: ChaosModel) -> bool:
    """Wait for the kill's moment; False if flower ended first."""
    requests, lines = len(model.conversation), term.lines
    if kill.kind in ("arrival", "tool", "subagent", "rederive"):
        _arm(kill, term, model)
        try:
            while not kill.sent:
                if term.proc.returncode is not None:
                    return False
                await asyncio.sleep(0.01)
        finally:
            model.arrived = None
        return True
    reached: Callable[[], bool] = {
        "request": lambda: len(model.conversation) >= requests + kill.count,
        "line": lambda: term.lines >= lines + kill.count,
        "time": lambda: True,
    }[kill.kind]
    while not reached():
        if term.proc.returncode is not None:
            return False
        await asyncio.sleep(0.01)
    deadline = time.monotonic() + kill.delay
    while time.monotonic() < deadline:
        if term.proc.returncode is not None:
            return False
        await asyncio.sleep(0.01)
    return term.proc.returncode is None


def _carried(answer: Reply, request: Any, note: bool = True) -> bool:
    """Whether `request` carries every block of `answer`: as its transcript (the tool_use, the text) or in flower's
    note of what a cut-off attempt did (each call with its input, the words said); `note=False`: the transcript only."""
    seen = request.text if note else "\n".join(request.texts("assistant"))
    ids = {u.get("id") for u in request.tool_uses()}
    for block in answer.blocks:
        if block["type"] == "text" and block["text"] not in seen:
            return False
        if block["type"] == "tool_use" and block["id"] not in ids and json.dumps(block["input"], ensure_ascii=False) not in seen:
            return False
    return True


def _run_of(starts: list[int], index: int) -> int:
    """Which flower run sent request `index` (`starts`: the request count when each run started)."""
    return max(i for i, s in enumerate(starts) if s <= index)


def _after(culprit: Kill | None) -> str:
    """The kill a defect is blamed on, for its line."""
    return culprit.sig.name + " at " + culprit.kind if culprit else "no kill"


def _answers_lost(n: int, model: ChaosModel, starts: list[int], killed_before: list[Kill | None], figures: Figures,
                  blame: Callable[[int], Kill | None]) -> None:
    """Answers lost, at the model's edge: each answer the CLI acted on in a run that a kill ended must be carried by the
    step's first request of the next run (the judge is fresh by design, S14; a handoff's new session starts from its
    note, S26)."""
    conversation = model.conversation

    for i, answer in sorted(model.answers.items()):
        asked = conversation[i]
        agent, sid, run = _agent(asked.system), asked.session_id, _run_of(starts, i)
        if agent not in ("clarify", "goals", "work") or not answer.blocks or run + 1 >= len(starts) \
                or killed_before[run + 1] is None:
            continue
        # Acted on: the same CLI sent its session's next request, so the answer had arrived and was processed.
        if not any(r.session_id == sid and _run_of(starts, j) == run for j, r in enumerate(conversation[i + 1:], i + 1)):
            continue
        later = next((j for j in range(starts[run + 1], len(conversation)) if _agent(conversation[j].system) == agent), None)
        if later is None or "You take over this work from an earlier session" in conversation[later].text:
            continue
        figures.answers += 1
        if _carried(answer, conversation[later]) and not _carried(answer, conversation[later], note=False):
            figures.answers_by_note += 1
        if not _carried(answer, conversation[later]):
            figures.answers_lost += 1
            culprit = blame(later)
            figures.defects.append(f"lap {n}: the {agent} answer to request {i} ({_said(answer)}) is not in request "
                                   f"{later}, the step's first of the next run (after "
                                   f"{_after(culprit)})")


def _sidechain_answers_lost(n: int, model: ChaosModel, starts: list[int], killed_before: list[Kill | None],
                            figures: Figures, blame: Callable[[int], Kill | None]) -> None:
    """Answers lost inside subagents (issue 32): what a subagent did in a run a kill ended, before it handed back, must
    reach the work agent's first request of the next run (flower's note of the interrupted subagent)."""
    conversation = model.conversation

    for i, answer in sorted(model.answers.items()):
        if _agent(conversation[i].system) != "subagent" or not answer.blocks:
            continue
        run = _run_of(starts, i)
        if run + 1 >= len(starts) or killed_before[run + 1] is None:
            continue
        if not any(_agent(r.system) == "subagent" and _run_of(starts, j) == run for j, r in enumerate(conversation[i + 1:], i + 1)):
            continue  # not acted on: the kill came before the subagent used it
        later = next((j for j in range(starts[run + 1], len(conversation)) if _agent(conversation[j].system) == "work"), None)
        if later is None or "You take over this work from an earlier session" in conversation[later].text:
            continue
        if "SUB: wrote sub.txt" in _user_texts(conversation[later].messages, results_only=True):
            continue  # it had handed back: the work agent holds its result
        figures.sidechain_answers += 1
        if not _carried(answer, conversation[later]):
            figures.sidechain_answers_lost += 1
            culprit = blame(later)
            figures.defects.append(f"lap {n}: the subagent's answer to request {i} ({_said(answer)}) is not in request "
                                   f"{later}, the work agent's first of the next run (after "
                                   f"{_after(culprit)})")


def _turns_lost_at_the_model(n: int, model: ChaosModel, starts: list[int], figures: Figures,
                             blame: Callable[[int], Kill | None]) -> None:
    """Turns lost at the model (issue #31): an answer a CLI acted on must be carried by every later request of its session
    (as transcript, or by flower's note, which stays in the conversation once sent): a second writer on the session
    (a dead flower's CLI) used to replace a wake's own turn."""
    conversation = model.conversation

    for i, answer in sorted(model.answers.items()):
        asked = conversation[i]
        agent, sid = _agent(asked.system), asked.session_id
        if agent not in ("clarify", "goals", "work") or not answer.blocks or sid is None or i in model.orphans:
            continue
        later = [j for j in range(i + 1, len(conversation)) if conversation[j].session_id == sid and j not in model.orphans
                 and _agent(conversation[j].system) == agent and conversation[j].status != 400]
        if not any(_run_of(starts, j) == _run_of(starts, i) for j in later):
            continue  # not acted on: the kill came before the CLI used it (answers lost judges the next run)
        missing = next((j for j in later if not _carried(answer, conversation[j])), None)
        if missing is not None:
            figures.model_turns_lost += 1
            culprit = blame(missing)
            figures.defects.append(f"lap {n}: the {agent} answer to request {i} ({_said(answer)}) is missing from request "
                                   f"{missing} of the same session (after {culprit.sig.name if culprit else 'no kill'})")


def _sentence(n: int, ws: Path, model: ChaosModel, figures: Figures) -> None:
    """Sentences lost (S15): said once, it must be in the work session, in 需求.md and in the re-derived 目标.md, once."""
    work = [r for r in model.conversation if _agent(r.system) == "work" and r not in [model.conversation[i] for i in model.orphans]]
    carried = [sum(SENTENCE in t for t in r.texts("user")) for r in work]
    requirements = (ws / "需求.md").read_text(encoding="utf-8") if (ws / "需求.md").exists() else ""
    goals = (ws / "目标.md").read_text(encoding="utf-8") if (ws / "目标.md").exists() else ""
    places = {"the work session": any(carried), "需求.md": SENTENCE in requirements, "目标.md": SENTENCE_GOAL in goals}
    if not all(places.values()):
        figures.sentences_lost += 1
        figures.defects.append(f"lap {n}: the sentence said at wake is missing from {', '.join(k for k, v in places.items() if not v)}")
    if max(carried, default=0) > 1 or requirements.count(SENTENCE) > 1:
        figures.sentences_twice += 1
        figures.defects.append(f"lap {n}: the sentence was delivered twice (work requests carry it {max(carried, default=0)}x, "
                               f"需求.md {requirements.count(SENTENCE)}x)")


def _said(answer: Reply) -> str:
    return "; ".join(b["text"][:60] if b["type"] == "text" else f"{b['name']} {json.dumps(b['input'])[:60]}"
                     for b in answer.blocks)


def cli_env(model: ScriptedModel, config: Path, tmp: Path) -> dict[str, str]:
    """This process's env without credentials, pointed at the scripted model; TMPDIR keeps the SDK's resume copies here."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("LC_ALL", "LC_MESSAGES") and not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    # HOME here too: the Bash tool runs a login shell, and a kill during a profile's `pyenv rehash` leaves its
    # lock behind, so every later login shell of the machine's own profile waits on it (seen: a run stuck on it).
    return {**base, **model.env(config), "CLAUDE_CODE_MAX_RETRIES": "0", "LANG": "C.UTF-8", "TERM": "xterm",
            "TMPDIR": str(tmp), "HOME": str(tmp)}


async def lap(n: int, root: Path, rng: random.Random, kills: int, figures: Figures, say_: Callable[[str], None],
              run_timeout: float, stop_at: float = float("inf"), kinds: tuple[str, ...] = KINDS) -> int:
    """One workspace run to the end through up to `kills` kills; returns the kills used."""
    home = root / f"lap{n}"
    ws, config, tmp = home / "ws", home / "claude-config", home / "tmp"
    for path in (ws, config, tmp):
        path.mkdir(parents=True)
    runs = ws / "runs"
    db = runs / "sessions.db"
    roots = [config, tmp]
    seen: set[tuple[str, str]] = set()  # every CLI local transcript entry seen after a kill or at the end
    used = 0
    starts: list[int] = []  # model request count when each flower run started
    killed_before: list[Kill | None] = []  # the kill that preceded each run
    at_risk: list[tuple[Kill, set[tuple[str, str]]]] = []
    rows_seen: set[tuple[Any, ...]] = set()
    lost_by_kill: set[int] = set()
    previous: Kill | None = None
    said = False  # the sentence said (S15) in this lap
    groups: list[int] = []  # each run's process group: what a kill of flower alone left is ended after the lap
    figures.laps += 1
    async with ChaosModel(ws, random.Random(rng.random())) as model:
        env = cli_env(model, config, tmp)
        passed = False
        for attempt in range(kills + 20):
            args = [] if (ws / "需求.md").exists() else [TASK]
            # Once the goals exist, a wake says one more sentence (S15), killed while the goals are re-derived for it.
            sentence = not said and not args and (ws / "目标.md").exists() and "rederive" in kinds
            if sentence:
                args, said = [SENTENCE], True
            starts.append(len(model.conversation))
            killed_before.append(previous)
            figures.runs += 1
            term = await Terminal.open(args, env, ws)
            groups.append(term.proc.pid)
            model.flower = term.proc.pid
            kill = ((Kill.rederive(rng) if sentence else Kill.draw(rng, tuple(k for k in kinds if k != "rederive")))
                    if used < kills and time.monotonic() < stop_at else None)
            try:
                if kill is not None and await _moment(kill, term, model):
                    if not kill.sent:
                        kill.send(term.proc.pid)
                else:
                    kill = None  # flower ended before the moment came
                try:
                    code = await asyncio.wait_for(term.proc.wait(), run_timeout)
                except TimeoutError:
                    code = None
                    figures.defects.append(f"lap {n} run {attempt}: flower did not end within {run_timeout:.0f} s "
                                           f"({'after ' + kill.sig.name if kill else 'no kill'}); screen tail:\n"
                                           f"{term.screen[-1500:]}")
                    with open(home / "runs.log", "a", encoding="utf-8") as log:
                        log.write(f"run {attempt}: {kill or 'no kill'} -> did not end\n{term.screen[-2500:]}\n{'=' * 80}\n")
                    break
            finally:
                await asyncio.sleep(0.05)
                term.close()
            with open(home / "runs.log", "a", encoding="utf-8") as log:
                log.write(f"run {attempt} from request {starts[-1]}: {kill or 'no kill'} -> exit {code}\n"
                          f"{term.screen[-2500:]}\n{'=' * 80}\n")
            if code == 0:
                passed = True
                break
            if kill is None or code not in (-kill.sig, 130):
                figures.defects.append(f"lap {n} run {attempt}: flower exited {code} "
                                       f"({'after ' + kill.sig.name if kill else 'no kill'}); screen tail:\n{term.screen[-1500:]}")
                previous = None
                if kill is None:
                    continue
            used += 1
            figures.kills += 1
            figures.signals[kill.sig.name] += 1
            figures.moments[kill.kind] += 1
            figures.alone += kill.alone
            previous = kill
            bad = [p.name for p in (runs / "lineage.json",) if not _readable(p)]
            bad += [] if ManifestFile(runs / "manifest.json").valid() else ["manifest.json"]
            if bad:
                figures.unreadable += 1
                lost_by_kill.add(id(kill))
                figures.defects.append(f"lap {n}: {', '.join(bad)} unreadable after {kill.sig.name}")
            rows = _rows(runs / "manifest.json")
            if rows_seen - rows:
                figures.rows_lost += len(rows_seen - rows)
                lost_by_kill.add(id(kill))
            rows_seen |= rows
            # Seen now, before the next run: its sweep removes a killed resume's temp dir once imported.
            seen |= _local_uuids(roots)
            at_risk.append((kill, _missing(seen, db)))
        figures.laps_passed += passed
        if not passed:
            figures.defects.append(f"lap {n}: the work did not finish")
        model.flower = None
        for group in groups:  # a CLI that outlived its flower (counted as it spoke) ends with the lap
            try:
                os.killpg(group, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass

        # -- after the lap: what the model received, and what is on disk --------------------
        conversation = model.conversation
        with open(home / "requests.jsonl", "w", encoding="utf-8") as log:  # for reading a failing seed afterwards
            for r in model.requests:
                log.write(json.dumps({"agent": _agent(r.system), "session": r.session_id, "status": r.status,
                                      "error": r.error, "messages": len(r.messages), "last": r.last_user_text[-300:],
                                      "debris": [d for d in DEBRIS if d in r.text],
                                      "body": r.messages if any(d in r.text for d in DEBRIS) or r.error else None},
                                     ensure_ascii=False) + "\n")
        def blame(index: int) -> Kill | None:
            """The kill before the flower run that sent request `index`."""
            culprit = killed_before[max(i for i, s in enumerate(starts) if s <= index)]
            if culprit is not None:
                lost_by_kill.add(id(culprit))
            return culprit

        for index, r in enumerate(conversation):
            if r.status == 400 and r.error:
                figures.invalid_requests += 1
                culprit = blame(index)
                figures.defects.append(f"lap {n}: invalid transcript sent to the model after "
                                       f"{culprit.sig.name if culprit else 'no kill'}: {r.error}")
            found = [d for d in DEBRIS if d in r.text]
            if found:
                figures.debris += 1
                culprit = blame(index)
                figures.defects.append(f"lap {n}: the model received {found} ({_agent(r.system)} step, request {index}, "
                                       f"after {culprit.sig.name if culprit else 'no kill'})")
        # Every entry of every CLI local transcript counts, judge rounds' too (never resumed, S14: the wake's sweep
        # brings them in); the judges' share is shown apart.
        judges = {r.session_id for r in conversation if _agent(r.system) == "judge"}
        missing = _missing(seen | _local_uuids(roots), db)
        figures.turns_lost += len(missing)
        figures.judge_unmirrored += sum(1 for sid, _ in missing if sid in judges)
        for kill, risk in at_risk:
            if risk & missing:
                lost_by_kill.add(id(kill))
        if missing:
            figures.defects.append(f"lap {n}: {len(missing)} CLI transcript entries are not in sessions.db")
        # Sessions: per step, a new session is fine only if the one before held no model output, or for a handoff.
        current: dict[str, str] = {}
        verdicts: list[bool] = []
        for index, r in enumerate(conversation):
            agent = _agent(r.system)
            sid = r.session_id
            if agent not in ("clarify", "goals", "work") or sid is None:
                continue
            before = current.get(agent)
            if before is not None and sid != before:
                handoff = agent == "work" and "You take over this work from an earlier session" in r.text
                figures.handoffs += handoff
                if not handoff and _has_output(before, roots, db):
                    figures.sessions_lost += 1
                    culprit = blame(index)
                    figures.defects.append(f"lap {n}: the {agent} step left session {before} (it had model output) "
                                           f"for a fresh {sid} at request {index} (after {culprit.sig.name if culprit else 'no kill'})")
            current[agent] = sid
        _answers_lost(n, model, starts, killed_before, figures, blame)
        _turns_lost_at_the_model(n, model, starts, figures, blame)
        _sidechain_answers_lost(n, model, starts, killed_before, figures, blame)
        for index in model.orphans:
            figures.requests_after_kill += 1
            culprit = blame(index)
            figures.defects.append(f"lap {n}: request {index} ({_agent(conversation[index].system)}) came from a CLI whose "
                                   f"flower was dead (after {_after(culprit)}): {model.why.get(index, '?')}")
        if said:
            figures.sentences += 1
            _sentence(n, ws, model, figures)
        for row in ManifestFile(runs / "manifest.json").rows():
            if isinstance(row, dict) and "·判定#" in str(row.get("step")) and row.get("ok"):
                verdicts.append("VERDICT: PASS" in (row.get("text") or ""))
        if False in verdicts and verdicts[-1:] == [True]:
            figures.judge_failed_then_passed += 1
        figures.survived += sum(1 for kill, _ in at_risk if id(kill) not in lost_by_kill) if passed else 0
    say_(f"lap {n}: {'passed' if passed else 'NOT FINISHED'} after {used} kills, {len(starts)} runs, "
         f"{len(conversation)} model requests")
    return used


async def chaos(kills: int, seed: int, root: Path | None = None, say_: Callable[[str], None] = print,
                run_timeout: float = 120.0, minutes: float | None = None, kinds: tuple[str, ...] = KINDS) -> Figures:
    """Run the scenario through `kills` seeded kills (as many laps as it takes) and return the figures.

    With `minutes`, no kill is drawn after that time: the lap under way finishes unkilled and the run ends.
    """
    rng = random.Random(seed)
    figures = Figures()
    # A killed client leaves the scripted model writing to a closed socket; aiohttp logs each as an error.
    logging.getLogger("aiohttp.server").setLevel(logging.CRITICAL)
    started = time.monotonic()
    stop_at = started + minutes * 60 if minutes else float("inf")
    own = root is None
    base = Path(tempfile.mkdtemp(prefix="flower-chaos-")) if root is None else root
    try:
        n = 0
        while (figures.kills < kills and time.monotonic() < stop_at) or n == 0:
            n += 1
            used = await lap(n, base, rng, kills - figures.kills, figures, say_, run_timeout, stop_at, kinds)
            if used == 0 and figures.kills < kills:
                break  # a lap that took no kill would loop forever
    finally:
        figures.wall_s = time.monotonic() - started
        if own:
            shutil.rmtree(base, ignore_errors=True)
    return figures


def main() -> None:
    """Parse arguments, run, print the figures; exit 1 unless every kill was survived."""
    parser = argparse.ArgumentParser(prog="python benchmarks/chaos.py", description=__doc__.splitlines()[0])
    parser.add_argument("--kills", type=int, default=100, help="how many kills (default 100)")
    parser.add_argument("--seed", type=int, default=1, help="the RNG seed: the same seed plans the same kills")
    parser.add_argument("--keep", metavar="DIR", help="run in DIR and keep the workspaces there")
    parser.add_argument("--minutes", type=float, help="draw no kill after this many minutes (a bound on a loaded machine)")
    args = parser.parse_args()
    # The kills include Ctrl-C and hangups: a shell that started this in the background (SIGINT
    # ignored) or under nohup (SIGHUP ignored) would pass "ignore" on to flower; give it the defaults.
    signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    root = Path(args.keep) if args.keep else None
    if root is not None:
        root.mkdir(parents=True, exist_ok=True)
    figures = asyncio.run(chaos(args.kills, args.seed, root, minutes=args.minutes))
    print(f"chaos --kills {args.kills} --seed {args.seed}")
    print(figures.report())
    sys.exit(0 if figures.ok else 1)


if __name__ == "__main__":
    main()
