"""flower fits the Claude Code ecosystem (issue #15): the project's CLAUDE.md, settings and MCP servers,
the model, and a spending cap — through `.venv/bin/flower`, the real CLI and the scripted model.

Isolation comes from the `env` fixture: CLAUDE_CONFIG_DIR is a fresh temp dir, so the "user"
settings are this test's own, and each workspace starts empty.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest
from pygls.exceptions import JsonRpcException
from test_cli import flower
from test_lsp import servers, uri  # noqa: F401  (servers: the language-server fixture)

from flower.core import trust
from flower.core.manifest import Manifest
from flower.lsp import protocol as p
from flower.testing import ScriptedModel, text, tool
from flower.testing.server import Request
from flower.workflow.flower import WORK_RESUME
from flowerscript import clarify, goals, judge, work

JUDGE = "You are the judge of"
"""How the judge's system prompt begins (workflow/goal.py)."""
MARKER = "house-rule-7f3a: every function gets a docstring"
STAMPS = '''"""A tiny stdio MCP server (newline-delimited JSON-RPC) with one tool, `stamp`."""
import json, sys

for line in sys.stdin:
    msg = json.loads(line)
    if "id" not in msg:
        continue  # a notification (initialized, cancelled): nothing to answer
    method, result = msg.get("method"), None
    if method == "initialize":
        result = {"protocolVersion": msg["params"].get("protocolVersion", "2025-06-18"),
                  "capabilities": {"tools": {}}, "serverInfo": {"name": "stamps", "version": "1"}}
    elif method == "tools/list":
        result = {"tools": [{"name": "stamp", "description": "Stamp a word.", "inputSchema": {
            "type": "object", "properties": {"word": {"type": "string"}}, "required": ["word"]}}]}
    elif method == "tools/call":
        result = {"content": [{"type": "text", "text": "STAMPED-" + msg["params"]["arguments"]["word"]}]}
    elif method == "ping":
        result = {}
    reply = {"jsonrpc": "2.0", "id": msg["id"]}
    reply.update({"result": result} if result is not None else {"error": {"code": -32601, "message": str(method)}})
    sys.stdout.write(json.dumps(reply) + "\\n")
    sys.stdout.flush()
'''


def seen(request: Request) -> str:
    """Everything one request carried to the model: system prompt, messages, tools."""
    return json.dumps(request.body, ensure_ascii=False)


def agent_requests(model: ScriptedModel) -> list[Request]:
    """The agents' own requests (the CLI's side requests, e.g. a session title, carry no tools)."""
    return [r for r in model.requests if r.body.get("tools")]


def tool_names(request: Request) -> set[str]:
    return {t.get("name", "") for t in request.body.get("tools", [])}


def project(ws: Path, tmp: Path, allow: list[str], env: dict[str, str]) -> None:
    """A project as a Claude Code user keeps it, trusted by its person: CLAUDE.md, .mcp.json with a stdio server, and permissions.

    The allow rules are in `.claude/settings.local.json`: the CLI ignores `.claude/settings.json`'s allow
    entries in a workspace nobody accepted Claude Code's own trust dialog for, so they would not apply here.
    """
    trust.remember(ws, True, env)  # as `flower trust` does: the folder's own setup runs (D10; test_trust.py for the rest)
    server = tmp / "stamps.py"
    server.write_text(STAMPS, encoding="utf-8")
    (ws / "CLAUDE.md").write_text(f"# Conventions\n\n{MARKER}\n", encoding="utf-8")
    (ws / ".mcp.json").write_text(json.dumps({"mcpServers": {"stamps": {"command": sys.executable, "args": [str(server)]}}}))
    (ws / ".claude").mkdir()
    (ws / ".claude" / "settings.local.json").write_text(json.dumps({"permissions": {"allow": allow}}))


