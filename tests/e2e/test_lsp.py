"""The editor backend (P1, P2, D4–D6): `python -m flower.lsp` as a subprocess, driven by a pytest-lsp client,
running the real CLI against the scripted model."""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidParams
from pygls.uris import from_fs_path
from pytest_lsp import LanguageClient, client_capabilities
from pytest_lsp.client import DEFAULT_CLIENT_FEATURES
from pytest_lsp.client import progress as record_progress

import flowerscript as fs
from conftest import ROOT, until
from flower import CLARIFY_RESUME, Runtime
from flower.core.lock import WorkspaceLock
from flower.core.text import tool_label
from flower.lsp import protocol as p
from flower.lsp.server import converter_factory
from flower.testing import Reply, overloaded, say, text
from flower.workflow.flower import NOBODY_TO_ASK

TASK = "build a calculator"
TIMEOUT = 60.0
FLOWER_METHODS = sorted(p.NOTIFICATIONS)


class Client(LanguageClient):
    """A pytest-lsp client that keeps flower's JSON as sent and records every notification in arrival order."""

    def __init__(self, ask: bool = True) -> None:
        super().__init__(converter_factory=converter_factory)
        self.log: list[tuple[str, Any]] = []
        """(method, params) of every flower notification and `$/progress`, in arrival order."""
        self.answers: list[str | None] = []
        """Answers `flower/ask` gives, in order (None when exhausted)."""
        self.asked: list[dict] = []
        for method, handler in DEFAULT_CLIENT_FEATURES.items():
            if method != types.PROGRESS:
                self.feature(method)(handler)

        @self.feature(types.PROGRESS)
        def on_progress(ls: Client, params: types.ProgressParams) -> None:
            record_progress(ls, params)
            ls.log.append((types.PROGRESS, {"token": params.token, **params.value}))

        for method in FLOWER_METHODS:
            self.feature(method)(lambda ls, params, method=method: ls.log.append((method, params)))

        if ask:  # without it the client answers flower/ask with MethodNotFound
            @self.feature(p.ASK)
            def on_ask(ls: Client, params: dict) -> dict:
                ls.asked.append(params)
                return {"answer": ls.answers.pop(0) if ls.answers else None}

    def seen(self, method: str, folder: str | None = None) -> list[dict]:
        """Params of every `method` notification received so far (of one folder when given)."""
        return [x for m, x in self.log if m == method and (folder is None or x.get("folder") == folder)]

    def methods(self, folder: str | None = None) -> list[str]:
        """The order notifications arrived in (progress shown as `$/progress:<kind>`)."""
        return [f"{m}:{x['kind']}" if m == types.PROGRESS else m for m, x in self.log
                if m == types.PROGRESS or folder is None or x.get("folder") == folder]

    async def request(self, method: str, params: Any, timeout: float = TIMEOUT) -> Any:
        """One request, bounded."""
        return await asyncio.wait_for(self.protocol.send_request_async(method, params), timeout)

    async def ended(self, folder: str, runs: int = 1, timeout: float = 90.0) -> dict:
        """Wait until `runs` wakes of `folder` have sent their end state; return the last one."""
        await until(lambda: len([s for s in self.seen(p.STATE, folder) if not s["running"]]) >= runs, timeout,
                    f"{runs} wake(s) of {folder} to end")
        return [s for s in self.seen(p.STATE, folder) if not s["running"]][-1]

    def kill(self) -> None:
        """kill -9 the server and the agent CLI it runs, as a crash or a frozen terminal would."""
        try:
            os.killpg(self._server.pid, signal.SIGKILL)
        except ProcessLookupError:  # already gone
            pass


def uri(path: Path) -> str:
    return from_fs_path(str(path))


async def stop(client: Client) -> None:
    """Shut a server down politely (bounded), killing it if it does not go."""
    if client._server is not None and client._server.returncode is None:
        try:
            await asyncio.wait_for(client.shutdown_session(), 40)
        except Exception:
            client.kill()
    try:
        await asyncio.wait_for(client.stop(), 30)
    except TimeoutError:
        client.kill()
        await asyncio.wait_for(client.stop(), 10)


