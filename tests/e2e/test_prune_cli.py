"""PruningSessionStore through the real SDK + CLI: what the model sees after resume (S23, S25, S26).

Every test drives the bundled Claude Code CLI against the scripted model server and asserts on
the request the model received on resume; sessions.db must still hold every original entry.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
import time
import uuid
from pathlib import Path

from conftest import PROGRAMS
from flower import AgentSpec, Runtime
from flower.core.resilience import Resilience
from flower.stores.prune import INTERRUPTED_NOTE, INTERRUPTED_REPLY
from flower.stores.sqlite import SqliteSessionStore
from flower.testing import Request, ScriptedModel, reply, say, text, tool, tool_use

RUN = 90.0  # seconds any single CLI run may take before the test fails instead of hanging


def tid() -> str:
    return f"toolu_{uuid.uuid4().hex[:24]}"


def paired(request: Request) -> None:
    """The request the model got is well-formed: accepted, and every tool call has exactly one result."""
    assert request.status == 200, request.error
    uses = [b["id"] for b in request.tool_uses()]
    answered = [b["tool_use_id"] for b in request.tool_results()]
    assert sorted(uses) == sorted(answered) and len(set(uses)) == len(uses)


def result_for(request: Request, tool_use_id: str) -> dict:
    (found,) = [b for b in request.tool_results() if b["tool_use_id"] == tool_use_id]
    return found


def body(block: dict) -> str:
    content = block.get("content")
    return content if isinstance(content, str) else "\n".join(c.get("text", "") for c in content)


async def run(rt: Runtime, agent: AgentSpec, prompt: str, resume: str | None = None):
    return await asyncio.wait_for(rt.run(agent, prompt, resume=resume), RUN)


async def stored_unchanged(rt: Runtime, sid: str, before: list[dict]) -> list[dict]:
    """sessions.db still starts with exactly the entries it held before the resume (D2)."""
    after = await rt.entries(sid)
    assert after[:len(before)] == before
    return after


async def test_outage_residue_never_reaches_the_model(model, env, workspace, run_dir):
    agent = AgentSpec("worker")
    async with Runtime(workspace, run_dir, env=env, resilience=Resilience(max_attempts=1)) as rt:
        model.push(text("first answer"))
        first = await run(rt, agent, "start")
        sid, key = first.session_id, {"project_key": rt.project_key, "session_id": first.session_id}
        await model.stop()  # refused connections: the CLI writes a synthetic "API Error" reply
        down = await run(rt, agent, "go on", resume=sid)
        assert not down.ok and "API Error" in (down.error or "")
        await model.start()
        raw = await rt.entries(sid)
        (error,) = [e for e in raw if e.get("isApiErrorMessage")]
        assert error["message"]["model"] == "<synthetic>" and "API Error" in json.dumps(error["message"])
        # What resume hands the CLI carries no error text (S23a).
        assert "API Error" not in json.dumps(await rt.store.load(key))

        model.push(text("back"))
        again = await run(rt, agent, "and now?", resume=sid)
        assert again.ok, again.error
        seen = model.last
        paired(seen)
        assert "API Error" not in seen.text and "Connection refused" not in seen.text
        assert "No response requested." not in seen.text  # the error row's place was not left to filler
        assert "first answer" in seen.text and "go on" in seen.text  # history before the outage is kept

        model.push(text("still back"))
        third = await run(rt, agent, "once more", resume=sid)
        assert third.ok, third.error
        assert rt.store.prune(await rt.entries(sid)).verdicts[error["uuid"]] == "hidden"  # no longer the tail
        seen = model.last
        paired(seen)
        assert "API Error" not in seen.text and "No response requested." not in seen.text
        assert ["first answer", "back"] == [t for t in seen.texts("assistant") if t in ("first answer", "back")]
        await stored_unchanged(rt, sid, raw)


async def test_only_the_latest_denial_is_resent_as_a_whole_pair(model, env, workspace, run_dir):
    # Bash is allowed, Write is not (default mode, nobody to ask): each Write comes back denied.
    agent = AgentSpec("worker", allowed_tools=["Bash"])
    writes = [tid() for _ in range(4)]
    echo = tid()
    model.push(
        reply(tool_use("Write", {"file_path": str(workspace / "a.txt"), "content": "a"}, id=writes[0])),
        reply(say("trying another name"), tool_use("Write", {"file_path": str(workspace / "b.txt"), "content": "b"}, id=writes[1])),
        reply(tool_use("Write", {"file_path": str(workspace / "c.txt"), "content": "c"}, id=writes[2]),
              tool_use("Bash", {"command": "echo kept-output"}, id=echo)),
        reply(tool_use("Write", {"file_path": str(workspace / "d.txt"), "content": "d"}, id=writes[3])),
        text("I cannot write files here"),
    )
    async with Runtime(workspace, run_dir, env=env) as rt:
        first = await run(rt, agent, "write some files")
        assert first.ok, first.error
        sent = model.last  # the CLI itself resent all four denials within the run
        assert sum("haven't granted" in body(b) for b in sent.tool_results()) == 4
        raw = await rt.entries(first.session_id)

        model.push(text("ok"))
        again = await run(rt, agent, "what happened?", resume=first.session_id)
        assert again.ok, again.error
        seen = model.last
        paired(seen)  # the validator accepted it: no orphan tool_use or tool_result
        denied = [b for b in seen.tool_results() if "haven't granted" in body(b)]
        assert [b["tool_use_id"] for b in denied] == [writes[3]]  # the most recent one
        assert {b["id"] for b in seen.tool_uses()} & set(writes[:3]) == set()
        # What shared a response with a removed call stays: the text and the parallel Bash result.
        assert "trying another name" in seen.texts("assistant")
        assert body(result_for(seen, echo)) == "kept-output"
        await stored_unchanged(rt, first.session_id, raw)


def _sleepers(token: str) -> list[int]:
    """Pids of processes (not shells) whose command line carries `token`."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                argv = (proc / "cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if token.encode() in argv and Path(argv[0].decode(errors="replace")).name.startswith("python"):
                found.append(int(proc.name))
    return found


