"""`flower/history` on a 20k-entry session, against `flower/status` in the same run (D7, issue 11).

Usage: python benchmarks/editor.py [--entries N] [--repeat R]

Builds benchmarks/store.py's CLI-shaped session (with benchmarks/prune.py's debris, so the pruner has
work) in a fresh `runs/sessions.db`, with a lineage and a manifest row naming it the work step, then
starts the real server (`python -m flower.lsp --watch-loop`) over stdio and times from the client:
`flower/status` (the baseline), the first `flower/history` page on a server that never read this
session (cold: its pruner verdicts are computed in the background and arrive as `flower/pruned`),
the first page again once they are cached (warm), and a full scan back through every page.

Targets: first page < 100 ms, cold and warm; no event-loop stall over 50 ms in the server.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import random
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path
from typing import Any

from claude_agent_sdk import project_key_for_directory
from pygls.uris import from_fs_path

from flower.core.lineage import Lineage
from flower.core.manifest import Manifest, StepResult
from flower.lsp import protocol as p
from flower.stores.sqlite import SqliteSessionStore
from prune import with_debris  # benchmarks/prune.py: denials, interruptions, outages
from serving import Served  # benchmarks/serving.py: the real server over stdio
from store import SESSION, build  # benchmarks/store.py: the realistic transcript


async def seed(workspace: Path, n: int) -> int:
    """A work session of `n` entries in sessions.db, named by the lineage and the manifest; returns n."""
    entries = with_debris(build(n), random.Random(11))
    run_dir = workspace / "runs"
    store = SqliteSessionStore(run_dir / "sessions.db")
    key = {"project_key": project_key_for_directory(workspace), "session_id": SESSION}
    for i in range(0, len(entries), 500):
        await store.append(key, entries[i:i + 500])  # type: ignore[arg-type]
    await store.close()
    lineage = Lineage(run_dir, workspace, woke=1, steps={"干活": SESSION})
    lineage.save()
    first = datetime.fromisoformat(entries[0]["timestamp"].replace("Z", "+00:00")).timestamp()
    Manifest(run_dir).add(StepResult(step="干活", session_id=SESSION, ok=True, started_at=first - 1, ended_at=time.time()))
    return len(entries)


def line(name: str, ms: list[float]) -> str:
    return f"{name:<28} n={len(ms):<4} p50={statistics.median(ms):7.2f} ms  max={max(ms):7.2f} ms"


async def main(n: int, repeat: int) -> int:
    tmp = Path(tempfile.mkdtemp(prefix="flower-editor-bench-"))
    workspace = tmp / "ws"
    workspace.mkdir()
    t0 = time.perf_counter()
    stored = await seed(workspace, n)
    print(f"seeded {stored} entries in {time.perf_counter() - t0:.1f} s "
          f"({(workspace / 'runs' / 'sessions.db').stat().st_size / 1e6:.0f} MB sessions.db)")
    folder = from_fs_path(str(workspace))

    pruned = asyncio.Event()
    async with Served([workspace], progress=False,
                      listener=lambda method, params: pruned.set() if method == p.PRUNED else None) as server:

        async def timed(method: str, params: dict[str, Any]) -> tuple[float, Any]:
            return await server.request(method, params, 60)

        for _ in range(10):  # imports and caches on both sides
            await timed(p.STATUS, {"folder": folder})
        phases = [("status baseline", time.time())]
        status = [(await timed(p.STATUS, {"folder": folder}))[0] for _ in range(repeat)]
        phases.append(("history first pages", time.time()))

        cold, first = await timed(p.HISTORY, {"folder": folder})
        await asyncio.wait_for(pruned.wait(), 120) if first["pending"] else None
        warm_pages = [await timed(p.HISTORY, {"folder": folder}) for _ in range(repeat)]
        warm = [ms for ms, _ in warm_pages]
        assert not warm_pages[-1][1]["pending"]
        hidden = sum(1 for e in warm_pages[-1][1]["entries"] if e["pruned"] == "hidden")

        phases.append(("history full scan", time.time()))
        scan_start, pages, seen, before = time.perf_counter(), 0, 0, None
        while True:
            _, page = await timed(p.HISTORY, {"folder": folder, "limit": 1000, "before": before})
            pages, seen, before = pages + 1, seen + len(page["entries"]), page["nextBefore"]
            if before is None:
                break
        scan = (time.perf_counter() - scan_start) * 1000
        phases.append(("end", time.time()))

    stalls = server.stalls()
    base = statistics.median(status)
    print(f"flower/history vs flower/status, server over stdio (python {sys.version.split()[0]}, {os.cpu_count()} CPUs)")
    print(line("flower/status (baseline)", status))
    print(f"{'history first page, cold':<28} {cold:7.2f} ms  (x{cold / base:.1f} status; verdicts "
          f"{'pending → flower/pruned' if first['pending'] else 'inline'}, {len(first['entries'])} entries)")
    print(line("history first page, warm", warm) + f"  x{statistics.median(warm) / base:.1f} status, {hidden} hidden on it")
    print(f"{'history full scan':<28} {scan:7.1f} ms  {pages} pages of ≤1000, {seen} entries shown of {stored} stored "
          f"({seen / (scan / 1000):.0f} entries/s)")
    print(server.loop_watch())
    # Which phase each stall fell in: stalls during the status baseline are the machine (load average
    # shown at the end), not flower; the loop thread's own CPU in each line tells computing from waiting for a CPU.
    when = [datetime.strptime(x[:23], "%Y-%m-%d %H:%M:%S,%f").timestamp() for x in stalls]
    for (name, start), (_, end) in zip(phases, phases[1:], strict=False):
        print(f"  during {name}: {sum(start <= t < end for t in when)}")
    for x in stalls[:5]:
        print("  " + x)
    ok = cold < 100 and statistics.median(warm) < 100
    print(f"target first page < 100 ms (cold and warm): {'met' if ok else 'MISSED'}")
    print(f"target no event-loop stall > 50 ms: {'met' if server.watched and not stalls else 'MISSED'} "
          f"(load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs)")
    return 0


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--entries", type=int, default=20_000, help="entries in the session")
    parser.add_argument("--repeat", type=int, default=30, help="timed requests of each kind")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.entries, args.repeat)))
