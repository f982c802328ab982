"""A server holding a task between wakes prepares the next wake's resume as a wake ends (issue 35's warm wake)."""

from __future__ import annotations

import json
import os

from test_lsp import servers as servers  # noqa: F401 - the language-server fixture
from test_lsp import uri

import flowerscript as fs
from conftest import until
from flower.core.records import LINEAGE_FILE, WORK
from flower.stores.prefetch import PREFIX
from flower.stores.reconcile import RESUME_PREFIX
from flower.testing import Reply, say

TASK = "build a calculator"


async def test_the_next_wake_resumes_from_the_view_prepared_when_the_last_one_ended(servers, model, workspace, env, tmp_path):
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env["TMPDIR"] = str(tmp)  # the server's temp dir: where the prepared view and the resume's config dir are
    model.push(*fs.first_run(workspace))
    client = await servers(workspace)
    folder = uri(workspace)
    await client.request("flower/wake", {"folder": folder, "text": TASK})
    assert (await client.ended(folder))["ok"] is True
    sid = json.loads((workspace / "runs" / LINEAGE_FILE).read_bytes())["steps"][WORK]
    # Prepared once the wake ended, with no wake asked for yet: the work session's pruned view, written by a worker.
    await until(lambda: list(tmp.glob(f"{PREFIX}*/{sid}.jsonl")), 60, "the next resume to be prepared")
    [prepared] = tmp.glob(f"{PREFIX}*/{sid}.jsonl")
    made = os.stat(prepared)
    before = len(model.conversation)

    model.push(Reply(blocks=[say("carrying on")], hold=True), *fs.judge())
    await client.request("flower/wake", {"folder": folder, "text": None})
    request = await model.wait_for_requests(before + 1, 60)
    try:
        # The CLI reads the very file the worker wrote (moved, not written again), and the model gets the whole session.
        [resumed] = tmp.glob(f"{RESUME_PREFIX}*/projects/*/{sid}.jsonl")
        assert (os.stat(resumed).st_ino, os.stat(resumed).st_dev) == (made.st_ino, made.st_dev)
        assert request.session_id == sid
        assert "print(1 + 2)" in json.dumps(request.messages)  # the first wake's work, seen again by the model
    finally:
        model.release()
    assert (await client.ended(folder, runs=2))["ok"] is True