@pytest.fixture
async def servers(env):
    """Start flower language servers (`python -m flower.lsp` over stdio, env = the scripted model's) and stop them all."""
    started: list[Client] = []

    async def start(*folders: Path, locale: str | None = None, capabilities: str | None = "visual-studio-code",
                    options: Any = None, ask: bool = True, args: tuple[str, ...] = ()) -> Client:
        client = Client(ask=ask)
        await client.start_io(sys.executable, "-m", "flower.lsp", *args, env={**os.environ, **env}, start_new_session=True)
        started.append(client)
        params = types.InitializeParams(
            capabilities=client_capabilities(capabilities) if capabilities else types.ClientCapabilities(),
            workspace_folders=[types.WorkspaceFolder(uri(f), f.name) for f in folders],
            locale=locale,
            initialization_options=options,
        )
        await asyncio.wait_for(client.initialize_session(params), 30)
        return client

    yield start
    for client in started:
        await stop(client)


# -- the protocol surface ----------------------------------------------------------------------
async def test_status_on_an_idle_folder_answers_from_the_files(servers, workspace):
    client = await servers(workspace)
    result = await client.request(p.STATUS, {"folder": uri(workspace)})
    [status] = result["folders"]
    assert status == {
        "folder": uri(workspace), "name": workspace.name, "workspace": str(workspace),
        "runDir": str(workspace / "runs"), "woke": 0, "steps": {}, "goals": [], "context": None,
        "window": 200_000, "handoffAt": 120_000, "running": False, "step": None, "waiting": None, "verdict": None,
        "interrupted": False, "elsewhere": False, "model": None, "cost": {"wake": 0.0, "task": 0.0, "max": None},
        "settings": None,
        # No `trusted` option and no record: its own hooks and MCP servers would not run (D10, test_trust.py).
        "trusted": False, "trust": "nobody trusted it yet; its own hooks, env and MCP servers do not run",
        "unreachable": None, "waitingFor": None,
        "storeBytes": 0,  # no sessions.db yet, and asking made none
        "background": [],  # no subagent or background shell runs (issue 32)
        "hasTask": False, "workSession": False, "stepLabel": None,  # no task yet, nothing runs (issue 33)
        "forecast": None,  # no work round yet (issue 34)
    }
    assert not (workspace / "runs" / "sessions.db").exists()
    # Without a folder: every folder; the same payload with null params.
    assert (await client.request(p.STATUS, None))["folders"] == [status]
    assert (await client.request(p.STATUS, {}))["folders"] == [status]
    # flower's log lines reach the editor's output channel.
    assert any(f"serving workspace folder {workspace}" in m.message for m in client.log_messages)


MALFORMED = [
    (p.WAKE, None, "params must be an object"),
    (p.WAKE, [1, 2], "params must be an object"),
    (p.WAKE, {}, "required field missing @ params.folder"),
    (p.WAKE, {"folder": 7}, "expected str @ params.folder"),
    (p.WAKE, {"folder": "FOLDER", "text": ["a"]}, "params.text"),
    (p.WAKE, {"folder": "FOLDER", "txt": "typo"}, "extra fields found (txt)"),
    (p.SAY, {"folder": "FOLDER"}, "required field missing @ params.text"),
    (p.SAY, {"folder": "FOLDER", "text": "   "}, "params.text is blank"),
    (p.SAY, "hello", "params must be an object"),
    (p.NEW, {"text": "x"}, "required field missing @ params.folder"),
    (p.NEW, {"folder": "FOLDER", "text": ""}, "params.text is blank"),
    (p.NEW, {"folder": "FOLDER", "text": None}, "params.text"),
    (p.STATUS, {"folder": 3}, "params.folder"),
    (p.STATUS, {"folders": []}, "extra fields found (folders)"),
    (p.STATUS, 42, "params must be an object"),
]


