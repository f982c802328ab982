"""When a step may end: the CLI's background work and session state, in the orders CLI 2.1.332 sends them (issue 32)."""

from __future__ import annotations

from flower.core.background import Background, ceiling

STARTED = {"task_id": "a1", "tool_use_id": "toolu_1", "task_type": "local_agent", "description": "write sub",
           "is_backgrounded": True, "subagent_type": "general-purpose"}


def feed(work: Background, *events: object) -> list[bool]:
    """Feed ("result" | (subtype, data)) in order; `done` after each."""
    out = []
    for event in events:
        if event == "result":
            work.result()
        else:
            subtype, data = event  # type: ignore[misc]
            work.see(subtype, data)
        out.append(work.done)
    return out


def state(s: str) -> tuple[str, dict]:
    return "session_state_changed", {"state": s}


def test_a_background_agent_still_running_at_the_first_result_holds_the_step_until_the_turn_it_wakes_ends():
    work = Background()
    assert feed(work, state("running"), ("task_started", STARTED), "result",
                ("task_updated", {"task_id": "a1", "patch": {"status": "completed"}}),
                ("task_notification", {"task_id": "a1", "status": "completed"}),
                "result", state("idle")) == [False, False, False, False, False, False, True]
    assert work.tasks["a1"].label == "write sub (general-purpose)" and not work.running


def test_an_agent_that_ended_before_the_first_result_still_owes_a_turn_while_the_cli_says_running():
    work = Background()
    assert feed(work, state("running"), ("task_started", STARTED),
                ("task_notification", {"task_id": "a1", "status": "completed"}),
                "result", "result", state("idle")) == [False, False, False, False, False, True]


def test_a_shell_that_ends_after_idle_holds_the_step_until_the_cli_reports_again():
    shell = {**STARTED, "task_id": "b1", "task_type": "local_bash"}
    work = Background()
    assert feed(work, state("running"), ("task_started", shell), "result", state("idle"),
                ("task_updated", {"task_id": "b1", "patch": {"status": "completed"}}),  # idle, yet a turn is owed
                state("running"), "result", state("idle")) == [False, False, False, False, False, False, False, True]


def test_a_cli_that_reports_no_state_ends_at_a_result_with_nothing_running():
    assert feed(Background(), "result") == [True]
    assert feed(Background(), ("task_started", STARTED), "result") == [False, False]


def test_the_ceiling_is_the_clis_own_setting():
    assert ceiling({}) == 600.0
    assert ceiling({"CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "1500"}) == 1.5
    assert ceiling({"CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "0"}) is None
    assert ceiling({"CLAUDE_CODE_PRINT_BG_WAIT_CEILING_MS": "soon"}) == 600.0
