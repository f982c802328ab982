"""A round's manifest cost as the task grows: the whole-file rewrite (before issue 35) against appended lines (now), D7.

Usage: python benchmarks/manifest.py [--sizes 100,1000,2000] [--rounds 20]

For each size N, two run_dirs hold the same N rows shaped like the soak's (a work round and its judge each round,
~430 bytes a row, a new writer every 10 rounds): one as the older JSON list, one as lines. A round writes what a work
round and its judge write, two new rows of the current writer, and then a status reads the records again:

- **write**: before, the older `FileRecords.save_manifest`, kept here for the comparison (under the sidecar lock:
  read the file, merge this writer's rows, `json.dumps(indent=1)`, temp file + fsync + rename + fsync of the dir),
  called on the event loop as `Manifest.add` was; now, `Manifest.save` (the rows that changed appended, one fsync,
  in a worker thread). Wall and CPU milliseconds a round (CPU of the whole process, threads included).
- **stall**: the worst lateness, during the next round's two writes, of a ticker on the same event loop (every
  2 ms): what a `flower/status` answer arriving then waits before the loop reads it.
- **refresh**: status's read of the records after the writes, in its worker thread (which still holds the GIL the
  loop needs): before, the whole list parsed and typed, and nothing more; now, the lines appended since the last
  read parsed and typed (`parsed_rows`), and the forecast's basis made from the rows (`basis_of`).
- **answer**: what one status answer computes from the rows on the event loop: before, the whole forecast from every
  row (`forecast`, as service.py did for every answer); now, the forecast from the basis (`forecast_of`).
  Refresh and answer are CPU milliseconds of the thread (the machine's load inflates wall time, not these).

Rounds of the two forms alternate, so a busy moment of the machine falls on both. Medians over the rounds; ratios
N/first size and now/before, in this run. The one-time turn of an older list into lines is timed too.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from flower.core.durable import write_atomic
from flower.core.forecast import basis_of, forecast, forecast_of
from flower.core.lock import exclusive
from flower.core.manifest import Manifest, ManifestRow, StepResult, judge_name, parsed_rows, round_name
from flower.core.records import WORK, FileRecords

PER_WAKE = 10
"""Rounds a writer (a wake) writes before the next one: the soak's judge fails every round, a wake runs 10."""


def rows_of(rounds: int, start: float) -> list[tuple[str, StepResult]]:
    """(run mark, result) for `rounds` rounds: a work round and its judge each, shaped like the soak's rows."""
    out: list[tuple[str, StepResult]] = []
    session = str(uuid.uuid4())
    for n in range(1, rounds + 1):
        run = f"20261203-{n // PER_WAKE:06d}-{n // PER_WAKE % 0xFFFFFF:06x}"
        if n % 50 == 0:
            session = str(uuid.uuid4())  # the soak hands off every ~50 rounds
        at = start + n * 10.0
        out.append((run, StepResult(step=round_name(WORK, n), session_id=session, ok=True, cost_usd=0.0012, num_turns=2,
                                    text=f"Wrote round-{n}.txt. Round {n} done.", started_at=at, ended_at=at + 3.2,
                                    resumed=True, context=20000 + 2400 * (n % 50), window=1_000_000, model="claude-opus-5-5")))
        out.append((run, StepResult(step=judge_name(WORK, n % PER_WAKE or PER_WAKE), session_id=str(uuid.uuid4()), ok=True,
                                    cost_usd=0.0006, num_turns=1,
                                    text=f"Round {n} checked.\nVERDICT: FAIL not every goal is met yet; keep going",
                                    started_at=at + 3.3, ended_at=at + 3.8, context=100, window=1_000_000,
                                    model="claude-opus-5-5")))
    return out


# --- before: the whole-file rewrite, as core/records.py did it until issue 35 -----------------------------------


