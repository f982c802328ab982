"""The goal checklist `目标.md`: Markdown task items the judge reads (S3, S15, S19)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

GOALS_FILE = "目标.md"
_ITEM = re.compile(r"^\s*[-*+]\s+\[([ xX])\]\s+(.+?)\s*$")


@dataclass(frozen=True)
class Goal:
    """One checklist item."""

    text: str
    done: bool


def parse(markdown: str) -> list[Goal]:
    """The `- [ ]` / `- [x]` items of a checklist, in order."""
    return [Goal(m.group(2), m.group(1) != " ") for m in map(_ITEM.match, markdown.splitlines()) if m]


def read(path: str | Path) -> list[Goal]:
    """The checklist in a file; empty when the file is missing or unreadable."""
    try:
        return parse(Path(path).read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return []