async def _stored_tool_use(store: SqliteSessionStore, key: dict, tool_use_id: str) -> bool:
    entries = await store.load(key) or []
    return any(tool_use_id in json.dumps(e.get("message", "")) for e in entries if e.get("type") == "assistant")


async def test_kill_during_a_tool_resumes_with_the_neutral_note(model, env, workspace, run_dir):
    agent = AgentSpec("worker", allowed_tools=["Bash"])
    async with Runtime(workspace, run_dir, env=env) as rt:
        model.push(text("ready"))
        first = await run(rt, agent, "start")
        sid, key = first.session_id, rt.project_key

    token = uuid.uuid4().hex
    quick, slow = tid(), tid()
    model.push(reply(  # one response, two calls: the kill may leave one or both without a result
        say("running the long job"),
        tool_use("Bash", {"command": "echo quick-one"}, id=quick),
        tool_use("Bash", {"command": f"{sys.executable} -c 'import time; time.sleep(120)' {token}"}, id=slow),
    ))
    args = {"workspace": str(workspace), "run_dir": str(run_dir), "prompt": "run the long job", "resume": sid, "tools": ["Bash"]}
    proc = await asyncio.create_subprocess_exec(
        sys.executable, str(PROGRAMS / "run_agent.py"), json.dumps(args), cwd=workspace, env={**os.environ, **env},
        stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.DEVNULL, start_new_session=True,
    )
    sleepers: list[int] = []
    watch = SqliteSessionStore(run_dir / "sessions.db")
    try:
        # Kill only once the CLI is inside the tool and the tool_use is in sessions.db.
        deadline = time.monotonic() + RUN
        while not (sleepers and await _stored_tool_use(watch, {"project_key": key, "session_id": sid}, slow)):
            assert time.monotonic() < deadline and proc.returncode is None, "the Bash tool never started"
            sleepers = sleepers or _sleepers(token)
            await asyncio.sleep(0.05)  # polling a condition, with the deadline above
        os.killpg(proc.pid, signal.SIGKILL)
        await asyncio.wait_for(proc.wait(), 10)
    finally:
        await watch.close()
        for pid in sleepers + _sleepers(token):  # the tool's own process outlives the CLI
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        if proc.returncode is None:
            os.killpg(proc.pid, signal.SIGKILL)

    async with Runtime(workspace, run_dir, env=env) as rt:
        raw = await rt.entries(sid)
        assert not any(slow in json.dumps(e["message"]) for e in raw if e.get("type") == "user")  # no result stored
        model.push(text("picking up where we stopped"))
        again = await run(rt, agent, "continue", resume=sid)
        assert again.ok, again.error
        seen = model.last
        paired(seen)  # even the first resume is clean: no 400
        assert body(result_for(seen, slow)) == INTERRUPTED_NOTE
        assert body(result_for(seen, quick)) in ("quick-one", INTERRUPTED_NOTE)
        assert "[Tool call interrupted" not in seen.text
        assert "running the long job" in seen.texts("assistant")
        # CLI 2.1.332 would close a resumed turn that ends on a tool result (our note) with its own
        # "No response requested."; the pruner ends it on the neutral reply instead.
        assert "No response requested." not in seen.text
        assert seen.texts("assistant")[-1] == INTERRUPTED_REPLY

        # The chain stays whole on the next resume: the entries the CLI appended hang off our note.
        model.push(text("still here"))
        third = await run(rt, agent, "and then?", resume=sid)
        assert third.ok, third.error
        seen = model.last
        paired(seen)
        assert body(result_for(seen, slow)) == INTERRUPTED_NOTE
        assert "picking up where we stopped" in seen.texts("assistant") and "start" in seen.text
        assert "[Tool call interrupted" not in seen.text and "No response requested." not in seen.text
        await stored_unchanged(rt, sid, raw)


