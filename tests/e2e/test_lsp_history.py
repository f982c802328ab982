"""`flower/history` and the gauge's status from a new server process (issue 11): the whole conversation, every step and
judge round, with the pruner's verdicts, read from sessions.db without any wake; live `seq` continuing after it."""

from __future__ import annotations

import json
import uuid as uuidlib
from typing import Any

import pytest
import test_lsp
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from test_lsp import TIMEOUT, Client, stop, uri

import flowerscript as fs
from conftest import until
from flower.lsp import protocol as p
from flower.testing import overloaded

servers = test_lsp.servers
"""The fixture that starts `python -m flower.lsp` processes (shared with test_lsp.py)."""

CONTEXT = dict(input_tokens=50, cache_read=80_000, cache_creation=163)
"""The work session's last round: its context is 80213 tokens (S19: input + cache read + cache creation)."""


async def history(client: Client, folder: str, **params: Any) -> dict:
    """One `flower/history` page whose pruner verdicts are all in (waiting for the `flower/pruned` of pending ones)."""
    result = await client.request(p.HISTORY, {"folder": folder, **params})
    if result["pending"]:
        pending = set(result["pending"])
        await until(lambda: pending <= {x["sessionId"] for x in client.seen(p.PRUNED, folder)}, TIMEOUT, "pending verdicts")
        result = await client.request(p.HISTORY, {"folder": folder, **params})
        assert result["pending"] == []  # cached now
    return result


async def all_pages(client: Client, folder: str, limit: int, **params: Any) -> list[dict]:
    """Every entry, walking back page by page with `before`."""
    pages, before = [], None
    for _ in range(1000):
        page = await history(client, folder, limit=limit, before=before, **params)
        assert len({e["seq"] for e in page["entries"] if e["pruned"] != "added"}) <= limit
        pages.append(page["entries"])
        before = page["nextBefore"]
        if before is None:
            break
        assert page["entries"] and all(e["seq"] >= before for e in page["entries"])
    return [e for entries in reversed(pages) for e in entries]


@pytest.fixture
async def finished(servers, model, workspace):
    """A first wake that ran to the end in server A: an outage in the work step, a failed judge round, then a pass."""
    model.push(*fs.clarify(workspace), *fs.goals(workspace), overloaded(), *fs.work(workspace, **CONTEXT),
               *fs.judge(False, "subtraction is missing"), *fs.work(workspace, **CONTEXT), *fs.judge())
    client = await servers(workspace)
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": "build a calculator"})
    end = await client.ended(folder, timeout=120)
    assert end["ok"] is True, end
    live = client.seen(p.TRANSCRIPT, folder)
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    await stop(client)
    return folder, live, status


