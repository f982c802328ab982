"""Tool approvals (issue 24) with the real CLI: a tool call outside `allow` is asked, never refused on the spot and
never allowed by a timeout. What the model saw (its next request's tool_result) is the witness.

The folders narrow `allow` to no Bash (an untrusted folder's file may narrow it), so the work agent's Bash calls
are asked; 需求.md and 目标.md are complete, so each wake is work + judge (S17).
"""

from __future__ import annotations

import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

import pytest
from lsprotocol import types
from pytest_lsp import client_capabilities
from test_cli import Terminal, flower, seed_frozen
from test_lsp import Client, stop, uri

from conftest import until
from flower.core.approvals import AWAY
from flower.lsp import protocol as p
from flower.testing import ScriptedModel, delegate, for_main, for_subagent, text, tool
from flowerscript import judge

NO_BASH = 'allow = ["Read", "Write", "Edit", "Glob", "Grep"]\n'


def touch(path: object) -> str:
    """A shell command the CLI asks about (acceptEdits passes a bare `touch`, and read-only ones like `echo`, unasked)."""
    return f'sh -c "touch {path}"'


class Approver(Client):
    """A client whose person answers `flower/approve` when the test says so (each question waits on a future)."""

    def __init__(self) -> None:
        super().__init__()
        self.questions: asyncio.Queue[tuple[dict[str, Any], asyncio.Future[Any]]] = asyncio.Queue()
        self.cards: list[asyncio.Future[Any]] = []

        @self.feature(p.APPROVE)
        async def on_approve(ls: Approver, params: Any) -> Any:
            answer: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
            ls.cards.append(answer)
            await ls.questions.put((params, answer))
            return await answer

    def close_cards(self) -> None:
        """Answer what the person never answered (a denial), so no handler outlives the client."""
        for card in self.cards:
            if not card.done():
                card.set_result({"decision": "deny"})

    async def question(self, timeout: float = 90.0) -> tuple[dict[str, Any], asyncio.Future[Any]]:
        """The next `flower/approve` the server sent, and the future that answers it."""
        return await asyncio.wait_for(self.questions.get(), timeout)


async def approver(env: dict[str, str], folder: Path) -> Approver:
    """A flower language server on `folder` with an Approver client (the `servers` fixture's way, its own client class)."""
    client = Approver()
    await client.start_io(sys.executable, "-m", "flower.lsp", env={**os.environ, **env}, start_new_session=True)
    params = types.InitializeParams(capabilities=client_capabilities("visual-studio-code"),
                                    workspace_folders=[types.WorkspaceFolder(uri(folder), folder.name)])
    await asyncio.wait_for(client.initialize_session(params), 30)
    return client


@pytest.fixture
async def clients() -> Any:
    started: list[Approver] = []
    yield started
    for client in started:
        client.close_cards()
        await asyncio.sleep(0)  # let the handlers send their answers before the client stops
        await stop(client)


def folder(ws: Path, settings: str = NO_BASH) -> Path:
    seed_frozen(ws)
    (ws / ".flower.toml").write_text(settings)
    return ws


async def woken(clients: list, env: dict[str, str], workspace: Path, settings: str = NO_BASH) -> tuple[Approver, Any, Any]:
    """A server on `workspace` (its settings `settings`), woken, and its first question with the future that answers it."""
    client = await approver(env, folder(workspace, settings))
    clients.append(client)
    await client.request(p.WAKE, {"folder": uri(workspace)})
    asked, answer = await client.question()
    return client, asked, answer


def result_for(model: ScriptedModel, tool_id: str) -> dict[str, Any]:
    """The tool_result the model received for `tool_id` (its first request carrying it)."""
    for request in model.requests:
        for block in request.tool_results():
            if block.get("tool_use_id") == tool_id:
                return block
    raise AssertionError(f"no request carried a result for {tool_id}")


def result_text(block: dict[str, Any]) -> str:
    content = block.get("content")
    return content if isinstance(content, str) else json.dumps(content)


def bash_ids(model: ScriptedModel) -> list[str]:
    """The Bash calls the model made, each once, in order (every later request repeats them)."""
    return list(dict.fromkeys(b["id"] for r in model.requests for b in r.tool_uses() if b.get("name") == "Bash"))


