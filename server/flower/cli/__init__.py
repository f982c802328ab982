"""The `flower` command line: parse input, render the service's events, nothing else (D3).

    flower "task"            first time here: start; afterwards: one more sentence (S1, S15)
    flower                   continue where it stopped (on a terminal: the wake prompt of S28)
    flower --new "task"      archive this task and start another (S28)
    flower once "prompt"     one agent, no workflow, no lineage; --resume SID to continue it (S29)
    flower status            what the next run would resume
    flower log               the task's transcript, paged; --follow prints new entries as they come (issue 34)
    flower trust [DIR]       let this folder's own hooks, env and MCP servers run (untrust takes it back, D10)
    flower changes           what the agents changed, per wake (issue #25)
    flower revert FILE       put a file back as it was before the wake that changed it; --wake N: all of one wake
    flower gc                what each task and archive holds in the store; --yes deletes archived tasks' sessions (#26)
    flower demo              the whole thing offline on the built-in scripted model
    flower --detach "task"   run it in the engine (D11) and return; `flower` here then attaches to the run
    flower ps | stop         the engine's runs; stop the one here
    flower serve             the engine: one per user; --background starts it detached if none runs

Exit codes: 0 done; 1 the run did not finish (the reason is the last line on stderr);
2 bad input; 3 another flower drives this workspace; 70 an unexpected error (one line names it and the log
under the run dir that holds its traceback; nothing was lost, run `flower` again); 130 interrupted (run `flower` again).

Modules: `args` (parsers), `console` (rendering, redacted output), `keyboard` (what a person
types), `commands` (what each command does).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
from collections.abc import Callable, Coroutine
from pathlib import Path
from typing import Any, TextIO, cast

from ..core import crash, host
from ..core.errors import FlowerError, MissingCredentials
from ..core.lock import WorkspaceBusy
from ..core.texts import env_locale, text
from ..core.trust import decide
from ..settings import SettingsError
from .args import (
    UsageError,
    changes_parser,
    demo_parser,
    gc_parser,
    log_parser,
    main_parser,
    once_parser,
    ps_parser,
    revert_parser,
    serve_parser,
    status_parser,
    stop_parser,
    trust_parser,
)
from .commands import (
    flower_command,
    once_command,
    settings_of,
    status_command,
)
from .console import Redacted
from .exits import EXIT_BUSY, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_USAGE

Command = Callable[[argparse.Namespace, str], Coroutine[Any, Any, int]]
COMMANDS = ("once", "status", "log", "changes", "revert", "gc", "demo", "trust", "untrust", "serve", "stop", "ps")


def parse(argv: list[str], locale: str) -> tuple[Command, argparse.Namespace]:
    """Pick the command and parse its arguments (UsageError on bad input)."""
    if argv and argv[0] in COMMANDS:
        command, rest = argv[0], argv[1:]
        if command == "once":
            return once_command, once_parser(locale).parse_intermixed_args(rest)
        if command == "status":
            return status_command, status_parser(locale).parse_args(rest)
        if command == "log":
            from .log import log_command  # here, not at import: it reads the store through the service
            return log_command, log_parser(locale).parse_args(rest)
        if command in ("changes", "revert"):
            from . import changes  # here, not at import: a wake has no use for it (it reads the change records)
            if command == "changes":
                return changes.changes_command, changes_parser(locale).parse_args(rest)
            return changes.revert_command, revert_parser(locale).parse_args(rest)
        if command == "gc":
            from .gc import gc_command  # here, not at import: a wake has no use for it (it reads the store's usage)
            return gc_command, gc_parser(locale).parse_args(rest)
        if command in ("trust", "untrust"):
            from .trust import trust_command
            return trust_command, trust_parser(locale, command == "trust").parse_args(rest)
        if command in ("serve", "stop", "ps"):
            if not host.ENGINE:
                raise FlowerError("engine_unix_only")
            from . import engine
            if command == "stop":
                return engine.stop_command, stop_parser(locale).parse_args(rest)
            if command == "ps":
                return engine.ps_command, ps_parser(locale).parse_args(rest)
            return engine.serve_command, serve_parser(locale).parse_args(rest)
        from ..demo import demo_command
        return demo_command, demo_parser(locale).parse_args(rest)
    return flower_command, main_parser(locale).parse_intermixed_args(argv)


def run(argv: list[str] | None = None) -> int:
    """Run the command line and return its exit code; expected failures are one line, never a traceback."""
    argv = sys.argv[1:] if argv is None else argv
    locale = env_locale()
    try:
        command, args = parse(argv, locale)
        return asyncio.run(command(args, locale))
    except UsageError as exc:
        sys.stderr.write(f"flower: {exc}\n")
        return EXIT_USAGE
    except (SettingsError, MissingCredentials) as exc:  # a bad setting, or no API key: bad input (exit 2), one line naming it
        sys.stderr.write(f"flower: {exc.text(locale)}\n")
        return EXIT_USAGE
    except WorkspaceBusy as exc:
        sys.stderr.write(f"flower: {exc.text(locale)}\n")
        return EXIT_BUSY
    except FlowerError as exc:  # expected: the message says what to do, in the terminal's language (D4)
        sys.stderr.write(f"flower: {exc.text(locale)}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        sys.stdout.write("\n")
        sys.stderr.write(f"flower: {text('interrupted', locale)}\n")
        return EXIT_INTERRUPTED
    except BrokenPipeError as exc:  # `flower gc | head`: the reader left early; as for any Unix tool, nothing to say
        return EXIT_PIPE if _reader_left() else _crashed(exc, argv, locale)
    except Exception as exc:
        return _crashed(exc, argv, locale)


EXIT_PIPE = 128 + 13
"""A shell's code for a command whose output pipe closed: 128 + SIGPIPE (13 on every Unix; Windows has no SIGPIPE to
read it from). Python ignores SIGPIPE, so it is set by hand."""


def _crashed(exc: BaseException, argv: list[str], locale: str) -> int:
    """The last resort: a bug is one line here, its traceback in the run dir's log."""
    sys.stderr.write(f"flower: {crash.caught(exc, crash_dir(argv)).text(locale)}\n")
    return crash.EXIT_CRASH


def _reader_left() -> bool:
    """Whether standard output's reader has gone; if so, it is pointed at /dev/null (the flush at exit stays quiet)."""
    try:  # a pipe whose reader closed polls as an error on its write end
        fd = sys.stdout.fileno()
        gone = host.pipe_reader_gone(fd)
    except (OSError, ValueError):
        return False
    if gone:
        os.dup2(os.open(os.devnull, os.O_WRONLY), fd)
    return gone


def crash_dir(argv: list[str]) -> Path | None:
    """The run dir the command uses (flags, environment, settings file), or None when even that cannot be read."""
    try:
        return settings_of(parse(argv, "en")[1], Path.cwd(), decide(Path.cwd()).trusted).run_dir_path(Path.cwd())
    except (Exception, SystemExit):
        return None


def main() -> None:
    """Console script entry point (`flower`): everything this process prints has API keys removed (D6)."""
    sys.stdout = cast(TextIO, Redacted(sys.stdout))
    sys.stderr = cast(TextIO, Redacted(sys.stderr))
    sys.exit(run())
