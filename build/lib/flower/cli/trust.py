"""Trust on the command line: `flower trust|untrust [DIR]`, and the one question a first run in an untrusted folder asks (D10)."""

from __future__ import annotations

import argparse
import shlex
import sys
from pathlib import Path

from ..core import trust
from ..core.trust import Trust
from .args import UsageError
from .console import Console
from .keyboard import YES, Keyboard, prompt


async def settle(workspace: Path, console: Console, keyboard: Keyboard | None) -> Trust:
    """The folder's trust for this run: asked once on a terminal when the folder has code of its own, else said in one line."""
    decided = trust.decide(workspace)
    found = [] if decided.trusted else trust.inventory(workspace)
    if not found:  # trusted, or nothing of its own that would run: nothing to say
        return decided
    if keyboard is not None and not decided.asked:
        console.line(console.text("trust_found", found="; ".join(found)))
        answer = await prompt(keyboard, console, console.text("trust_ask"))
        yes = answer.strip().lower() in YES
        record = trust.remember(workspace, yes)  # Enter is no, and no is remembered too: the question comes once
        if yes:
            console.note(console.text("trust_yes", folder=trust.real(workspace), record=record))
            return trust.decide(workspace)
    # On stderr, so it shows even when the output is piped away: skipped code is a fact the person must see.
    console.line(console.style(console.text("trust_skipped", found="; ".join(found), folder=shlex.quote(str(workspace))), "33"),
                 sys.stderr)
    return decided


async def trust_command(args: argparse.Namespace, locale: str) -> int:
    """`flower trust [DIR]` / `flower untrust [DIR]`: record the person's answer for a folder (default: here)."""
    folder = Path(args.dir or ".").absolute()
    console = Console(locale, workspace=Path.cwd())
    if not folder.is_dir():
        raise UsageError(console.text("trust_not_a_folder", folder=folder))
    record = trust.remember(folder, args.yes)
    console.line(console.text("trust_yes" if args.yes else "trust_no", folder=trust.real(folder), record=record))
    return 0
