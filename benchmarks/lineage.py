"""What S11's durable lineage write costs: Lineage.record (temp + fsync + replace + dir fsync)
against a plain open/write/close of the same bytes, measured in the same run (D7).

    .venv/bin/python benchmarks/lineage.py [--writes 500] [--dir PATH]

--dir picks the filesystem (default: the current directory, where `runs/` would live;
/tmp is often tmpfs, where fsync costs nothing and the ratio says little).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from flower.core.durable import write_atomic
from flower.core.lineage import Lineage


def percentile(samples: list[float], p: float) -> float:
    """Nearest-rank percentile."""
    s = sorted(samples)
    return s[min(len(s) - 1, max(0, round(p / 100 * len(s)) - 1))]


def fs_type(path: Path) -> str:
    """The mount's filesystem type, from /proc/mounts (Linux), else '?'."""
    try:
        best = ("", "?")
        real = os.path.realpath(path)
        for line in Path("/proc/mounts").read_text().splitlines():
            _, mnt, typ, *_ = line.split()
            if (real == mnt or real.startswith(mnt.rstrip("/") + "/")) and len(mnt) > len(best[0]):
                best = (mnt, typ)
        return best[1]
    except OSError:
        return "?"


def bench_durable(run_dir: Path, n: int) -> list[float]:
    """Latency of Lineage.record with a new session id each time (so each call writes)."""
    lin = Lineage(run_dir, run_dir.parent)
    out = []
    for i in range(n):
        sid = f"{i:08d}-bec7-466e-80cd-f4d60b360235"
        t = time.perf_counter()
        lin.record("干活", sid)
        out.append(time.perf_counter() - t)
    return out


def payload(run_dir: Path, i: int) -> bytes:
    """The same bytes Lineage writes."""
    data = {"workspace": str(run_dir.parent), "woke": 0, "steps": {"干活": f"{i:08d}-bec7-466e-80cd-f4d60b360235"}}
    return (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode()


def bench_plain(run_dir: Path, n: int) -> list[float]:
    """Latency of open/write/close in place: not atomic, not durable (the baseline)."""
    path = run_dir / "plain.json"
    out = []
    for i in range(n):
        data = payload(run_dir, i)
        t = time.perf_counter()
        with open(path, "wb") as f:
            f.write(data)
        out.append(time.perf_counter() - t)
    return out


def bench_atomic_no_fsync(run_dir: Path, n: int) -> list[float]:
    """Temp + replace without fsync: atomic against a kill, not against a power cut."""
    path = run_dir / "nofsync.json"
    out = []
    for i in range(n):
        data = payload(run_dir, i)
        t = time.perf_counter()
        tmp = path.with_name(path.name + ".tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, path)
        out.append(time.perf_counter() - t)
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--writes", type=int, default=500)
    ap.add_argument("--dir", type=Path, default=Path.cwd())
    args = ap.parse_args()

    with tempfile.TemporaryDirectory(prefix="flower-bench-", dir=args.dir) as tmp:
        run_dir = Path(tmp) / "runs"
        run_dir.mkdir()
        write_atomic(run_dir / "warmup", b"x")
        # Interleave in rounds so drift (other load, cache state) hits all variants alike.
        results: dict[str, list[float]] = {"plain": [], "atomic, no fsync": [], "durable (Lineage.record)": []}
        rounds = 5
        per = max(1, args.writes // rounds)
        for _ in range(rounds):
            results["plain"] += bench_plain(run_dir, per)
            results["atomic, no fsync"] += bench_atomic_no_fsync(run_dir, per)
            results["durable (Lineage.record)"] += bench_durable(run_dir, per)

        print(f"lineage write latency, {per * rounds} writes each, in {tmp} ({fs_type(Path(tmp))})")
        print(f"{'variant':<26} {'p50 ms':>9} {'p99 ms':>9} {'mean ms':>9}")
        for name, s in results.items():
            print(f"{name:<26} {percentile(s, 50) * 1e3:9.3f} {percentile(s, 99) * 1e3:9.3f} "
                  f"{statistics.fmean(s) * 1e3:9.3f}")
        base, dur = results["plain"], results["durable (Lineage.record)"]
        print(f"ratio durable/plain: p50 {percentile(dur, 50) / percentile(base, 50):.1f}x, "
              f"p99 {percentile(dur, 99) / percentile(base, 99):.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
