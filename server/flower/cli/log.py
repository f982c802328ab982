"""`flower log`: the task's stored transcript in the terminal, oldest first, paged; `--follow` prints new entries live."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import IO

from ..core.banner import RULE, label
from ..history import History, Item
from ..settings import FLAGS
from .args import given
from .console import Console, first_line, setup_logging
from .exits import EXIT_OK

USER_LINES = 3
"""A user entry's lines shown; the rest is counted."""
PAGE = 500
"""Entries read from the store at a time, newest first."""
FOLLOW_S = 1.0
"""How often `--follow` asks the store for entries newer than the last one printed."""
PAGER = "less -R -F -X"
"""The pager on a terminal when $PAGER is not set: colours kept, no pager for a screenful, the screen left as it was."""


def lines_of(items: list[Item], console: Console, step: str | None) -> Iterator[str]:
    """The lines a person reads for these items; a header whenever the step changes from `step`."""
    for item in items:
        if item.step != step and item.step is not None:
            step = item.step
            yield console.style(f"== {label(console.locale, step)} {RULE}", "1")
        pad = "    " if item.parent else ""  # a subagent's entries sit under its Agent call (issue 32)
        if item.kind == "tool":
            yield console.style(f"{pad}  · {item.text}", "36")
        elif item.kind == "result" and item.denied:  # a denial is no output: marked as the editor marks it (issue 34)
            yield console.style(f"{pad}  " + console.text("log_denied", reason=first_line(item.text, 100)), "31")
        elif item.kind == "result":
            count = len(item.text.splitlines())
            more = " · " + console.text("log_result_lines", n=count) if count > 1 else ""
            yield console.style(f"{pad}  ← {first_line(item.text, 100)}{more}", "2")
        elif item.role == "user":  # flower's own prompts are long (the judge's holds the checklist): their start
            said = item.text.strip().splitlines() or [""]
            yield from (console.style(f"{pad}> {ln}", "1") for ln in said[:USER_LINES])
            if len(said) > USER_LINES:
                yield console.style(f"{pad}>  " + console.text("log_more_lines", n=len(said) - USER_LINES), "2")
        else:
            yield from (pad + ln for ln in item.text.rstrip("\n").splitlines())


async def newest(history: History, after: int, limit: int | None) -> list[Item]:
    """The entries above seq `after` (at most the newest `limit`), oldest first; a page of the store at a time."""
    out: list[list[Item]] = []
    before: int | None = None
    kept = 0
    while limit is None or kept < limit:
        items, before, _ = await history.read(None, before, PAGE)
        fresh = [i for i in items if i.seq > after]
        out.append(fresh)
        kept += len(fresh)
        if before is None or len(fresh) < len(items):
            break
    found = [i for page in reversed(out) for i in page]
    return await history.nest(found[-limit:] if limit is not None else found)


def _pager(console: Console) -> subprocess.Popen[str] | None:
    """A pager for a terminal's reader, or None (piped output, or no pager to run)."""
    if not console.out.isatty():
        return None
    command = shlex.split(os.environ.get("PAGER") or PAGER)
    if not command or shutil.which(command[0]) is None:
        return None
    return subprocess.Popen(command, stdin=subprocess.PIPE, text=True, encoding="utf-8")


async def log_command(args: argparse.Namespace, locale: str) -> int:
    """`flower log [-n N | --all] [--follow]`: the transcript of the task here, as the editor's Transcript view shows it."""
    from ..task import open_task

    console = Console(locale, workspace=Path.cwd())
    setup_logging(console)
    task = open_task(Path.cwd(), locale=locale, given=given(args), labels=FLAGS)  # the one opener (issue 33)
    history = task.history
    try:
        items = await newest(history, 0, None if args.all else args.lines)
        if not items and not args.follow:
            console.line(console.text("log_empty"))
            return EXIT_OK
        pager = None if args.follow else _pager(console)
        out: IO[str] = pager.stdin if pager is not None and pager.stdin is not None else console.out
        try:
            for line in lines_of(items, console, None):
                out.write(line + "\n")
        except BrokenPipeError:  # the person quit the pager early
            pass
        finally:
            if pager is not None:
                with contextlib.suppress(BrokenPipeError):  # the pager closed first
                    out.close()
                await asyncio.to_thread(pager.wait)
        step = items[-1].step if items else None
        seen = items[-1].seq if items else 0
        while args.follow:  # until Ctrl-C, as `tail -f`
            await asyncio.sleep(FOLLOW_S)
            if await history.latest_seq() <= seen:
                continue
            fresh = await newest(history, seen, None)
            for line in lines_of(fresh, console, step):
                console.line(line)
            if fresh:
                step, seen = fresh[-1].step or step, fresh[-1].seq
        return EXIT_OK
    finally:
        await task.close()


if sys.platform == "win32":  # no `less` by default: print straight to the console
    PAGER = "more"
