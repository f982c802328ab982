"""`flower/history` over a shared PostgreSQL store (D9, issue #14): the editor's sidebar shows the conversation the
store holds, paged by its `entries.seq`, with steps, judges and the pruner's verdicts; no password in anything it says."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
import test_lsp
from claude_agent_sdk import project_key_for_directory
from pygls.exceptions import JsonRpcInvalidParams
from test_lsp import uri
from test_lsp_history import all_pages, history

import flowerscript as fs
from flower.core.text import tool_label
from flower.history import History, Page
from flower.lsp import protocol as p
from flower.runtime import Sessions
from flower.testing import overloaded
from pg import PASSWORD, PASSWORD_USER, PgServer

servers = test_lsp.servers
"""The fixture that starts `python -m flower.lsp` processes (shared with test_lsp.py)."""


async def test_history_pages_the_shared_store_with_steps_and_verdicts(servers, model, workspace: Path, pg: PgServer) -> None:
    db = pg.new_database()
    pg.sql(f"ALTER DATABASE {db} OWNER TO {PASSWORD_USER}")  # a role that logs in with a password, as a team's would
    url = pg.url(db, user=PASSWORD_USER, password=PASSWORD)
    model.push(*fs.clarify(workspace), *fs.goals(workspace), overloaded(), *fs.work(workspace), *fs.judge())
    client = await servers(workspace, options={"store": url})
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": "build a calculator"})
    end = await client.ended(folder, timeout=60)
    assert end["ok"] is True, end
    assert not (workspace / "runs" / "sessions.db").exists()  # every entry is in PostgreSQL only

    page = await history(client, folder, limit=1000)
    entries = page["entries"]
    assert page["nextBefore"] is None and entries
    seqs = [e["seq"] for e in entries]
    assert seqs == sorted(seqs) and len({e["uuid"] for e in entries}) == len(entries)
    by_steps = {tuple(s["steps"]): s for s in page["sessions"]}
    assert set(by_steps) == {("澄清",), ("目标",), ("干活",), ("干活·判定#1",)}
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    assert {s["sessionId"] for s in page["sessions"] if s["current"]} == set(status["steps"].values())  # the shared lineage's
    assert {e["step"] for e in entries} == {"澄清", "目标", "干活", "干活·判定#1"}
    # The live entries are in history under the same uuid, session and step (the client's merge key).
    stored = {e["uuid"]: e for e in entries}
    said = [t for t in client.seen(p.TRANSCRIPT, folder) if t["role"] == "assistant"]
    assert said and all((stored[t["uuid"]]["sessionId"], stored[t["uuid"]]["step"]) == (t["sessionId"], t["step"]) for t in said)
    # The conversation in order: the task prompt first; the work session's prompt, the Write call, its result, the
    # reply; then the judge's verdict.
    first = entries[0]
    assert (first["step"], first["role"], first["kind"]) == ("澄清", "user", "text") and "build a calculator" in first["text"]
    work = [(e["role"], e["kind"], e["text"]) for e in entries if e["step"] == "干活" and not e["text"].startswith("API Error")]
    assert work[0][:2] == ("user", "text") and "目标.md" in work[0][2]
    shown = [w[:2] for w in work]
    tool, result = shown.index(("assistant", "tool")), shown.index(("user", "result"))
    assert tool < result < len(work) - 1 and work[-1] == ("assistant", "text", "calc.py written")
    assert work[tool][2] == tool_label("Write", {"file_path": str(workspace / "calc.py")})  # clipped like the server clips it
    assert [e["text"] for e in entries if e["step"] == "干活·判定#1" and e["role"] == "assistant"] == [
        "Checked every goal.\nVERDICT: PASS"]
    # The pruner's view of a Postgres session (S23a): the outage's API-error entry is hidden, the rest kept.
    outage = [e for e in entries if e["text"].startswith("API Error: 529")]
    assert len(outage) == 1 and outage[0]["pruned"] == "hidden" and outage[0]["step"] == "干活"
    assert all(e["pruned"] is None for e in entries if e is not outage[0])

    # Paging back with `before`: every entry exactly once, in the same order.
    paged = await all_pages(client, folder, limit=2)
    assert [e["uuid"] for e in paged] == [e["uuid"] for e in entries]

    # One session only; a session the store does not hold is a clear error naming the ones it does.
    judge = by_steps[("干活·判定#1",)]["sessionId"]
    only = await history(client, folder, sessionId=judge)
    assert [e["uuid"] for e in only["entries"]] == [e["uuid"] for e in entries if e["sessionId"] == judge]
    with pytest.raises(JsonRpcInvalidParams, match=judge):
        await client.request(p.HISTORY, {"folder": folder, "sessionId": "no-such-session"})

    # D6: the URL's password is in nothing the server said (notifications, log and shown messages) or wrote.
    said_all = json.dumps([client.log, [m.message for m in client.log_messages], [m.message for m in client.messages]],
                          default=str, ensure_ascii=False)
    assert PASSWORD not in said_all and client.log
    assert not [f for f in (workspace / "runs").rglob("*") if f.is_file() and PASSWORD.encode() in f.read_bytes()]


async def test_pages_read_at_once_from_threads_share_the_store_without_clashing(pg: PgServer, pg_url: str, tmp_path: Path,
                                                                                caplog: pytest.LogCaptureFixture) -> None:
    """Pages, counts and pruner loads in worker threads at the same time: each gets its answer, no connection is
    reset under another (asyncpg runs one operation at a time on a connection)."""
    ws, runs = tmp_path / "ws", tmp_path / "ws" / "runs"
    ws.mkdir()
    sessions = Sessions.open(runs, store=pg_url, workspace=ws)
    try:
        key = project_key_for_directory(ws)
        for sid in ("s1", "s2"):
            await sessions.raw.append({"project_key": key, "session_id": sid}, [
                {"type": "user", "uuid": f"{sid}-{i}", "message": {"role": "user", "content": f"{sid} line {i}"}}
                for i in range(20)])
        sessions.records.save_lineage({"workspace": str(ws), "woke": 1, "steps": {"澄清": "s1", "目标": "s2"}})
        history = History(ws, runs, store=sessions.raw, records=sessions.records)
        pages = await asyncio.wait_for(asyncio.gather(
            *(history.page(limit=7, before=before) for before in (None, 30, 20, 10) * 3),
            *(history.count(sid) for sid in ("s1", "s2") * 3)), 30)
        serial = [await history.page(limit=7, before=before) for before in (None, 30, 20, 10)]
        assert [_shown(x) for x in pages[:12]] == [_shown(x) for x in serial] * 3 and all(len(_shown(x)) == 7 for x in serial)
        assert pages[12:] == [20, 20] * 3
        whole = _shown(await history.page(limit=100))
        assert [text for _, text in whole] == [f"{sid} line {i}" for sid in ("s1", "s2") for i in range(20)]
        assert not [r for r in caplog.records if "not answering" in r.getMessage()], caplog.text
    finally:
        await sessions.close()


def _shown(page: Page) -> list[tuple[int, str]]:
    """(seq, text) of a page's stored entries (the pruner's added ones left out: they come once verdicts are in)."""
    return [(i.seq, i.text) for i in page.items if i.pruned != "added"]
