"""What `flower gc` costs and returns on sessions.db: deleting archived sessions, then VACUUM, against copying the file (D7).

Usage: python benchmarks/gc.py [--sessions N] [--entries N]

A sessions.db holds N sessions of the store benchmark's CLI-shaped transcript (benchmarks/store.py `build`, stored
as the store stores it: zstd frames against the database's dictionary); the first half of them is deleted
(`delete_sessions`) and the space given back (`reclaim`: a full VACUUM, then the WAL truncated). The baseline, same run,
is what any rewrite of the file must at least spend: copying the database as it is after the deletion
(`shutil.copyfile`, page cache warm). Printed: the file's size before and after, and the ratio VACUUM / copy.
An incremental VACUUM is not measured: the file is made with auto_vacuum off, and turning it on takes a full VACUUM.
"""

from __future__ import annotations

import argparse
import asyncio
import shutil
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

from flower.stores.sqlite import SqliteSessionStore  # noqa: E402
from store import build, on_disk  # noqa: E402

KEY = "-bench"


async def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sessions", type=int, default=6)
    parser.add_argument("--entries", type=int, default=5000, help="entries per session")
    args = parser.parse_args()
    entries = build(args.entries)
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "sessions.db"
        store = SqliteSessionStore(db)
        try:
            for n in range(args.sessions):
                copy = [{**e, "uuid": f"{n}-{e['uuid']}"} if "uuid" in e else e for e in entries]
                for i in range(0, len(copy), 500):
                    await store.append({"project_key": KEY, "session_id": f"s{n}"}, copy[i:i + 500])
            await store.close()  # checkpointed: the size below is the database's own
            before = on_disk(db)
            gone = [f"s{n}" for n in range(args.sessions // 2)]
            t0 = time.perf_counter()
            await store.delete_sessions(KEY, gone)
            deleted = time.perf_counter() - t0
            t0 = time.perf_counter()
            shutil.copyfile(db, Path(tmp) / "copy.db")
            copied = time.perf_counter() - t0
            (Path(tmp) / "copy.db").unlink()
            t0 = time.perf_counter()
            await store.reclaim()
            vacuumed = time.perf_counter() - t0
            after = on_disk(db)
        finally:
            await store.close()
    print(f"{args.sessions} sessions x {args.entries} entries; deleted {len(gone)} in {deleted:.2f} s")
    print(f"sessions.db {before / 1e6:.1f} MB -> {after / 1e6:.1f} MB after VACUUM ({after / before:.2f}x)")
    print(f"VACUUM {vacuumed:.2f} s vs copying the file {copied:.2f} s: {vacuumed / copied:.1f}x")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
