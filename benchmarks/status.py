"""`flower/status` for every folder never waits on a store: idle, while a wake streams, and with PostgreSQL stopped (D7).

Usage: python benchmarks/status.py [--folders F] [--rounds R] [--delay S] [--idle N] [--outage SECONDS]

For each backend (run_dir's SQLite files, then a shared PostgreSQL from tests/pg.py), starts the real server
(`python -m flower.lsp`) over stdio with F workspace folders and the scripted model in this process; the agent is the
real Claude Code CLI. Times `flower/status` without a folder (every folder's status in one answer) back to back:
on the idle server (the baseline of the same run), while a wake streams R tool rounds in the first folder, and — on
PostgreSQL — for `--outage` seconds after the database is stopped under the running server, counting the answers
that say the store is unreachable.

Targets: status p99 < 10 ms while a wake streams, on both backends; with PostgreSQL stopped, status p99 < 10 ms for
every folder, and the answers say the store is unreachable.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import re
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from lsprotocol import types
from pygls.lsp.client import LanguageClient
from pygls.uris import from_fs_path

from flower.lsp import protocol as p
from flower.lsp.server import converter_factory
from flower.testing import ScriptedModel, reply, say, text, tool_use

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pg import PgServer  # noqa: E402 - tests/pg.py: a real PostgreSQL from the [test] extras' wheel

REQUIREMENTS = (
    "# 需求\n\n## 目标 Goal\nA notes tool.\n\n## 范围 Scope\nFiles.\n\n"
    "## 约束 Constraints\nPython only.\n\n## 验收 Acceptance\nnotes exist.\n"
)
GOALS = "# 目标\n\n- [ ] notes exist\n"


def percentile(values: list[float], q: float) -> float:
    """The q-th percentile (nearest rank)."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q / 100 * len(ordered)) - 1))]


def summary(name: str, ms: list[float]) -> str:
    return (f"  {name:<26} n={len(ms):<5} p50={statistics.median(ms):6.2f} ms  p99={percentile(ms, 99):6.2f} ms  "
            f"max={max(ms):7.2f} ms")


def script(workspace: Path, rounds: int, delay: float) -> list:
    """A work step of `rounds` tool calls (Writes with text between them, growing context), then a passing judge."""
    replies = []
    for i in range(rounds):
        body = f"# note {i}\n" + ("lorem ipsum dolor sit amet " * (40 * (i % 23)))
        replies.append(reply(say(f"Writing note {i} of {rounds}; " + "detail " * 30),
                             tool_use("Write", {"file_path": str(workspace / f"note{i:03d}.md"), "content": body}),
                             input_tokens=2000 + 150 * i, delay=delay))
    replies.append(text("all notes written", input_tokens=2000 + 150 * rounds, delay=delay))
    replies.append(text("Checked.\nVERDICT: PASS"))
    return replies


async def timed_status(client: LanguageClient) -> tuple[float, list[dict[str, Any]]]:
    """(milliseconds, every folder's status) of one `flower/status` without a folder."""
    start = time.perf_counter()
    result = await asyncio.wait_for(client.protocol.send_request_async(p.STATUS, {}), 10)
    return (time.perf_counter() - start) * 1000, result["folders"]


