"""Light imports: the command line's module, `flower --help` and the commands that only read records (status, ps, stop,
trust, changes, gc) import neither the SDK, which only a run needs, nor the editor server's pygls (issue 34)."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

import flower
from flower.core.records import CLARIFY, GOALS, WORK
from flowerscript import clarify, first_run, goals, judge, work

HEAVY = ("claude_agent_sdk", "asyncpg")


def loaded_after(code: str) -> dict[str, bool]:
    """Which of HEAVY a fresh interpreter holds after running `code` (its output goes nowhere)."""
    # `--help` ends in SystemExit(0), as `flower --help` does.
    probe = (f"import sys, io, contextlib\ntry:\n    with contextlib.redirect_stdout(io.StringIO()):\n        {code}\n"
             f"except SystemExit as e:\n    assert not e.code, e.code\n"
             f"print(__import__('json').dumps({{m: m in sys.modules for m in {HEAVY!r}}}))")
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    loaded: dict[str, bool] = json.loads(done.stdout.splitlines()[-1])
    return loaded


@pytest.mark.parametrize("code", [
    "import flower.cli",
    "import flower",
    "from flower.cli import run; run(['--help'])",
    "from flower.cli import run; run(['status', '--help'])",
])
def test_the_command_line_starts_without_the_sdk(code: str) -> None:
    assert loaded_after(code) == {m: False for m in HEAVY}


def test_a_wake_on_sqlite_needs_no_asyncpg_and_the_public_names_still_import() -> None:
    # What a wake imports (the runtime) brings the SDK, and still not the PostgreSQL driver. The service alone brings
    # neither: status, changes and gc read the records through it (issue 34); its first wake imports the runtime.
    assert loaded_after("import flower.service") == {"claude_agent_sdk": False, "asyncpg": False}
    assert loaded_after("import flower.runtime") == {"claude_agent_sdk": True, "asyncpg": False}
    assert loaded_after("from flower import Runtime") == {"claude_agent_sdk": True, "asyncpg": False}
    assert sorted(flower.__all__) == sorted(n for n in dir(flower) if n in flower.__all__)
    assert all(getattr(flower, n) is not None for n in flower.__all__)
    with pytest.raises(AttributeError, match="no attribute 'nope'"):
        flower.nope  # noqa: B018


def test_the_prefetch_worker_and_the_engine_check_start_without_the_sdk(tmp_path) -> None:
    # The worker prunes while the command imports the SDK (stores/prefetch.py): importing it itself would cost as much.
    assert loaded_after("import flower.stores.prefetch") == {m: False for m in HEAVY}
    # With no engine's socket, a wake looks no further: the engine's side (its protocol, its client) is not imported.
    sock = tmp_path / "none" / "engine.sock"
    code = (f"import os, sys; os.environ['FLOWER_ENGINE'] = {str(sock)!r}; from flower.engine.place import existing_socket; "
            f"assert existing_socket() is None; import flower.cli.commands; "
            f"assert not {{'flower.cli.engine', 'pygls', 'lsprotocol', 'cattrs'}} & set(sys.modules), sys.modules.keys()")
    assert loaded_after(code) == {m: False for m in HEAVY}


LIGHT_HEAVY = ("claude_agent_sdk", "pygls", "lsprotocol")


def light_env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """This process's environment without credentials, with no engine running and its own home."""
    env = {k: v for k, v in os.environ.items() if k not in ("LC_ALL", "LC_MESSAGES") and not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(FLOWER_ENGINE=str(tmp_path / "none" / "engine.sock"), HOME=str(tmp_path / "home"),
               XDG_STATE_HOME=str(tmp_path / "state"), LANG="C.UTF-8")
    return {**env, **extra}


def imported(command: list[str], cwd: Path, env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """`flower *command` run under `-X importtime`: how it ended, and the top-level packages it imported."""
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "flower.cli", *command], cwd=cwd, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    names = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "flower.cli" in names, done.stderr[-2000:]  # the report is there: its silence below means something
    return done, {n.split(".")[0] for n in names}


@pytest.mark.parametrize("command", [["ps"], ["stop"], ["trust"], ["--help"], ["status"], ["changes"], ["gc"]])
def test_light_commands_import_neither_the_sdk_nor_pygls(tmp_path, command: list[str]) -> None:
    # Issue 34: with no engine running, in an empty folder (tests/e2e/test_engine.py checks ps and stop against one).
    folder = tmp_path / "ws"
    folder.mkdir()
    done, packages = imported(command, folder, light_env(tmp_path))
    assert done.returncode == (1 if command == ["stop"] else 0), done.stderr[-2000:]  # stop: "nothing runs here"
    assert not packages & set(LIGHT_HEAVY)


async def test_status_changes_and_gc_read_real_records_without_the_sdk_or_pygls(model, env, tmp_path) -> None:
    # Issue 34: where there is something to read, every reading path runs: sessions.db (the steps' sessions, the
    # context size, the store's usage per task), the manifest (costs, the judge's verdict, the forecast), the lineage,
    # the change records, and an archive that `gc --yes` collects. A whole run, then `flower --new` (S28).
    folder = tmp_path / "ws"
    folder.mkdir()
    run_env = light_env(tmp_path, **env)
    for args, replies in ((["build a calculator"], [*clarify(folder), *goals(folder), *work(folder, input_tokens=30_000), *judge()]),
                          (["--new", "write the docs"], first_run(folder))):
        model.push(*replies)
        ran = await asyncio.create_subprocess_exec(sys.executable, "-m", "flower.cli", *args, cwd=folder, env=run_env,
                                                   stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE,
                                                   stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(ran.communicate(), 120)
        assert ran.returncode == 0, err.decode()[-3000:]
    archive = next((folder / "notes" / "archive").iterdir()).name

    def light(*command: str) -> str:
        done, packages = imported(list(command), folder, run_env)
        assert done.returncode == 0, done.stderr[-3000:]
        assert not packages & set(LIGHT_HEAVY), (command, packages & set(LIGHT_HEAVY))
        return done.stdout

    st = json.loads(light("status", "--json"))
    assert set(st["steps"]) == {CLARIFY, GOALS, WORK} and st["woke"] == 1 and st["context"], st
    assert st["goals"] and st["cost"]["max"] is None and st["held_by"] is None, st
    assert "woke 1 time" in light("status")
    assert [f["path"] for w in json.loads(light("changes", "--json")) for f in w["files"] if f["path"] == "calc.py"], \
        "the change records were not read"
    assert archive in light("gc")
    assert "deleted 4 sessions" in light("gc", "--yes")  # the archive's clarify, goals, work and judge sessions


def test_handing_a_wake_to_the_engine_imports_neither_the_sdk_nor_pygls() -> None:
    # Issue 35's warm wake: `flower --detach` (and `flower` attaching) only speak to the engine, which has the SDK
    # imported already; the client's own start is what a warm wake costs beyond the engine's work.
    code = ("import sys; import flower.cli.engine, flower.engine.start, flower.engine.client, flower.core.travel; "
            f"assert not {{m.split('.')[0] for m in sys.modules}} & {set(LIGHT_HEAVY)!r}, "
            f"sorted(m for m in sys.modules if m.split('.')[0] in {set(LIGHT_HEAVY)!r})")
    assert loaded_after(code) == {m: False for m in HEAVY}


async def test_status_ps_and_stop_of_a_run_in_the_engine_import_neither_the_sdk_nor_pygls(model, env) -> None:
    # Issue 34: where an engine holds the folder's run, status, ps and stop ask it over its socket (cli/running.py,
    # engine/client.py): the SDK, pygls and lsprotocol are the engine's to import, not theirs. The run is started as a
    # person would (`flower --detach`, which starts the engine) and held at its first model request, so it is running.
    root = Path(tempfile.mkdtemp(prefix="fi-", dir="/tmp"))  # short: a Unix socket's path has at most 107 bytes
    folder = root / "ws"
    folder.mkdir()
    sock = root / "s" / "engine.sock"
    run_env = light_env(root, **env, FLOWER_ENGINE=str(sock))
    first, *rest = first_run(folder)
    model.push(dataclasses.replace(first, hold=True), *rest)
    try:
        detach = await asyncio.create_subprocess_exec(sys.executable, "-m", "flower.cli", "--detach", "build a calculator",
                                                      cwd=folder, env=run_env, stdin=asyncio.subprocess.DEVNULL,
                                                      stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        _, err = await asyncio.wait_for(detach.communicate(), 120)
        assert detach.returncode == 0, err.decode()[-3000:]
        await model.wait_for_requests(1, timeout=60)  # the engine's run has asked the model: it is under way

        def light(*command: str) -> subprocess.CompletedProcess[str]:
            done, packages = imported(list(command), folder, run_env)
            assert done.returncode == 0, done.stderr[-3000:]
            assert not packages & set(LIGHT_HEAVY), (command, packages & set(LIGHT_HEAVY))
            return done

        st = json.loads((await asyncio.to_thread(light, "status", "--json")).stdout)
        assert st["held_by"] is not None and st["held_by"]["engine"] is True, st
        assert "in the flower engine" in (await asyncio.to_thread(light, "status")).stdout
        assert str(folder) in (await asyncio.to_thread(light, "ps")).stdout
        assert "stopped the run in the flower engine" in (await asyncio.to_thread(light, "stop")).stdout
    finally:
        engine = sock.with_name(sock.name + ".lock")
        pid = engine.read_text().strip() if engine.exists() else ""
        if pid.isdigit():  # the engine and the agent CLIs it started: its process group
            for kill in (os.killpg, os.kill):
                with contextlib.suppress(ProcessLookupError, PermissionError):
                    kill(int(pid), signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)


async def test_the_editor_server_answers_its_first_requests_without_the_sdk(model, env, tmp_path) -> None:
    # Issue 34: an editor starts its server (`python -m flower.lsp`, or the engine, which serves the same Folder) when
    # it opens, and asks for the status, the transcript's newest page and the changes before anyone wakes anything:
    # the SDK (a second or more of imports) waits for the first wake. A folder with a whole run, so every reading path
    # has something to read; the server speaks over stdio in LSP frames, as the editor does.
    from flower.core.frames import bodies
    from flower.engine.stream import frame

    folder = tmp_path / "ws"
    folder.mkdir()
    run_env = light_env(tmp_path, **env)
    model.push(*first_run(folder))
    ran = await asyncio.create_subprocess_exec(sys.executable, "-m", "flower.cli", "build a calculator", cwd=folder,
                                               env=run_env, stdin=asyncio.subprocess.DEVNULL,
                                               stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    _, err = await asyncio.wait_for(ran.communicate(), 120)
    assert ran.returncode == 0, err.decode()[-3000:]

    server = await asyncio.create_subprocess_exec(sys.executable, "-X", "importtime", "-m", "flower.lsp", cwd=folder,
                                                  env=run_env, stdin=asyncio.subprocess.PIPE,
                                                  stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    errors = asyncio.create_task(server.stderr.read())  # read as it comes: a full pipe would stall the server
    answers = bodies(server.stdout)
    uri = folder.as_uri()

    notified: list[tuple[str, object]] = []

    async def ask(msg_id: int, method: str, params: object) -> object:
        """Send a request and read until its answer, noting the notifications on the way."""
        assert server.stdin is not None
        server.stdin.write(frame({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}))
        async for body in answers:
            message = json.loads(body)
            if message.get("id") == msg_id and "method" not in message:
                assert "error" not in message, message
                return message["result"]
            if "method" in message and "id" not in message:
                notified.append((message["method"], message.get("params")))
        raise AssertionError(f"the server ended before answering {method}")

    async def pruned(sessions: set[str]) -> None:
        """Read until a `flower/pruned` came for each of `sessions`."""
        came = {x["sessionId"] for m, x in notified if m == "flower/pruned" and isinstance(x, dict)}
        if sessions <= came:
            return
        async for body in answers:
            message = json.loads(body)
            if message.get("method") == "flower/pruned":
                came.add(message["params"]["sessionId"])
                if sessions <= came:
                    return
        raise AssertionError(f"the server ended before its flower/pruned for {sessions - came}")

    try:
        await asyncio.wait_for(ask(1, "initialize", {"processId": os.getpid(), "rootUri": uri, "capabilities": {},
                                                     "workspaceFolders": [{"uri": uri, "name": folder.name}]}), 60)
        server.stdin.write(frame({"jsonrpc": "2.0", "method": "initialized", "params": {}}))
        status = await asyncio.wait_for(ask(2, "flower/status", {"folder": uri}), 60)
        history = await asyncio.wait_for(ask(3, "flower/history", {"folder": uri}), 60)
        changes = await asyncio.wait_for(ask(4, "flower/changes", {"folder": uri}), 60)
        # The pruner's verdicts on the page's sessions follow in `flower/pruned` (a worker computes them): part of
        # what the view shows first, so they are read too.
        assert isinstance(history, dict)
        await asyncio.wait_for(pruned(set(history["pending"])), 60)
        await asyncio.wait_for(ask(5, "shutdown", None), 30)
        server.stdin.write(frame({"jsonrpc": "2.0", "method": "exit"}))
        assert await asyncio.wait_for(server.wait(), 30) == 0
    finally:
        if server.returncode is None:
            server.kill()
            await server.wait()
    report = (await asyncio.wait_for(errors, 30)).decode()
    assert isinstance(status, dict) and status["folders"][0]["woke"] == 1, status  # the records were read
    assert len(history["entries"]) > 10, str(history)[:2000]  # with the pruner's verdicts, here or in `flower/pruned`
    assert isinstance(changes, dict) and [f for w in changes["wakes"] for f in w["files"] if f["path"] == "calc.py"], changes
    names = {line.rsplit("|", 1)[1].strip() for line in report.splitlines() if line.startswith("import time:")}
    assert "flower.lsp.server" in names and "flower.history" in names, report[-2000:]  # the report is there
    assert not {n for n in names if n.split(".")[0] == "claude_agent_sdk"}, "the SDK was imported before any wake"
