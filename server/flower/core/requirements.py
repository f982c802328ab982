"""The requirements record `需求.md`: four named sections, plus the sentences said at later wakes (S15, S17)."""

from __future__ import annotations

import re
import time
from pathlib import Path

from .durable import write_atomic

REQUIREMENTS_FILE = "需求.md"
SECTIONS = ("目标 Goal", "范围 Scope", "约束 Constraints", "验收 Acceptance")
"""The four sections the clarify step must fill: what, how far, within which limits, how we know it is done."""
REQUEST = "请求 Request"
"""The person's own words, written before clarification starts so a kill cannot lose them."""
ADDITIONS = "补充 Additions"
"""Where wake sentences are recorded (S15 place 2); not one of the four, so it never decides completeness."""

_HEADING = re.compile(r"^##\s+(.+?)\s*$", re.MULTILINE)


def sections(markdown: str) -> dict[str, str]:
    """`## heading` → body text."""
    marks = list(_HEADING.finditer(markdown))
    return {m.group(1): markdown[m.end():marks[i + 1].start() if i + 1 < len(marks) else len(markdown)].strip()
            for i, m in enumerate(marks)}


def complete(path: str | Path) -> bool:
    """All four sections present and non-empty: the clarify step is frozen and skipped (S17)."""
    try:
        found = sections(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return False
    return all(found.get(name) for name in SECTIONS)


def record_request(path: str | Path, task: str) -> None:
    """Write the task as said into a new `需求.md`; clarification then fills in the four sections."""
    Path(path).write_text(f"# 需求\n\n## {REQUEST}\n\n{task.strip()}\n", encoding="utf-8")


def add_sentence(path: str | Path, sentence: str, at: float | None = None) -> bool:
    """Record a wake sentence said at time `at` with the requirements so it is not lost (S15); False if it is there already.

    Its line is `- <YYYY-mm-dd HH:MM>: <sentence>`: a wake cut off after writing it, before marking it written
    (core/sentences.py), finds the line and does not add it twice (issue 31).
    """
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        text = ""
    line = f"- {time.strftime('%Y-%m-%d %H:%M', time.localtime(at))}: {sentence.strip()}"
    if line in sections(text).get(ADDITIONS, "").splitlines():
        return False
    if f"## {ADDITIONS}" not in text:
        text = text.rstrip("\n") + f"\n\n## {ADDITIONS}\n"
    write_atomic(path, (text.rstrip("\n") + f"\n{line}\n").encode())  # a kill mid-write never halves the requirements
    return True
