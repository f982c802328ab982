"""sessions.db's page size (#26): a new file has small pages (most files stay small, where SQLite's page per table is
most of the file), rewritten into 4 KB ones once it grows, only when no other connection has the file open, and a
kill or a refusal during the rewrite loses nothing."""

from __future__ import annotations

import asyncio
import base64
import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from flower.stores.bodies import SAMPLES
from flower.stores.sqlite import BUSY_TIMEOUT_S, PAGE, REPAGE_BYTES, SMALL_PAGE, SqliteSessionStore

sys.path.insert(0, str(Path(__file__).resolve().parent))
from test_store_bodies import KEY, as_appended, cli_entries, expanded  # noqa: E402  (zstd's own expansion)

BOUND_S = BUSY_TIMEOUT_S / 3
"""An append that crosses the training point while the file is not alone returns well before a lock's busy timeout."""


def pages(path: Path) -> tuple[int, str, str]:
    """(page size, journal mode, integrity check) of the file, read by a connection of its own."""
    conn = sqlite3.connect(path)
    try:
        ((size,),), ((mode,),) = conn.execute("PRAGMA page_size"), conn.execute("PRAGMA journal_mode")
        return int(size), str(mode), str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


def stored(path: Path) -> list[bytes | str]:
    """The bodies of KEY's session as stored, expanded by zstd itself with the dictionary each frame names (D2)."""
    conn = sqlite3.connect(path)
    try:
        row = conn.execute("SELECT data FROM dictionary").fetchone()
        rows = conn.execute("SELECT body FROM entries WHERE transcript = (SELECT id FROM transcripts"
                            " WHERE session_id = ?) ORDER BY seq", (KEY["session_id"],)).fetchall()
    finally:
        conn.close()
    return expanded(rows, row[0] if row else None)


async def fill(store: SqliteSessionStore, entries: list[Any], batch: int = 100) -> None:
    for j in range(0, len(entries), batch):
        await store.append(KEY, entries[j : j + batch])


async def small_and_trained(path: Path, entries: list[Any]) -> None:
    """A file past the training point that kept its small pages: a reader held it open when it trained."""
    async with SqliteSessionStore(path) as store:
        await fill(store, entries[: SAMPLES - 50])
        reader = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True)
        try:
            assert reader.execute("SELECT count(*) FROM entries").fetchone() == (SAMPLES - 50,)  # opens the file
            await fill(store, entries[SAMPLES - 50 :])
        finally:
            reader.close()
        await store.close()  # before the next append: the rewrite is left for a later open
    assert pages(path)[0] == SMALL_PAGE


async def test_a_new_file_has_small_pages_and_4_kb_ones_past_the_training_point(tmp_path: Path) -> None:
    entries = cli_entries(SAMPLES + 500)
    path = tmp_path / "runs" / "sessions.db"
    async with SqliteSessionStore(path) as store:
        await fill(store, entries[: SAMPLES - 100])
        assert pages(path) == (SMALL_PAGE, "wal", "ok")
        await fill(store, entries[SAMPLES - 100 :])
        # Rewritten at the append that trained the dictionary, and back in WAL.
        assert pages(path) == (PAGE, "wal", "ok")
        assert await store.load(KEY) == entries
    # Every body, built-in frames of the first entries and frames against the database's own, is what was appended.
    assert stored(path) == as_appended(entries)


