"""The caller's auth files in a resume's config dir (stores/credentials.py): what the resumed CLI logs in with (S23, D2).

The real CLI logging in from them is tested in tests/e2e (every resume there runs on a materialised dir); here, what is
copied, what is left out, and that a missing or unreadable file never stops the resume.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from flower.stores.credentials import copy_auth_files, redact_credentials, strip_settings

OAUTH = {"claudeAiOauth": {"accessToken": "a", "refreshToken": "r", "expiresAt": 1}, "other": {"refreshToken": "kept"}}
SETTINGS = {"apiKeyHelper": "/bin/key", "enabledPlugins": {"p@m": True}, "extraKnownMarketplaces": {"m": {}},
            "env": {"CLAUDE_CONFIG_DIR": "/elsewhere", "FOO": "1"}, "permissions": {"allow": ["Bash"]}}


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A home of this test's own, and no config dir, login or key chosen by the process running the tests."""
    home = tmp_path / "home"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    for name in ("CLAUDE_CONFIG_DIR", "ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    return home


def _resume(tmp_path: Path) -> Path:
    config = tmp_path / "claude-resume-x"
    config.mkdir()
    return config


def _json(path: Path) -> object:
    return json.loads(path.read_bytes())


def test_a_chosen_config_dirs_files_are_copied_without_the_refresh_token_or_the_plugins(tmp_path: Path, home: Path) -> None:
    chosen = tmp_path / "claude-config"
    chosen.mkdir()
    (chosen / ".credentials.json").write_text(json.dumps(OAUTH))
    (chosen / ".claude.json").write_text('{"userID": "u"}')
    (chosen / "settings.json").write_text(json.dumps(SETTINGS))
    (chosen / "cowork_settings.json").write_text("\ufeff" + json.dumps({"enabledPlugins": {}}))  # PowerShell's BOM
    (home / ".claude.json").write_text('{"userID": "not this one"}')
    config = _resume(tmp_path)
    copy_auth_files(config, {"CLAUDE_CONFIG_DIR": str(chosen)})
    # The refresh token a resumed CLI must not spend is gone (the login's own only); the rest is the caller's.
    assert _json(config / ".credentials.json") == {"claudeAiOauth": {"accessToken": "a", "expiresAt": 1},
                                                    "other": {"refreshToken": "kept"}}
    assert _json(config / ".claude.json") == {"userID": "u"}  # from the chosen dir, not from beside the home's
    # apiKeyHelper, the rest of env and the permissions travel; plugins and the redirect do not.
    assert _json(config / "settings.json") == {"apiKeyHelper": "/bin/key", "env": {"FOO": "1"}, "permissions": {"allow": ["Bash"]}}
    assert _json(config / "cowork_settings.json") == {}
    assert {p.name: stat.S_IMODE(p.stat().st_mode) for p in config.iterdir()} == {
        n: 0o600 for n in (".credentials.json", ".claude.json", "settings.json", "cowork_settings.json")}
    assert _json(chosen / ".credentials.json") == OAUTH  # the caller's own files are untouched


def test_without_a_chosen_dir_the_homes_files_are_copied(tmp_path: Path, home: Path) -> None:
    (home / ".claude").mkdir()
    (home / ".claude" / ".credentials.json").write_text(json.dumps(OAUTH))
    (home / ".claude.json").write_text('{"userID": "h"}')  # beside ~/.claude, not in it
    config = _resume(tmp_path)
    copy_auth_files(config, {"ANTHROPIC_API_KEY": "sk-x"})
    assert _json(config / ".credentials.json") == {"claudeAiOauth": {"accessToken": "a", "expiresAt": 1},
                                                    "other": {"refreshToken": "kept"}}
    assert _json(config / ".claude.json") == {"userID": "h"}
    assert not (config / "settings.json").exists()


def test_with_no_files_nothing_is_written_and_unreadable_ones_are_skipped(tmp_path: Path, home: Path) -> None:
    config = _resume(tmp_path)
    copy_auth_files(config, {})  # a login by environment (the API key): nothing to copy, and no error
    assert list(config.iterdir()) == []
    chosen = tmp_path / "claude-config"
    chosen.mkdir()
    os.mkfifo(chosen / ".credentials.json")  # reading it would block the resume for ever
    (chosen / "settings.json").mkdir()
    (chosen / ".claude.json").write_text("{}")
    copy_auth_files(config, {"CLAUDE_CONFIG_DIR": str(chosen)})
    assert [p.name for p in config.iterdir()] == [".claude.json"]


def test_what_is_no_json_object_or_holds_nothing_to_drop_is_copied_byte_for_byte() -> None:
    for content in (b"not json", b"\xff\xfe", b"[1, 2]", b'{"a":  1}', b'{"claudeAiOauth": "x"}', b'{"n": 1e999}'):
        assert redact_credentials(content) == content
        assert strip_settings(content) == content
    # A value JSON cannot write back (1e999 reads as inf): the file is copied as it is, plugins and all.
    assert strip_settings(b'{"enabledPlugins": {}, "n": 1e999}') == b'{"enabledPlugins": {}, "n": 1e999}'
    assert json.loads(redact_credentials(b'{"claudeAiOauth": {"refreshToken": null}}')) == {"claudeAiOauth": {}}
