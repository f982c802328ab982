"""Compressed bodies of a real-CLI session (#26): every entry the bundled CLI wrote comes back byte for byte from both
stores, and the sessions.db of a ~500-entry session, and of a 24-entry one, takes at most a quarter of the CLI's own
JSONL of it."""

from __future__ import annotations

import json
import sqlite3
import sys
from pathlib import Path
from typing import Any

from conftest import run_program
from flower.stores.bodies import SAMPLES
from flower.stores.postgres import PostgresSessionStore
from flower.stores.repeats import frame_of
from flower.stores.rows import codec_of, resolved
from flower.stores.sqlite import SMALL_PAGE, SqliteSessionStore
from flower.testing import text

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "unit"))
from test_store_bodies import as_appended, expanded  # noqa: E402  (zstd's own expansion, what append() encodes)

from entry_census import TOOLS, script  # noqa: E402  (benchmarks/ is not a package): the census's rounds of tools

ROUNDS = 28
"""About 500 entries and 2.8 MB of JSONL: beyond a handful of entries, where SQLite's page per table is most of the file."""


async def two_processes(model: Any, env: dict[str, str], workspace: Path, run_dir: Path, prompt: str, replies: list[Any],
                        timeout: float = 120) -> Path:
    """A work step run by one process (the model giving `replies`), then resumed by a second; the CLI's own JSONL."""
    args = {"workspace": str(workspace), "run_dir": str(run_dir),
            "steps": [{"name": "work", "prompt": prompt, "tools": TOOLS, "resume_prompt": "one more turn"}]}
    model.push(*replies)
    assert (await run_program("workflow", args, env, workspace, timeout=timeout)).get("_ok")
    model.push(text("the second process is done"))
    assert (await run_program("workflow", args, env, workspace, timeout=120)).get("_ok")
    (jsonl,) = (Path(env["CLAUDE_CONFIG_DIR"]) / "projects").glob("*/*.jsonl")
    return jsonl


async def test_a_real_cli_session_round_trips_byte_for_byte_and_takes_a_quarter_of_its_jsonl(
        model, env, workspace: Path, run_dir: Path, tmp_path: Path, pg_url: str) -> None:
    # A file of flower's own the built-in dictionary was not trained on (benchmarks/builtin_dictionary.py reads shared.py).
    module = Path(__file__).resolve().parents[2] / "server" / "flower" / "stores" / "transcript.py"
    (workspace / "module.py").write_text(module.read_text()[:30_000])
    jsonl = await two_processes(model, env, workspace, run_dir, "do the rounds", script(ROUNDS, workspace),
                                timeout=120 + 10 * ROUNDS)
    db = run_dir / "sessions.db"
    conn = sqlite3.connect(db)
    try:
        stored = [b for (b,) in conn.execute("SELECT body FROM entries ORDER BY seq")]
    finally:
        conn.close()
    # Below SAMPLES: every body a frame against the built-in dictionary, each a JSON object once expanded by zstd (since
    # v5 a body that repeats a long string of the module read 28 times is that frame after its references: issue 35).
    assert 300 < len(stored) and all(isinstance(o, dict) for o in map(json.loads, expanded([(frame_of(b),) for b in stored])))
    # The file, closed by the last process, beside the CLI's own JSONL of the same session.
    assert db.stat().st_size <= 0.25 * jsonl.stat().st_size, (db.stat().st_size, jsonl.stat().st_size)

    # Every entry the CLI wrote, appended to fresh stores: each body expands to exactly what was appended (D2). Twice,
    # under two keys: past SAMPLES, so that the file holds built-in frames and frames against its own dictionary.
    entries = [json.loads(line) for line in jsonl.read_text().splitlines() if line.strip()]
    assert SAMPLES < 2 * len(entries) < 2 * SAMPLES
    keys: list[Any] = [{"project_key": "-cli", "session_id": "s"}, {"project_key": "-cli", "session_id": "t"}]
    path = tmp_path / "again" / "sessions.db"
    async with SqliteSessionStore(path) as store:
        for key in keys:
            for j in range(0, len(entries), 50):
                await store.append(key, entries[j : j + 50])
        for key in keys:
            assert await store.load(key) == entries
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute("SELECT seq, body FROM entries ORDER BY seq").fetchall()
        own = [d for (d,) in conn.execute("SELECT data FROM dictionary")]
        # The repeated strings put back first (issue 35: read from the entries that hold them), then zstd's expansion.
        again = resolved(conn, [b for _, b in rows], codec_of(conn), [s for s, _ in rows])
    finally:
        conn.close()
    assert len(own) == 1 and expanded([(b,) for b in again], own[0]) == 2 * as_appended(entries)
    async with PostgresSessionStore(pg_url, schema="cli") as pg:
        await pg.append(keys[0], entries)
        assert await pg.load(keys[0]) == entries


async def test_the_smallest_real_cli_session_takes_a_quarter_of_its_jsonl_in_small_pages(
        model, env, workspace: Path, run_dir: Path) -> None:
    # A prompt, its answer and a resume (24 stored entries, as the smallest e2e test's session): SQLite's page per table
    # and index would be most of the file in 4 KB pages (0.48x its JSONL, benchmarks/store.py).
    jsonl = await two_processes(model, env, workspace, run_dir, "say hello", [text("hello")])
    db = run_dir / "sessions.db"
    conn = sqlite3.connect(db)
    try:
        (page,), rows = conn.execute("PRAGMA page_size").fetchone(), conn.execute("SELECT body FROM entries").fetchall()
    finally:
        conn.close()
    assert page == SMALL_PAGE and 10 < len(rows) < SAMPLES
    assert all(isinstance(o, dict) for o in map(json.loads, expanded(rows)))  # each a frame against the built-in dictionary
    assert db.stat().st_size <= 0.25 * jsonl.stat().st_size, (db.stat().st_size, jsonl.stat().st_size)
