"""Approvals (issue 24): the first answer wins, the rule for nobody, what a front-end shows, and the settings."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from flower.core.approvals import AWAY, Approval, Approvals, Decision, describe, narrows
from flower.settings import SettingsError, UntrustedSetting, load


def approval(n: int = 1) -> Approval:
    return Approval(id=f"toolu_{n}", step="干活", tool="Bash", input={"command": "rm -rf build"}, summary="rm -rf build",
                    detail_kind="command", detail="rm -rf build")


def test_an_answer_that_does_not_parse_is_a_denial_never_an_allow() -> None:
    assert Decision.parse({"decision": "allow"}) == Decision("allow")
    assert Decision.parse({"decision": "deny", "message": "  not now "}) == Decision("deny", "not now")
    for bad in (None, "allow", {"decision": "ALLOW"}, {"decision": None}, {"ok": True}, [], {"decision": "allow "}):
        assert Decision.parse(bad).choice == "deny", bad
    assert Decision("deny").reason("Bash") == "The person denied this Bash call."
    assert Decision("deny", by="unattended").reason("WebFetch") == AWAY.format(tool="WebFetch")


async def test_the_first_answer_wins_and_the_others_are_refused() -> None:
    approvals = Approvals()
    slow: asyncio.Future[Decision | None] = asyncio.get_running_loop().create_future()

    async def window_a(a: Approval) -> Decision | None:
        return await slow

    async def window_b(a: Approval) -> Decision | None:
        return Decision("allow")

    closed: list[tuple[str, Decision | None]] = []
    approvals.askers += [window_a, window_b]
    approvals.on_change.append(lambda a, d: closed.append((a.id, d)))
    decision = await asyncio.wait_for(approvals.decide(approval()), 5)
    assert decision == Decision("allow")
    assert approvals.answer("toolu_1", Decision("deny")) is False and approvals.waiting() is None
    assert closed == [("toolu_1", None), ("toolu_1", Decision("allow"))]


async def test_nobody_answering_denies_after_the_wait_and_never_allows() -> None:
    approvals = Approvals(wait=0.05, unattended="deny")
    decision = await asyncio.wait_for(approvals.decide(approval()), 5)
    assert decision == Decision("deny", by="unattended")


async def test_unattended_wait_goes_on_waiting_until_someone_answers() -> None:
    approvals = Approvals(wait=0.05, unattended="wait")
    task = asyncio.create_task(approvals.decide(approval()))
    await asyncio.sleep(0.2)
    waiting = approvals.waiting()
    assert not task.done() and waiting is not None and waiting.id == "toolu_1"  # still open, past the wait
    assert approvals.answer("toolu_1", Decision("allow", by="person"))
    assert await asyncio.wait_for(task, 5) == Decision("allow")


async def test_a_front_end_that_fails_or_cannot_ask_leaves_it_to_the_rule() -> None:
    approvals = Approvals(wait=0.05)

    async def broken(a: Approval) -> Decision | None:
        raise RuntimeError("the window is gone")

    async def cannot(a: Approval) -> Decision | None:
        return None

    approvals.askers += [broken, cannot]
    assert (await asyncio.wait_for(approvals.decide(approval()), 5)).by == "unattended"


async def test_with_no_wait_set_a_question_nobody_can_be_asked_gets_the_rule_at_once() -> None:
    """Issue 31: no wait set meant waiting forever for nobody (an engine run with only a terminal attached hung)."""
    assert (await asyncio.wait_for(Approvals().decide(approval()), 5)) == Decision("deny", by="unattended")
    cannot = Approvals()

    async def terminal_without_a_person(a: Approval) -> Decision | None:
        await asyncio.sleep(0)
        return None

    cannot.askers.append(terminal_without_a_person)
    assert (await asyncio.wait_for(cannot.decide(approval()), 5)).by == "unattended"
    waits = Approvals(unattended="wait")  # "wait": the question stays open for someone who attaches later
    task = asyncio.create_task(waits.decide(approval(2)))
    await asyncio.sleep(0.1)
    assert not task.done() and waits.waiting() is not None
    assert waits.answer("toolu_2", Decision("allow"))
    assert await asyncio.wait_for(task, 5) == Decision("allow")


async def test_with_no_wait_set_a_person_being_asked_takes_as_long_as_it_takes() -> None:
    approvals = Approvals()
    person: asyncio.Future[Decision | None] = asyncio.get_running_loop().create_future()

    async def window(a: Approval) -> Decision | None:
        return await person

    approvals.askers.append(window)
    task = asyncio.create_task(approvals.decide(approval()))
    await asyncio.sleep(0.1)
    assert not task.done()
    person.set_result(Decision("allow"))
    assert await asyncio.wait_for(task, 5) == Decision("allow")


def test_what_a_front_end_shows(tmp_path: Path) -> None:
    assert describe("Bash", {"command": "npm test\n  --watch"}) == ("npm test --watch", "command", "npm test\n  --watch")
    old = tmp_path / "calc.py"
    old.write_text("a = 1\nb = 2\n")
    summary, kind, diff = describe("Write", {"file_path": str(old), "content": "a = 1\nb = 3\n"})
    assert (summary, kind) == (str(old), "diff") and "-b = 2" in diff and "+b = 3" in diff and " a = 1" in diff
    _, _, edit = describe("Edit", {"file_path": str(old), "old_string": "b = 2", "new_string": "b = 4"})
    assert edit.splitlines()[-2:] == ["-b = 2", "+b = 4"]
    assert describe("WebFetch", {"url": "https://example.org", "prompt": "x"})[:2] == ("https://example.org", "url")
    assert describe("mcp__gh__create_issue", {"title": "t"})[1] == "input"


def test_rules_can_only_narrow() -> None:
    allowed = ["Read", "Write", "Bash"]
    assert narrows(["Read", "Bash(npm test:*)"], allowed)
    assert not narrows(["WebFetch"], allowed) and not narrows(["mcp__gh"], allowed)


def test_the_settings_read_allow_mode_and_an_approvals_table(tmp_path: Path) -> None:
    (tmp_path / ".flower.toml").write_text('allow = ["Read", "Bash(npm test:*)"]\n[approvals]\nwait = 60\nunattended = "wait"\n')
    s = load(tmp_path, env={}, trusted=False)
    assert (s.allow, s.mode, s.approvals_wait, s.approvals_unattended) == (["Read", "Bash(npm test:*)"], "acceptEdits", 60.0, "wait")
    (tmp_path / ".flower.toml").write_text('allow = ["Read", "WebFetch"]\n')
    with pytest.raises(UntrustedSetting) as widened:
        load(tmp_path, env={}, trusted=False)
    assert "allow" in widened.value.text("en") and "only narrow" in widened.value.text("en")
    assert load(tmp_path, env={}, trusted=True).allow == ["Read", "WebFetch"]
    (tmp_path / ".flower.toml").write_text('mode = "bypassPermissions"\n')
    with pytest.raises(UntrustedSetting):
        load(tmp_path, env={}, trusted=False)
    assert load(tmp_path, env={}, trusted=True).mode == "bypassPermissions"  # only when the person writes it
    (tmp_path / ".flower.toml").write_text('[approvals]\nunattended = "allow"\n')
    with pytest.raises(SettingsError) as bad:
        load(tmp_path, env={}, trusted=True)
    assert "deny or wait" in bad.value.text("en")
    (tmp_path / ".flower.toml").unlink()
    env = load(tmp_path, env={"FLOWER_ALLOW": "Read, Edit", "FLOWER_MODE": "default", "FLOWER_APPROVALS_WAIT": "5"})
    assert (env.allow, env.mode, env.approvals_wait) == (["Read", "Edit"], "default", 5.0)
    pyproject = tmp_path / "pyproject.toml"
    pyproject.write_text('[tool.flower]\nrounds = 2\n[tool.flower.approvals]\nwait = 9\n')
    assert load(tmp_path, env={}).approvals_wait == 9.0
