"""The real editor server as the benchmarks drive it: a client over stdio, a streaming work step, percentiles (D7).

Shared by benchmarks/lsp.py, status.py and editor.py (run as scripts, so this directory is on sys.path).
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson
from pygls.uris import from_fs_path

from flower.lsp import protocol as p
from flower.lsp.framing import bodies
from flower.testing import Reply, reply, say, text, tool_use

REQUIREMENTS = (
    "# 需求\n\n## 目标 Goal\nA notes tool.\n\n## 范围 Scope\nFiles.\n\n"
    "## 约束 Constraints\nPython only.\n\n## 验收 Acceptance\nnotes exist.\n"
)
GOALS = "# 目标\n\n- [ ] notes exist\n"


def frozen(workspace: Path) -> Path:
    """`workspace`, created with frozen requirements and goals: a wake there goes straight to a work step."""
    workspace.mkdir(parents=True)
    (workspace / "需求.md").write_text(REQUIREMENTS, encoding="utf-8")
    (workspace / "目标.md").write_text(GOALS, encoding="utf-8")
    return workspace


def percentile(values: Sequence[float], q: float) -> float:
    """The q-th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def summary(name: str, ms: Sequence[float], width: int = 22) -> str:
    """One line: count, p50, p99 and max of `ms`."""
    return (f"{name:<{width}} n={len(ms):<5} p50={statistics.median(ms):6.2f} ms  p99={percentile(ms, 99):6.2f} ms  "
            f"max={max(ms):7.2f} ms")


def script(workspace: Path, rounds: int, delay: float) -> list[Reply]:
    """A work step of `rounds` tool calls (Writes of files up to 24 KB with text between them, growing context), then
    a passing judge; each reply sent after `delay` seconds."""
    replies = []
    for i in range(rounds):
        body = f"# note {i}\n" + ("lorem ipsum dolor sit amet " * (40 * (i % 23)))
        replies.append(reply(say(f"Writing note {i} of {rounds}; " + "detail " * 30),
                             tool_use("Write", {"file_path": str(workspace / f"note{i:03d}.md"), "content": body}),
                             input_tokens=2000 + 150 * i, delay=delay))
    replies.append(text("all notes written", input_tokens=2000 + 150 * rounds, delay=delay))
    replies.append(text("Checked.\nVERDICT: PASS"))
    return replies


