"""Scripted model replies for the flower path (clarify → goals → work → judge), shared by tests."""

from __future__ import annotations

from pathlib import Path

from flower.testing import Reply, text, tool

REQUIREMENTS = (
    "# 需求\n\n## 目标 Goal\nA calculator CLI.\n\n## 范围 Scope\nAdd and subtract.\n\n"
    "## 约束 Constraints\nPython only.\n\n## 验收 Acceptance\n`calc 1 + 2` prints 3.\n"
)
GOALS = "# 目标\n\n- [ ] calc.py adds\n- [ ] calc.py subtracts\n"


def clarify(ws: Path, content: str = REQUIREMENTS) -> list[Reply]:
    """The clarify agent writes 需求.md and says so."""
    return [tool("Write", {"file_path": str(ws / "需求.md"), "content": content}), text("requirements written")]


def goals(ws: Path, content: str = GOALS) -> list[Reply]:
    """The goal setter writes 目标.md."""
    return [tool("Write", {"file_path": str(ws / "目标.md"), "content": content}), text("goals written")]


def work(ws: Path, note: str = "print(1 + 2)\n", **usage) -> list[Reply]:
    """One work round: write calc.py, then report."""
    return [tool("Write", {"file_path": str(ws / "calc.py"), "content": note}), text("calc.py written", **usage)]


def judge(passed: bool = True, reasons: str = "") -> list[Reply]:
    """The judge's answer."""
    return [text("Checked every goal.\nVERDICT: PASS" if passed else f"VERDICT: FAIL {reasons}")]


def first_run(ws: Path) -> list[Reply]:
    """A whole first run that passes."""
    return clarify(ws) + goals(ws) + work(ws) + judge()


# -- the flower path, sharper (issue #16) ------------------------------------------------------

HANDOFF_NOTE = (
    "## State of the work\nAddition works; subtraction is half written.\n"
    "## Files changed\ncalc.py\n"
    "## Decisions and why\nNo eval(): NOTE-MARK unsafe on user input, parse the three tokens instead.\n"
    "## What failed\nThe judge: subtraction is missing.\n"
    "## Next steps\nFinish subtract() in calc.py.\n"
)


def handoff_note(body: str = HANDOFF_NOTE) -> list[Reply]:
    """The outgoing work session's answer to flower's request for a handoff note (one turn, in text)."""
    return [text(body)]


def handoff_by_tool(path: Path, body: str = HANDOFF_NOTE) -> list[Reply]:
    """The outgoing session answers that request by calling `Write` on `path` instead (a tool it may not run then)."""
    return [tool("Write", {"file_path": str(path), "content": body})]


def grown_past_handoff(ws: Path, tokens: int = 5000) -> list[Reply]:
    """Freeze 需求.md and 目标.md (S17: no clarify, no goals); the first work round ends with `tokens` of context and
    does not pass the judge, so the next round hands off."""
    (ws / "需求.md").write_text(REQUIREMENTS, encoding="utf-8")
    (ws / "目标.md").write_text(GOALS, encoding="utf-8")
    return work(ws, input_tokens=tokens) + judge(False, "subtraction is missing")
