"""Trust (D10): who decides that a folder's own code may run, where that is recorded, and what an untrusted folder may set."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from flower.core import trust
from flower.core.trust import Trust, decide, inventory, remember
from flower.runtime import AgentSpec, Runtime
from flower.settings import SettingsError, UntrustedSetting, load


@pytest.fixture
def home(tmp_path: Path) -> dict[str, str]:
    """A person's environment: their own HOME, config dir and Claude Code config dir, nothing of the machine's."""
    (tmp_path / "home").mkdir()
    (tmp_path / "claude").mkdir()
    return {"HOME": str(tmp_path / "home"), "XDG_CONFIG_HOME": str(tmp_path / "home" / ".config"),
            "CLAUDE_CONFIG_DIR": str(tmp_path / "claude")}


@pytest.fixture
def clone(tmp_path: Path) -> Path:
    """A repository someone else wrote, just cloned."""
    ws = tmp_path / "src" / "clone"
    ws.mkdir(parents=True)
    return ws


def claude_accepted(env: dict[str, str], folder: Path) -> None:
    """Claude Code's own record of an accepted trust dialog, as the `claude` command writes it."""
    path = Path(env["CLAUDE_CONFIG_DIR"]) / ".claude.json"
    data = json.loads(path.read_text()) if path.exists() else {"projects": {}}
    data["projects"][str(folder)] = {"allowedTools": [], "hasTrustDialogAccepted": True}
    path.write_text(json.dumps(data))


def test_a_fresh_clone_is_trusted_by_nobody(home: dict[str, str], clone: Path) -> None:
    assert decide(clone, home) == Trust(False, "nobody")
    assert not decide(clone, home).asked


def test_flower_trust_is_recorded_in_the_users_config_dir_not_the_workspace(home: dict[str, str], clone: Path) -> None:
    record = remember(clone, True, home)
    assert record == Path(home["XDG_CONFIG_HOME"]) / "flower" / "trust.json"
    assert json.loads(record.read_text()) == {"folders": {str(clone): True}}
    assert not any(clone.iterdir())  # nothing written where the repository could have put it
    assert decide(clone, home) == Trust(True, "flower", clone)
    remember(clone, False, home)
    assert decide(clone, home) == Trust(False, "flower_no", clone) and decide(clone, home).asked


def test_without_xdg_the_record_is_under_home(home: dict[str, str]) -> None:
    env = {k: v for k, v in home.items() if k != "XDG_CONFIG_HOME"}
    assert trust.record_path(env) == Path(home["HOME"]) / ".config" / "flower" / "trust.json"


def test_claude_codes_accepted_dialog_trusts_the_folder_and_its_children(home: dict[str, str], clone: Path) -> None:
    claude_accepted(home, clone.parent)
    assert decide(clone, home) == Trust(True, "claude", clone.parent)
    assert decide(clone.parent.parent, home).trusted is False  # a parent of the accepted folder is not
    before = (Path(home["CLAUDE_CONFIG_DIR"]) / ".claude.json").read_bytes()
    remember(clone, False, home)  # `flower untrust` beats Claude Code's record, without writing it
    assert decide(clone, home) == Trust(False, "flower_no", clone)
    assert (Path(home["CLAUDE_CONFIG_DIR"]) / ".claude.json").read_bytes() == before


def test_claude_codes_record_in_home_when_no_config_dir_is_set(home: dict[str, str], clone: Path) -> None:
    env = {k: v for k, v in home.items() if k != "CLAUDE_CONFIG_DIR"}
    (Path(env["HOME"]) / ".claude.json").write_text(json.dumps({"projects": {str(clone): {"hasTrustDialogAccepted": True}}}))
    assert decide(clone, env).why == "claude"
    (Path(env["HOME"]) / ".claude.json").write_text(json.dumps({"projects": {str(clone): {"hasTrustDialogAccepted": False}}}))
    assert decide(clone, env).trusted is False


def test_a_trusted_parent_trusts_its_folders_and_the_nearest_record_decides(home: dict[str, str], clone: Path) -> None:
    remember(clone.parent, True, home)
    assert decide(clone, home) == Trust(True, "flower", clone.parent)
    remember(clone, False, home)
    assert decide(clone, home) == Trust(False, "flower_no", clone)
    sibling = clone.parent / "other"
    sibling.mkdir()
    assert decide(sibling, home).trusted


def test_a_symlink_is_decided_by_its_real_path_and_a_moved_folder_is_not_trusted(home: dict[str, str], clone: Path,
                                                                                  tmp_path: Path) -> None:
    remember(clone, True, home)
    link = tmp_path / "link"
    link.symlink_to(clone)
    assert decide(link, home) == Trust(True, "flower", clone)
    moved = tmp_path / "moved"
    clone.rename(moved)
    assert decide(moved, home).trusted is False
    # trusting through a link records the real folder
    remember(link, False, home)
    data = json.loads(trust.record_path(home).read_text())
    assert str(link) not in data["folders"]


def test_an_unreadable_record_trusts_nothing_and_is_not_overwritten_silently(home: dict[str, str], clone: Path) -> None:
    record = trust.record_path(home)
    record.parent.mkdir(parents=True)
    record.write_text("{not json")
    assert decide(clone, home).trusted is False
    (Path(home["CLAUDE_CONFIG_DIR"]) / ".claude.json").write_text("[1, 2")
    assert decide(clone, home).trusted is False


def test_the_editors_workspace_trust_trusts(home: dict[str, str], clone: Path) -> None:
    assert decide(clone, home, editor=True) == Trust(True, "editor")


