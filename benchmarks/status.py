"""`flower/status` for every folder never waits on a store: idle, while a wake streams, and with PostgreSQL stopped (D7).

Usage: python benchmarks/status.py [--backend sqlite|postgresql|both] [--folders F] [--rounds R] [--delay S] [--idle N]
                                   [--outage SECONDS] [--every MS]

For each backend (run_dir's SQLite files, then a shared PostgreSQL from tests/pg.py), starts the real server
(`python -m flower.lsp`) over stdio with F workspace folders and the scripted model in this process; the agent is the
real Claude Code CLI. Times `flower/status` without a folder (every folder's status in one answer) back to back:
on the idle server (the baseline of the same run), while a wake streams R tool rounds in the first folder, and — on
PostgreSQL — for `--outage` seconds after the database is stopped under the running server, counting the answers
that say the store is unreachable.

After each status a bare asyncio echo process (serving.Echo) is timed the same way: its p99 in the same phase is
the machine's floor, what any Python process waited for a CPU at those moments. The server's loop watch says how
many of its heartbeats were over 10 ms late, and whether its loop, its other threads or neither was computing then.

Targets: status p99 < 10 ms while a wake streams, on both backends; with PostgreSQL stopped, status p99 < 10 ms for
every folder, and the answers say the store is unreachable.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from flower.lsp import protocol as p
from flower.testing import ScriptedModel
from serving import Echo, Served, cpu_seconds, frozen, percentile, script, summary  # benchmarks/serving.py

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from pg import PgServer  # noqa: E402 - tests/pg.py: a real PostgreSQL from the [test] extras' wheel


async def run(backend: str, url: str | None, pg: PgServer | None, args: argparse.Namespace) -> dict[str, list[float]]:
    """One server on `backend`: the timed phases, printed, and their figures."""
    tmp = Path(tempfile.mkdtemp(prefix=f"flower-status-bench-{backend.split()[0]}-"))
    folders = [frozen(tmp / f"ws{i}") for i in range(args.folders)]
    config = tmp / "claude-config"
    config.mkdir()
    figures: dict[str, list[float]] = {}
    floor: dict[str, list[float]] = {}
    """Phase → the echo's round trips, timed between its statuses: what any process waited for a CPU then."""
    cpu: dict[str, float] = {}
    """Phase → the server's CPU milliseconds per status answered in it (everything it did meanwhile included)."""
    said: list[float] = []
    """Seconds after PostgreSQL stopped of each answer in which every folder says its store is unreachable."""
    async with ScriptedModel(script(folders[0], args.rounds, args.delay)) as model, Echo() as echo:
        env = {**os.environ, **model.env(config), "CLAUDE_CODE_MAX_RETRIES": "0"}
        async with Served(folders, env=env, options={"store": url} if url else None) as server:

            async def phase(name: str, done: Callable[[list[float]], bool], stopped: float | None = None) -> None:
                """Status for every folder, back to back (or `--every` ms apart), each followed by an echo, until `done`."""
                ms: list[float] = figures.setdefault(name, [])
                used = cpu_seconds(server.pid)
                while not done(ms):
                    if args.every:
                        await asyncio.sleep(args.every / 1000)
                    took, result = await server.request(p.STATUS, {})
                    ms.append(took)
                    if stopped is not None and all(s["unreachable"] for s in result["folders"]):
                        said.append(time.perf_counter() - stopped)
                    floor.setdefault(name, []).append(await echo.ping())
                cpu[name] = (cpu_seconds(server.pid) - used) * 1000 / len(ms)

            for _ in range(20):  # warm up imports and caches on both sides
                await server.request(p.STATUS, {})
            await phase("idle", lambda ms: len(ms) >= args.idle)

            started = time.perf_counter()
            await server.request(p.WAKE, {"folder": server.uris[0]}, 30)
            await asyncio.wait_for(model.wait_for_requests(1, 60), 60)  # the CLI is up and streaming

            def streamed(ms: list[float]) -> bool:
                if time.perf_counter() - started > 600:
                    raise TimeoutError("the wake did not end in 600 s")
                return server.ended.is_set()

            await phase("while a wake streams", streamed)
            if pg is not None:
                pg.stop()  # mid-run: the server keeps running, its store does not answer any more
                stopped = time.perf_counter()
                await phase("PostgreSQL stopped", lambda ms: time.perf_counter() - stopped >= args.outage, stopped)
                pg.start()
    print(f"{backend}: {args.folders} folders, every folder's status per request; a wake of {args.rounds} tool rounds "
          "in the first")
    for name, ms in figures.items():
        print(summary("  " + name, ms, 28) + f"  server CPU {cpu[name]:.2f} ms/status; "
              f"the machine's floor (echo) p99 {percentile(floor[name], 99):.2f} ms")
    print("  " + server.loop_watch())
    if pg is not None:
        first = f"{said[0]:.2f} s after the stop" if said else "never"
        print(f"  answers saying the store is unreachable: {len(said)} of {len(figures['PostgreSQL stopped'])} "
              f"(the first {first})")
        figures["_said"] = said
    return figures


async def main(args: argparse.Namespace) -> int:
    load = os.getloadavg()
    results: dict[str, dict[str, list[float]]] = {}
    if args.backend in ("sqlite", "both"):
        results["sqlite"] = await run("sqlite (run_dir's files)", None, None, args)
    if args.backend in ("postgresql", "both"):
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
    if "postgresql" in results:
        outage = results["postgresql"]
        ok = percentile(outage["PostgreSQL stopped"], 99) < 10 and bool(outage["_said"])
        met &= ok
        print(f"target postgresql stopped: status p99 < 10 ms for every folder, saying the store is unreachable: "
              f"{'met' if ok else 'MISSED'}")
    return 0 if met else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--backend", choices=["sqlite", "postgresql", "both"], default="both")
    parser.add_argument("--every", type=float, default=0.0, help="milliseconds between status requests (0: back to back)")
    parser.add_argument("--folders", type=int, default=3, help="workspace folders in the server")
    parser.add_argument("--rounds", type=int, default=40, help="tool rounds in the streaming work step")
    parser.add_argument("--delay", type=float, default=0.05, help="seconds before each model reply")
    parser.add_argument("--idle", type=int, default=300, help="status requests timed on the idle server")
    parser.add_argument("--outage", type=float, default=8.0, help="seconds of status requests with PostgreSQL stopped")
    sys.exit(asyncio.run(main(parser.parse_args())))
