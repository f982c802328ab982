"""The wake banner and step headers of S19, assembled from the message catalog (core/texts.py)."""

from __future__ import annotations

import os
from pathlib import Path

from .manifest import parse_name
from .texts import text

STEP_KEYS = {"澄清": "step_clarify", "目标": "step_goals", "干活": "step_work"}
"""The flower path's step names (the seed's Chinese) → their catalog entries."""
RULE = "=" * 30


def tilde(path: str | os.PathLike[str]) -> str:
    """The path with the home directory shown as `~`."""
    path, home = str(path), str(Path.home())
    return "~" + path[len(home):] if home != "/" and (path == home or path.startswith(home + os.sep)) else path


def kilo(tokens: int) -> str:
    """80200 → `80.2K`."""
    return f"{tokens / 1000:.1f}K"


def banner(locale: str, workspace: str | os.PathLike[str], goals: int, context: int | None, woke: int) -> str:
    """One line at wake (S19): the goal count only with a non-empty checklist, context only when readable."""
    facts = [text("banner_confirmed", locale)]
    if goals:
        facts.append(text("banner_goals", locale, count=goals))
    if context:
        facts.append(text("banner_context", locale, size=kilo(context)))
    facts.append(text("banner_wake", locale, woke=woke))
    return text("banner", locale, where=tilde(workspace), facts=" · ".join(facts))


def label(locale: str, step: str) -> str:
    """A step run's manifest name (S7) as every front-end shows it, in the UI's language: `干活#round2` → `work · round 2`,
    `干活·判定#1` → `judge · round 1`, `澄清#retry1` → `clarify · retry 1` (zh: `干活 · 第 2 轮`, `判定 · 第 1 轮`); a
    name of no flower step stays itself.

    One style for the terminal (headers, the live line, `flower status`, `ps`, `log`) and the editor (`stepLabel`, the
    progress title): the records keep the seed's names, only this turns them into words (issues 33, 34).
    """
    base, kind, n = parse_name(step)
    if kind in ("judge", "handoff"):
        return text(f"step_{kind}", locale, n=n)
    key = STEP_KEYS.get(base)
    shown = text(key, locale) if key else label(locale, base) if kind != "first" else base
    return text(f"step_{kind}", locale, step=shown, n=n) if kind in ("round", "retry") else shown


def header(locale: str, step: str, index: int, total: int, woke: int, resumed: bool) -> str:
    """`== 干活 ====…  3/3  <- 接上次 · 第 3 次唤醒` (S19); the tail only when the step resumes."""
    line = f"== {label(locale, step)} {RULE}  {index}/{total}"
    return line + "  " + text("header_resumed", locale, woke=woke) if resumed else line
