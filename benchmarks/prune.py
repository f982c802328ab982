"""Load+prune throughput of PruningSessionStore vs the plain SqliteSessionStore load, same run (D7, S23).

Usage: python benchmarks/prune.py [--entries N] [--repeat R]

The transcript is benchmarks/store.py's CLI-shaped session (20k entries by default) with the debris
pruning exists for mixed in: denied calls, CLI interruption results, outage rows with the user's
retry after them, `git status` / `ls` calls, and (trim on) large old results to spill.
Targets: load+prune >= 100 MB/s, and load+prune / plain load <= 1.3.
"""

from __future__ import annotations

import argparse
import asyncio
import copy
import gc
import json
import random
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

from claude_agent_sdk.types import SessionKey, SessionStoreEntry

from flower.stores import transcript
from flower.stores.prune import PruningSessionStore
from flower.stores.sqlite import SqliteSessionStore
from store import SESSION, build  # benchmarks/store.py: the same realistic transcript

KEY: SessionKey = {"project_key": "-home-dev-project", "session_id": SESSION}
Load = Callable[[SessionKey], Awaitable[list[SessionStoreEntry] | None]]
DENIED = "Claude requested permissions to use WebFetch, but you haven't granted it yet."
INTERRUPTED = "[Tool call interrupted: the session ended before this call's result was recorded, so its outcome is unknown.]"


def with_debris(entries: list[dict[str, Any]], rng: random.Random) -> list[dict[str, Any]]:
    """Turn some calls into denials, interruptions and ephemeral commands; an outage after some prompts."""
    out = []
    for entry in copy.deepcopy(entries):
        content = (entry.get("message") or {}).get("content")
        if entry.get("type") == "assistant" and isinstance(content, list) and content[0].get("type") == "tool_use":
            if content[0]["name"] == "Bash" and rng.random() < 0.5:
                content[0]["input"]["command"] = rng.choice(["git status", "ls -la src", "git diff --stat"])
        elif entry.get("type") == "user" and isinstance(content, list) and content[0].get("type") == "tool_result":
            roll = rng.random()
            if roll < 0.05:
                content[0].update(content=DENIED, is_error=True)
                entry.update(toolUseResult=f"Error: {DENIED}", toolDenialKind="user-rejected")
            elif roll < 0.07:
                content[0].update(content=INTERRUPTED, is_error=True)
                entry.update(toolUseResult=INTERRUPTED, toolDenialKind="interrupted")
        out.append(entry)
        if entry.get("type") == "user" and isinstance(content, str) and rng.random() < 0.1:
            error = {**entry, "type": "assistant", "uuid": f"{entry['uuid'][:-12]}{rng.getrandbits(48):012x}",
                     "parentUuid": entry["uuid"], "isApiErrorMessage": True, "error": "server_error",
                     "message": {"id": f"err-{len(out)}", "model": "<synthetic>", "role": "assistant", "type": "message",
                                 "content": [{"type": "text", "text": "API Error: Connection refused (ECONNREFUSED)"}]}}
            out.append(error)
    return out[:len(entries)]


async def best(loads: dict[str, Load], repeat: int) -> dict[str, float]:
    """Best seconds of `repeat` rounds of each load, interleaved so that machine noise hits all alike."""
    times = dict.fromkeys(loads, float("inf"))
    loaded: dict[str, list[SessionStoreEntry] | None] = {}
    for _ in range(repeat):
        for name, load in loads.items():
            loaded = {}  # free the previous copy first, as a caller would
            t0 = time.perf_counter()
            loaded[name] = await load(KEY)
            times[name] = min(times[name], time.perf_counter() - t0)
    return times


def phases(entries: list[dict[str, Any]], repeat: int) -> tuple[float, float, float]:
    """Best seconds of each phase of the pruning algorithm (trim off), as `load()` runs it (GC paused)."""
    best = [float("inf")] * 3
    for _ in range(repeat):
        gc.disable()
        t0 = time.perf_counter()
        found = transcript.index(entries)
        t1 = time.perf_counter()
        todo = transcript.plan(entries, found)
        t2 = time.perf_counter()
        transcript.rebuild(entries, found, todo)
        t3 = time.perf_counter()
        gc.enable()
        best = [min(b, t) for b, t in zip(best, (t1 - t0, t2 - t1, t3 - t2), strict=True)]
    return best[0], best[1], best[2]


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=20_000)
    ap.add_argument("--repeat", type=int, default=9, help="rounds of loads, interleaved (the best time is kept)")
    args = ap.parse_args()

    entries = with_debris(build(args.entries), random.Random(11))
    mb = sum(len(json.dumps(e, separators=(",", ":"))) for e in entries) / 1e6
    with tempfile.TemporaryDirectory() as tmp:
        raw = SqliteSessionStore(Path(tmp) / "sessions.db")
        try:
            for j in range(0, len(entries), 500):
                await raw.append(KEY, cast(list[SessionStoreEntry], entries[j:j + 500]))
            stores = {
                "trim off": PruningSessionStore(raw),
                "trim on": PruningSessionStore(raw, trim=True, spill_dir=Path(tmp) / "spill"),
            }
            await stores["trim on"].load(KEY)  # spill once, as the first resume would
            timed = await best({"plain": raw.load, **{n: st.load for n, st in stores.items()}}, args.repeat)
            plain = timed["plain"]
            loaded = await raw.load(KEY)
            assert loaded is not None and loaded == entries, "the plain load differs from what was appended"
            verdicts = stores["trim off"].prune(loaded).verdicts
            print(f"transcript: {len(entries)} entries, {mb:.1f} MB JSON; pruning hides "
                  f"{sum(v == 'hidden' for v in verdicts.values())} and rewrites {sum(v == 'rewritten' for v in verdicts.values())}")
            print(f"  plain load          {mb / plain:6.1f} MB/s  ({plain * 1e3:6.1f} ms)")
            ok = True
            for name, store in stores.items():
                seconds = timed[name]
                alone = float("inf")
                for _ in range(args.repeat):
                    gc.disable()  # as load() runs it
                    t0 = time.perf_counter()
                    store.prune(loaded)
                    alone = min(alone, time.perf_counter() - t0)
                    gc.enable()
                ratio = seconds / plain
                ok &= mb / seconds >= 100 and ratio <= 1.3
                print(f"  load+prune {name:<8} {mb / seconds:6.1f} MB/s  ({seconds * 1e3:6.1f} ms; prune alone {alone * 1e3:5.1f} ms)"
                      f"  ratio to plain load {ratio:.2f}")
            index, plan, rebuild = phases(cast(list[dict[str, Any]], loaded), args.repeat)
            print(f"  phases (trim off): index {index * 1e3:.1f} ms, plan {plan * 1e3:.1f} ms, rebuild {rebuild * 1e3:.1f} ms")
            assert await raw.load(KEY) == entries, "sessions.db was altered"
        finally:
            await raw.close()
    print(f"targets: >= 100 MB/s and ratio <= 1.3: {'met' if ok else 'NOT met'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