async def test_a_tool_outside_allow_is_asked_and_allow_runs_it(clients: list, model: ScriptedModel, env: dict[str, str],
                                                                 workspace: Path) -> None:
    marker = workspace / "ran.txt"
    model.push(tool("Bash", {"command": touch(marker)}), text("touched"), *judge())
    client, asked, answer = await woken(clients, env, workspace)
    assert (asked["tool"], asked["summary"], asked["detail"]) == ("Bash", touch(marker),
                                                                 {"kind": "command", "text": touch(marker)})
    assert asked["folder"] == uri(workspace) and asked["step"] == "干活" and asked["id"]
    [status] = (await client.request(p.STATUS, {"folder": uri(workspace)}))["folders"]
    assert status["waitingFor"]["what"] == "approval" and status["waitingFor"]["approval"]["id"] == asked["id"]
    assert not marker.exists()  # nothing ran before the answer
    answer.set_result({"decision": "allow"})
    ended = await client.ended(uri(workspace))
    assert ended["ok"] is True, ended
    assert marker.exists()
    block = result_for(model, asked["id"])
    assert not block.get("is_error"), block  # the tool's own result reached the model
    closed = client.seen(p.APPROVED, uri(workspace))
    assert closed == [{"folder": uri(workspace), "id": asked["id"], "decision": "allow", "by": "person", "reason": None}]
    [status] = (await client.request(p.STATUS, {"folder": uri(workspace)}))["folders"]
    assert status["waitingFor"] is None


async def test_deny_with_a_sentence_reaches_the_model_and_a_bad_answer_is_a_denial(
        clients: list, model: ScriptedModel, env: dict[str, str], workspace: Path) -> None:
    marker = workspace / "ran.txt"
    model.push(tool("Bash", {"command": touch(marker)}), tool("Bash", {"command": touch(f"{marker}-2")}),
               text("gave up on the shell"), *judge())
    client, first, answer = await woken(clients, env, workspace)
    answer.set_result({"decision": "deny", "message": "use the Write tool for files, not the shell"})
    second, answer = await client.question()
    answer.set_result({"decision": "yes please"})  # not a decision: never an allow
    assert (await client.ended(uri(workspace)))["ok"] is True
    assert not marker.exists() and not Path(f"{marker}-2").exists()
    denied = result_for(model, first["id"])
    assert denied.get("is_error") and "use the Write tool for files, not the shell" in result_text(denied)
    assert result_for(model, second["id"]).get("is_error")
    # Issue 34: the denial is marked as one, live (flower/approved's reason) and in history (the result's `denied`).
    reasons = {n["id"]: n["reason"] for n in client.seen(p.APPROVED)}
    assert reasons[first["id"]] == "use the Write tool for files, not the shell"
    assert reasons[second["id"]] == "The person denied this Bash call."
    page = await client.request(p.HISTORY, {"folder": uri(workspace), "limit": 200})
    results = {e["toolUseId"]: e for e in page["entries"] if e["kind"] == "result"}
    assert results[first["id"]]["denied"] is True, results[first["id"]]
    assert "use the Write tool for files" in results[first["id"]]["text"]
    assert results[second["id"]]["denied"] is True
    assert not any(e["denied"] for e in results.values() if e["toolUseId"] not in (first["id"], second["id"]))


async def test_allow_always_keeps_the_rule_and_the_next_identical_call_is_not_asked(
        clients: list, model: ScriptedModel, env: dict[str, str], workspace: Path) -> None:
    command = 'sh -c "echo flower-approved"'
    model.push(tool("Bash", {"command": command}), tool("Bash", {"command": command}), text("twice"), *judge())
    client, asked, answer = await woken(clients, env, workspace)
    answer.set_result({"decision": "allowAlways"})
    assert (await client.ended(uri(workspace)))["ok"] is True
    assert client.questions.empty(), "the second identical call was not asked"
    ids = bash_ids(model)
    assert len(ids) == 2 and all("flower-approved" in result_text(result_for(model, i)) for i in ids)
    local = json.loads((workspace / ".claude" / "settings.local.json").read_text())
    assert any(rule.startswith("Bash") for rule in local["permissions"]["allow"]), local


