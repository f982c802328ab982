"""The engine (D11): attach to a folder with a 20k-entry session over the socket, and the RSS of 5 idle folders.

Usage: python benchmarks/engine.py [--entries N] [--folders F] [--repeat R]

Seeds F workspaces with benchmarks/editor.py's work session (N CLI-shaped entries with debris), starts a
real engine (`flower serve --background`, its own socket in a temporary directory), then times, from a
client on the socket: `flower/status` on an attached connection (the baseline), and a new client's whole
way to the first screen — connect, `initialize`, `flower/attach`, the first `flower/history` page — on a
folder the engine never served (cold) and again on a new connection (warm). Then every folder is attached
and paged, the clients leave, and the engine's resident memory (VmRSS) is read, against the engine's own
right after it started.

Targets: first page over the socket < 300 ms from connecting; RSS with 5 idle folders < 150 MB.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from pygls.uris import from_fs_path

from editor import seed  # benchmarks/editor.py: a work session of N entries, named by the lineage and the manifest
from flower.engine.client import EngineClient
from flower.lsp import protocol as p


def rss_mb(pid: int) -> float:
    """Resident memory of `pid` in MB, from /proc."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no VmRSS for pid {pid}")


PHASES: dict[str, list[float]] = {"connect": [], "initialize": [], "attach": [], "history": []}
"""Each warm first screen's time per step, in ms."""


async def first_screen(sock: Path, workspace: Path) -> tuple[float, dict[str, Any]]:
    """A new client's connect → initialize → attach → first history page, in ms; and the page."""
    start = last = time.perf_counter()
    taken: dict[str, float] = {}

    def lap(name: str) -> None:
        nonlocal last
        now = time.perf_counter()
        taken[name], last = (now - last) * 1000, now

    client = await EngineClient.connect(sock)
    lap("connect")
    try:
        await client.initialize(workspace)
        lap("initialize")
        folder = from_fs_path(str(workspace))
        await client.request(p.ATTACH, {"folder": folder})
        lap("attach")
        page = await client.request(p.HISTORY, {"folder": folder})
        lap("history")
        for name, ms in taken.items():
            PHASES[name].append(ms)
        return (time.perf_counter() - start) * 1000, page
    finally:
        await client.close()


def line(name: str, ms: list[float]) -> str:
    return f"{name:<36} n={len(ms):<4} p50={statistics.median(ms):7.2f} ms  max={max(ms):7.2f} ms"


async def main(n: int, folders: int, repeat: int) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="fe-bench-", dir="/tmp"))
    sock = tmp / "s" / "engine.sock"
    env = {**os.environ, "FLOWER_ENGINE": str(sock), "XDG_STATE_HOME": str(tmp / "state")}
    pid = None
    try:
        workspaces = []
        t0 = time.perf_counter()
        for i in range(folders):
            ws = tmp / f"ws{i}"
            ws.mkdir()
            stored = await seed(ws, n)
            workspaces.append(ws)
        print(f"seeded {folders} folders of {stored} entries in {time.perf_counter() - t0:.1f} s")

        t0 = time.perf_counter()
        started = subprocess.run([sys.executable, "-m", "flower.cli", "serve", "--background", "--idle", "600"],
                                 env=env, capture_output=True, text=True, timeout=120)
        assert started.returncode == 0, started.stderr
        pid = int((sock.parent / "engine.sock.lock").read_text())
        print(f"engine pid {pid} answering after {time.perf_counter() - t0:.1f} s (serve --background)")
        await asyncio.sleep(1)
        bare = rss_mb(pid)

        cold, page = await first_screen(sock, workspaces[0])
        cold_phases = {name: ms.pop() for name, ms in PHASES.items()}
        warm = [(await first_screen(sock, workspaces[0]))[0] for _ in range(repeat)]

        client = await EngineClient.connect(sock)
        await client.initialize(workspaces[0])
        folder = from_fs_path(str(workspaces[0]))
        await client.request(p.ATTACH, {"folder": folder})
        status = []
        for _ in range(repeat):
            start = time.perf_counter()
            await client.request(p.STATUS, {"folder": folder})
            status.append((time.perf_counter() - start) * 1000)
        await client.close()

        for ws in workspaces[1:]:
            await first_screen(sock, ws)
        await asyncio.sleep(2)  # the pruner's background verdicts settle
        held = rss_mb(pid)

        base = statistics.median(status)
        print(f"the engine over its Unix socket (python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
        print(line("flower/status, attached (baseline)", status))
        print(f"{'first screen, cold (never served)':<36} {cold:7.2f} ms  x{cold / base:.1f} status; "
              f"{len(page['entries'])} entries, verdicts {'pending' if page['pending'] else 'inline'}")
        print("  cold by step: " + ", ".join(f"{name} {ms:.1f} ms" for name, ms in cold_phases.items()))
        print(line("first screen, warm (new connection)", warm) + f"  x{statistics.median(warm) / base:.1f} status")
        print("  warm by step (p50): " + ", ".join(f"{name} {statistics.median(ms):.1f} ms" for name, ms in PHASES.items()))
        print(f"{'engine RSS, just started':<36} {bare:7.1f} MB")
        print(f"{'engine RSS, ' + str(folders) + ' idle folders held':<36} {held:7.1f} MB  x{held / bare:.2f} just started")
        ok_page = cold < 300 and statistics.median(warm) < 300
        print(f"target first page < 300 ms from connecting (cold and warm): {'met' if ok_page else 'MISSED'}")
        print(f"target RSS < 150 MB with {folders} idle folders: {'met' if held < 150 else 'MISSED'} "
              f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
        return 0
    finally:
        if pid is not None:
            try:
                os.kill(pid, 15)
            except ProcessLookupError:
                pass
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--entries", type=int, default=20_000, help="entries in each folder's session")
    parser.add_argument("--folders", type=int, default=5, help="folders the engine holds")
    parser.add_argument("--repeat", type=int, default=20, help="timed requests of each kind")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.entries, args.folders, args.repeat)))