async def _read_then_rounds(model: ScriptedModel, rt: Runtime, big: Path) -> tuple[str, str]:
    """A 200 KB Read, then four more rounds; returns (session id, tool_use id of the Read)."""
    read = tid()
    model.push(
        reply(tool_use("Read", {"file_path": str(big), "allow_large": True}, id=read)),
        *[tool("Bash", {"command": f"echo round {n}"}) for n in range(4)],
        text("read it"),
    )
    first = await run(rt, AgentSpec("worker", allowed_tools=["Read", "Bash"]), "read big.txt")
    assert first.ok, first.error
    return first.session_id, read


def _big(workspace: Path) -> Path:
    big = workspace / "big.txt"
    big.write_text("".join(f"line {n:05d} " + "abcdefghij" * 19 + "\n" for n in range(1000)))  # ~200 KB
    return big


async def test_trim_on_a_large_old_result_becomes_a_pointer_to_a_spilled_file(model, env, workspace, run_dir):
    big = _big(workspace)
    async with Runtime(workspace, run_dir, env=env, trim=True) as rt:
        sid, read = await _read_then_rounds(model, rt, big)
        raw = await rt.entries(sid)
        (original,) = [b for e in raw if e.get("type") == "user" and isinstance(e["message"]["content"], list)
                       for b in e["message"]["content"] if b.get("tool_use_id") == read]
        assert len(body(original)) > 200_000 and "line 00999" in body(original)

        spill = run_dir / "spill" / f"{read}.txt"
        follow = tid()  # the model follows the pointer: a plain Read of the spilled file
        model.push(reply(tool_use("Read", {"file_path": str(spill), "offset": 1000, "limit": 1}, id=follow)), text("ok"))
        again = await run(rt, AgentSpec("worker", allowed_tools=["Read", "Bash"]), "summarize", resume=sid)
        assert again.ok, again.error
        seen = model.conversation[-2]  # the resumed request, before the model followed the pointer
        paired(seen)
        pointer = body(result_for(seen, read))
        assert pointer.startswith("[trimmed: ") and "Read(" in pointer and "Read that file" in pointer
        spilled = Path(pointer.split(" saved to ", 1)[1].split("; ", 1)[0])
        assert spilled == spill
        assert spilled.read_text() == body(original)  # content not lost, only not resident (S26)
        assert "line 00500" not in seen.text
        assert "line 00999" in body(result_for(model.last, follow))
        await stored_unchanged(rt, sid, raw)


async def test_trim_off_keeps_large_results_intact(model, env, workspace, run_dir):
    big = _big(workspace)
    async with Runtime(workspace, run_dir, env=env) as rt:
        sid, read = await _read_then_rounds(model, rt, big)
        raw = await rt.entries(sid)
        model.push(text("ok"))
        again = await run(rt, AgentSpec("worker", allowed_tools=["Read", "Bash"]), "summarize", resume=sid)
        assert again.ok, again.error
        seen = model.last
        paired(seen)
        assert "line 00999" in body(result_for(seen, read)) and len(body(result_for(seen, read))) > 200_000
        assert not (run_dir / "spill").exists()
        await stored_unchanged(rt, sid, raw)


async def test_ephemeral_command_output_expires_once_newer_rounds_exist(model, env, workspace, run_dir):
    (workspace / "marker-file.txt").write_text("x")
    ls, echo = tid(), tid()
    model.push(
        reply(tool_use("Bash", {"command": "ls"}, id=ls)),
        reply(tool_use("Bash", {"command": "echo durable"}, id=echo)),
        text("listed"),
    )
    agent = AgentSpec("worker", allowed_tools=["Bash"])
    async with Runtime(workspace, run_dir, env=env) as rt:
        first = await run(rt, agent, "look around")
        assert first.ok, first.error
        assert "marker-file.txt" in body(result_for(model.last, ls))
        model.push(text("ok"))
        again = await run(rt, agent, "and now?", resume=first.session_id)
        seen = model.last
        paired(seen)
        assert body(result_for(seen, ls)) == "[expired: output of `ls` from an earlier round; run it again if needed]"
        assert body(result_for(seen, echo)) == "durable"
        assert again.ok, again.error