class Served:
    """`python -m flower.lsp --watch-loop` with `folders`, and a lean JSON-RPC client that counts what it sends.

    `async with Served(...) as s:` initializes it (bounded); leaving the block shuts it down and waits for it to
    exit, so its loop-watch line is in `stderr`. `listener(method, params)` sees every notification.

    The client is the least a client can be (frames read by flower's own `framing.bodies`, orjson both ways), so a
    request's time is the server's answer and the pipe, not a Python LSP client's work: the editor's client is
    another process (pygls' client cost as much CPU per status as the server itself).
    """

    def __init__(self, folders: Sequence[Path], *, env: dict[str, str] | None = None, options: dict[str, Any] | None = None,
                 progress: bool = True, listener: Callable[[str, Any], None] | None = None) -> None:
        self.folders, self.env, self.options, self.progress = list(folders), env, options, progress
        self.uris = [from_fs_path(str(ws)) for ws in self.folders]
        self.counts: dict[str, int] = {}
        """Notifications received, by method (log lines left out: they are not the workflow's)."""
        self.ended = asyncio.Event()
        """A `flower/state` with running=false came: a wake ended."""
        self.stderr: list[str] = []
        self._listener = listener
        self._process: asyncio.subprocess.Process | None = None
        self._tasks: list[asyncio.Task[None]] = []
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._ids = itertools.count(1)

    @property
    def pid(self) -> int:
        """The server's process id."""
        assert self._process is not None
        return self._process.pid

    async def __aenter__(self) -> Served:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "flower.lsp", "--watch-loop", env=self.env,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        self._tasks = [asyncio.create_task(self._read()), asyncio.create_task(self._drain())]
        try:
            await self.request("initialize", {
                "processId": os.getpid(), "capabilities": {"window": {"workDoneProgress": self.progress}},
                "initializationOptions": self.options,
                "workspaceFolders": [{"uri": uri, "name": ws.name} for uri, ws in zip(self.uris, self.folders, strict=True)],
            }, 30)
        except BaseException:
            await self._stop()
            raise
        self._send({"jsonrpc": "2.0", "method": "initialized", "params": {}})
        return self

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if kind is None:
                await self.request("shutdown", None, 30)
                self._send({"jsonrpc": "2.0", "method": "exit"})
                assert self._process is not None
                await asyncio.wait_for(self._process.wait(), 30)
                await asyncio.wait_for(asyncio.gather(*self._tasks), 10)
        finally:
            await self._stop()

    async def _stop(self) -> None:
        """Kill the server if it still runs (by its pid), and end the readers."""
        if self._process is not None and self._process.returncode is None:
            self._process.kill()
            await asyncio.wait_for(self._process.wait(), 10)
        for task in self._tasks:
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    def _send(self, message: dict[str, Any]) -> None:
        assert self._process is not None and self._process.stdin is not None
        body = orjson.dumps(message)
        self._process.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))

    async def request(self, method: str, params: dict[str, Any] | None, timeout: float = 10) -> tuple[float, Any]:
        """(milliseconds, result) of one request, bounded by `timeout`; an error answer raises."""
        number = next(self._ids)
        answer = self._waiting[number] = asyncio.get_running_loop().create_future()
        start = time.perf_counter()
        self._send({"jsonrpc": "2.0", "id": number, "method": method, "params": params})
        try:
            result = await asyncio.wait_for(answer, timeout)
        finally:
            self._waiting.pop(number, None)
        return (time.perf_counter() - start) * 1000, result

    async def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        async for body in bodies(self._process.stdout):
            message = orjson.loads(body)
            method = message.get("method")
            if method is not None and "id" in message:  # the server asks: progress tokens are made, nothing else known
                known = method == "window/workDoneProgress/create"
                self._send({"jsonrpc": "2.0", "id": message["id"], **(
                    {"result": None} if known else {"error": {"code": -32601, "message": f"no {method} here"}})})
            elif method is not None:
                self._seen(method, message.get("params"))
            elif (answer := self._waiting.get(message.get("id"))) is not None and not answer.done():
                if "error" in message:
                    answer.set_exception(RuntimeError(f"{message['error'].get('code')}: {message['error'].get('message')}"))
                else:
                    answer.set_result(message.get("result"))

    def _seen(self, method: str, params: Any) -> None:
        if method != "window/logMessage":
            self.counts[method] = self.counts.get(method, 0) + 1
        if method == p.STATE and not params["running"]:
            self.ended.set()
        if self._listener is not None:
            self._listener(method, params)

    async def _drain(self) -> None:
        assert self._process is not None and self._process.stderr is not None
        while line := await self._process.stderr.readline():
            self.stderr.append(line.decode(errors="replace").rstrip())

    def stalls(self) -> list[str]:
        """The server's log lines of event-loop stalls over 50 ms."""
        return [line for line in self.stderr if "event loop stalled" in line]

    @property
    def watched(self) -> bool:
        """The server printed its loop-watch summary (it ran with the watch, and exited cleanly)."""
        return any(line.startswith("loop-watch:") for line in self.stderr)

    def loop_watch(self) -> str:
        """The server's event loop as its `--watch-loop` summary saw it, in one line."""
        watch = next((line for line in self.stderr if line.startswith("loop-watch:")), "")
        fields = dict(re.findall(r"(\w+)=([\d./]+)", watch))
        return (f"server event loop: worst lag {fields.get('worst_ms', '?')} ms over {fields.get('beats', '?')} "
                f"heartbeats, stalls over 50 ms: {len(self.stalls())} (loop thread computing in {fields.get('busy', '?')} "
                "of them; the others are the process waiting for a CPU or the GIL); beats over 10 ms late: "
                f"{fields.get('late_over_10ms', '?')} (the loop computing in {fields.get('late_busy', '?')} of them, "
                f"other threads in {fields.get('late_threads', '?')}); "
                "garbage collections of generations "
                f"0/1/2: {fields.get('gc', '?')}, the longest {fields.get('gc_worst_ms', '?')} ms")


def cpu_seconds(pid: int) -> float:
    """User + system CPU a process has used so far (Linux /proc)."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


ECHO = """
import asyncio, sys

async def main():
    reader = asyncio.StreamReader()
    await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin.buffer)
    while line := await reader.readline():
        sys.stdout.buffer.write(line)
        sys.stdout.buffer.flush()

asyncio.run(main())
"""


class Echo:
    """The machine's floor: a bare asyncio process that answers each line over a pipe, timed like a request.

    Timed between a benchmark's requests, it tells what any Python process on this machine waits for a CPU at the
    same moments, so a server's tail can be read against it rather than against a guess.
    """

    def __init__(self) -> None:
        self._process: asyncio.subprocess.Process | None = None

    async def __aenter__(self) -> Echo:
        self._process = await asyncio.create_subprocess_exec(
            sys.executable, "-c", ECHO, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE)
        await self.ping()
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.close()
        try:
            await asyncio.wait_for(self._process.wait(), 10)
        finally:
            if self._process.returncode is None:
                self._process.kill()
                await self._process.wait()

    async def ping(self) -> float:
        """Milliseconds for one line there and back."""
        assert self._process is not None and self._process.stdin is not None and self._process.stdout is not None
        start = time.perf_counter()
        self._process.stdin.write(b"ping\n")
        await asyncio.wait_for(self._process.stdout.readline(), 10)
        return (time.perf_counter() - start) * 1000