async def test_malformed_params_get_invalid_params_and_the_server_keeps_answering(servers, workspace):
    client = await servers(workspace)
    folder = uri(workspace)
    for method, params, expected in MALFORMED:
        params = json.loads(json.dumps(params).replace("FOLDER", folder))
        with pytest.raises(JsonRpcInvalidParams) as raised:
            await client.request(method, params, timeout=10)
        assert expected in raised.value.message, (method, params, raised.value.message)
        assert raised.value.message.startswith(method)
        assert any(hint in raised.value.message for hint in ("Send params like", "e.g.", "must be an object like"))
    # Unknown and non-file folders: a clear error naming the folders the server has.
    for method in (p.WAKE, p.SAY, p.NEW, p.STATUS):
        for bad in ("file:///nowhere/at/all", "untitled:Untitled-1"):
            with pytest.raises(JsonRpcException) as raised:
                await client.request(method, {"folder": bad, "text": "x"} if method != p.STATUS else {"folder": bad}, timeout=10)
            assert raised.value.code == p.UNKNOWN_FOLDER
            assert folder in raised.value.message or "file:// URI" in raised.value.message
            assert raised.value.data["known"] == [folder]
    # An unknown method is MethodNotFound, not silence.
    with pytest.raises(JsonRpcException) as raised:
        await client.request("flower/nope", {}, timeout=10)
    assert raised.value.code == -32601
    # Bytes that are not JSON, and a typed LSP notification with nonsense params: logged, not fatal.
    for body in (b"{not json", json.dumps({"jsonrpc": "2.0", "method": "workspace/didChangeWorkspaceFolders",
                                           "params": {"event": 5}}).encode()):
        client._server.stdin.write(b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
    # Still alive and answering; nothing started.
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    assert status["running"] is False and status["woke"] == 0
    assert client._server.returncode is None and not client.seen(p.STATE)


# -- the flower path through the editor protocol -------------------------------------------------
def in_order(seen: list[str], *expected: str) -> bool:
    """`expected` occurs in `seen` as a subsequence."""
    it = iter(seen)
    return all(any(x == want for x in it) for want in expected)


async def test_wake_on_a_fresh_folder_runs_the_flower_path_and_streams_in_order(servers, model, workspace):
    held = Reply(blocks=[say("calc.py written")], hold=True)
    model.push(*fs.clarify(workspace), *fs.goals(workspace), fs.work(workspace)[0], held, *fs.judge())
    client = await servers(workspace)
    folder = uri(workspace)

    result = await client.request(p.WAKE, {"folder": folder, "text": TASK})
    assert result["folder"] == folder and result["action"] == "started" and result["delivered"] is False
    assert result["status"]["running"] is True

    # The model is held inside the work step: status still answers at once, with the run's state.
    await model.wait_for_requests(6, timeout=TIMEOUT)
    await until(lambda: client.seen(p.STEP_START) and client.seen(p.STEP_START)[-1]["step"] == "干活", what="work step")
    [status] = (await client.request(p.STATUS, {"folder": folder}, timeout=5))["folders"]
    assert status["running"] is True and status["step"] == "干活" and status["woke"] == 1
    assert set(status["steps"]) == {"澄清", "目标", "干活"}
    assert status["goals"] == [{"text": "calc.py adds", "done": False}, {"text": "calc.py subtracts", "done": False}]
    model.release()

    end = await client.ended(folder)
    assert end["ok"] is True and end["cancelled"] is False and end["error"] is None and end["woke"] == 1
    seen = client.methods(folder)
    assert seen[0] == p.STATE and seen[-1] == p.STATE
    # Per step: header, progress begin, stepStart, session, transcript…, stepEnd, progress end — in that order.
    one_step = (p.HEADER, "$/progress:begin", p.STEP_START, p.SESSION, p.TRANSCRIPT, p.STEP_END, "$/progress:end")
    assert in_order(seen, *one_step * 3)
    assert in_order(seen, p.STEP_END, p.VERDICT, p.STATE)
    starts = client.seen(p.STEP_START, folder)
    assert [s["step"] for s in starts] == ["澄清", "目标", "干活"] and [s["index"] for s in starts] == [1, 2, 3]
    tokens = [s["progress"] for s in starts]
    assert all(tokens) and len(set(tokens)) == 3
    for token in tokens:
        kinds = [r.kind for r in client.progress_reports[token]]
        assert kinds[0] == "begin" and kinds[-1] == "end" and "report" in kinds
    assert client.progress_reports[tokens[0]][0].cancellable is True
    # A tool call's progress line names its path relative to the folder (issue #25).
    messages = [r.message for r in client.progress_reports[tokens[0]] if r.kind == "report"]
    assert "Write(需求.md)" in messages and not any(str(workspace) in (m or "") for m in messages), messages

    # The transcript: the person's task, then the agents' text and tool calls with their entry uuids.
    transcript = client.seen(p.TRANSCRIPT, folder)
    assert transcript[0] | {"folder": None, "seq": None} == {
        "folder": None, "step": None, "sessionId": None, "uuid": None, "role": "user", "kind": "text", "text": TASK,
        "toolName": None, "toolInput": None, "toolUseId": None, "pruned": None, "prunedText": None, "seq": None, "parent": None,
        "stepLabel": None, "denied": False}  # the person's sentence belongs to no step (issue 33)
    seqs = [t["seq"] for t in transcript]
    assert seqs == sorted(set(seqs)) and seqs[0] >= 1  # strictly increasing per folder
    writes = [t for t in transcript if t["kind"] == "tool"]
    assert [w["toolName"] for w in writes] == ["Write", "Write", "Write"]
    # The summary names the absolute path (clipped like every summary: a long temporary path ends in "…").
    assert writes[0]["text"] == tool_label("Write", {"file_path": str(workspace / "需求.md")})
    assert writes[0]["toolInput"] == {"file_path": str(workspace / "需求.md"), "content": fs.REQUIREMENTS}
    assert all(t["uuid"] and t["sessionId"] and t["role"] == "assistant" for t in transcript[1:])
    assert {t["sessionId"] for t in transcript if t["step"] == "干活"} == {status["steps"]["干活"]}
    # The pruner's view of each finished step's session (S23).
    assert {x["sessionId"] for x in client.seen(p.PRUNED, folder)} >= set(status["steps"].values())

    [verdict] = client.seen(p.VERDICT, folder)
    assert verdict["passed"] is True and verdict["round"] == 1 and verdict["step"] == "干活·判定#1"
    windows = [c["window"] for c in client.seen(p.CONTEXT, folder)]
    # The assumed 200k until the CLI reports its model's window (1M for CLI 2.1.332's default model).
    assert windows and set(windows) <= {200_000, 1_000_000} and windows[-1] == 1_000_000
    assert not client.seen(p.BANNER, folder)  # a first run has nothing to resume
    [final] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    assert final["running"] is False and final["verdict"]["passed"] is True and final["woke"] == 1
    # The store's size on disk as the files are now (#26): the snapshot catches up within its age (STALE_S).
    runs, deadline = workspace / "runs", asyncio.get_running_loop().time() + 10
    while True:
        [shown] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
        size = sum(f.stat().st_size for f in runs.glob("sessions.db*") if not f.name.endswith("-shm"))  # no entry in it
        if shown["storeBytes"] == size > 16384:
            break
        assert asyncio.get_running_loop().time() < deadline, (shown["storeBytes"], size)
        await asyncio.sleep(0.1)

    # Waking the used folder again: the banner comes first (S19), then the work step resumes its session.
    model.push(*fs.work(workspace), *fs.judge())
    client.log.clear()
    again = await client.request(p.WAKE, {"folder": folder})
    assert again["action"] == "started"
    await client.ended(folder)
    seen = client.methods(folder)
    assert seen[:2] == [p.STATE, p.BANNER] and in_order(seen, p.BANNER, p.HEADER, "$/progress:begin", p.TRANSCRIPT)
    [banner] = client.seen(p.BANNER, folder)
    assert banner["woke"] == 2 and banner["text"].endswith("wake #2") and "2 goals" in banner["text"]
    assert client.seen(p.STEP_START, folder)[0]["sessionId"] == status["steps"]["干活"]


async def test_server_killed_mid_step_a_new_server_resumes_the_same_session(servers, model, workspace):
    model.push(Reply(blocks=[say("Let me think about")], hold=True))
    client = await servers(workspace)
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": TASK})
    await model.wait_for_requests(1, timeout=TIMEOUT)
    # The lineage holds the clarify session as soon as it exists (S11): status shows it, mid-step.
    await until(lambda: client.seen(p.SESSION), what="session notification")
    sid = client.seen(p.SESSION)[0]["sessionId"]
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    assert status["steps"] == {"澄清": sid} and status["running"] is True
    await until(lambda: (workspace / "runs" / "sessions.db").exists(), what="sessions.db")
    # Wait until the store mirrored the session (the first entry is written before the model answers).
    rt = Runtime(workspace, workspace / "runs")
    await until(lambda: rt.has_session(sid), what="clarify session stored")
    await rt.close()
    client.kill()
    await asyncio.wait_for(client._server.wait(), 20)

    model.push(*fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace), *fs.judge())
    second = await servers(workspace)
    result = await second.request(p.WAKE, {"folder": folder})
    assert result["action"] == "started" and result["status"]["woke"] == 2
    end = await second.ended(folder)
    assert end["ok"] is True and end["woke"] == 2
    [banner] = second.seen(p.BANNER, folder)
    assert banner["woke"] == 2 and banner["text"].endswith("wake #2")
    assert second.methods(folder)[:2] == [p.STATE, p.BANNER]
    resumed = model.conversation[1]
    assert resumed.session_id == sid
    assert TASK in resumed.text and resumed.text.count(TASK) == 1  # the old history, not the task re-sent
    assert second.seen(p.STEP_START, folder)[0] | {"progress": None} == {
        "folder": folder, "step": "澄清", "index": 1, "total": 3, "sessionId": sid, "woke": 2, "progress": None,
        "label": "clarify", "workSession": False}  # the server's words and the one rule (issue 33)


