"""A thousand rounds, flat: one task driven through the engine for N work rounds, its figures at 10%, 50% and 100%.

Usage: python benchmarks/soak.py [--rounds N] [--seed S] [--keep DIR] [--minutes M]

One folder (需求.md and 目标.md written beforehand, so every wake goes straight to work) is driven through a real
engine (`flower serve --background`, its own socket in a temporary directory; D11) and the real CLI against the
scripted model, with fast replies (no delay). A work round is the work agent's turn — a Write of a new file, then a
text whose usage grows the context by `--tokens-per-round` (S26's recorded ~2.2K a round), so the work session hands
off every ~50 rounds (the default threshold, 120K) — and the judge's verdict, always FAIL: every wake runs its 10
rounds (S27) and the next wake continues. On the way: 10 kills of the engine (SIGKILL to the engine process alone, at
seeded moments 0-300 ms after a work request arrived, rounds spread over the run), each followed by a new engine and a
new wake; 10 attach/detach cycles of a second client (connect, initialize, attach, a history page, detach, leave); and
a third client asking `flower/status` every 100 ms throughout.

At rounds N/10, N/2 and N (100, 500, 1,000 for the default N), the wake under way is cancelled at its next work
request, and once the engine has been idle for a trim period (`TRIM_EVERY` + 1 s): the engine's VmRSS, open file descriptors and threads (from /proc),
the p99 of `flower/status` over the last N/10 rounds, and the wake time (median of 5 wakes, each from `flower/wake` to
its first model request, cancelled there). Each must be within 10% of its value at N/10 (no growth with the run's
length).

Answers lost, counted at the scripted model: every answer the work agent gave must be carried by its session's next
request (as transcript, or by flower's note of a cut-off attempt), and the work agent may move to a new session only
by a handoff. An answer whose next request comes after a cut (a kill or a cancel) is counted only when carried: the
cut may have come before the CLI received it (chaos.py's "acted on" needs the same process). Target: 0 lost.

Every process it starts ends with it (engines and their CLIs by process group), also on Ctrl-C or SIGTERM.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import contextlib
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pygls.uris import from_fs_path

from chaos import GOALS, REQUIREMENTS, _after_tool, _agent, _carried  # benchmarks/chaos.py: the flower path's agents
from engine import rss_mb  # benchmarks/engine.py
from flower.engine.client import EngineClient, EngineError, Gone
from flower.engine.engine import TRIM_EVERY
from flower.lsp import protocol as p
from flower.testing import Reply, ScriptedModel, reply, say, text, tool_use
from flower.testing.server import Request
from flower.workflow.flower import HANDOFF_ASK

HANDED = "You take over this work from an earlier session"
"""The start of a handoff's first message to the new session (S26)."""
WAKE_TIMEOUT = 120.0
"""Seconds a wake may take to reach the model."""
ROUND_TIMEOUT = 90.0
"""Seconds one round may take on a loaded 2-core machine before the run counts as stuck."""
STATUS_EVERY = 0.1
PROBES = 5
"""Wakes timed at each checkpoint (median)."""
KILLS = ATTACHES = 10


# ------------------------------------------------------------------------------ the scripted model


@dataclass
class Answers:
    """What the model's answers became (the count at the scripted model)."""

    reached: int = 0
    """Answers carried by their session's next request."""
    lost: int = 0
    """Answers the next request of their session did not carry, with no cut in between."""
    cut: int = 0
    """Answers whose next request came after a cut and did not carry them: the cut may have come first."""
    sessions_lost: int = 0
    """The work agent in a new session without a handoff: what the old one held never reaches the model again."""
    handoffs: int = 0
    defects: list[str] = field(default_factory=list)