async def test_claude_md_and_mcp_server_reach_the_agents_and_the_judge_never_writes(
        model: ScriptedModel, env: dict[str, str], workspace: Path, tmp_path: Path) -> None:
    # The project's settings allow writes and shell: the worker may use them, the judge still must not.
    project(workspace, tmp_path, allow=["mcp__stamps", "Write", "Edit", "Bash"], env=env)
    model.push(*clarify(workspace), *goals(workspace),
               tool("mcp__stamps__stamp", {"word": "calc"}), *work(workspace),
               tool("Write", {"file_path": str(workspace / "judged.txt"), "content": "the judge wrote"}),
               *judge())
    done = await flower("build a calculator", env=env, cwd=workspace)
    assert done.code == 0, done.err

    requests = agent_requests(model)
    assert len(requests) >= 6  # clarify ×2, goals ×2, work ×3, judge ×2 (tool turns included)
    assert all(MARKER in seen(r) for r in requests), "CLAUDE.md reaches every agent, the judge included"
    stamped = [r for r in requests if any("STAMPED-calc" in json.dumps(b) for b in r.tool_results())]
    assert stamped, "the worker called the .mcp.json server's tool and the model received its result"
    judged = [r for r in requests if JUDGE in r.system]
    assert judged and all(not tool_names(r) & {"Write", "Edit", "MultiEdit", "NotebookEdit", "Bash"} for r in judged)
    assert "Write" in tool_names(stamped[0])  # the worker keeps its write tools
    assert not (workspace / "judged.txt").exists()


async def test_isolated_runs_without_claude_md(model: ScriptedModel, env: dict[str, str], workspace: Path,
                                                tmp_path: Path) -> None:
    project(workspace, tmp_path, allow=[], env=env)
    model.push(text("plain"), text("with the house rules"))
    isolated = await flower("once", "--isolated", "hello", env=env, cwd=workspace)
    assert isolated.code == 0, isolated.err
    first = agent_requests(model)
    assert first and not any(MARKER in seen(r) for r in first)
    default = await flower("once", "hello", env=env, cwd=workspace)
    assert default.code == 0, default.err
    assert MARKER in seen(agent_requests(model)[-1])  # the same workspace without --isolated: CLAUDE.md applies


async def test_spending_cap_stops_the_wake_and_a_higher_cap_continues_the_same_session(
        model: ScriptedModel, env: dict[str, str], workspace: Path, run_dir: Path) -> None:
    # Output tokens cost without growing the context (no compaction, no handoff): the work round costs ~$1.
    model.push(*clarify(workspace), *goals(workspace), *work(workspace, output_tokens=50_000))
    first = await flower("build a calculator", "--max-cost", "0.5", "-r", str(run_dir), env=env, cwd=workspace)
    assert first.code == 1, first.err
    last = first.err.strip().splitlines()[-1]
    assert "spending cap" in last and "flower --max-cost" in last and "$0.50" in last, last
    judge_asked = [r for r in agent_requests(model) if JUDGE in r.system]
    assert not judge_asked, "the judge would have started over the cap: it never ran"
    rows = Manifest(run_dir).rows()
    spent = sum(r["cost_usd"] for r in rows)
    assert spent >= 0.5 and [r["step"] for r in rows] == ["澄清", "目标", "干活"], rows
    work_session = json.loads((run_dir / "lineage.json").read_text())["steps"]["干活"]
    used = agent_requests(model)[-1].body["model"]

    # ANTHROPIC_MODEL is honoured and shown with its source; the task's cost is the manifest's.
    status = await flower("status", "--json", "-r", str(run_dir), env={**env, "ANTHROPIC_MODEL": "claude-haiku-4-5"},
                          cwd=workspace)
    shown: dict[str, Any] = json.loads(status.out)
    assert shown["model"] == "claude-haiku-4-5" and shown["settings"]["sources"]["model"] == "$ANTHROPIC_MODEL"
    assert abs(shown["cost"]["task"] - spent) < 1e-6 and shown["cost"]["max"] is None
    assert abs(shown["cost"]["wake"] - spent) < 1e-6  # one terminal process, one wake: all its rows
    status = await flower("status", "--json", "-r", str(run_dir), env=env, cwd=workspace)
    assert json.loads(status.out)["model"] == used  # no setting: the model the CLI reported, from the manifest
    plain = await flower("status", "-r", str(run_dir), env=env, cwd=workspace)
    assert f"model     {used}" in plain.out and f"${spent:.2f} this task so far" in plain.out, plain.out

    before = len(model.requests)
    model.push(text("carried on"), *judge())
    second = await flower("--max-cost", "20", "--model", "claude-sonnet-4-5", "-r", str(run_dir),
                          env={**env, "ANTHROPIC_MODEL": "claude-haiku-4-5"}, cwd=workspace)
    assert second.code == 0, second.err
    resumed = [r for r in model.requests[before:] if r.body.get("tools")][0]
    assert resumed.session_id == work_session and WORK_RESUME in resumed.last_user_text
    assert "calc.py written" in resumed.text  # the capped wake's conversation, carried into the next one
    assert resumed.body["model"] == "claude-sonnet-4-5"  # the flag beats the environment