async def test_say_while_running_reaches_the_work_session(servers, model, workspace):
    sentence = "also print the result in green"
    model.push(*fs.clarify(workspace), *fs.goals(workspace), fs.work(workspace)[0],
               Reply(blocks=[say("calc.py written")], hold=True), *fs.judge())
    client = await servers(workspace)
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": TASK})
    await model.wait_for_requests(6, timeout=TIMEOUT)  # inside the work step
    said = await client.request(p.SAY, {"folder": folder, "text": sentence})
    assert said["action"] == "delivered" and said["status"]["running"] is True
    # A second wake on the busy folder joins it (D5) instead of starting another.
    joined = await client.request(p.WAKE, {"folder": folder})
    assert joined["action"] == "joined" and joined["delivered"] is False
    # What was said lands with the requirements, re-derives the goals and reaches the work session (S15).
    model.push(*fs.goals(workspace, fs.GOALS + "- [ ] the result is green\n"), *fs.work(workspace), *fs.judge())
    model.release()
    end = await client.ended(folder)
    assert end["ok"] is True and len(client.seen(p.STATE, folder)) == 2  # one run: begin and end  # one run: begin and end
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    work = [r for r in model.conversation if r.session_id == status["steps"]["干活"]]
    assert any(sentence in r.last_user_text for r in work), "the work session received the sentence"
    assert sentence in (workspace / "需求.md").read_text()
    assert {"text": "the result is green", "done": False} in status["goals"]
    user = [t for t in client.seen(p.TRANSCRIPT, folder) if t["role"] == "user"]
    assert [t["text"] for t in user] == [TASK, sentence]


