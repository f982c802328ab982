"""`flower gc` and `retention_days` (#26) on the shared PostgreSQL store: the same promises as on sessions.db.

Two archived tasks, made as a person makes them (a first run, then `flower --new` twice), on a real PostgreSQL
(tests/pg.py) with the real CLI against the scripted model.
"""

from __future__ import annotations

from test_cli import flower
from test_gc import BIG
from test_postgres_team import sql

from conftest import until
from flowerscript import clarify, first_run, goals, judge, work
from pg import PgServer

DAY_MS = 86_400_000


def stored(pg: PgServer, url: str) -> dict[str, int]:
    """Session id → entries the database holds, read with psql."""
    out = sql(pg, url, "SELECT t.session_id, count(e.seq) FROM flower.transcripts t LEFT JOIN flower.entries e"
                       " ON e.transcript = t.id GROUP BY t.session_id")
    return {sid: int(n) for sid, n in (line.split("|") for line in out.splitlines() if line)}


def row(out: str, name: str) -> list[str]:
    found = [line[len(name):].split() for line in out.splitlines() if line.startswith(name + " ")]
    assert len(found) == 1, out
    return found[0]


async def test_postgres_retention_at_wake_and_gc_collect_archived_tasks_only(model, pg, pg_url, workspace, run_dir, tmp_path):
    env = {**model.env(tmp_path / "claude-config"), "CLAUDE_CODE_MAX_RETRIES": "0", "FLOWER_STORE": pg_url}
    (tmp_path / "claude-config").mkdir(exist_ok=True)
    model.push(*clarify(workspace), *goals(workspace), *work(workspace, BIG), *judge())
    assert (await flower("build a calculator", "-r", str(run_dir), env=env, cwd=workspace)).code == 0
    first = set(stored(pg, pg_url))
    model.push(*first_run(workspace))
    made = await flower("--new", "write the docs", "-r", str(run_dir), env=env, cwd=workspace)
    assert made.code == 0, made.err
    second = set(stored(pg, pg_url)) - first
    assert len(second) >= 4, made.out + made.err
    model.push(*first_run(workspace))
    assert (await flower("--new", "write the tests", "-r", str(run_dir), env=env, cwd=workspace)).code == 0
    current = set(stored(pg, pg_url)) - first - second
    assert len(first) >= 4 and len(second) >= 4 and len(current) >= 4
    older, newer = sorted((workspace / "notes" / "archive").iterdir())
    assert all((a / "lineage.json").exists() and (a / "需求.md").exists() for a in (older, newer))  # S28, the shared lineage too
    kept = {a / name: (a / name).read_bytes() for a in (older, newer) for name in ("需求.md", "目标.md")}

    # A hundred days pass for the first task only.
    sql(pg, pg_url, f"UPDATE flower.transcripts SET mtime = mtime - {100 * DAY_MS}"
                    f" WHERE session_id IN ({', '.join(repr(s) for s in first)})")
    model.push(*goals(workspace), *work(workspace), *judge())
    woke = await flower("add a README section", "-r", str(run_dir), env={**env, "FLOWER_RETENTION_DAYS": "30"}, cwd=workspace)
    assert woke.code == 0, woke.err
    said = [line for line in woke.out.splitlines() if line.startswith("· retention (30 days):")]
    assert len(said) == 1 and f"deleted {len(first)} sessions of 1 archived task from the store" in said[0], woke.out
    now = set(stored(pg, pg_url))
    assert not first & now and second <= now and current <= now

    listed = await flower("gc", "-r", str(run_dir), env=env, cwd=workspace)
    assert listed.code == 0, listed.err
    assert int(row(listed.out, newer.name)[0]) == len(second) and int(row(listed.out, older.name)[0]) == 0, listed.out
    assert "Not on a terminal: nothing deleted." in listed.out and set(stored(pg, pg_url)) == now

    done = await flower("gc", "--yes", "-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    assert f"deleted {len(second)} sessions" in done.out, done.out
    # Said honestly: a plain VACUUM keeps the freed pages for reuse inside the tables.
    assert "PostgreSQL keeps most of the freed space inside its tables for later sessions" in done.out, done.out
    left = set(stored(pg, pg_url))
    assert not second & left and current <= left
    assert {path: path.read_bytes() for path in kept} == kept
    # VACUUM ran on the store's tables (the statistics arrive once the gc process has ended and flushed them).
    await until(lambda: sql(pg, pg_url, "SELECT count(*) FROM pg_stat_user_tables WHERE schemaname = 'flower'"
                                        " AND relname IN ('entries', 'transcripts', 'summaries') AND last_vacuum IS NOT NULL") == "3",
                timeout=30, what="VACUUM of the flower tables")
    line = next(line for line in done.out.splitlines() if line.startswith("deleted "))
    print(f"\nPostgreSQL flower gc --yes: {line}")
