"""Which of a client's variables travel to the engine's wakes (D11): one rule, `core/travel.py` (issue 33)."""

from __future__ import annotations

import pytest

from flower.core.travel import travelling, travels


def test_a_whole_editor_environment_keeps_only_what_the_agent_and_the_cli_read() -> None:
    # What an editor window has (the client now sends all of it and the engine filters, issue 33).
    env = {
        "ANTHROPIC_BASE_URL": "http://127.0.0.1:9", "ANTHROPIC_API_KEY": "from-the-shell",
        "CLAUDE_CONFIG_DIR": "/c", "CLAUDE_CODE_MAX_RETRIES": "0", "FLOWER_STORE": "sqlite",
        "PATH": "/usr/bin", "HOME": "/home/me", "HTTPS_PROXY": "http://proxy:3128", "no_proxy": "localhost",
        "http_proxy": "http://p", "VSCODE_PID": "1", "ELECTRON_RUN_AS_NODE": "1", "SSH_AUTH_SOCK": "/tmp/agent",
        "LD_PRELOAD": "evil.so", "MY_ANTHROPIC_THING": "x", "AWS_SECRET_ACCESS_KEY": "s", "GITHUB_TOKEN": "t",
        "PYTHONPATH": "/p",
    }
    assert sorted(travelling(env)) == [
        "ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "CLAUDE_CODE_MAX_RETRIES", "CLAUDE_CONFIG_DIR", "FLOWER_STORE",
        "HOME", "HTTPS_PROXY", "PATH", "http_proxy", "no_proxy",
    ]
    assert travelling(env)["ANTHROPIC_API_KEY"] == "from-the-shell"


def test_single_names_travel_in_any_case() -> None:
    # The editor's rule matched proxies in any case, the engine's only upper and lower: the editor's was right.
    # Windows spells PATH `Path` (its names are case-insensitive), and a proxy may be written `Https_Proxy` there.
    for name in ("Path", "path", "Home", "Http_Proxy", "HTTPS_proxy", "all_proxy", "No_Proxy"):
        assert travels(name), name
    assert travelling({"Path": r"C:\Windows", "USERPROFILE": r"C:\Users\me"}) == {"Path": r"C:\Windows"}


def test_families_travel_as_the_cli_reads_them() -> None:
    # ANTHROPIC_*, CLAUDE_*, FLOWER_* are read upper-case; a look-alike does not travel, and neither does a lower-case
    # family name (the engine checks credentials and redacts them by their exact names, core/redact.py).
    assert travels("ANTHROPIC_AUTH_TOKEN") and travels("CLAUDE_CODE_OAUTH_TOKEN") and travels("FLOWER_ENGINE")
    for name in ("anthropic_api_key", "Claude_Config_Dir", "MY_ANTHROPIC_THING", "XANTHROPIC_", "PATHS", "HOMEDIR",
                 "HTTP_PROXY_USER", "ANTHROPIC", ""):
        assert not travels(name), name


def test_no_environment_given_means_this_process_own(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FLOWER_TRAVEL_PROBE", "1")
    monkeypatch.setenv("NOT_TRAVELLING_PROBE", "1")
    here = travelling()
    assert here["FLOWER_TRAVEL_PROBE"] == "1" and "NOT_TRAVELLING_PROBE" not in here