async def test_history_from_a_new_server_is_the_whole_conversation_with_steps_judges_and_verdicts(servers, model, workspace, finished):
    folder, live, before = finished
    client = await servers(workspace)  # a new process: no wake ever ran in it
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    # The gauge's last value before any wake (S19), read from sessions.db, and its warning threshold.
    assert status["context"] == 80_213 and status["handoffAt"] == 120_000 and status["running"] is False
    assert status["woke"] == 1 and status["steps"] == before["steps"] and status["waiting"] is None
    # The judge's last verdict, read back from the manifest: the same as the server that ran it reported.
    assert before["verdict"]["round"] == 2 and before["verdict"]["passed"] is True
    assert status["verdict"] == before["verdict"]

    page = await history(client, folder, limit=1000)
    entries = page["entries"]
    assert page["nextBefore"] is None and entries
    assert [e["seq"] for e in entries] == sorted(e["seq"] for e in entries)
    assert all(e["folder"] == folder and e["uuid"] for e in entries)
    # Every step and both judge rounds, each session named by its steps.
    sessions = {s["sessionId"]: s for s in page["sessions"]}
    by_steps = {tuple(s["steps"]): s for s in page["sessions"]}
    assert set(by_steps) == {("澄清",), ("目标",), ("干活", "干活#round2"), ("干活·判定#1",), ("干活·判定#2",)}
    assert {s["sessionId"] for s in page["sessions"] if s["current"]} == set(before["steps"].values())
    assert {e["sessionId"] for e in entries} == set(sessions)
    assert all(s["entries"] >= len([e for e in entries if e["sessionId"] == sid]) for sid, s in sessions.items())
    # Everything the model wrote live is in history under the same uuid, session and step (the merge key).
    stored = {e["uuid"]: e for e in entries}
    said = [t for t in live if t["role"] == "assistant"]
    assert said and all(t["uuid"] in stored for t in said)
    for t in said:
        e = stored[t["uuid"]]
        assert (e["sessionId"], e["step"], e["kind"], e["text"]) == (t["sessionId"], t["step"], t["kind"], t["text"]), t
    assert {e["step"] for e in entries} == {"澄清", "目标", "干活", "干活#round2", "干活·判定#1", "干活·判定#2"}
    judged = [e["text"] for e in entries if e["step"] == "干活·判定#1" and e["role"] == "assistant"]
    assert judged == ["VERDICT: FAIL subtraction is missing"]
    # History also has what live does not send: the prompts the sessions received and the tool results.
    assert any(e["role"] == "user" and e["kind"] == "text" and "build a calculator" in e["text"] for e in entries)
    results = [e for e in entries if e["kind"] == "result"]
    assert results and all(e["toolUseId"] and e["role"] == "user" for e in results)
    calls = {e["toolUseId"] for e in entries if e["kind"] == "tool"}
    assert {e["toolUseId"] for e in results} <= calls
    # The pruner's view (S23a): the outage's API-error entry is hidden from the model, everything else kept.
    outage = [e for e in entries if e["text"].startswith("API Error: 529")]
    assert len(outage) == 1 and outage[0]["pruned"] == "hidden" and outage[0]["step"] == "干活"
    assert all(e["pruned"] is None for e in entries if e is not outage[0] and e["step"] != "干活")

    # The section heads: every step run the manifest records, with its state, cost, duration and a judge's verdict.
    runs = [(r["step"], r["ok"], r["passed"]) for r in page["steps"]]
    assert runs == [("澄清", True, None), ("目标", True, None), ("干活", True, None), ("干活·判定#1", True, False),
                    ("干活#round2", True, None), ("干活·判定#2", True, True)], runs
    assert all(r["durationS"] is not None and r["durationS"] >= 0 and r["costUsd"] >= 0 for r in page["steps"])
    assert {r["sessionId"] for r in page["steps"]} == set(sessions)

    # One session only.
    judge = by_steps[("干活·判定#2",)]["sessionId"]
    only = await history(client, folder, sessionId=judge)
    assert only["entries"] and {e["sessionId"] for e in only["entries"]} == {judge}
    assert [e["uuid"] for e in only["entries"]] == [e["uuid"] for e in entries if e["sessionId"] == judge]


async def test_paging_returns_every_entry_exactly_once(servers, model, workspace, finished):
    folder, _, _ = finished
    client = await servers(workspace)
    whole = (await history(client, folder, limit=1000))["entries"]
    assert len(whole) > 10
    for limit in (1, 3, 7):
        paged = await all_pages(client, folder, limit)
        assert [e["uuid"] for e in paged] == [e["uuid"] for e in whole], limit
        assert paged == whole
    # The default page is the newest 200 at most; with this little history, all of it.
    assert (await history(client, folder))["entries"] == whole[-200:]
    work = next(s["sessionId"] for s in (await history(client, folder, limit=1))["sessions"] if s["steps"][0] == "干活")
    assert [e["uuid"] for e in await all_pages(client, folder, 2, sessionId=work)] == \
        [e["uuid"] for e in whole if e["sessionId"] == work]


