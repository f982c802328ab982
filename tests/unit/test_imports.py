"""Light imports: the command line's module and `flower --help` do not import the SDK, which only a run needs."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import flower

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
    # What a wake imports (the service, the runtime) brings the SDK, and still not the PostgreSQL driver.
    assert loaded_after("import flower.service") == {"claude_agent_sdk": True, "asyncpg": False}
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


@pytest.mark.parametrize("command", [["ps"], ["stop"], ["trust"], ["--help"]])
def test_light_commands_import_neither_the_sdk_nor_pygls(tmp_path, command: list[str]) -> None:
    # Issue 34: with no engine running, in an empty folder (tests/e2e/test_engine.py checks ps and stop against one).
    # `status`, `changes` and `gc` still import the SDK through the service and the store (issue 34, not done yet).
    folder = tmp_path / "ws"
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(FLOWER_ENGINE=str(tmp_path / "none" / "engine.sock"), HOME=str(tmp_path / "home"),
               XDG_STATE_HOME=str(tmp_path / "state"))
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "flower.cli", *command], cwd=folder, env=env,
                          stdin=subprocess.DEVNULL, capture_output=True, text=True, timeout=60)
    names = {line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")}
    assert "flower.cli" in names, done.stderr[-2000:]  # the report is there: its silence below means something
    assert not {n.split(".")[0] for n in names} & set(LIGHT_HEAVY)


def test_handing_a_wake_to_the_engine_imports_neither_the_sdk_nor_pygls() -> None:
    # Issue 35's warm wake: `flower --detach` (and `flower` attaching) only speak to the engine, which has the SDK
    # imported already; the client's own start is what a warm wake costs beyond the engine's work.
    code = ("import sys; import flower.cli.engine, flower.engine.start, flower.engine.client, flower.core.travel; "
            f"assert not {{m.split('.')[0] for m in sys.modules}} & {set(LIGHT_HEAVY)!r}, "
            f"sorted(m for m in sys.modules if m.split('.')[0] in {set(LIGHT_HEAVY)!r})")
    assert loaded_after(code) == {m: False for m in HEAVY}