async def test_a_bad_settings_file_is_one_line_and_exit_2_and_nothing_starts(env: dict[str, str], workspace: Path) -> None:
    (workspace / "pyproject.toml").write_text('[project]\nname = "calc"\n\n[tool.flower]\nmax_cost = "twenty"\n')
    done = await flower("build a calculator", env=env, cwd=workspace)
    assert done.code == 2, done.err
    assert done.err.strip() == (f"flower: {workspace / 'pyproject.toml'} [tool.flower]: max_cost must be US dollars > 0, "
                                "e.g. max_cost = 20 (got 'twenty')")
    assert not (workspace / "runs").exists() and not (workspace / "需求.md").exists()
    bad_flag = await flower("build a calculator", "--max-cost", "-3", env=env, cwd=workspace)
    assert bad_flag.code == 2 and "--max-cost" in bad_flag.err


async def test_the_editor_reads_the_settings_file_under_its_options_and_names_a_bad_one(
        servers: Any, env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir(), bad.mkdir()
    (good / ".flower.toml").write_text('model = "from-file"\nmax_cost = 9\nrounds = 2\n')
    (bad / ".flower.toml").write_text("rounds = 0\n")
    client = await servers(good, bad, options={"model": "from-editor", "maxCost": 3})
    [status] = (await client.request(p.STATUS, {"folder": uri(good)}))["folders"]
    assert status["model"] == "from-editor" and status["cost"] == {"wake": 0.0, "task": 0.0, "max": 3.0}
    with pytest.raises(JsonRpcException) as raised:
        await client.request(p.WAKE, {"folder": uri(bad), "text": "build a calculator"})
    assert raised.value.code == p.FLOWER_ERROR and raised.value.data["key"] == "settings_bad"
    assert raised.value.message == f"{bad / '.flower.toml'}: rounds must be a whole number >= 1, e.g. rounds = 10 (got 0)"
    assert not (bad / "需求.md").exists()
    [status] = (await client.request(p.STATUS, {"folder": uri(bad)}))["folders"]
    assert status["running"] is False  # the folder still answers, and says what is wrong before any wake
    assert status["settings"] == {"message": raised.value.message, "key": "rounds", "option": None,
                                  "file": str(bad / ".flower.toml")}
    [status] = (await client.request(p.STATUS, {"folder": uri(good)}))["folders"]
    assert status["settings"] is None


async def test_a_bad_editor_option_is_the_folders_settings_error_not_dropped(
        servers: Any, env: dict[str, str], tmp_path: Path) -> None:  # noqa: F811
    (tmp_path / ".flower.toml").write_text("handoff_at = 90000\n")
    client = await servers(tmp_path, options={"handoffAt": 0, "model": "m"})
    [status] = (await client.request(p.STATUS, {"folder": uri(tmp_path)}))["folders"]
    line = "flower.handoffAt: handoff_at must be a number of tokens >= 1, e.g. handoff_at = 120000 (got 0)"
    assert status["settings"] == {"message": line, "key": "handoff_at", "option": "handoffAt", "file": None}
    with pytest.raises(JsonRpcException) as raised:
        await client.request(p.WAKE, {"folder": uri(tmp_path), "text": "build a calculator"})
    assert raised.value.code == p.FLOWER_ERROR and raised.value.message == line
    assert not (tmp_path / "需求.md").exists() and not (tmp_path / "runs").exists()