async def test_new_cancels_what_runs_archives_and_restarts(servers, model, workspace):
    model.push(*fs.clarify(workspace), *fs.goals(workspace), fs.work(workspace)[0], Reply(blocks=[say("half")], hold=True))
    client = await servers(workspace)
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": TASK})
    await model.wait_for_requests(6, timeout=TIMEOUT)  # inside the work step
    [before] = (await client.request(p.STATUS, {"folder": folder}))["folders"]

    other = "write the docs instead"
    model.push(*fs.first_run(workspace))
    result = await client.request(p.NEW, {"folder": folder, "text": other})
    assert result["action"] == "started" and result["cancelled"] is True and result["status"]["running"] is True
    first_end = [s for s in client.seen(p.STATE, folder) if not s["running"]][0]
    assert first_end["run"] == 1 and first_end["cancelled"] is True and first_end["ok"] is False
    end = await client.ended(folder, runs=2)
    assert end["run"] == 2 and end["ok"] is True and end["woke"] == 1
    # S28: archived, never deleted; the new task starts fresh sessions.
    [archive] = list((workspace / "notes" / "archive").iterdir())
    assert {f.name for f in archive.iterdir()} == {"lineage.json", "需求.md", "目标.md"}
    assert json.loads((archive / "lineage.json").read_text())["steps"] == before["steps"]
    [after] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    assert after["woke"] == 1 and set(after["steps"].values()).isdisjoint(before["steps"].values())
    clarify = next(r for r in model.conversation if r.session_id == after["steps"]["澄清"])
    assert other in clarify.last_user_text and TASK not in clarify.text
    notices = [n["text"] for n in client.seen(p.NOTICE, folder)]
    assert any("archived" in n and str(archive) in n for n in notices)
    # The cancelled step's progress was ended, not left spinning.
    for token, reports in client.progress_reports.items():
        assert reports[-1].kind == "end", token


def only_for(folder: Path, replies: list[Reply]) -> list[Reply]:
    """The replies, answering only requests of an agent working in `folder` (the CLI names its cwd in the request)."""
    where = json.dumps(f"working directory: {folder}\n", ensure_ascii=False)[1:-1]
    for r in replies:
        r.match = lambda body: where in json.dumps(body, ensure_ascii=False)
    return replies