async def run(backend: str, url: str | None, pg: PgServer | None, args: argparse.Namespace) -> dict[str, list[float]]:
    """One server on `backend`: the timed phases, printed, and their figures."""
    tmp = Path(tempfile.mkdtemp(prefix=f"flower-status-bench-{backend}-"))
    folders = []
    for i in range(args.folders):
        ws = tmp / f"ws{i}"
        ws.mkdir()
        (ws / "需求.md").write_text(REQUIREMENTS, encoding="utf-8")
        (ws / "目标.md").write_text(GOALS, encoding="utf-8")
        folders.append(ws)
    config = tmp / "claude-config"
    config.mkdir()
    figures: dict[str, list[float]] = {}
    async with ScriptedModel(script(folders[0], args.rounds, args.delay)) as model:
        env = {**os.environ, **model.env(config), "CLAUDE_CODE_MAX_RETRIES": "0"}
        client = LanguageClient("flower-bench", "1", converter_factory=converter_factory)
        ended = asyncio.Event()

        @client.feature(types.WINDOW_WORK_DONE_PROGRESS_CREATE)
        def create(params: Any) -> None:
            return None

        for method in (*p.NOTIFICATIONS, types.WINDOW_LOG_MESSAGE, types.PROGRESS):
            def seen(params: Any, method: str = method) -> None:
                if method == p.STATE and not params["running"]:
                    ended.set()
            client.feature(method)(seen)

        await client.start_io(sys.executable, "-m", "flower.lsp", "--watch-loop", env=env)
        stderr: list[str] = []

        async def drain() -> None:
            while line := await client._server.stderr.readline():
                stderr.append(line.decode(errors="replace").rstrip())

        drainer = asyncio.create_task(drain())
        try:
            caps = types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True))
            await asyncio.wait_for(client.initialize_async(types.InitializeParams(
                capabilities=caps, process_id=os.getpid(), initialization_options={"store": url} if url else None,
                workspace_folders=[types.WorkspaceFolder(from_fs_path(str(ws)), ws.name) for ws in folders])), 30)
            client.initialized(types.InitializedParams())
            for _ in range(20):  # warm up imports and caches on both sides
                await timed_status(client)
            figures["idle"] = [(await timed_status(client))[0] for _ in range(args.idle)]

            started = time.perf_counter()
            await asyncio.wait_for(client.protocol.send_request_async(p.WAKE, {"folder": from_fs_path(str(folders[0]))}), 30)
            await asyncio.wait_for(model.wait_for_requests(1, 60), 60)  # the CLI is up and streaming
            streaming: list[float] = []
            while not ended.is_set():
                streaming.append((await timed_status(client))[0])
                if time.perf_counter() - started > 600:
                    raise TimeoutError("the wake did not end in 600 s")
            figures["while a wake streams"] = streaming

            if pg is not None:
                pg.stop()  # mid-run: the server keeps running, its store does not answer any more
                stopped = time.perf_counter()
                outage: list[float] = []
                said: list[float] = []
                while time.perf_counter() - stopped < args.outage:
                    ms, statuses = await timed_status(client)
                    outage.append(ms)
                    if all(s["unreachable"] for s in statuses):
                        said.append(time.perf_counter() - stopped)
                figures["PostgreSQL stopped"] = outage
                figures["_said"] = said
                pg.start()
            await asyncio.wait_for(client.shutdown_async(None), 30)
            client.exit(None)
            await asyncio.wait_for(client._server.wait(), 30)
            await asyncio.wait_for(drainer, 10)
        finally:
            await client.stop()
    print(f"{backend}: {args.folders} folders, every folder's status per request; a wake of {args.rounds} tool rounds "
          "in the first")
    for name, ms in figures.items():
        if not name.startswith("_"):
            print(summary(name, ms) + f"  p99 x{percentile(ms, 99) / percentile(figures['idle'], 99):.2f} idle")
    watch = next((line for line in stderr if line.startswith("loop-watch:")), "")
    fields = dict(re.findall(r"(\w+)=([\d.]+)", watch))
    stalls = sum("event loop stalled" in line for line in stderr)
    print(f"  server event loop: worst lag {fields.get('worst_ms', '?')} ms over {fields.get('beats', '?')} heartbeats, "
          f"stalls over 50 ms: {stalls} (loop thread computing in {fields.get('busy', '?')} of them; the others are the "
          "process waiting for a CPU)")
    if "_said" in figures:
        said = figures["_said"]
        total = len(figures["PostgreSQL stopped"])
        first = f"{said[0]:.2f} s after the stop" if said else "never"
        print(f"  answers saying the store is unreachable: {len(said)} of {total} (the first {first})")
    return figures


async def main(args: argparse.Namespace) -> int:
    load = os.getloadavg()
    results = {"sqlite": await run("sqlite (run_dir's files)", None, None, args)}
    server = PgServer()
    try:
        server.init().start()
        results["postgresql"] = await run("postgresql (shared store)", server.url(server.new_database()), server, args)
    finally:
        server.remove()
    print(f"machine: {os.cpu_count()} CPUs, load average {load[0]:.2f} before / {os.getloadavg()[0]:.2f} after "
          f"(python {sys.version.split()[0]})")
    met = True
    for backend, figures in results.items():
        ok = percentile(figures["while a wake streams"], 99) < 10
        met &= ok
        print(f"target {backend}: status p99 < 10 ms while a wake streams: {'met' if ok else 'MISSED'}")
    outage = results["postgresql"]
    ok = percentile(outage["PostgreSQL stopped"], 99) < 10 and bool(outage["_said"])
    met &= ok
    print(f"target postgresql stopped: status p99 < 10 ms for every folder, saying the store is unreachable: "
          f"{'met' if ok else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--folders", type=int, default=3, help="workspace folders in the server")
    parser.add_argument("--rounds", type=int, default=40, help="tool rounds in the streaming work step")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds before each model reply")
    parser.add_argument("--idle", type=int, default=300, help="status requests timed on the idle server")
    parser.add_argument("--outage", type=float, default=8.0, help="seconds of status requests with PostgreSQL stopped")
    sys.exit(asyncio.run(main(parser.parse_args())))
