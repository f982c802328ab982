"""`flower changes` and `flower revert`: what the agents changed here, and putting it back (issue #25)."""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import sys
from pathlib import Path

from ..core.changes import WakeChanges
from ..service import FlowerService
from ..settings import FLAGS
from ..task import open_task
from .args import UsageError, given
from .console import Console, setup_logging
from .exits import EXIT_OK


def _service(args: argparse.Namespace, locale: str) -> FlowerService:
    return open_task(Path.cwd(), locale=locale, given=given(args), labels=FLAGS).service


def counts(added: int | None, removed: int | None) -> str:
    """`+3 -1`, or `binary` when lines cannot be counted."""
    return "binary" if added is None or removed is None else f"+{added} -{removed}"


async def changes_command(args: argparse.Namespace, locale: str) -> int:
    """`flower changes`: one summary per wake, workspace-relative paths, +/- lines against the files now."""
    console = Console(locale, workspace=Path.cwd())
    setup_logging(console)
    svc = _service(args, locale)
    try:
        wakes = await svc.changes()
    finally:
        await svc.close()
    if args.json:
        console.line(json.dumps([dataclasses.asdict(w) for w in wakes], ensure_ascii=False, indent=2))
        return EXIT_OK
    shown = [w for w in wakes if w.files]
    if not shown:
        console.line(console.text("changes_none"))
    for wake in shown:
        console.line(console.text("changes_wake", wake=wake.wake, count=len(wake.files)))
        width = max(len(f.path) for f in wake.files)
        for f in wake.files:
            by = f", {f.agent}" if f.agent else ""  # a subagent's write names it (issue 32)
            console.line(f"  {f.change[0].upper()} {f.path.ljust(width)}  {counts(f.added, f.removed)}  ({f.tool}{by})")
    return EXIT_OK


async def revert_command(args: argparse.Namespace, locale: str) -> int:
    """`flower revert FILE | --wake N`: asks on a terminal; elsewhere it needs `--yes`."""
    console = Console(locale, workspace=Path.cwd())
    setup_logging(console)
    if args.file is None and args.wake is None:
        raise UsageError(console.text("revert_what"))
    svc = _service(args, locale)
    try:
        wakes = await svc.changes()
        planned = _planned(wakes, args.file, args.wake, svc)
        if not args.yes:
            if not (sys.stdin.isatty() and sys.stdout.isatty()):
                raise UsageError(console.text("revert_needs_yes"))
            for path in planned:
                console.line(f"  {path}")
            wake = args.wake if args.wake is not None else next(
                (w.wake for w in reversed(wakes) for f in w.files if f.path in planned), "?")
            sys.stdout.write(console.text("revert_confirm", count=len(planned) or 1, wake=wake))
            sys.stdout.flush()
            answer = await asyncio.to_thread(sys.stdin.readline)
            if answer.strip().lower() not in ("y", "yes", "是"):
                console.line(console.text("revert_kept"))
                return EXIT_OK
        for path in await svc.revert(args.file, args.wake):
            console.line(console.text("revert_done", path=path))
    finally:
        await svc.close()
    return EXIT_OK


def _planned(wakes: list[WakeChanges], file: str | None, wake: int | None, svc: FlowerService) -> list[str]:
    """The paths a revert would restore (for the question; the revert itself decides again under the lock)."""
    rel = svc.change_log.relative(file) if file is not None else None
    if wake is not None:
        return [f.path for w in wakes if w.wake == wake for f in w.files if rel is None or f.path == rel]
    return [rel] if rel is not None and any(f.path == rel for w in wakes for f in w.files) else []