async def test_two_folders_run_independent_workflows_with_their_own_runs(servers, model, tmp_path):
    a, b = tmp_path / "alpha", tmp_path / "beta"
    a.mkdir(), b.mkdir()
    model.push(*only_for(a, fs.first_run(a)), *only_for(b, fs.first_run(b)))
    model.default = None  # a request no reply matches fails loudly instead of getting a stray answer
    client = await servers(a)
    # The second folder arrives later, as when the person adds it to the workspace.
    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        types.WorkspaceFoldersChangeEvent(added=[types.WorkspaceFolder(uri(b), "beta")], removed=[])))
    listed = (await client.request(p.STATUS, None))["folders"]
    assert [f["folder"] for f in listed] == [uri(a), uri(b)] and listed[1]["name"] == "beta"

    results = await asyncio.gather(client.request(p.WAKE, {"folder": uri(a), "text": "alpha task"}),
                                   client.request(p.WAKE, {"folder": uri(b), "text": "beta task"}))
    assert [r["action"] for r in results] == ["started", "started"]
    ends = await asyncio.gather(client.ended(uri(a)), client.ended(uri(b)))
    assert all(e["ok"] for e in ends), ends
    la = json.loads((a / "runs" / "lineage.json").read_text())
    lb = json.loads((b / "runs" / "lineage.json").read_text())
    assert la["workspace"] == str(a) and lb["workspace"] == str(b)
    assert set(la["steps"].values()).isdisjoint(lb["steps"].values())
    assert (a / "calc.py").exists() and (b / "calc.py").exists()
    for folder, lineage in ((a, la), (b, lb)):
        steps = {s["sessionId"] for s in client.seen(p.SESSION, uri(folder)) if s["step"] in lineage["steps"]}
        assert steps == set(lineage["steps"].values())
        task = next(r for r in model.conversation if r.session_id == lineage["steps"]["澄清"])
        assert f"{folder.name} task" in task.text
    # Removing a folder stops serving it.
    client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        types.WorkspaceFoldersChangeEvent(added=[], removed=[types.WorkspaceFolder(uri(b), "beta")])))
    listed = (await client.request(p.STATUS, None))["folders"]
    assert [f["folder"] for f in listed] == [uri(a)]
    with pytest.raises(JsonRpcException) as raised:
        await client.request(p.STATUS, {"folder": uri(b)})
    assert raised.value.code == p.UNKNOWN_FOLDER


async def test_cancelling_the_progress_stops_the_step_and_a_later_wake_resumes_it(servers, model, workspace):
    model.push(Reply(blocks=[say("thinking")], hold=True))
    client = await servers(workspace)
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": TASK})
    await model.wait_for_requests(1, timeout=TIMEOUT)
    await until(lambda: client.seen(p.SESSION, folder), what="the clarify session")
    [start] = client.seen(p.STEP_START, folder)
    sid = client.seen(p.SESSION, folder)[0]["sessionId"]
    rt = Runtime(workspace, workspace / "runs")
    await until(lambda: rt.has_session(sid), what="clarify session stored")
    await rt.close()

    client.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=start["progress"]))
    end = await client.ended(folder)
    assert end["cancelled"] is True and end["ok"] is False
    assert client.progress_reports[start["progress"]][-1] == types.WorkDoneProgressEnd(message="cancelled")
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    assert status["running"] is False and status["steps"] == {"澄清": sid}

    model.push(*fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace), *fs.judge())
    await client.request(p.WAKE, {"folder": folder})
    end = await client.ended(folder, runs=2)
    assert end["ok"] is True and end["woke"] == 2
    resumed = model.conversation[1]
    assert resumed.session_id == sid and resumed.last_user_text.endswith(CLARIFY_RESUME)


async def test_clarify_questions_go_to_the_person_through_flower_ask(servers, model, workspace):
    model.push(text("Which language should it use?"), *fs.first_run(workspace))
    client = await servers(workspace)
    client.answers.append("Python, please")
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": TASK})
    end = await client.ended(folder)
    assert end["ok"] is True
    assert client.asked == [{"folder": folder, "question": "Which language should it use?"}]
    assert client.seen(p.QUESTION, folder) == [{"folder": folder, "text": "Which language should it use?"}]
    answered = model.conversation[1]
    assert answered.last_user_text.endswith("Python, please")
    assert answered.session_id == model.conversation[0].session_id
    # The clarify session this wake began continues after the answer: its second header says no `resumed` (issue #25).
    headers = [h["text"] for h in client.seen(p.HEADER, folder)]
    assert len(headers) == 4 and not any("resumed" in h for h in headers), headers


