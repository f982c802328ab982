"""`python -m flower.lsp`: the flower language server on stdio, or on 127.0.0.1 with `--tcp` for debugging.

Exit codes: 0 after `shutdown` + `exit` (or end of input), 1 `exit` without `shutdown` (LSP), 70 an unexpected error
(one line on stderr names the log file holding its traceback; the next server's wake resumes, core/crash.py).
"""

from __future__ import annotations

import argparse
import logging
import sys
from typing import TextIO

LINE_LIMIT = 8000
"""Longest log line written to stderr, in characters."""


def main(argv: list[str] | None = None) -> int:
    """Parse the command line and serve until the editor says exit."""
    parser = argparse.ArgumentParser(prog="python -m flower.lsp", description=__doc__)
    parser.add_argument("--tcp", action="store_true", help="listen on 127.0.0.1 instead of stdio (for debugging)")
    parser.add_argument("--port", type=int, default=2087, help="TCP port with --tcp (default 2087)")
    parser.add_argument("--log-level", default="WARNING", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                        help="log level on stderr (default WARNING; logs never carry API keys, D6)")
    parser.add_argument("--watch-loop", action="store_true",
                        help="measure event-loop stalls: warn on each over 50 ms, summary on stderr at shutdown")
    args = parser.parse_args(argv)
    log_to_stderr(args.log_level)

    from .framing import serve_stdio
    from .server import LoopWatch, server  # after logging is set up

    if args.watch_loop:
        server.loop_watch = LoopWatch()
    try:
        if args.tcp:
            server.start_tcp("127.0.0.1", args.port)  # D6: loopback only
            return 0
        return serve_stdio(server)  # resyncs after a bad frame; exit's code as LSP says
    except Exception as exc:  # the last resort: one line on stderr (the editor's log), the traceback in a file
        from ..core import crash
        folder = next(iter(server.folders.values()), None)  # the log goes under a folder's run dir when there is one
        error = crash.caught(exc, folder.svc.run_dir if folder is not None else None, "crash_editor")
        logging.getLogger("flower").error("%s", error.text(server.locale))
        return crash.EXIT_CRASH


def log_to_stderr(level: str, stream: TextIO | None = None) -> None:
    """Log lines at `level` and up to stderr (or `stream`: the engine's log file, D11), redacted and cut."""
    from ..core.redact import redact
    from ..core.text import clip

    class Redacting(logging.Formatter):
        """D6: whatever a log line quotes (payloads at DEBUG, errors), API keys never reach the log.

        Lines are also cut at LINE_LIMIT characters: a reader of stderr that takes lines (an editor's
        output channel, pytest-lsp's forwarder with its 64 KiB limit) must never choke on one.
        """

        def format(self, record: logging.LogRecord) -> str:
            line: str = redact(super().format(record))
            return clip(line, LINE_LIMIT, count=True)

    handler = logging.StreamHandler(stream or sys.stderr)
    handler.setLevel(level)
    handler.setFormatter(Redacting("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    logging.basicConfig(level=level, handlers=[handler])
    if level != "DEBUG":
        logging.getLogger("pygls").setLevel(max(logging.WARNING, logging.getLevelName(level)))
    # asyncio's DEBUG lines log every selector event.
    logging.getLogger("asyncio").setLevel(max(logging.INFO, logging.getLevelName(level)))


if __name__ == "__main__":
    sys.exit(main())