async def test_nobody_answering_denies_after_the_wait_and_the_run_goes_on(
        clients: list, model: ScriptedModel, env: dict[str, str], workspace: Path) -> None:
    marker = workspace / "ran.txt"
    model.push(tool("Bash", {"command": touch(marker)}), text("carried on without it"), *judge())
    # The person never answers.
    client, asked, _never = await woken(clients, env, workspace, NO_BASH + '[approvals]\nwait = 2\nunattended = "deny"\n')
    assert (await client.ended(uri(workspace)))["ok"] is True
    assert not marker.exists()
    assert AWAY.format(tool="Bash") in result_text(result_for(model, asked["id"]))
    assert client.seen(p.APPROVED, uri(workspace))[-1]["by"] == "unattended"


@pytest.mark.timeout(240)
async def test_a_question_held_past_the_sdks_60_s_neither_aborts_the_run_nor_runs_the_tool(
        clients: list, model: ScriptedModel, env: dict[str, str], workspace: Path) -> None:
    marker = workspace / "ran.txt"
    model.push(tool("Bash", {"command": touch(marker)}), text("fine, without it"), *judge())
    client, asked, answer = await woken(clients, env, workspace)
    requests = len(model.requests)
    await asyncio.sleep(70)  # the hold itself is what is tested: past the 60 s abort reported against the SDK
    assert not marker.exists(), "the tool did not run while the question was open"
    assert len(model.requests) == requests, "the run waited: no request went out meanwhile"
    [status] = (await client.request(p.STATUS, {"folder": uri(workspace)}))["folders"]
    assert status["running"] is True and status["waitingFor"]["what"] == "approval"
    answer.set_result({"decision": "deny", "message": "not now"})
    assert (await client.ended(uri(workspace), timeout=120))["ok"] is True
    assert not marker.exists() and "not now" in result_text(result_for(model, asked["id"]))


async def test_a_kill_while_a_question_is_open_asks_again_at_the_next_wake(
        clients: list, model: ScriptedModel, env: dict[str, str], workspace: Path) -> None:
    marker = workspace / "ran.txt"
    model.push(tool("Bash", {"command": touch(marker)}))
    first = await approver(env, folder(workspace))
    clients.append(first)
    await first.request(p.WAKE, {"folder": uri(workspace)})
    await first.question()
    first.kill()  # kill -9 while the person has not answered
    # The card's handler must end before pygls sees the server gone (it cannot fail a pending handler's Task).
    first.close_cards()
    model.push(tool("Bash", {"command": touch(marker)}), text("touched"), *judge())
    second = await approver(env, workspace)
    clients.append(second)
    await second.request(p.WAKE, {"folder": uri(workspace)})
    again, answer = await second.question()
    assert again["summary"] == touch(marker)
    answer.set_result({"decision": "allow"})
    assert (await second.ended(uri(workspace)))["ok"] is True
    assert marker.exists()


async def test_a_card_withdrawn_by_a_reloading_window_stays_open_and_the_model_is_not_asked_again(
        clients: list, model: ScriptedModel, env: dict[str, str], workspace: Path) -> None:
    """A window that reloads answers its held `flower/approve` with an error (it cannot answer any more): that is no
    "nobody can answer" (protocol.md). A CI run of the editor e2e showed the old reading: the model was told the
    person was away, and the dying CLI asked it again before the window's server exited."""
    marker = workspace / "ran.txt"
    model.push(tool("Bash", {"command": touch(marker)}), text("touched"), *judge())
    client, asked, card = await woken(clients, env, workspace)
    requests = len(model.requests)
    card.set_exception(RuntimeError("this window gave no answer (it closed, reconnected, or the question was withdrawn)"))
    # What the old reading did within milliseconds (the CI log: 26 ms to the next request) must not happen at all.
    with pytest.raises(AssertionError, match="timed out"):
        await until(lambda: len(model.requests) > requests or client.seen(p.APPROVED, uri(workspace)), 5,
                    "a request or a closed question after the withdrawal")
    [status] = (await client.request(p.STATUS, {"folder": uri(workspace)}))["folders"]
    assert status["waitingFor"]["approval"]["id"] == asked["id"]
    # The next window answers it by id, as after a reload; the tool runs and the model gets its result.
    done = await client.request(p.ANSWER, {"folder": uri(workspace), "id": asked["id"], "decision": "allow"})
    assert done["accepted"] is True
    assert (await client.ended(uri(workspace)))["ok"] is True
    assert marker.exists() and not result_for(model, asked["id"]).get("is_error")


