"""The real editor server as the benchmarks drive it: a client over stdio, a streaming work step, percentiles (D7).

Shared by benchmarks/lsp.py, status.py and editor.py (run as scripts, so this directory is on sys.path).
"""

from __future__ import annotations

import asyncio
import os
import re
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from flower.lsp import protocol as p
from flower.lsp.server import converter_factory
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
    """`python -m flower.lsp --watch-loop` with `folders`, and a client that counts what it sends and keeps its stderr.

    `async with Served(...) as s:` initializes it (bounded); leaving the block shuts it down and waits for it to
    exit, so its loop-watch line is in `stderr`. `listener(method, params)` sees every notification.
    """

    def __init__(self, folders: Sequence[Path], *, env: dict[str, str] | None = None, options: dict[str, Any] | None = None,
                 progress: bool = True, listener: Callable[[str, Any], None] | None = None) -> None:
        self.folders, self.env, self.options, self.progress = list(folders), env, options, progress
        self.uris = [from_fs_path(str(ws)) for ws in self.folders]
        self.client = LanguageClient("flower-bench", "1", converter_factory=converter_factory)
        self.counts: dict[str, int] = {}
        """Notifications received, by method (log lines left out: they are not the workflow's)."""
        self.ended = asyncio.Event()
        """A `flower/state` with running=false came: a wake ended."""
        self.stderr: list[str] = []
        self._listener = listener
        self._drainer: asyncio.Task[None] | None = None

        @self.client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create(params: Any) -> None:
            return None

        for method in (*p.NOTIFICATIONS, types.WINDOW_LOG_MESSAGE, types.PROGRESS):
            self.client.feature(method)(lambda params, method=method: self._seen(method, params))

    def _seen(self, method: str, params: Any) -> None:
        if method != types.WINDOW_LOG_MESSAGE:
            self.counts[method] = self.counts.get(method, 0) + 1
        if method == p.STATE and not params["running"]:
            self.ended.set()
        if self._listener is not None:
            self._listener(method, params)

    @property
    def pid(self) -> int:
        """The server's process id."""
        assert self.client._server is not None
        return self.client._server.pid

    async def __aenter__(self) -> Served:
        await self.client.start_io(sys.executable, "-m", "flower.lsp", "--watch-loop", env=self.env)
        self._drainer = asyncio.create_task(self._drain())
        try:
            caps = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=self.progress))
            await asyncio.wait_for(self.client.initialize_async(types.InitializeParams(
                capabilities=caps, process_id=os.getpid(), initialization_options=self.options,
                workspace_folders=[types.WorkspaceFolder(uri, ws.name) for uri, ws in zip(self.uris, self.folders, strict=True)])), 30)
        except BaseException:
            await self.client.stop()
            raise
        self.client.initialized(types.InitializedParams())
        return self

    async def _drain(self) -> None:
        assert self.client._server is not None and self.client._server.stderr is not None
        while line := await self.client._server.stderr.readline():
            self.stderr.append(line.decode(errors="replace").rstrip())

    async def __aexit__(self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None) -> None:
        try:
            if kind is None:
                await asyncio.wait_for(self.client.shutdown_async(None), 30)
                self.client.exit(None)
                assert self.client._server is not None
                await asyncio.wait_for(self.client._server.wait(), 30)
                if self._drainer is not None:
                    await asyncio.wait_for(self._drainer, 10)
        finally:
            await self.client.stop()

    async def request(self, method: str, params: dict[str, Any], timeout: float = 10) -> tuple[float, Any]:
        """(milliseconds, result) of one request, bounded by `timeout`."""
        start = time.perf_counter()
        result = await asyncio.wait_for(self.client.protocol.send_request_async(method, params), timeout)
        return (time.perf_counter() - start) * 1000, result

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