async def test_live_seq_is_strictly_increasing_and_continues_above_history(servers, model, workspace, finished):
    folder, live, _ = finished
    seqs = [t["seq"] for t in live]
    assert seqs and all(b > a for a, b in zip(seqs, seqs[1:], strict=False))
    client = await servers(workspace)
    page = await history(client, folder, limit=1000)
    top = max(e["seq"] for e in page["entries"])
    model.push(*fs.work(workspace), *fs.judge())
    await client.request(p.WAKE, {"folder": folder, "text": "also print the result in green"})
    await client.ended(folder)
    again = client.seen(p.TRANSCRIPT, folder)
    assert again[0]["role"] == "user" and again[0]["uuid"] is None
    seqs = [t["seq"] for t in again]
    assert seqs[0] > top and all(b > a for a, b in zip(seqs, seqs[1:], strict=False))
    # The new entries come with the next newest page, after everything the earlier pages had; merged by uuid.
    newer = (await history(client, folder, limit=1000))["entries"]
    assert [e["uuid"] for e in newer[:len(page["entries"])]] == [e["uuid"] for e in page["entries"]]
    fresh = {e["uuid"] for e in newer[len(page["entries"]):]}
    assert {t["uuid"] for t in again if t["uuid"]} <= fresh
    assert min(e["seq"] for e in newer[len(page["entries"]):]) > top


async def test_status_counts_down_a_retry_wait(servers, model, workspace):
    model.push(overloaded(), *fs.first_run(workspace))
    client = await servers(workspace)
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": "build a calculator"})
    await until(lambda: client.seen(p.WAIT, folder), TIMEOUT, "a wait")
    [wait] = client.seen(p.WAIT, folder)
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    waiting = status["waiting"]
    assert waiting is not None and waiting["reason"] == "backoff"
    assert 0 < waiting["secondsLeft"] <= wait["seconds"] and waiting["until"] > 1.7e9
    [later] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    if later["waiting"] is not None:
        assert later["waiting"]["until"] == waiting["until"] and later["waiting"]["secondsLeft"] <= waiting["secondsLeft"]
    await client.ended(folder)
    [done] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    assert done["waiting"] is None


BAD = [
    ({"folder": "FOLDER", "limit": 0}, "params.limit must be 1 to 1000"),
    ({"folder": "FOLDER", "limit": 1001}, "params.limit must be 1 to 1000"),
    ({"folder": "FOLDER", "limit": "10"}, "params.limit"),
    ({"folder": "FOLDER", "before": 0}, "params.before"),
    ({"folder": "FOLDER", "before": "abc"}, "params.before"),
    ({"folder": "FOLDER", "sessionId": 5}, "params.sessionId"),
    ({"folder": "FOLDER", "sessionId": "no-such-session"}, "is not a session of"),
    ({"folder": "FOLDER", "page": 2}, "extra fields found (page)"),
    ({}, "required field missing @ params.folder"),
    (None, "params must be an object"),
]


async def test_bad_history_params_get_invalid_params(servers, workspace):
    client = await servers(workspace)
    folder = uri(workspace)
    for params, expected in BAD:
        params = json.loads(json.dumps(params).replace("FOLDER", folder))
        with pytest.raises(JsonRpcInvalidParams) as raised:
            await client.request(p.HISTORY, params, timeout=10)
        assert raised.value.message.startswith(p.HISTORY) and expected in raised.value.message, raised.value.message
    # A folder that never ran: an empty history, not an error.
    empty = await client.request(p.HISTORY, {"folder": folder})
    assert empty == {"folder": folder, "entries": [], "nextBefore": None, "sessions": [], "pending": [], "steps": []}


