"""Which entry types a long real-CLI session writes, by count and bytes: the CLI's own JSONL beside sessions.db (#26).

Usage: python benchmarks/entry_census.py [--rounds N]

The bundled Claude Code CLI runs a workflow step (tests/programs/workflow.py) against flower.testing.ScriptedModel on
127.0.0.1: N rounds of Read (a 30 KB file), Bash (every tenth command runs 3 s, printing every second: the kind of
command the CLI reports progress for), Write, Edit, Grep and TodoWrite, then a second process resumes the session with one more
turn. Printed: each entry type's count and bytes (orjson) in the CLI's JSONL and in sessions.db, and the sizes on
disk. Not a speed benchmark: it says which entries a store could leave out, and how little they weigh.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import json
import os
import sqlite3
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

import orjson

from flower.stores.rows import codec_of, resolved
from flower.stores.sqlite import decode_bodies
from flower.testing import ScriptedModel, reply, say, text, tool, tool_use

ROOT = Path(__file__).resolve().parent.parent
WORKFLOW = ROOT / "tests" / "programs" / "workflow.py"
TOOLS = ["Read", "Bash", "Write", "Edit", "Grep", "TodoWrite"]


def script(rounds: int, ws: Path) -> list[Any]:
    """The model's replies: six tool calls per round, then a closing text."""
    replies: list[Any] = []
    for i in range(rounds):
        notes = str(ws / f"notes{i}.txt")
        slow = "sleep 1; " if i % 10 == 0 else ""  # every tenth runs 3 s (does a progress line reach the transcript?)
        replies += [
            reply(say(f"round {i}: reading"), tool_use("Read", {"file_path": str(ws / "module.py")})),
            tool("Bash", {"command": f"for k in 1 2 3; do echo round {i} tick $k; seq 1 20; {slow}done",
                          "description": "a command"}),
            tool("Write", {"file_path": notes, "content": f"line {i}\n" * 20}),
            tool("Edit", {"file_path": notes, "old_string": f"line {i}\n", "new_string": f"LINE {i}\n", "replace_all": True}),
            tool("Grep", {"pattern": "def ", "path": str(ws), "output_mode": "content"}),
            tool("TodoWrite", {"todos": [{"content": f"round {i}", "status": "in_progress", "activeForm": f"doing {i}"}]}),
        ]
    return [*replies, text("the first process is done")]


async def run_step(ws: Path, runs: Path, env: dict[str, str], timeout: float) -> None:
    """One flower process running the step (a second one resumes its session)."""
    args = {"workspace": str(ws), "run_dir": str(runs),
            "steps": [{"name": "work", "prompt": "do the rounds", "tools": TOOLS, "resume_prompt": "one more turn"}]}
    proc = await asyncio.create_subprocess_exec(sys.executable, str(WORKFLOW), json.dumps(args), cwd=ws,
                                                env={**os.environ, **env},
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    try:
        out, err = await asyncio.wait_for(proc.communicate(), timeout)
    except TimeoutError:
        proc.kill()
        await proc.wait()
        raise
    ctx = json.loads(out.decode().strip().splitlines()[-1]) if proc.returncode == 0 else {}
    if not ctx.get("_ok"):
        raise RuntimeError(f"the workflow failed ({proc.returncode}): {err.decode()[-2000:]}")


async def cli_session(base: Path, rounds: int, module: str,
                      replies: Callable[[Path], list[Any]] | None = None) -> tuple[Path, Path]:
    """Run the workflow (`rounds` rounds reading a file of `module`'s text, or the model's `replies` for the workspace,
    then a resume) in `base`: the CLI's own JSONL of the session and flower's sessions.db of it."""
    ws, runs, config, home = base / "ws", base / "runs", base / "config", base / "home"
    for d in (ws, config, home):
        d.mkdir()
    (ws / "module.py").write_text(module)
    async with ScriptedModel() as model:
        env = {**model.env(config), "CLAUDE_CODE_MAX_RETRIES": "0", "HOME": str(home),
               "XDG_CONFIG_HOME": str(home / ".config")}
        model.push(*(script(rounds, ws) if replies is None else replies(ws)))
        await run_step(ws, runs, env, timeout=120 + 10 * rounds if replies is None else 600)
        model.push(text("the second process is done"))
        await run_step(ws, runs, env, timeout=120)
        print(f"{rounds} rounds, {len(model.conversation)} model requests, two processes")
    (jsonl,) = (config / "projects").glob("*/*.jsonl")  # the CLI's own file of the one session
    return jsonl, runs / "sessions.db"


def stored(db: Path) -> list[Any]:
    """Every entry of sessions.db's main transcripts, in append order."""
    conn = sqlite3.connect(db)
    try:
        # Frames name their dictionary: the database's own once it has one, flower's built-in one before.
        own = codec_of(conn)
        rows = conn.execute("SELECT seq, body FROM entries ORDER BY seq").fetchall()
        # A string an entry repeats from an earlier one is put back (issue 35).
        bodies = resolved(conn, [b for _, b in rows], own, [s for s, _ in rows])
    finally:
        conn.close()
    return decode_bodies(bodies, own)


def tally(entries: list[Any], label: str, size: int) -> None:
    """Count and bytes per type (attachments by their kind too)."""
    count: collections.Counter[str] = collections.Counter()
    weight: collections.Counter[str] = collections.Counter()
    for e in entries:
        kind = str(e.get("type"))
        if kind == "attachment":
            kind = f"attachment:{e.get('attachment', {}).get('type')}"
        elif kind in ("progress", "system"):
            kind = f"{kind}:{e.get('data', {}).get('type') or e.get('subtype')}"
        count[kind] += 1
        weight[kind] += len(orjson.dumps(e))
    total = sum(weight.values())
    print(f"{label}: {len(entries)} entries, {total / 1e3:,.0f} KB of JSON, {size / 1e3:,.0f} KB on disk")
    for kind, n in sorted(count.items(), key=lambda kv: -weight[kv[0]]):
        print(f"  {kind:<34} {n:>6} {100 * n / len(entries):5.1f}% of entries {weight[kind] / 1e3:9.1f} KB"
              f" {100 * weight[kind] / total:5.1f}% of bytes")


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=60, help="rounds of six tool calls (60: past the 1,000 entries a dictionary needs)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        module = (ROOT / "server" / "flower" / "stores" / "sqlite.py").read_text()[:30_000]
        jsonl, db = await cli_session(Path(tmp), args.rounds, module)
        tally([json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()], "the CLI's JSONL",
              jsonl.stat().st_size)
        tally(stored(db), "sessions.db", sum(f.stat().st_size for f in db.parent.glob("sessions.db*")))
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
