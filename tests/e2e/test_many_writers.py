"""Many writers on one workspace (issue 13; D5): a terminal `flower` and the editor server on the same folder.

One drives; the other is told who, with the pid; and once the holder is killed with -9 the other takes over
at once, since the lock dies with its holder: no timeout to wait out, no stale lock file to delete.
Eight processes appending manifest rows at once: tests/e2e/test_manifest_processes.py.
"""

from __future__ import annotations

import asyncio
import os
import signal

import pytest
from pygls.exceptions import JsonRpcException
from test_cli import flower, lineage, seed_frozen, session_on_disk, start
from test_lsp import TIMEOUT, uri
from test_lsp import servers as servers  # noqa: F401 - the language-server fixture

from flower.core.lock import LOCK_FILE
from flower.lsp import protocol as p
from flower.testing import Reply, say
from flower.workflow.flower import WORK_PROMPT, WORK_RESUME
from flowerscript import judge, work


async def test_a_terminal_and_the_editor_on_one_folder_name_the_holders_pid_and_take_over_at_once_after_kill_9(
        servers, model, env, workspace):
    run_dir, folder = workspace / "runs", uri(workspace)
    seed_frozen(workspace)
    # Each holder is killed while its work request is held (mid-step); the last one finishes: a round and a pass.
    model.push(Reply(blocks=[say("half way")], hold=True), Reply(blocks=[say("still going")], hold=True),
               *work(workspace), *judge())

    # 1. A terminal `flower` drives: the editor's wake is refused with its pid, before any model request.
    terminal = await start("-r", str(run_dir), env=env, cwd=workspace)
    try:
        await model.wait_for_requests(1, timeout=TIMEOUT)
        sid = await session_on_disk(workspace, run_dir)
        editor = await servers(workspace)
        with pytest.raises(JsonRpcException) as raised:
            await editor.request(p.WAKE, {"folder": folder})
        busy = raised.value
        assert busy.code == p.WORKSPACE_BUSY and busy.data["pid"] == terminal.pid
        assert f"pid {terminal.pid}" in busy.message and f"kill {terminal.pid}" in busy.message
        assert len(model.conversation) == 1
    finally:
        os.killpg(terminal.pid, signal.SIGKILL)
        await asyncio.wait_for(terminal.wait(), 30)

    # 2. Killed -9: the editor takes over at once (no timeout waited out), the lock file still there (none deleted).
    assert (run_dir / LOCK_FILE).exists()
    result = await editor.request(p.WAKE, {"folder": folder})
    assert result["action"] == "started"
    await model.wait_for_requests(2, timeout=TIMEOUT)
    resumed(model.conversation[1], sid)

    # 3. The editor drives: a terminal `flower` exits 3 naming the server's pid.
    pid = editor._server.pid
    refused = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert refused.code == 3 and f"pid {pid}" in refused.err and f"kill {pid}" in refused.err, refused.err
    assert "Traceback" not in refused.err and len(model.conversation) == 2

    # 4. The editor killed -9 (server and agent CLI): `flower` takes over at once and finishes the work.
    editor.kill()
    await asyncio.wait_for(editor._server.wait(), 20)
    assert (run_dir / LOCK_FILE).exists()
    again = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert again.code == 0, again.err
    assert "wake #3" in again.out
    resumed(model.conversation[2], sid)
    assert lineage(run_dir)["steps"]["干活"] == sid


def resumed(request, sid: str) -> None:
    """A wake after a kill continued the killed holder's work session, carrying its conversation."""
    assert request.session_id == sid and WORK_PROMPT in request.text and request.last_user_text.endswith(WORK_RESUME)