async def test_an_unreadable_sessions_db_gets_a_clear_error_and_is_left_as_it_is(servers, workspace):
    runs = workspace / "runs"
    runs.mkdir()
    junk = b"this is not SQLite\n" * 500
    (runs / "sessions.db").write_bytes(junk)
    client = await servers(workspace)
    folder = uri(workspace)
    with pytest.raises(JsonRpcException) as raised:
        await client.request(p.HISTORY, {"folder": folder}, timeout=10)
    assert raised.value.code == p.FLOWER_ERROR and "sessions.db" in raised.value.message
    assert "Move it aside" in raised.value.message
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]  # still answering
    assert status["context"] is None and status["handoffAt"] == 120_000
    assert (runs / "sessions.db").read_bytes() == junk


def cli_chain(session: str) -> list[dict]:
    """A CLI-shaped session a kill cut short: an interrupted call's result, then a call the kill left open."""
    entries: list[dict] = []

    def add(kind: str, content: Any, **extra: Any) -> None:
        message = {"role": kind, "content": content}
        if kind == "assistant":
            message |= {"model": "claude-test", "id": f"msg_{len(entries)}", "type": "message", "usage": {"input_tokens": 9}}
        entries.append({"type": kind, "uuid": str(uuidlib.uuid4()), "parentUuid": entries[-1]["uuid"] if entries else None,
                        "sessionId": session, "timestamp": "2026-11-30T10:00:00.000Z", "message": message, **extra})

    add("user", "build it")
    add("assistant", [{"type": "tool_use", "id": "toolu_1", "name": "Bash", "input": {"command": "make all"}}])
    add("user", [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "[Tool call interrupted by the user]",
                  "is_error": True}], toolUseResult="interrupted", toolDenialKind="interrupted")
    add("assistant", [{"type": "text", "text": "trying again"}])
    add("assistant", [{"type": "tool_use", "id": "toolu_2", "name": "Write", "input": {"file_path": "/w/a.py", "content": "x"}}])
    return entries


async def test_history_shows_rewritten_text_and_added_entries_in_place(workspace):
    """The pruner's `rewritten` (with the new text) and `added` entries (right after the call they close), on every page."""
    from claude_agent_sdk import project_key_for_directory

    from flower.core.lineage import Lineage
    from flower.core.manifest import Manifest, StepResult
    from flower.history import History
    from flower.stores.sqlite import SqliteSessionStore

    runs, session = workspace / "runs", str(uuidlib.uuid4())
    async with SqliteSessionStore(runs / "sessions.db") as store:
        await store.append({"project_key": project_key_for_directory(workspace), "session_id": session}, cli_chain(session))
    Lineage(runs, workspace, woke=1, steps={"干活": session}).save()
    Manifest(runs).add(StepResult(step="干活", session_id=session, started_at=1.0))
    history = History(workspace, runs)
    page = await history.page(limit=100, wait=30)
    assert not page.pending and page.next_before is None
    items = [(i.role, i.kind, i.pruned, i.step) for i in page.items]
    assert items == [("user", "text", None, "干活"), ("assistant", "tool", None, "干活"), ("user", "result", "rewritten", "干活"),
                     ("assistant", "text", None, "干活"), ("assistant", "tool", None, "干活"),
                     ("user", "result", "added", "干活"), ("assistant", "text", "added", "干活")]
    rewritten, call, added = page.items[2], page.items[4], page.items[5]
    assert rewritten.text == "[Tool call interrupted by the user]"
    assert rewritten.pruned_text is not None and rewritten.pruned_text.startswith("[the previous round was interrupted here")
    assert added.tool_use_id == "toolu_2" and added.seq == call.seq and added.pruned_text == added.text
    # Paging one stored entry at a time: the added entries come with the call they close, each exactly once.
    seen, before = [], None
    while True:
        one = await history.page(before=before, limit=1, wait=30)
        seen[:0] = [i.uuid for i in one.items]
        if (before := one.next_before) is None:
            break
    assert seen == [i.uuid for i in page.items]
    assert await history.context(session) == 9  # the last real round's input tokens (S19)
    history.close()