def legacy_merge(existing: list[Any], mine: list[dict[str, Any]], run: str) -> list[Any]:
    """Other runs' rows in file order, with this run's current rows where its first row stood (the older `_merge`)."""
    out: list[Any] = []
    placed = False
    for row in existing:
        if isinstance(row, dict) and row.get("run") == run:
            if not placed:
                out.extend(mine)
                placed = True
        else:
            out.append(row)
    if not placed:
        out.extend(mine)
    return out


class LegacyManifest:
    """The older writer: each add re-reads manifest.json under the lock and replaces it whole (S8, before issue 35)."""

    def __init__(self, run_dir: Path, run: str) -> None:
        self.run_dir, self.run = run_dir, run
        self.mine: list[dict[str, Any]] = []

    def add(self, result: StepResult) -> None:
        """As `Manifest.add` did, on the caller's thread."""
        self.mine.append(result.row(self.run))
        path = self.run_dir / "manifest.json"
        with exclusive(self.run_dir / "manifest.json.lock", 10.0):
            try:
                existing = json.loads(path.read_bytes())
            except FileNotFoundError:
                existing = []
            merged = legacy_merge(existing, self.mine, self.run)
            write_atomic(path, (json.dumps(merged, ensure_ascii=False, indent=1, default=str) + "\n").encode())


def legacy_refresh(run_dir: Path) -> list[ManifestRow]:
    """Status's read before issue 35: the whole list parsed, every row typed."""
    raw = json.loads((run_dir / "manifest.json").read_bytes())
    return [r for r in map(ManifestRow.of, (x for x in raw if isinstance(x, dict))) if r is not None]


# --- measuring ---------------------------------------------------------------------------------------------------


async def measured(work: Callable[[], Awaitable[None]]) -> tuple[float, float]:
    """(wall ms, CPU ms of the whole process) of `work`, nothing else running on the loop."""
    wall, cpu = time.perf_counter(), time.process_time()
    await work()
    return (time.perf_counter() - wall) * 1000, (time.process_time() - cpu) * 1000


async def stalled(work: Callable[[], Awaitable[None]]) -> float:
    """The worst lateness in ms of a 2 ms ticker on this loop while `work` runs."""
    worst = 0.0
    done = asyncio.Event()

    async def tick() -> None:
        nonlocal worst
        while not done.is_set():
            t = time.perf_counter()
            await asyncio.sleep(0.002)
            worst = max(worst, time.perf_counter() - t - 0.002)

    ticker = asyncio.create_task(tick())
    await asyncio.sleep(0.005)
    await work()
    done.set()
    await asyncio.wait_for(ticker, 5)
    return worst * 1000


def timed(fn: Callable[[], Any]) -> float:
    """CPU ms of this thread running `fn` (the machine's load inflates wall time, not this)."""
    t = time.thread_time()
    fn()
    return (time.thread_time() - t) * 1000


