"""Regenerate flower's built-in zstd dictionary (server/flower/stores/bodies.zdict) from sessions flower itself runs (#26).

Usage: python benchmarks/builtin_dictionary.py [--rounds N] [--size BYTES] [--out PATH] [--cli]

`--cli` makes stores/bodies-cli.zdict instead (issue 35: a v5 sessions.db's first bodies): the attachments the CLI writes
alike in every session (its tools' definitions in the prompt snapshot, its skill, agent and deferred-tool listings:
CONSTANT) taken from the same real-CLI session, after bodies.zdict's trained content, made a dictionary by zstd's
ZDICT_finalizeDictionary (entropy tables from the samples) with the fixed id bodies.CLI_ID. python-zstandard does not
expose that call: this mode needs pyzstd (`pip install pyzstd`; not a dependency of flower, which only reads the file).
A new CLI version with other tool texts calls for a rerun; until then its sessions compress about as with bodies.zdict.

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
from typing import Any

import orjson

from entry_census import ROOT, cli_session, stored
from flower.stores.bodies import BUILTIN, BUILTIN_ID, CLI, CLI_ID, LEVEL, train
from store import build

CONSTANT = ("prompt_snapshot", "skill_listing", "agent_listing_delta", "deferred_tools_delta")
"""Attachments the CLI writes alike in every session of one version (checked on the sessions of benchmarks/store.py)."""


async def cli_entries(rounds: int) -> list[Any]:
    """The entries flower stored of one real-CLI session (two processes), oldest first."""
    with tempfile.TemporaryDirectory() as tmp:
        module = (ROOT / "server" / "flower" / "stores" / "shared.py").read_text()[:30_000]
        _, db = await cli_session(Path(tmp), rounds, module)
        return stored(db)


def constant_text(entries: list[Any]) -> bytes:
    """The largest attachment of each CONSTANT type, as orjson writes it inside an entry."""
    largest: dict[str, bytes] = {}
    for e in entries:
        found = e.get("attachment") if e.get("type") == "attachment" else None
        if isinstance(found, dict) and found.get("type") in CONSTANT:
            text = orjson.dumps(found)
            if len(text) > len(largest.get(found["type"], b"")):
                largest[found["type"]] = text
    # The largest last: the nearest content costs zstd the fewest bits to refer to.
    return b"".join(sorted(largest.values(), key=len))


def with_id(data: bytes, ident: int) -> bytes:
    """A zstd dictionary with its id (bytes 4-8 after the magic number) set to `ident`."""
    return data[:4] + ident.to_bytes(4, "little") + data[8:]


def cli_dictionary(entries: list[Any], samples: list[bytes], trained: int) -> bytes:
    """bodies.zdict's last `trained` bytes (its content) and the CLI's constant text, finalized with id CLI_ID."""
    import pyzstd  # see the module's docstring

    content = BUILTIN.read_bytes()[-trained:] + constant_text(entries)
    made = pyzstd.finalize_dict(pyzstd.ZstdDict(content, is_raw=True), samples, len(content) + 16 * 1024, LEVEL)
    return with_id(made.dict_content, CLI_ID)


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=20, help="rounds of six tool calls in the real-CLI session")
    ap.add_argument("--size", type=int, default=64 * 1024, help="the dictionary's size in bytes")
    ap.add_argument("--out", type=Path, default=None, help="where to write it (default: the package's file)")
    ap.add_argument("--cli", action="store_true", help="make bodies-cli.zdict (issue 35), not bodies.zdict")
    args = ap.parse_args()
    shaped = [orjson.dumps(e) for e in build(1000, seed=11)]
    if not BUILTIN.exists():  # the store the session runs with needs one (a checkout has it): the builder's alone
        BUILTIN.write_bytes(train(shaped, args.size, BUILTIN_ID)[1])
    if not CLI.exists():  # the same for a v5 store's: bodies.zdict under the other id
        CLI.write_bytes(with_id(BUILTIN.read_bytes(), CLI_ID))
    entries = await cli_entries(args.rounds)
    cli = [orjson.dumps(e) for e in entries]
    if args.cli:
        out = args.out or CLI
        data = cli_dictionary(entries, cli + shaped, args.size - 4 * 1024)
        out.write_bytes(data)
        print(f"{out}: {len(data)} bytes, id {CLI_ID:#x}: {len(constant_text(entries)) / 1e3:,.0f} KB of the CLI's"
              f" constant text after bodies.zdict's content")
        return 0
    args.out = args.out or BUILTIN
    ident, data = train(cli + shaped, args.size, BUILTIN_ID)
    args.out.write_bytes(data)
    print(f"{args.out}: {len(data)} bytes, id {ident:#x}, from {len(cli)} real-CLI entries"
          f" ({sum(map(len, cli)) / 1e3:,.0f} KB) and {len(shaped)} shaped ones ({sum(map(len, shaped)) / 1e3:,.0f} KB)")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
