"""Where the engine lives (D11), which variables travel with a request, and that a travelling key is redacted."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from flower.core.redact import hold_secrets, redact
from flower.core.travel import travelling
from flower.engine.place import PlaceError, lock_path, log_path, private_dir, socket_path


def test_socket_path_prefers_flower_engine_then_the_runtime_dir_then_the_cache(tmp_path: Path) -> None:
    assert socket_path({"FLOWER_ENGINE": str(tmp_path / "x.sock"), "XDG_RUNTIME_DIR": "/run/user/1"}) == tmp_path / "x.sock"
    assert socket_path({"XDG_RUNTIME_DIR": "/run/user/1"}) == Path("/run/user/1/flower/engine.sock")
    assert socket_path({"XDG_RUNTIME_DIR": "relative/dir"}) == Path.home() / ".cache" / "flower" / "engine.sock"
    assert socket_path({}) == Path.home() / ".cache" / "flower" / "engine.sock"
    assert lock_path(Path("/a/engine.sock")) == Path("/a/engine.sock.lock")


def test_log_path_is_under_the_state_dir() -> None:
    assert log_path({"XDG_STATE_HOME": "/s"}) == Path("/s/flower/engine.log")
    assert log_path({}) == Path.home() / ".local" / "state" / "flower" / "engine.log"


def test_private_dir_is_made_0700_and_a_loose_one_is_tightened(tmp_path: Path) -> None:
    made = private_dir(tmp_path / "a" / "b")
    assert stat.S_IMODE(made.stat().st_mode) == 0o700
    loose = tmp_path / "loose"
    loose.mkdir(mode=0o755)
    os.chmod(loose, 0o777)
    private_dir(loose)
    assert stat.S_IMODE(loose.stat().st_mode) == 0o700


def test_private_dir_refuses_a_file_and_another_users_directory(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(PlaceError, match="not a directory"):
        private_dir(tmp_path / "file")
    if os.geteuid() == 0:  # only root can give a directory away to test this
        theirs = tmp_path / "theirs"
        theirs.mkdir()
        os.chown(theirs, 65534, 65534)
        with pytest.raises(PlaceError, match="belongs to uid 65534"):
            private_dir(theirs)


def test_only_the_agent_cli_and_network_variables_travel() -> None:
    env = {"ANTHROPIC_API_KEY": "k", "CLAUDE_CONFIG_DIR": "/c", "FLOWER_STORE": "sqlite", "PATH": "/bin", "HOME": "/h",
           "https_proxy": "http://p", "NO_PROXY": "localhost", "AWS_SECRET_ACCESS_KEY": "s", "EDITOR": "vim", "PWD": "/w"}
    assert travelling(env) == {k: env[k] for k in ("ANTHROPIC_API_KEY", "CLAUDE_CONFIG_DIR", "FLOWER_STORE", "PATH", "HOME",
                                                    "https_proxy", "NO_PROXY")}


def test_a_key_that_travelled_is_redacted_like_this_process_own() -> None:
    key = "plain-travelling-secret-4711"  # not shaped sk-ant-…: only holding it makes it redacted
    assert redact(f"oops {key}") == f"oops {key}"
    hold_secrets({"ANTHROPIC_API_KEY": key, "PATH": "/usr/bin:/bin"})
    assert redact({"line": f"oops {key}"}) == {"line": "oops [redacted]"}
    assert redact("/usr/bin:/bin") == "/usr/bin:/bin"  # only credential names are held


def test_an_engine_connection_serves_every_request_of_the_protocol() -> None:
    # A request the stdio server answers and the engine does not is a feature that breaks only in shared mode (found:
    # flower/changes and flower/revert, the Changes view empty in a window on the engine).
    from flower.engine.connection import REQUESTS
    from flower.lsp import protocol as p

    assert set(REQUESTS) == set(p.PARAMS)