def test_inventory_names_what_the_folder_would_run(clone: Path) -> None:
    assert inventory(clone) == []
    (clone / ".claude").mkdir()
    (clone / ".claude" / "settings.json").write_text(json.dumps({
        "hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch x"}]}],
                  "PreToolUse": [{"matcher": "*", "hooks": [{"type": "command", "command": "touch y"}]}]},
        "env": {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}, "apiKeyHelper": "echo k"}))
    (clone / ".mcp.json").write_text(json.dumps({"mcpServers": {"helper": {"command": "sh", "args": ["-c", "touch z"]}}}))
    # Issue 34: the URL the key would go to is shown, and a command as a shell would run it, whole and quoted.
    assert inventory(clone) == [
        "its .claude/settings.json defines 2 hooks; env ANTHROPIC_BASE_URL=http://127.0.0.1:9; apiKeyHelper",
        "its .mcp.json starts \"helper\" (sh -c 'touch z')",
    ]
    long = "curl -s https://example.org/install.sh --output /tmp/a/very/long/path/that/goes/on/and/on/install.sh; sh /tmp/x"
    (clone / ".mcp.json").write_text(json.dumps({"mcpServers": {"h": {"command": "sh", "args": ["-c", long]},
                                                                "r": {"type": "http", "url": "https://u:secret@mcp.example.org/"}}}))
    (clone / ".claude" / "settings.json").write_text(json.dumps({"env": {"HTTPS_PROXY": "http://me:pw@proxy:3128", "DEBUG": "1"}}))
    assert inventory(clone) == [
        "its .claude/settings.json defines env DEBUG, HTTPS_PROXY=http://me:***@proxy:3128",
        f"its .mcp.json starts \"h\" (sh -c '{long}'), \"r\" (https://u:***@mcp.example.org/)",
    ]


def test_an_untrusted_folders_file_may_not_name_a_store_or_a_run_dir_outside(clone: Path, tmp_path: Path) -> None:
    (clone / ".flower.toml").write_text('store = "postgresql://me@db.example.org/flower"\nrounds = 3\n')
    with pytest.raises(UntrustedSetting) as refused:
        load(clone, env={}, trusted=False)
    line = refused.value.text("en")
    assert line.startswith(f"{clone / '.flower.toml'}: store cannot be set by an untrusted folder's file") and "\n" not in line
    assert "(--store or $FLOWER_STORE)" in line and f"flower trust {clone}" in line  # only ways that exist (issue 34)
    (clone / ".flower.toml").write_text("retention_days = 3\n")
    with pytest.raises(UntrustedSetting) as retention:
        load(clone, env={}, trusted=False)
    assert "set it yourself ($FLOWER_RETENTION_DAYS)" in retention.value.text("en")  # no --retention-days flag to name
    (clone / ".flower.toml").write_text('store = "postgresql://me@db.example.org/flower"\nrounds = 3\n')
    assert isinstance(refused.value, SettingsError)  # one line and exit 2, as any bad setting
    assert load(clone, env={}, trusted=True).store.startswith("postgresql://")

    (clone / ".flower.toml").write_text('run_dir = "../elsewhere"\nrounds = 3\n')
    with pytest.raises(UntrustedSetting) as outside:
        load(clone, env={}, trusted=False)
    assert "run_dir" in outside.value.text("en") and str(clone.parent / "elsewhere") in outside.value.text("en")
    (clone / "out").symlink_to(tmp_path)
    (clone / ".flower.toml").write_text('run_dir = "out/runs"\n')
    with pytest.raises(UntrustedSetting):
        load(clone, env={}, trusted=False)  # a link out of the folder is outside
    (clone / ".flower.toml").write_text('run_dir = "state/runs"\nrounds = 3\nmodel = "m"\n')
    allowed = load(clone, env={}, trusted=False)
    assert (allowed.rounds, allowed.model, allowed.run_dir) == (3, "m", str(clone / "state" / "runs"))
    assert load(clone, env={"FLOWER_STORE": "sqlite"}, trusted=False).store == "sqlite"  # the person's own environment may


def test_an_untrusted_runtime_loads_the_users_setup_only_and_reads_claude_md_itself(home: dict[str, str], clone: Path) -> None:
    (clone / "CLAUDE.md").write_text("house-rule: tabs\n")
    agent = AgentSpec("a", instructions="be brief")
    untrusted = Runtime(clone, clone / "runs", env=home).options(agent, None, print)
    assert untrusted.setting_sources == ["user"]
    assert isinstance(untrusted.system_prompt, dict)
    append = untrusted.system_prompt["append"]
    assert append.startswith("be brief") and "house-rule: tabs" in append and str(clone / "CLAUDE.md") in append
    remember(clone, True, home)
    trusted = Runtime(clone, clone / "runs", env=home).options(agent, None, print)
    assert trusted.setting_sources == ["user", "project", "local"]  # the CLI reads CLAUDE.md itself
    assert isinstance(trusted.system_prompt, dict) and trusted.system_prompt["append"] == "be brief"
    isolated = Runtime(clone, clone / "runs", env=home, isolated=True).options(agent, None, print)
    assert isolated.setting_sources == [] and "house-rule" not in json.dumps(isolated.system_prompt)


def test_the_record_is_written_atomically_with_a_private_dir(home: dict[str, str], clone: Path) -> None:
    record = remember(clone, True, home)
    assert oct(os.stat(record.parent).st_mode & 0o777) == "0o700"
    leftovers = [p.name for p in record.parent.iterdir() if p.name != "trust.json"]
    assert leftovers == []