class SoakModel(ScriptedModel):
    """The scripted model of the soak: each reply decided by the request (agent, last turn), never by order."""

    def __init__(self, workspace: Path, tokens_per_round: int) -> None:
        super().__init__()
        self.workspace, self.tokens_per_round = workspace, tokens_per_round
        self.count = 0
        """`/v1/messages` requests so far."""
        self.arrived_at: list[float] = []
        """perf_counter() at each request's arrival."""
        self.rounds = 0
        """Judge requests so far: each ends a work round."""
        self.writes = 0
        self.cuts = 0
        """Kills and cancels so far: an answer's next request after one may miss it lawfully."""
        self.severed = False
        """A cut is under way (set at each kill or cancel, cleared as the next wake is sent). A request read meanwhile
        may come from a CLI already cut off: its HTTP request was sent before the kill, but this loop read it after the
        kill's callback ran, so its answer reaches no CLI, and it counts as cut, never as lost."""
        self.answers = Answers()
        self.unseen: dict[str, list[tuple[int, int, Reply]]] = {}
        """Work session → (request index, cuts then, answer) not yet seen again."""
        self.work_session: str | None = None
        self.hook: Callable[[str], None] | None = None
        """Called with the agent at each request's arrival, before it is answered (kills timed at the model's edge)."""
        self.invalid = 0
        """Requests the model refused as the real API would (an invalid transcript)."""

    async def _record(self, request: Request) -> None:
        self.invalid += request.status == 400
        await super()._record(request)

    def _next_reply(self, body: dict[str, Any]) -> Reply | None:
        index, self.count = self.count, self.count + 1
        self.arrived_at.append(time.perf_counter())
        request = Request("/v1/messages", body)
        agent = _agent(request.system)
        if agent == "work" and HANDOFF_ASK[:60] in request.last_user_text:
            agent = "handoff"
        sid = request.session_id
        if agent in ("work", "handoff") and sid is not None:
            self._seen_again(sid, request)
        if agent == "work" and sid is not None:
            self._session(sid, request)
        if self.hook is not None:
            self.hook(agent)
        answer = self.decide(agent, body)
        if agent == "work" and sid is not None:
            # -1 equals no later count of cuts: an answer given during a cut counts as cut if not carried.
            self.unseen.setdefault(sid, []).append((index, -1 if self.severed else self.cuts, answer))
        del self.requests[:-8]  # bodies are large (the CLI's system prompt and tools): keep only the newest
        return answer

    def _seen_again(self, sid: str, request: Request) -> None:
        for index, cuts, answer in self.unseen.pop(sid, []):
            if _carried(answer, request):
                self.answers.reached += 1
            elif cuts != self.cuts:
                self.answers.cut += 1
            else:
                self.answers.lost += 1
                self.answers.defects.append(f"the answer to request {index} is not in request {self.count - 1} "
                                            f"of session {sid}")

    def _session(self, sid: str, request: Request) -> None:
        old, self.work_session = self.work_session, sid
        if old is None or old == sid:
            return
        if HANDED in request.text:
            self.answers.handoffs += 1
            self.unseen.pop(old, None)  # the handoff writer's request resumed it last: checked there
            return
        self.answers.sessions_lost += 1
        self.answers.defects.append(f"the work agent left session {old} for {sid} without a handoff "
                                    f"({len(self.unseen.pop(old, []))} answers never seen again)")

    def decide(self, agent: str, body: dict[str, Any]) -> Reply:
        """The judge fails every round; the work agent writes a file, then says it is done with a growing context."""
        if agent == "judge":
            self.rounds += 1
            return text(f"Round {self.rounds} checked.\nVERDICT: FAIL not every goal is met yet; keep going")
        if agent == "handoff":
            return text(f"State of the work: {self.writes} round files written. Next steps: write the next one.")
        if agent != "work":
            return text("ok")
        messages = body.get("messages") or []
        if _after_tool(body):
            return text(f"round file {self.writes} written",
                        input_tokens=max(100, self.tokens_per_round * len(messages) // 4))
        self.writes += 1
        name = f"round-{self.writes:05d}.txt"
        return reply(say(f"writing {name}"),
                     tool_use("Write", {"file_path": str(self.workspace / name), "content": f"round {self.writes}\n"}))


# ------------------------------------------------------------------------------ the engine and its clients


@dataclass
class Sample:
    """The figures at one checkpoint."""

    round: int
    rss_mb: float
    fds: int
    threads: int
    status_p99_ms: float
    wake_s: float
    age: int = 0
    """Rounds the measured engine had run (a kill starts a new one: each checkpoint's engine is a later one)."""


def pct(ordered: list[float], q: float) -> float:
    """The `q` quantile of `ordered` (sorted), NaN when empty."""
    return ordered[min(len(ordered) - 1, int(len(ordered) * q))] if ordered else float("nan")


def engine_pid(sock: Path) -> int | None:
    """The pid in the engine's lock file."""
    try:
        found = (sock.parent / "engine.sock.lock").read_text().strip()
    except OSError:
        return None
    return int(found) if found.isdigit() else None


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie counts as gone: nobody may reap it in a container)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False


def fd_kinds(pid: int, root: Path) -> str:
    """What the open file descriptors of `pid` are, counted by kind (a file by its path under `root`)."""
    kinds: collections.Counter[str] = collections.Counter()
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            target = os.readlink(fd)
            kinds[target.split(":")[0] if ":[" in target else target.replace(str(root), "")] += 1
    return ", ".join(f"{kind} {n}" for kind, n in sorted(kinds.items()))


def threads_and_fds(pid: int) -> tuple[int, int]:
    """Threads and open file descriptors of `pid`, from /proc."""
    status = Path(f"/proc/{pid}/status").read_text()
    threads = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("Threads:"))
    return threads, len(os.listdir(f"/proc/{pid}/fd"))


