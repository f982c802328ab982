"""The wake banner and step headers of S19, in the seed's Chinese and in English."""

from __future__ import annotations

import os
from pathlib import Path

STEP_LABELS = {"en": {"澄清": "clarify", "目标": "goals", "干活": "work"}, "zh": {}}
RULE = "=" * 30


def lang(locale: str | None) -> str:
    """`zh` for Chinese locales (zh, zh-CN, zh_TW.UTF-8 …), else `en` (D4)."""
    return "zh" if (locale or "").lower().startswith("zh") else "en"


def tilde(path: str | os.PathLike) -> str:
    """The path with the home directory shown as `~`."""
    path, home = str(path), str(Path.home())
    return "~" + path[len(home):] if home != "/" and (path == home or path.startswith(home + os.sep)) else path


def kilo(tokens: int) -> str:
    """80200 → `80.2K`."""
    return f"{tokens / 1000:.1f}K"


def banner(locale: str, workspace: str | os.PathLike, goals: int, context: int | None, woke: int) -> str:
    """One line at wake (S19): `目标 N 条` only with a non-empty checklist, context only when readable."""
    if lang(locale) == "zh":
        parts = ["需求已确认"] + ([f"目标 {goals} 条"] if goals else []) + ([f"干活上下文 {kilo(context)}"] if context else [])
        return f"<- 在 {tilde(workspace)} 接上上次  " + " · ".join(parts + [f"第 {woke} 次唤醒"])
    parts = ["requirements confirmed"] + ([f"{goals} goals"] if goals else []) + ([f"work context {kilo(context)}"] if context else [])
    return f"<- resumed in {tilde(workspace)} · " + " · ".join(parts + [f"wake #{woke}"])


def label(locale: str, step: str) -> str:
    """A step's name as shown: the seed's Chinese, or its English label."""
    base, sep, rest = step.partition("#")
    return STEP_LABELS[lang(locale)].get(base, base) + sep + rest


def header(locale: str, step: str, index: int, total: int, woke: int, resumed: bool) -> str:
    """`== 干活 ====…  3/3  <- 接上次 · 第 3 次唤醒` (S19); the tail only when the step resumes."""
    line = f"== {label(locale, step)} {RULE}  {index}/{total}"
    if resumed:
        line += f"  <- 接上次 · 第 {woke} 次唤醒" if lang(locale) == "zh" else f"  <- resumed · wake #{woke}"
    return line
