"""What the journal costs per message (issue #22) against the store's own eager append of the same transcript, same run (D7).

Usage: python benchmarks/journal.py [--entries N]

The transcript is the CLI-shaped one of benchmarks/store.py. Each entry the SDK would stream to flower (an assistant
block, a tool result) becomes the journal record runtime.py writes for it (`Journal.said/call/result`: JSON, API keys
removed, one appended line, flushed); the baseline is SqliteSessionStore.append of the same entries one at a time, as
`session_store_flush="eager"` mirrors them. The journal runs beside that mirror on every message, so its cost is
reported as a fraction of it. Target: journal <= 0.5x the store's append per message.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).parent))
from flower.core.journal import Journal  # noqa: E402
from flower.stores.sqlite import SqliteSessionStore  # noqa: E402
from store import build, store_append  # noqa: E402  - the same CLI-shaped transcript


def journal_all(journal: Journal, entries: list[dict[str, Any]]) -> tuple[float, int]:
    """Seconds to journal every streamed message of `entries`, and how many records that was."""
    n = 0
    t0 = time.perf_counter()
    for entry in entries:
        message = entry.get("message")
        if not isinstance(message, dict) or not isinstance(message.get("content"), list):
            continue
        for block in message["content"]:
            kind = block.get("type")
            if kind == "text":
                journal.said("s1", message.get("id"), block["text"])
            elif kind == "tool_use":
                journal.call("s1", message.get("id"), block["id"], block["name"], block["input"])
            elif kind == "tool_result":
                journal.result("s1", block["tool_use_id"], block.get("content"), block.get("is_error"))
            else:
                continue
            n += 1
    return time.perf_counter() - t0, n


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--entries", type=int, default=3000)
    args = parser.parse_args()
    entries = build(args.entries)
    with tempfile.TemporaryDirectory(dir=".") as tmp:
        store = SqliteSessionStore(Path(tmp) / "sessions.db")
        key = {"project_key": "bench", "session_id": "s1"}
        stored = await store_append(store, key, entries, 1)
        await store.close()
        journal = Journal(Path(tmp))
        spent, records = journal_all(journal, entries)
        size = journal.path("s1").stat().st_size
        journal.close()
    per_record, per_entry = spent / max(records, 1), stored / len(entries)
    ratio = spent / stored
    print(f"journal: {records} records in {spent * 1000:.1f} ms ({per_record * 1e6:.1f} µs each, {size / 1024:.0f} KiB); "
          f"store eager append: {len(entries)} entries in {stored * 1000:.1f} ms ({per_entry * 1e6:.1f} µs each)")
    print(f"journal/store time ratio {ratio:.3f} (target <= 0.5)")
    return 0 if ratio <= 0.5 else 1


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