@pytest.mark.parametrize("ask", [True, False], ids=["answers-null", "no-flower-ask"])
async def test_a_bare_client_still_works_and_unanswered_questions_say_nobody_can_answer(servers, model, workspace, ask):
    model.push(text("Which language should it use?"), *fs.first_run(workspace))
    client = await servers(workspace, capabilities=None, ask=ask)  # no work-done progress either
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": TASK})
    assert (await client.ended(folder))["ok"] is True
    assert model.conversation[1].last_user_text.endswith(NOBODY_TO_ASK)
    assert [s["progress"] for s in client.seen(p.STEP_START, folder)] == [None] * 4  # clarify twice (the question)
    assert not client.progress_reports and types.PROGRESS not in dict(client.log)


async def test_chinese_locale_gives_the_seeds_strings(servers, model, workspace):
    model.push(*fs.first_run(workspace))
    client = await servers(workspace, locale="zh-CN")
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": TASK})
    await client.ended(folder)
    model.push(*fs.work(workspace), *fs.judge())
    await client.request(p.WAKE, {"folder": folder})
    await client.ended(folder, runs=2)
    [line] = client.seen(p.BANNER, folder)
    assert line["text"].startswith("<- 在 ") and "需求已确认 · 目标 2 条" in line["text"] and line["text"].endswith("第 2 次唤醒")
    headers = [h["text"] for h in client.seen(p.HEADER, folder)]
    assert headers[0].startswith("== 澄清 ") and headers[-1].startswith("== 干活 ") and headers[-1].endswith("<- 接上次 · 第 2 次唤醒")


async def test_a_folder_driven_by_another_process_refuses_with_a_clear_error(servers, model, workspace):
    client = await servers(workspace)
    folder = uri(workspace)
    with WorkspaceLock(workspace / "runs"):  # e.g. `flower` running in a terminal in the same folder (D5)
        with pytest.raises(JsonRpcException) as raised:
            await client.request(p.WAKE, {"folder": folder, "text": TASK})
    assert raised.value.code == p.WORKSPACE_BUSY
    assert f"pid {os.getpid()}" in raised.value.message and raised.value.data["pid"] == os.getpid()
    assert not client.seen(p.STATE, folder) and not model.conversation
    # Nothing to continue in a fresh folder without a task: an actionable FlowerError.
    with pytest.raises(JsonRpcException) as raised:
        await client.request(p.WAKE, {"folder": folder})
    assert raised.value.code == p.FLOWER_ERROR and raised.value.data["key"] == "nothing_here"
    assert "give the task in one sentence" in raised.value.message
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    assert status["running"] is False


async def test_outage_waits_show_in_notifications_and_status_and_keys_never_leave(servers, model, workspace, env, capfd):
    key = env["ANTHROPIC_API_KEY"]
    model.push(overloaded(), text(f"My key is {key}, which I will not use."), *fs.first_run(workspace))
    client = await servers(workspace, args=("--log-level", "DEBUG"))  # the log quotes every payload
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": TASK})
    await until(lambda: client.seen(p.WAIT, folder), timeout=TIMEOUT, what="a wait notification")
    [wait] = client.seen(p.WAIT, folder)
    assert wait["reason"] == "backoff" and wait["attempt"] == 1 and wait["maxAttempts"] == 6 and wait["step"] == "澄清"
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    # The backoff lasts seconds (S21: 4 s ± 25 %) and no event comes meanwhile: status shows the wait in progress.
    assert status["running"] is True and status["waiting"]["reason"] == "backoff" and status["waiting"]["attempt"] == 1
    end = await client.ended(folder)
    assert end["ok"] is True
    # The outage left a synthetic API-error entry in the clarify session: the pruner hides it from the model (S23a).
    clarify = client.seen(p.SESSION, folder)[0]["sessionId"]
    verdicts = [v["verdicts"] for v in client.seen(p.PRUNED, folder) if v["sessionId"] == clarify]
    assert verdicts and "hidden" in verdicts[-1].values(), verdicts
    # The sidebar links the two by uuid: the outage's transcript entry is the one hidden; the rest is kept.
    entries = [t for t in client.seen(p.TRANSCRIPT, folder) if t["sessionId"] == clarify]
    assert [verdicts[-1].get(t["uuid"]) for t in entries] == ["hidden"] + [None] * (len(entries) - 1)
    assert entries[0]["text"].startswith("API Error: 529")
    said = [t["text"] for t in client.seen(p.TRANSCRIPT, folder) if "My key is" in t["text"]]
    assert said == ["My key is [redacted], which I will not use."]
    assert key not in json.dumps(client.log) and key not in json.dumps([str(r) for r in client.progress_reports.values()])
    await stop(client)
    logged = capfd.readouterr().err
    assert "My key is [redacted]" in logged and key not in logged  # D6: not in the server's log either


