"""The commands that speak to the engine (D11): `flower serve`, and the terminal's side of a run the engine holds."""

from __future__ import annotations

import argparse
import sys

from .args import UsageError
from .commands import EXIT_FAILED, EXIT_OK, EXIT_USAGE


async def serve_command(args: argparse.Namespace, locale: str) -> int:
    """`flower serve`: the engine in this process; `--background`: make sure one runs, print its socket, return."""
    from ..engine.engine import Engine, EngineRunning
    from ..engine.place import PlaceError, socket_path
    from ..engine.start import StartError, ensure

    try:
        sock = socket_path()
    except RuntimeError as exc:  # no home directory to put it in
        raise UsageError(f"no place for the engine's socket ({exc}); set FLOWER_ENGINE to a socket path") from None
    if args.background:
        try:
            running, note = await ensure(args.idle, locale, sock)
        except (StartError, PlaceError) as exc:
            sys.stderr.write(f"flower: {exc}\n")
            return EXIT_FAILED
        if note:
            sys.stderr.write(f"flower: {note}\n")
        sys.stdout.write(f"{running.sock}\n")
        return EXIT_OK
    from ..lsp.__main__ import log_to_stderr

    log_to_stderr(args.log_level)
    try:
        return await Engine(sock, args.idle if args.idle is not None else default_idle()).serve()
    except EngineRunning as exc:
        sys.stderr.write(f"flower: {exc}\n")
        return EXIT_FAILED
    except (PlaceError, OSError) as exc:
        sys.stderr.write(f"flower: cannot serve at {sock}: {exc}\n")
        return EXIT_USAGE


def default_idle() -> float:
    """`FLOWER_ENGINE_IDLE` seconds if set to a number > 0, else 600."""
    import os

    from ..engine.engine import IDLE

    try:
        value = float(os.environ.get("FLOWER_ENGINE_IDLE", ""))
    except ValueError:
        return IDLE
    return value if value > 0 else IDLE