async def test_flower_answer_from_another_client_closes_the_question(
        clients: list, model: ScriptedModel, env: dict[str, str], workspace: Path) -> None:
    marker = workspace / "ran.txt"
    model.push(tool("Bash", {"command": touch(marker)}), text("touched"), *judge())
    client, asked, card = await woken(clients, env, workspace)
    # a window that attached later answers by id; the first answer wins, a second is refused
    done = await client.request(p.ANSWER, {"folder": uri(workspace), "id": asked["id"], "decision": "allow"})
    assert done == {"folder": uri(workspace), "id": asked["id"], "accepted": True}
    again = await client.request(p.ANSWER, {"folder": uri(workspace), "id": asked["id"], "decision": "deny"})
    assert again["accepted"] is False
    assert (await client.ended(uri(workspace)))["ok"] is True
    assert marker.exists()
    card.set_result({"decision": "deny"})  # the card's late answer changes nothing


async def test_the_terminal_asks_inline_and_piped_runs_deny_at_once_in_one_line(
        model: ScriptedModel, env: dict[str, str], workspace: Path) -> None:
    marker = workspace / "ran.txt"
    folder(workspace)
    model.push(tool("Bash", {"command": touch(marker)}), text("touched"), *judge())
    term = await Terminal.open(env=env, cwd=workspace)
    try:
        await term.expect("Continue? Enter = carry on")
        term.type("")
        await term.expect(f"Allow Bash: {touch(marker)}? [y]es/[a]lways/[N]o:")
        assert "\a" in term.screen  # the bell: the run waits for the person
        term.type("y")
        assert await term.wait() == 0, term.screen
    finally:
        term.close()
    assert marker.exists()
    marker.unlink()
    model.push(tool("Bash", {"command": touch(marker)}), text("without it"), *judge())
    piped = await flower(env=env, cwd=workspace)
    assert piped.code == 0, piped.err
    assert not marker.exists()
    [line] = [ln for ln in piped.err.splitlines() if "denied Bash" in ln]
    assert "nobody here to approve it" in line and "allow" in line
    assert AWAY.format(tool="Bash") in result_text(result_for(model, bash_ids(model)[-1]))


async def test_a_subagents_question_is_put_to_the_editor_naming_it_and_the_answer_runs_its_tool(
        clients: list, model: ScriptedModel, env: dict[str, str], workspace: Path) -> None:
    # Issue 32: a background subagent's Bash outside `allow` is a `flower/approve` that names the subagent; while it
    # waits, the status names the subagent running; Allow runs the tool and the subagent's result reaches the work agent.
    marker = workspace / "ran.txt"
    model.push(*for_main(delegate("touch the marker", description="touch it"), text("waiting for the subagent"),
                         text("the subagent touched it"), *judge()),
               *for_subagent(tool("Bash", {"command": touch(marker)}), text("SUB: touched")))
    client, asked, answer = await woken(clients, env, workspace)
    assert (asked["tool"], asked["agent"], asked["step"]) == ("Bash", "touch it (general-purpose)", "干活")
    [status] = (await client.request(p.STATUS, {"folder": uri(workspace)}))["folders"]
    assert status["background"] == ["touch it (general-purpose)"]
    assert not marker.exists()
    answer.set_result({"decision": "allow"})
    ended = await client.ended(uri(workspace))
    assert ended["ok"] is True, ended
    assert marker.exists() and not result_for(model, asked["id"]).get("is_error")
    assert any("SUB: touched" in r.text for r in model.main)  # its result reached the main conversation