def test_protocol_md_documents_every_method_and_mirrors_every_payload_class():
    import attrs

    doc = (ROOT / "protocol.md").read_text(encoding="utf-8")
    methods = [*p.PARAMS, p.ASK, p.APPROVE, *p.NOTIFICATIONS]
    for method in methods:
        assert f"### `{method}`" in doc, method
    classes = {name: cls for name, cls in vars(p).items() if isinstance(cls, type) and attrs.has(cls) and cls.__module__ == p.__name__}
    sections = dict(re.findall(r"#### `(\w+)`\n\n((?:\|.*\n)+)", doc))
    assert set(sections) == set(classes), set(sections) ^ set(classes)
    for name, cls in classes.items():
        documented = re.findall(r"^\| `(\w+)` \|", sections[name], re.MULTILINE)
        assert documented == [p._camel(a.name) for a in attrs.fields(cls)], name
    for method, cls in {**p.PARAMS, **p.NOTIFICATIONS}.items():
        assert re.search(rf"### `{re.escape(method)}`\n(?:(?!\n### ).)*#### `{cls.__name__}`", doc, re.DOTALL), (method, cls)
    codes = {p.UNKNOWN_FOLDER, p.WORKSPACE_BUSY, p.FLOWER_ERROR}
    assert all(f"| {code} |" in doc for code in codes)


async def test_say_on_an_idle_folder_wakes_it_and_sends_the_end_state(servers, model, workspace):
    model.push(*fs.first_run(workspace))
    client = await servers(workspace)
    folder = uri(workspace)
    result = await client.request(p.SAY, {"folder": folder, "text": TASK})
    assert result["action"] == "started"
    end = await client.ended(folder)  # before the fix the end state was never sent (say's outcome was None)
    assert end["ok"] is True and end["woke"] == 1 and end["run"] == client.seen(p.STATE, folder)[0]["run"]
    assert client.seen(p.TRANSCRIPT, folder)[0]["text"] == TASK


async def test_status_carries_the_context_per_work_round_with_the_handoff_live_and_from_the_records(servers, model, workspace):
    # Issue 34's chart: round 1 ends at 5,000 tokens (over handoffAt 1,000) and fails the judge; round 2 hands off to a
    # new session. Its work reply is held: meanwhile the status has round 1's point; after it, round 2's, a handoff.
    held = fs.work(workspace, input_tokens=3000)
    held[0].hold = True
    model.push(*fs.grown_past_handoff(workspace), *fs.handoff_note(), *held, *fs.judge())
    client = await servers(workspace, options={"handoffAt": 1000})
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder})
    await until(lambda: any(s["step"] == "干活#round2" for s in client.seen(p.STEP_START, folder)), TIMEOUT, "round 2")

    async def shows(want: list[dict]) -> None:
        """The status's points become `want`: its snapshot catches up with the manifest within its age (STALE_S)."""
        deadline = asyncio.get_running_loop().time() + 10
        while True:
            [st] = (await client.request(p.STATUS, {"folder": folder}, timeout=5))["folders"]
            seen = st["forecast"]["points"] if st["forecast"] else []
            if seen == want:
                return
            assert asyncio.get_running_loop().time() < deadline, seen
            await asyncio.sleep(0.1)

    first = {"round": 1, "context": 5000, "handoff": False}
    await shows([first])  # the handoff note (干活·交接#2) is no work round
    model.release()
    assert (await client.ended(folder))["ok"] is True
    want = [first, {"round": 2, "context": 3000, "handoff": True}]
    await shows(want)
    # A new server process reads the same series from the records (what the editor paints after a reload).
    again = await servers(workspace, options={"handoffAt": 1000})
    [st] = (await again.request(p.STATUS, {"folder": folder}))["folders"]
    assert st["forecast"]["points"] == want and st["handoffAt"] == 1000
