"""Regenerate flower's built-in zstd dictionary (server/flower/stores/bodies.zdict) from sessions flower itself runs (#26).

Usage: python benchmarks/builtin_dictionary.py [--rounds N] [--size BYTES] [--out PATH]

The bundled Claude Code CLI runs benchmarks/entry_census.py's workflow (rounds of Read, Bash, Write, Edit, Grep and
TodoWrite, then a second process resumes the session) against flower.testing.ScriptedModel on 127.0.0.1, in a
temporary directory; the entries flower stored of it (as orjson writes them, what a store compresses) are the samples,
together with benchmarks/store.py's CLI-shaped builder (seed 11, not the benchmark's 7). The read file is
flower's own stores/shared.py, so the dictionary learns the CLI's envelope, attachments and tool-result shapes more than
one file's text. The training is bodies.train's (fastcover, k and d fixed, one thread: the same samples give the same
bytes), with the fixed id bodies.BUILTIN_ID. A rerun gives other bytes only because the CLI's uuids and timestamps
differ; the dictionary's sizes on the benchmarks stay within a few thousandths (measured when it was made).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
from pathlib import Path

import orjson

from entry_census import ROOT, cli_session, stored
from flower.stores.bodies import BUILTIN, BUILTIN_ID, train
from store import build


async def cli_samples(rounds: int) -> list[bytes]:
    """The bodies flower stored of one real-CLI session (two processes), oldest first."""
    with tempfile.TemporaryDirectory() as tmp:
        module = (ROOT / "server" / "flower" / "stores" / "shared.py").read_text()[:30_000]
        _, db = await cli_session(Path(tmp), rounds, module)
        return [orjson.dumps(e) for e in stored(db)]


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20, help="rounds of six tool calls in the real-CLI session")
    ap.add_argument("--size", type=int, default=64 * 1024, help="the dictionary's size in bytes")
    ap.add_argument("--out", type=Path, default=BUILTIN, help="where to write it")
    args = ap.parse_args()
    shaped = [orjson.dumps(e) for e in build(1000, seed=11)]
    if not BUILTIN.exists():  # the store the session runs with needs one (a checkout has it): the builder's alone
        BUILTIN.write_bytes(train(shaped, args.size, BUILTIN_ID)[1])
    cli = await cli_samples(args.rounds)
    ident, data = train(cli + shaped, args.size, BUILTIN_ID)
    args.out.write_bytes(data)
    print(f"{args.out}: {len(data)} bytes, id {ident:#x}, from {len(cli)} real-CLI entries"
          f" ({sum(map(len, cli)) / 1e3:,.0f} KB) and {len(shaped)} shaped ones ({sum(map(len, shaped)) / 1e3:,.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
