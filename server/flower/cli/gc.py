"""`flower gc`: what the current and the archived tasks hold in flower's store, and deleting archived ones (#26)."""

from __future__ import annotations

import argparse
import sys
import time
import unicodedata
from pathlib import Path

from .. import retention
from ..core.shared import is_postgres_url
from ..core.text import megabytes
from ..core.trust import decide
from ..sessions import Sessions
from .commands import settings_of, store_ready
from .console import Console, setup_logging
from .exits import EXIT_OK
from .keyboard import YES, Keyboard, prompt


def _when(at: float | None) -> str:
    return time.strftime("%Y-%m-%d %H:%M", time.localtime(at)) if at is not None else "-"


def _columns(text: str) -> int:
    """Terminal columns `text` takes: a CJK character takes two."""
    return sum(2 if unicodedata.east_asian_width(c) in "WF" else 1 for c in text)


def _pad(text: str, width: int) -> str:
    return text + " " * max(0, width - _columns(text))


def _table(console: Console, found: retention.Survey) -> None:
    labels = {"current": console.text("gc_current"), "other": console.text("gc_other")}
    names = [labels.get(h.kind, h.name) for h in found.holdings]
    width = max([_columns(console.text("gc_task")), *map(_columns, names)])
    console.line(console.text("gc_header", task=_pad(console.text("gc_task"), width)))
    for name, h in zip(names, found.holdings, strict=True):
        console.line(f"{_pad(name, width)}  {len(h.sessions):>8}  {h.entries:>7}  {megabytes(h.bytes):>6} MB  {_when(h.last_used)}")


async def gc_command(args: argparse.Namespace, locale: str) -> int:
    """List; delete the chosen archives' sessions with `--yes`, or after a yes at a terminal (Enter = no)."""
    console = Console(locale, workspace=Path.cwd())
    setup_logging(console)
    workspace = Path.cwd()
    settings = settings_of(args, workspace, decide(workspace).trusted)
    run_dir = settings.run_dir_path(workspace)
    sessions = Sessions.open(run_dir, store=settings.store, workspace=workspace, project=settings.project)
    await store_ready(sessions, locale)
    try:
        found = await retention.survey(workspace, run_dir, sessions)
        _table(console, found)
        console.line(console.text("gc_store", size=megabytes(found.store_bytes), where=sessions.raw.path))
        chosen = found.collectable(args.older_than[1] if args.older_than else None)
        if not chosen:
            older = console.text("gc_nothing_older", age=args.older_than[0]) if args.older_than else ""
            console.line(console.text("gc_nothing", older=older))
            return EXIT_OK
        which = console.text("gc_older", age=args.older_than[0]) if args.older_than else console.text("gc_every")
        console.line(console.text("gc_would_free", which=which, count=len(chosen), sessions=sum(len(h.sessions) for h in chosen),
                                  entries=sum(h.entries for h in chosen), size=megabytes(sum(h.bytes for h in chosen))))
        if not args.yes:
            if not (sys.stdin.isatty() and sys.stdout.isatty()):
                console.line(console.text("gc_listed_only"))
                return EXIT_OK
            keyboard = Keyboard()
            try:
                answer = await prompt(keyboard, console, console.text("gc_confirm"))
            finally:
                keyboard.close()
            if answer.lower() not in YES:  # Enter is no
                console.line(console.text("gc_kept"))
                return EXIT_OK
        freed = await retention.collect(workspace, run_dir, sessions, chosen)
        console.line(console.text("gc_freed", sessions=freed.sessions, entries=freed.entries, count=len(chosen),
                                  before=megabytes(freed.before), after=megabytes(freed.after)))
        if is_postgres_url(settings.store) and freed.returned < freed.bytes:
            console.line(console.text("gc_postgres_reuse"))
    finally:
        await sessions.close()
    return EXIT_OK
