"""`flower log`'s lines (issue 34): a denial marked as one, never as an output; counts with the right word."""

from __future__ import annotations

import io
from typing import Any

import pytest

from flower.cli.console import Console
from flower.cli.log import lines_of
from flower.history import Item, items_of


def _item(entry: dict[str, Any]) -> Item:
    """The one Item history makes of `entry`, as `History.read` builds it."""
    ((uuid, role, kind, text, name, data, use, denied),) = items_of(entry)
    return Item(1, "s1", "干活", uuid, role, kind, text, name, data, use, denied=denied)


def _result(content: str, *, is_error: bool, **fields: Any) -> dict[str, Any]:
    block = {"type": "tool_result", "tool_use_id": "toolu_1", "content": content, "is_error": is_error}
    return {"type": "user", "uuid": "u1", "message": {"role": "user", "content": [block]}, **fields}


def _prompt(lines: int) -> dict[str, Any]:
    text = "\n".join(f"line {i}" for i in range(1, lines + 1))
    return {"type": "user", "uuid": "u2", "message": {"role": "user", "content": text}}


def _lines(entry: dict[str, Any], locale: str = "en") -> list[str]:
    return list(lines_of([_item(entry)], Console(locale, out=io.StringIO(), live=False), "干活"))


@pytest.mark.parametrize(("locale", "word"), [("en", "✕ denied — "), ("zh", "✕ 已拒绝 — ")])
def test_a_denial_is_marked_with_its_reason_not_shown_as_an_output(locale: str, word: str) -> None:
    entry = _result("use the Write tool for files", is_error=True, toolDenialKind="user-rejected", toolDenialFromHost=True)
    assert _lines(entry, locale) == [f"  {word}use the Write tool for files"]


def test_an_output_and_a_failed_command_stay_outputs() -> None:
    assert _lines(_result("exit code 1: no such file", is_error=True)) == ["  ← exit code 1: no such file"]
    assert _lines(_result("one\ntwo", is_error=False)) == ["  ← one · 2 lines"]


@pytest.mark.parametrize(("locale", "lines", "more"), [
    ("en", 4, "(+1 line)"), ("en", 5, "(+2 lines)"), ("zh", 4, "(另有 1 行)"), ("zh", 6, "(另有 3 行)")])
def test_a_long_prompt_counts_the_lines_it_folds_with_the_right_word(locale: str, lines: int, more: str) -> None:
    shown = _lines(_prompt(lines), locale)
    assert shown[:3] == ["> line 1", "> line 2", "> line 3"] and shown[3:] == [f">  {more}"]
    assert _lines(_prompt(3), locale) == ["> line 1", "> line 2", "> line 3"]  # nothing folded, nothing counted
