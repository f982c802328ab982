"""History marks a denied tool call's result as a denial, not as the tool's output (issue 34)."""

from __future__ import annotations

from typing import Any

from flower.history import items_of
from flower.stores.transcript import is_denial


def _result(content: str, *, is_error: bool, **fields: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": "toolu_1", "content": content, "is_error": is_error}
    return {"type": "user", "uuid": "u1", "message": {"role": "user", "content": [block]}, **fields}


def _denied(entry: dict[str, Any]) -> bool:
    (block,) = items_of(entry)
    assert block[2] == "result"
    return block[7]


def test_a_denial_flower_made_is_marked_with_what_the_model_was_told() -> None:
    entry = _result("use the Write tool for files", is_error=True, toolDenialKind="user-rejected", toolDenialFromHost=True)
    (block,) = items_of(entry)
    assert block[3] == "use the Write tool for files" and block[7] is True


def test_host_denials_of_any_kind_and_the_cli_s_own_wording_are_denials() -> None:
    assert _denied(_result("not now", is_error=True, toolDenialFromHost=True))
    assert _denied(_result("not now", is_error=True, toolDenialKind="some-future-kind"))
    assert _denied(_result("Permission to use Bash has been denied.", is_error=True))


def test_output_failures_and_interruptions_are_not_denials() -> None:
    assert not _denied(_result("APPROVED_42", is_error=False))
    assert not _denied(_result("exit code 1: no such file", is_error=True))
    assert not _denied(_result("[Tool call interrupted by the user]", is_error=True, toolDenialKind="interrupted"))
    entry = _result("ok", is_error=False, toolDenialFromHost=True)  # only an error result can be a denial
    assert not is_denial(entry, entry["message"]["content"][0])