async def bounded(condition: Callable[[], bool], timeout: float, what: str) -> None:
    """Poll `condition()` every 20 ms until true; TimeoutError naming `what` after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while not condition():
        if time.monotonic() > deadline:
            raise TimeoutError(f"timed out after {timeout:.0f} s waiting for {what}")
        await asyncio.sleep(0.02)


class Ends:
    """A client's listener: counts the ends of wakes (`flower/state` with `running: false`)."""

    def __init__(self) -> None:
        self.count = 0
        self.last: dict[str, Any] = {}

    def __call__(self, method: str, params: Any) -> None:
        if method == p.STATE and isinstance(params, dict) and not params.get("running"):
            self.count += 1
            self.last = params


class Soak:
    """One soak run: the engine, its clients, the scheduled kills and attach cycles, and the figures."""

    def __init__(self, root: Path, rounds: int, seed: int, tokens_per_round: int, say_: Callable[[str], None],
                 minutes: float = 0.0) -> None:
        self.root, self.target, self.say = root, rounds, say_
        self.started = time.monotonic()
        self.deadline = self.started + minutes * 60 if minutes > 0 else float("inf")
        """`--minutes`: no new wake after it; the report says which checkpoints were reached."""
        self.progress_every = max(1, rounds // 20)
        self.rng = random.Random(seed)
        self.sock = root / "s" / "engine.sock"
        self.ws, self.home, self.config = root / "ws", root / "home", root / "claude-config"
        for path in (self.ws, self.home, self.config):
            path.mkdir(parents=True)
        # Frozen steps are skipped (S17): every wake goes straight to the work rounds.
        (self.ws / "需求.md").write_text(REQUIREMENTS, encoding="utf-8")
        (self.ws / "目标.md").write_text(GOALS, encoding="utf-8")
        self.folder = from_fs_path(str(self.ws)) or ""
        self.model = SoakModel(self.ws, tokens_per_round)
        base = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_", "FLOWER_"))}
        self.engine_env = {**base, "FLOWER_ENGINE": str(self.sock), "XDG_STATE_HOME": str(root / "state"),
                           "HOME": str(self.home), "DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1"}
        """The engine's own environment: no model URL, no key (every wake carries its own)."""
        self.pids: set[int] = set()
        self.pid: int | None = None
        self.born = 0
        """The round at which the running engine started."""
        self.client: EngineClient | None = None
        self.ends = Ends()
        step = rounds / KILLS
        self.kill_at = [max(1, int((i + 0.5) * step)) for i in range(KILLS)]
        self.attach_at = [max(1, int((i + 0.75) * step)) for i in range(ATTACHES)]
        self.checkpoints = sorted({max(1, rounds // 10), max(1, rounds // 2), rounds})
        self.kills = self.attaches = self.wakes = 0
        self.killed = asyncio.Event()
        self.due = asyncio.Event()
        """A checkpoint's round is reached: the driver cancels the wake under way and takes the figures."""
        self.status: list[tuple[int, float]] = []
        """(round, ms) of every `flower/status` answered."""
        self.wake_times: list[tuple[int, float, bool]] = []
        """(round, seconds, after a kill) of every wake that reached the model."""
        self.samples: list[Sample] = []
        self.stopping = False

    # -- the engine -----------------------------------------------------------------------------
    async def start_engine(self) -> None:
        """`flower serve --background` (bounded); remembers the engine's pid for the end."""
        done = await asyncio.to_thread(
            subprocess.run, [sys.executable, "-m", "flower.cli", "serve", "--background", "--idle", "600"],
            env=self.engine_env, capture_output=True, text=True, timeout=180)
        if done.returncode != 0:
            raise RuntimeError(f"flower serve --background exited {done.returncode}: {done.stderr[-2000:]}")
        self.pid = engine_pid(self.sock)
        if self.pid is None:
            raise RuntimeError("the engine wrote no pid")
        self.pids.add(self.pid)
        self.born = self.model.rounds

    async def connect(self) -> EngineClient:
        """The driving client: initialized, attached to the folder, counting wake ends."""
        client = await EngineClient.connect(self.sock, self.ends)
        await client.initialize(self.ws)
        await client.request(p.ATTACH, {"folder": self.folder})
        return client

    def kill_engine(self) -> None:
        """SIGKILL to the engine process alone (its CLIs die with it: D5), as an OOM killer or a crash does."""
        if self.pid is None or self.killed.is_set():
            return
        self.model.cuts, self.model.severed = self.model.cuts + 1, True
        self.killed.set()
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.pid, signal.SIGKILL)
        self.kills += 1
        self.say(f"round {self.model.rounds}: engine {self.pid} killed (SIGKILL, the process alone)")

    def arrived(self, agent: str) -> None:
        """The model's arrival hook, at a work request: a checkpoint is due once its round is reached; else the next
        kill, 0-300 ms later, once its round is reached."""
        if agent != "work" or self.killed.is_set() or self.due.is_set():
            return
        if self.checkpoints and self.model.rounds >= self.checkpoints[0]:
            self.due.set()
        elif self.kill_at and self.model.rounds >= self.kill_at[0]:
            self.kill_at.pop(0)
            asyncio.get_running_loop().call_later(self.rng.uniform(0.0, 0.3), self.kill_engine)

    def env(self) -> dict[str, str]:
        """What the driving client sends with each wake: the scripted model's variables, a HOME of the run's own."""
        return {**self.model.env(self.config), "CLAUDE_CODE_MAX_RETRIES": "0", "HOME": str(self.home),
                "XDG_CONFIG_HOME": str(self.home / ".config"), "PATH": os.environ.get("PATH", "")}

    # -- background clients ----------------------------------------------------------------------
    async def poll_status(self) -> None:
        """A client asking `flower/status` every 100 ms; reconnects after a kill (its samples while down are none)."""
        while not self.stopping:
            try:
                client = await EngineClient.connect(self.sock)
            except OSError:
                await asyncio.sleep(0.2)
                continue
            try:
                await client.initialize(self.ws)
                while not self.stopping:
                    t0 = time.perf_counter()
                    await client.request(p.STATUS, {"folder": self.folder}, 10.0)
                    self.status.append((self.model.rounds, (time.perf_counter() - t0) * 1000))
                    await asyncio.sleep(STATUS_EVERY)
            except (Gone, OSError, EngineError, TimeoutError):
                await asyncio.sleep(0.2)
            finally:
                await client.close()

    async def attach_cycles(self) -> None:
        """At the scheduled rounds: a second client connects, attaches, reads a history page, detaches and leaves."""
        while not self.stopping and self.attach_at:
            if self.model.rounds < self.attach_at[0] or self.killed.is_set():
                await asyncio.sleep(0.2)
                continue
            try:
                client = await EngineClient.connect(self.sock)
            except OSError:
                await asyncio.sleep(0.2)
                continue
            try:
                await client.initialize(self.ws)
                await client.request(p.ATTACH, {"folder": self.folder})
                await client.request(p.HISTORY, {"folder": self.folder, "limit": 200})
                await client.request(p.DETACH, {"folder": self.folder})
                self.attach_at.pop(0)
                self.attaches += 1
            except (Gone, OSError, EngineError, TimeoutError):
                await asyncio.sleep(0.2)  # the engine was killed meanwhile: again with the next one
            finally:
                await client.close()

    # -- the run ---------------------------------------------------------------------------------
    async def wake(self, cancel: bool = False) -> float:
        """Send `flower/wake` and wait (bounded) for its first model request: seconds between; `cancel`: stop it there."""
        assert self.client is not None
        before, ends = self.model.count, self.ends.count
        t0 = time.perf_counter()
        self.model.severed = False  # the cut before (if any) has ended: this wake's CLIs are new
        result = await self.client.request(p.WAKE, {"folder": self.folder, "env": self.env()})
        if result.get("action") != "started":
            raise RuntimeError(f"the wake did not start: {result}")
        self.wakes += 1
        await bounded(lambda: self.model.count > before or self.killed.is_set(), WAKE_TIMEOUT, "the wake's first request")
        if self.model.count <= before:
            return float("nan")
        seconds = self.model.arrived_at[before] - t0
        if cancel:
            self.model.cuts, self.model.severed = self.model.cuts + 1, True
            await self.client.request(p.CANCEL, {"folder": self.folder})
            await bounded(lambda: self.ends.count > ends, ROUND_TIMEOUT, "the cancelled wake to end")
        return seconds

    async def checkpoint(self, at: int) -> None:
        """The engine idle past a trim: RSS, fds, threads; status p99 over the last tenth; the wake time (median of 3)."""
        assert self.pid is not None
        self.model.hook = None  # no kill lands in the probes
        await asyncio.sleep(TRIM_EVERY + 1)
        rss = rss_mb(self.pid)
        threads, fds = threads_and_fds(self.pid)
        window = max(1, self.target // 10)
        recent = sorted(ms for r, ms in self.status if at - window < r <= at)
        p99 = pct(recent, 0.99)
        wakes = [await self.wake(cancel=True) for _ in range(PROBES)]
        self.model.hook = self.arrived
        sample = Sample(self.model.rounds, rss, fds, threads, p99, statistics.median(wakes), self.model.rounds - self.born)
        self.samples.append(sample)
        self.say(f"checkpoint at round {sample.round}: rss {rss:.1f} MB, fds {fds}, threads {threads}, "
                 f"status p99 {p99:.1f} ms ({len(recent)} asked; p50 {pct(recent, 0.5):.1f}, p90 {pct(recent, 0.9):.1f}, "
                 f"the 12 slowest {' '.join(f'{ms:.0f}' for ms in recent[-12:])}), wake {sample.wake_s:.2f} s "
                 f"({' '.join(f'{w:.2f}' for w in wakes)}); engine {sample.age} rounds old; "
                 f"{time.monotonic() - self.started:.0f} s, load {os.getloadavg()[0]:.1f}; fds: {fd_kinds(self.pid, self.root)}")

    async def run(self) -> None:
        """Wakes until the target round, each bounded; kills, attach cycles and status polling on the way."""
        self.model.hook = self.arrived
        background = [asyncio.create_task(self.poll_status()), asyncio.create_task(self.attach_cycles())]
        try:
            after_kill, shown = False, 0
            for _ in range(self.target * 2 + 50):  # a wake runs up to 10 rounds; kills cut some short
                if self.model.rounds >= self.target:
                    break
                if time.monotonic() > self.deadline:
                    self.say(f"stopped at round {self.model.rounds}: --minutes reached")
                    break
                if self.model.rounds // self.progress_every > shown:
                    shown = self.model.rounds // self.progress_every
                    self.say(f"round {self.model.rounds}: {time.monotonic() - self.started:.0f} s, "
                             f"load {os.getloadavg()[0]:.1f}")
                if self.pid is None or not alive(self.pid):
                    await self.start_engine()
                    self.client = await self.connect()
                    self.killed.clear()
                ends, start = self.ends.count, self.model.rounds
                try:
                    seconds = await self.wake()
                    if seconds == seconds:  # not NaN: it reached the model before a kill
                        self.wake_times.append((start, seconds, after_kill))
                    after_kill = False
                    await bounded(lambda ends=ends: self.ends.count > ends or self.killed.is_set() or self.due.is_set(),
                                  ROUND_TIMEOUT * 10, "the wake to end")
                    if self.due.is_set() and not self.killed.is_set() and self.ends.count == ends:
                        assert self.client is not None
                        self.model.cuts, self.model.severed = self.model.cuts + 1, True
                        await self.client.request(p.CANCEL, {"folder": self.folder})
                        await bounded(lambda ends=ends: self.ends.count > ends, ROUND_TIMEOUT, "the wake cancelled at a checkpoint to end")
                except (Gone, EngineError) as e:
                    if not self.killed.is_set():
                        raise RuntimeError(f"the engine went away unkilled: {e}") from e
                if self.killed.is_set():
                    assert self.pid is not None
                    pid = self.pid
                    await bounded(lambda pid=pid: not alive(pid), 30, "the killed engine to end")
                    if self.client is not None:
                        await self.client.close()
                    self.client, after_kill = None, True
                    continue
                while self.checkpoints and self.model.rounds >= self.checkpoints[0]:
                    await self.checkpoint(self.checkpoints.pop(0))
                self.due.clear()
            else:
                raise RuntimeError(f"{self.target} rounds not reached within the bound on wakes")
        finally:
            self.stopping = True
            for task in background:
                task.cancel()
            await asyncio.gather(*background, return_exceptions=True)
            if self.client is not None:
                await self.client.close()

    def end(self) -> None:
        """Kill every engine this run started, with its process group (its CLIs)."""
        for pid in self.pids:
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.killpg(pid, signal.SIGKILL)
            with contextlib.suppress(ProcessLookupError, PermissionError):
                os.kill(pid, signal.SIGKILL)

    def report(self) -> tuple[list[str], bool]:
        """The figures, one per line, and whether every target was met."""
        lines = [f"{'round':>6} {'rss MB':>8} {'fds':>5} {'threads':>8} {'status p99 ms':>14} {'wake s':>7}"]
        for s in self.samples:
            lines.append(f"{s.round:>6} {s.rss_mb:>8.1f} {s.fds:>5} {s.threads:>8} {s.status_p99_ms:>14.1f} {s.wake_s:>7.2f}")
        ok = len(self.samples) == 3
        if self.samples:
            first = self.samples[0]
            for s in self.samples[1:]:
                ratios = {"rss": s.rss_mb / first.rss_mb, "fds": s.fds / first.fds, "threads": s.threads / first.threads,
                          "status p99": s.status_p99_ms / first.status_p99_ms, "wake": s.wake_s / first.wake_s}
                over = [name for name, r in ratios.items() if not r <= 1.1]
                ok = ok and not over
                lines.append(f"round {s.round} vs {first.round}: " + ", ".join(f"{n} {r:.2f}x" for n, r in ratios.items())
                             + (f"  OVER 1.1x: {', '.join(over)}" if over else "  (all within 10%)"))
        a = self.model.answers
        after = [w for _, w, k in self.wake_times if k]
        normal = [w for _, w, k in self.wake_times if not k]
        lines += [
            f"answers lost {a.lost}   (work answers seen again {a.reached}; after a cut and not carried {a.cut}); "
            f"sessions lost {a.sessions_lost}; handoffs {a.handoffs}; invalid transcripts {self.model.invalid}",
            f"rounds {self.model.rounds}, wakes {self.wakes}, kills {self.kills}, attach/detach cycles {self.attaches}, "
            f"model requests {self.model.count}, status answers {len(self.status)}",
            f"wake to first request: median {statistics.median(normal) if normal else float('nan'):.2f} s over {len(normal)} "
            f"wakes; after a kill (a new engine) {statistics.median(after) if after else float('nan'):.2f} s over {len(after)}",
            *(f"DEFECT: {d}" for d in a.defects[:20]),
        ]
        ok = ok and not (a.lost or a.sessions_lost or self.model.invalid) and self.kills == KILLS and self.attaches == ATTACHES
        return lines, ok


def said(line: str) -> None:
    """A line out at once (the output is often a file read while the run goes on)."""
    print(line, flush=True)


async def soak(rounds: int, seed: int, tokens_per_round: int, keep: Path | None, say_: Callable[[str], None] = said,
               minutes: float = 0.0) -> bool:
    """Run the soak; print its report; whether every target was met."""
    root = keep or Path(tempfile.mkdtemp(prefix="fsoak-", dir="/tmp"))  # short: Unix socket paths are limited
    run = Soak(root, rounds, seed, tokens_per_round, say_, minutes)
    started = time.monotonic()
    try:
        async with run.model:
            try:
                await run.run()
            finally:
                run.end()
    finally:
        if keep is None:
            shutil.rmtree(root, ignore_errors=True)
    lines, ok = run.report()
    say_("\n".join(lines))
    say_(f"wall time {time.monotonic() - started:.0f} s, load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; "
         f"targets {'met' if ok else 'NOT met'}")
    return ok


def main() -> int:
    parser = argparse.ArgumentParser(prog="python benchmarks/soak.py", description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--rounds", type=int, default=1000, help="work rounds (default 1000); checkpoints at 10%%, 50%%, 100%%")
    parser.add_argument("--seed", type=int, default=1, help="the RNG seed of the kill moments")
    parser.add_argument("--tokens-per-round", type=int, default=2400, help="context growth a round (default 2400)")
    parser.add_argument("--keep", metavar="DIR", help="run in DIR (a short path) and keep it")
    parser.add_argument("--minutes", type=float, default=0.0,
                        help="start no wake after M minutes and report what was reached (default: no bound)")
    args = parser.parse_args()

    def interrupted(signum: int, frame: object) -> None:
        raise KeyboardInterrupt  # asyncio.run cancels the run: its finally blocks end every process it started

    signal.signal(signal.SIGTERM, interrupted)
    signal.signal(signal.SIGHUP, interrupted)
    keep = Path(args.keep) if args.keep else None
    if keep is not None:
        keep.mkdir(parents=True, exist_ok=False)
    return 0 if asyncio.run(soak(args.rounds, args.seed, args.tokens_per_round, keep, minutes=args.minutes)) else 1


if __name__ == "__main__":
    sys.exit(main())
