"""`FolderStatus.interrupted`: a wake cut off by a crash is known from files by the next server, before any wake."""

from __future__ import annotations

import asyncio
import sys

from lsprotocol import types
from test_cli import flower
from test_lsp import TIMEOUT, uri
from test_lsp import servers as servers  # noqa: F401 - the language-server fixture

import flowerscript as fs
from conftest import until
from flower.core.lock import WAKE_FILE, WorkspaceLock
from flower.core.records import clear_wake, interrupted, mark_wake, wake_mark
from flower.core.texts import text
from flower.lsp import protocol as p
from flower.testing import Reply, say

TASK = "build a calculator"

HOLD = """
import sys
from flower.core.lock import WorkspaceLock
with WorkspaceLock(sys.argv[1]):
    print("held", flush=True)
    sys.stdin.read()
"""


async def test_a_marker_means_interrupted_only_while_no_live_process_holds_the_lock(tmp_path):
    runs = tmp_path / "runs"
    assert not interrupted(runs)  # nothing ever ran
    with WorkspaceLock(runs):
        mark_wake(runs)
        assert not interrupted(runs)  # this process drives it
    assert interrupted(runs)  # the marker outlived its holder: cut off
    holder = await asyncio.create_subprocess_exec(sys.executable, "-c", HOLD, str(runs), stdin=asyncio.subprocess.PIPE,
                                                  stdout=asyncio.subprocess.PIPE)
    try:
        assert await asyncio.wait_for(holder.stdout.readline(), 30) == b"held\n"
        assert not interrupted(runs)  # another live process continues it
        assert wake_mark(runs) == (True, True)  # FolderStatus.elsewhere: a client waits for it
    finally:
        holder.stdin.close()
        await asyncio.wait_for(holder.wait(), 30)
    assert interrupted(runs) and wake_mark(runs) == (True, False)
    with WorkspaceLock(runs):  # the probe above left no lock behind
        clear_wake(runs)
    assert not interrupted(runs) and wake_mark(runs) == (False, False)


async def test_a_server_killed_mid_step_leaves_the_folder_interrupted_until_a_wake_ends(servers, model, env, workspace):
    model.push(Reply(blocks=[say("Let me think about")], hold=True))
    client = await servers(workspace)
    folder = uri(workspace)
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    assert status["interrupted"] is False  # never ran
    await client.request(p.WAKE, {"folder": folder, "text": TASK})
    await model.wait_for_requests(1, timeout=TIMEOUT)
    assert (workspace / "runs" / WAKE_FILE).exists()
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    assert status["running"] is True and status["interrupted"] is False and status["elsewhere"] is False
    # A second server on the folder (a reloaded window's, while the old one still ends) is told to wait.
    other = await servers(workspace)
    [seen] = (await other.request(p.STATUS, {"folder": folder}))["folders"]
    assert (seen["running"], seen["interrupted"], seen["elsewhere"]) == (False, False, True)
    client.kill()
    await asyncio.wait_for(client._server.wait(), 20)

    # A new server knows from the files alone, before any wake.
    second = await servers(workspace)
    [status] = (await second.request(p.STATUS, {"folder": folder}))["folders"]
    assert status["interrupted"] is True and status["running"] is False and status["woke"] == 1
    assert status["elsewhere"] is False
    shown = await flower("status", "-r", str(workspace / "runs"), env=env, cwd=workspace, lang="zh")
    assert text("status_interrupted", "zh") in shown.out

    model.push(*fs.clarify(workspace), *fs.goals(workspace), *fs.work(workspace), *fs.judge())
    result = await second.request(p.WAKE, {"folder": folder})
    assert result["status"]["interrupted"] is False  # being continued
    end = await second.ended(folder)
    assert end["ok"] is True and end["woke"] == 2
    [status] = (await second.request(p.STATUS, {"folder": folder}))["folders"]
    assert status["interrupted"] is False and not (workspace / "runs" / WAKE_FILE).exists()


async def test_a_wake_the_person_cancels_is_not_interrupted(servers, model, workspace):
    model.push(Reply(blocks=[say("Let me think about")], hold=True))
    client = await servers(workspace)
    folder = uri(workspace)
    await client.request(p.WAKE, {"folder": folder, "text": TASK})
    await model.wait_for_requests(1, timeout=TIMEOUT)
    await until(lambda: client.seen(p.STEP_START, folder), what="the first step to start")
    [start] = client.seen(p.STEP_START, folder)
    # The editor's Cancel button on the step's progress stops the wake.
    client.protocol.notify(types.WINDOW_WORK_DONE_PROGRESS_CANCEL, types.WorkDoneProgressCancelParams(token=start["progress"]))
    end = await client.ended(folder)
    assert end["cancelled"] is True
    [status] = (await client.request(p.STATUS, {"folder": folder}))["folders"]
    assert status["interrupted"] is False and not (workspace / "runs" / WAKE_FILE).exists()