async def test_a_file_past_repage_bytes_gets_4_kb_pages_before_it_has_a_dictionary(tmp_path: Path) -> None:
    # Incompressible text: a dozen entries take more than REPAGE_BYTES as frames, far below SAMPLES entries.
    entries: list[Any] = [{"type": "user", "uuid": f"u{i}", "text": base64.b64encode(os.urandom(REPAGE_BYTES // 10)).decode()}
                          for i in range(15)]
    path = tmp_path / "sessions.db"
    async with SqliteSessionStore(path) as store:
        await fill(store, entries[:2], batch=1)
        assert pages(path)[0] == SMALL_PAGE
        await fill(store, entries[2:], batch=1)
        assert pages(path) == (PAGE, "wal", "ok")
        assert await store.load(KEY) == entries
    assert stored(path) == as_appended(entries)
    conn = sqlite3.connect(path)
    try:
        assert conn.execute("SELECT count(*) FROM dictionary").fetchone() == (0,)
    finally:
        conn.close()


@pytest.mark.parametrize("other", ["reader", "store"])
async def test_another_open_connection_defers_the_rewrite_without_holding_up_the_append(tmp_path: Path, other: str) -> None:
    entries = cli_entries(SAMPLES + 300)
    path = tmp_path / "sessions.db"
    later: Any = {"project_key": KEY["project_key"], "session_id": "later"}
    async with SqliteSessionStore(path) as store:
        await fill(store, entries[: SAMPLES - 50])
        # A plain read-only reader inside a read transaction (as the prefetch worker reads), or another flower's store.
        second = SqliteSessionStore(path)
        reader = sqlite3.connect(path.resolve().as_uri() + "?mode=ro", uri=True, isolation_level=None)
        try:
            if other == "reader":
                reader.execute("BEGIN")
                (seen,) = reader.execute("SELECT count(*) FROM entries").fetchone()
            else:
                reader.close()
                assert await second.count(KEY["project_key"], KEY["session_id"]) == SAMPLES - 50
                await second.append(later, [{"type": "user", "uuid": "l0", "text": "from the other store"}])
            # The append that trains the dictionary: committed, and the rewrite refused at once, not waited for.
            await asyncio.wait_for(fill(store, entries[SAMPLES - 50 : SAMPLES + 50]), BOUND_S)
            size, mode, _ = pages(path)
            assert (size, mode) == (SMALL_PAGE, "wal")
            assert await store.count(KEY["project_key"], KEY["session_id"]) == SAMPLES + 50
            if other == "reader":  # its snapshot is intact, and it still reads
                assert reader.execute("SELECT count(*) FROM entries").fetchone() == (seen,)
                reader.execute("COMMIT")
            else:  # the other store appends on, trying the rewrite itself, refused too while the first is open
                await second.append(later, [{"type": "user", "uuid": "l1", "text": "and again"}])
                assert pages(path)[0] == SMALL_PAGE
                assert await second.load(KEY) == entries[: SAMPLES + 50]
        finally:
            reader.close()
            await second.close()
        # Alone now: the next append that stores rows rewrites it.
        await fill(store, entries[SAMPLES + 50 :])
        assert pages(path) == (PAGE, "wal", "ok")
        assert await store.load(KEY) == entries
    assert stored(path) == as_appended(entries)


async def test_a_rewrite_refused_at_training_happens_at_the_next_open(tmp_path: Path) -> None:
    entries = cli_entries(SAMPLES + 100)
    path = tmp_path / "sessions.db"
    await small_and_trained(path, entries)
    async with SqliteSessionStore(path) as store:  # the open alone rewrites it
        assert pages(path) == (PAGE, "wal", "ok")
        assert await store.load(KEY) == entries
    assert stored(path) == as_appended(entries)


# A flower process opening the file to rewrite it, whose writes past RLIMIT_FSIZE are cut short: half the file's size,
# which VACUUM's rollback journal (a copy of the pages it overwrites) crosses, and nothing before it (the WAL is empty,
# the -shm 32 KB). With SIGXFSZ's default action the kernel kills the process at that write (as a kill -9 mid-VACUUM
# would); with the signal ignored (Python's default) the write fails as on a full disk.
CHILD = """
import asyncio, resource, signal, sys
from flower.stores.sqlite import SqliteSessionStore
db, limit, kill = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "kill"
store = SqliteSessionStore(db)
if kill:
    signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
print(asyncio.run(store.latest_seq("-home-dev-project", "90ab8268-68e8-48f0-b204-48bad2d7d557")))
"""


@pytest.mark.parametrize("cut", ["kill", "full"])
async def test_a_rewrite_cut_short_loses_nothing_and_is_done_at_a_later_open(tmp_path: Path, cut: str) -> None:
    entries = cli_entries(SAMPLES + 100)
    path = tmp_path / "sessions.db"
    await small_and_trained(path, entries)
    assert not path.with_name("sessions.db-wal").exists()  # closed by the last connection: all in the file
    proc = subprocess.run([sys.executable, "-c", CHILD, str(path), str(path.stat().st_size // 2), cut],
                          capture_output=True, timeout=60, check=False)
    if cut == "kill":
        assert proc.returncode == -signal.SIGXFSZ, proc.stderr.decode()[-2000:]
        # Killed inside VACUUM: its rollback journal is left beside the file, for the next connection to roll back.
        assert path.with_name("sessions.db-journal").stat().st_size > 0
    else:
        assert proc.returncode == 0, proc.stderr.decode()[-2000:]
        assert int(proc.stdout.decode().split()[-1]) == len(entries)  # the open went on as usual
    # Intact and readable as it was, small pages and all.
    size, _, check = pages(path)
    assert (size, check) == (SMALL_PAGE, "ok")
    assert stored(path) == as_appended(entries)
    async with SqliteSessionStore(path) as store:  # a later open has room and the file alone
        assert pages(path) == (PAGE, "wal", "ok")
        assert await store.load(KEY) == entries
    assert stored(path) == as_appended(entries)
    assert json.loads(stored(path)[-1]) == entries[-1]


async def test_a_store_that_only_reads_the_context_keeps_no_connection_that_defers_the_rewrite(tmp_path: Path) -> None:
    # The editor's history asks a folder's store for the context size while a terminal's flower writes the file: its
    # reads open a read-only connection each and close it, so the writer's rewrite is not deferred by them.
    entries = cli_entries(SAMPLES + 100)
    path = tmp_path / "sessions.db"
    reader = SqliteSessionStore(path)  # as the editor's folders hold theirs (never entered: no connection opened ahead)
    try:
        async with SqliteSessionStore(path) as writer:
            await fill(writer, entries[: SAMPLES - 100])
            await reader.last_context(KEY["project_key"], KEY["session_id"])  # its answer is the context tests' concern
            await fill(writer, entries[SAMPLES - 100 :])
            assert pages(path)[0] == PAGE
            assert await reader.load(KEY) == entries
    finally:
        await reader.close()