async def one_size(n_rows: int, rounds: int, tmp: Path) -> dict[str, float]:
    """The medians of every figure at `n_rows` rows, both forms."""
    seed = rows_of(n_rows // 2 + 2 * rounds, time.time() - 1e6)
    before_dir, now_dir = tmp / f"before-{n_rows}", tmp / f"now-{n_rows}"
    before_dir.mkdir()
    now_dir.mkdir()
    old, new = seed[:n_rows], seed[n_rows:]
    by_run: dict[str, list[dict[str, Any]]] = {}
    for run, result in old:
        by_run.setdefault(run, []).append(result.row(run))
    write_atomic(before_dir / "manifest.json",
                 (json.dumps([r for rows in by_run.values() for r in rows], ensure_ascii=False, indent=1) + "\n").encode())
    migrate_dir = tmp / f"migrate-{n_rows}"
    migrate_dir.mkdir()
    (migrate_dir / "manifest.json").write_bytes((before_dir / "manifest.json").read_bytes())
    records = FileRecords(now_dir)
    for run, rows in by_run.items():
        records.save_manifest(run, rows)
    migrated = FileRecords(migrate_dir)
    migration = timed(lambda: Manifest(migrate_dir, run="migrating", records=migrated).add(StepResult("x")))

    legacy_refresh(before_dir)
    parsed_rows(records)
    figures: dict[str, list[float]] = {}
    run = "20261203-999999-abcdef"
    before, now = LegacyManifest(before_dir, run), Manifest(now_dir, run=run, records=records)

    async def before_round() -> None:
        for _, result in pair:
            before.add(result)  # on the loop, as before

    async def now_round() -> None:
        for _, result in pair:
            await now.save(result)

    state: dict[str, Any] = {}

    def before_refresh() -> None:
        state["before"] = legacy_refresh(before_dir)

    def now_refresh() -> None:
        rows = parsed_rows(records)
        state["now"] = basis_of(rows, rows[-1].run)

    def before_answer() -> None:
        rows = state["before"]
        forecast(rows, 150_000, 160_000, 1_000_000, rows[-1].run)

    def now_answer() -> None:
        forecast_of(state["now"], 150_000, 160_000, 1_000_000)

    for i in range(rounds):  # two rounds each time: one timed alone, one with the ticker on the loop
        for name, work, refresh, answer in (("before", before_round, before_refresh, before_answer),
                                            ("now", now_round, now_refresh, now_answer)):
            pair = new[4 * i:4 * i + 2]
            wall, cpu = await measured(work)
            figures.setdefault(f"{name} write", []).append(wall)
            figures.setdefault(f"{name} cpu", []).append(cpu)
            pair = new[4 * i + 2:4 * i + 4]
            figures.setdefault(f"{name} stall", []).append(await stalled(work))
            figures.setdefault(f"{name} refresh", []).append(timed(refresh))
            figures.setdefault(f"{name} answer", []).append(timed(answer))
    assert [r.step for r in legacy_refresh(before_dir)] == [r.step for r in parsed_rows(records)], "the two forms differ"
    medians = {name: statistics.median(ms) for name, ms in figures.items()}
    medians["migration"] = migration
    medians["bytes before"] = (before_dir / "manifest.json").stat().st_size
    medians["bytes now"] = (now_dir / "manifest.json").stat().st_size
    return medians


FIGURES = ("write", "cpu", "stall", "refresh", "answer")


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="100,1000,2000", help="manifest rows before the timed rounds (default 100,1000,2000)")
    parser.add_argument("--rounds", type=int, default=20, help="timed rounds at each size (default 20)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    tmp = Path(tempfile.mkdtemp(prefix="flower-manifest-bench-"))
    results = {n: await one_size(n, args.rounds, tmp) for n in sizes}
    print(f"manifest cost a round (two rows written, then a status refresh), medians of {args.rounds} rounds, ms"
          f" (write: wall; cpu, refresh, answer: CPU);"
          f" load {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs")
    print(f"{'rows':>6} {'form':>6} " + " ".join(f"{f:>9}" for f in FIGURES) + f" {'file KB':>8}")
    for n, m in results.items():
        for form in ("before", "now"):
            print(f"{n:>6} {form:>6} " + " ".join(f"{m[f'{form} {f}']:9.2f}" for f in FIGURES)
                  + f" {m[f'bytes {form}'] / 1024:8.0f}")
    first = sizes[0]
    for n in sizes[1:]:
        for form in ("before", "now"):
            ratios = " ".join(f"{f} {results[n][f'{form} {f}'] / results[first][f'{form} {f}']:.2f}x" for f in FIGURES)
            print(f"{n} rows vs {first}, {form}: {ratios}")
    for n in sizes:
        ratios = " ".join(f"{f} {results[n][f'now {f}'] / results[n][f'before {f}']:.2f}x" for f in FIGURES)
        print(f"now vs before at {n} rows: {ratios}; turning the older list into lines once: {results[n]['migration']:.1f} ms")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
