"""`flower/status` of a running editor server on a shared PostgreSQL store (D9): it follows what other processes
write to the task's records, and it answers at once, saying so, while the database is down."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import test_lsp
from test_cli import flower
from test_lsp import Client, uri

import flowerscript as fs
from flower.lsp import protocol as p
from pg import PgServer

servers = test_lsp.servers
"""The fixture that starts `python -m flower.lsp` processes (shared with test_lsp.py)."""

TASK = "build a calculator"


async def status_of(client: Client, folder: str, timeout: float = 5.0) -> dict[str, Any]:
    """The folder's `flower/status`, bounded."""
    [status] = (await client.request(p.STATUS, {"folder": folder}, timeout=timeout))["folders"]
    return status


async def status_until(client: Client, folder: str, ok: Callable[[dict[str, Any]], bool], what: str,
                       timeout: float = 20.0) -> dict[str, Any]:
    """Ask for the status until `ok(status)`, failing after `timeout` seconds with the last status seen."""
    deadline = time.monotonic() + timeout
    while True:
        status = await status_of(client, folder)
        if ok(status):
            return status
        assert time.monotonic() < deadline, f"timed out waiting for {what}; last status: {json.dumps(status)[:600]}"
        await asyncio.sleep(0.1)


def recorded(pg: PgServer, url: str) -> tuple[float, str]:
    """(the sum of every manifest row's cost, the newest row's model) in the shared store, read with psql."""
    database = url.split("@/", 1)[1].split("?", 1)[0]
    cost = pg.sql("SELECT coalesce(sum((r->>'cost_usd')::float8), 0) FROM flower.manifest, jsonb_array_elements(rows) r",
                  database).strip()
    model = pg.sql("SELECT r->>'model' FROM flower.manifest, jsonb_array_elements(rows) r"
                   " ORDER BY (r->>'ended_at')::float8 DESC LIMIT 1", database).strip()
    return float(cost), model


async def test_status_cost_and_model_follow_wakes_of_other_processes_on_a_shared_store(
        servers, model, env, workspace: Path, pg: PgServer, pg_url: str) -> None:
    client = await servers(workspace, options={"store": pg_url})
    folder = uri(workspace)
    before = await status_of(client, folder)
    assert before["cost"]["task"] == 0.0 and before["model"] is None and before["woke"] == 0

    # A terminal's wake of the same task, through the same store.
    model.push(*fs.first_run(workspace))
    first = await flower(TASK, "--store", pg_url, env=env, cwd=workspace)
    assert first.code == 0, first.out + first.err
    spent, used = recorded(pg, pg_url)
    assert spent > 0 and used
    shown = await status_until(client, folder, lambda s: s["woke"] == 1 and s["model"] == used,
                               "the terminal's first wake in the server's status")
    assert abs(shown["cost"]["task"] - spent) < 1e-6 and abs(shown["cost"]["wake"] - spent) < 1e-6

    # A second wake, on another model: the server's status follows again (a cache keyed by manifest.json's stat,
    # which a shared store never writes, kept the first figures forever).
    model.push(*fs.goals(workspace, fs.GOALS + "- [ ] calc.py multiplies\n"), *fs.work(workspace), *fs.judge())
    second = await flower("also multiply", "--store", pg_url, "--model", "claude-sonnet-4-5", env=env, cwd=workspace)
    assert second.code == 0, second.out + second.err
    total, now_used = recorded(pg, pg_url)
    assert total > spent and now_used == "claude-sonnet-4-5" != used
    shown = await status_until(client, folder, lambda s: s["woke"] == 2 and s["model"] == now_used,
                               "the terminal's second wake in the server's status")
    assert abs(shown["cost"]["task"] - total) < 1e-6 and abs(shown["cost"]["wake"] - (total - spent)) < 1e-6
    assert shown["unreachable"] is None and not (workspace / "runs" / "manifest.json").exists()


async def test_status_during_a_database_outage_answers_at_once_and_says_the_store_is_unreachable(
        servers, model, env, workspace: Path) -> None:
    server = PgServer()  # its own server: stopped and started again under a running editor server
    try:
        server.init().start()
        url = server.url(server.new_database())
        model.push(*fs.first_run(workspace))
        client = await servers(workspace, options={"store": url})
        folder = uri(workspace)
        await client.request(p.WAKE, {"folder": folder, "text": TASK})
        end = await client.ended(folder, timeout=90)
        assert end["ok"] is True, end
        up = await status_of(client, folder)
        assert up["woke"] == 1 and up["unreachable"] is None and up["cost"]["task"] > 0

        server.stop()
        worst = 0.0
        deadline = time.monotonic() + 30
        while True:  # every answer comes at once; within a few seconds one says the store is not answering
            began = time.monotonic()
            down = await status_of(client, folder, timeout=2.0)
            worst = max(worst, time.monotonic() - began)
            if down["unreachable"] is not None:
                break
            assert time.monotonic() < deadline, "no status said the store is unreachable"
            await asyncio.sleep(0.05)
        assert "is not answering" in down["unreachable"] and "Traceback" not in down["unreachable"]
        assert "\n" not in down["unreachable"]
        assert (down["woke"], down["steps"], down["cost"]) == (up["woke"], up["steps"], up["cost"])  # what was read before
        for _ in range(20):  # and it keeps answering at once while the database stays down
            began = time.monotonic()
            again = await status_of(client, folder, timeout=2.0)
            worst = max(worst, time.monotonic() - began)
            assert again["unreachable"] is not None
        assert worst < 0.5, f"a status during the outage took {worst:.3f} s"

        server.start()  # back: the next reads succeed and the line goes
        await status_until(client, folder, lambda s: s["unreachable"] is None and s["woke"] == 1,
                           "the status once the database is back", timeout=40)
    finally:
        server.remove()
