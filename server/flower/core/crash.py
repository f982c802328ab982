"""The last resort: an unexpected exception becomes one line for the person and a full traceback in a log file.

No traceback ever reaches a person's terminal or editor (the brief's "bad input" rule): front-ends catch what no one
expected, call `record` to keep the traceback under the run dir (`<run_dir>/logs/crash.log`, API keys removed, D6),
and show the one line of `caught(exc, run_dir)`. Nothing is lost by a crash: the lineage is written the moment a session id arrives (S11),
so running flower again continues where it stopped.
"""

from __future__ import annotations

import os
import time
import traceback
from pathlib import Path

from . import host
from .errors import FlowerError
from .redact import redact
from .text import clip

EXIT_CRASH = 70
"""The exit code of a process stopped by an unexpected exception (sysexits' EX_SOFTWARE)."""
CRASH_LOG = Path("logs") / "crash.log"
"""Under the run dir: every crash's traceback, appended, newest last."""


def record(exc: BaseException, run_dir: str | os.PathLike[str] | None) -> Path | None:
    """Append `exc`'s traceback to `<run_dir>/logs/crash.log` (else a file in the temp dir); its path, or None if no disk took it."""
    entry = (f"==== {time.strftime('%Y-%m-%d %H:%M:%S')} pid {os.getpid()}\n"
             + redact("".join(traceback.format_exception(exc))) + "\n")
    import tempfile  # here, not at import: the light commands never need it (issue 34)

    places = [Path(run_dir) / CRASH_LOG] if run_dir is not None else []
    places.append(Path(tempfile.gettempdir()) / f"flower-crash-{host.user_id()}.log")
    for path in places:
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            with open(path, "a", encoding="utf-8") as f:
                f.write(entry)
            return path
        except OSError:
            continue
    return None


class Crash(FlowerError):
    """An unexpected exception, recorded: its one line (`crash`, or `crash_editor` for the editor) and its log's path."""

    def __init__(self, exc: BaseException, log: Path | None, key: str = "crash") -> None:
        what = clip(" ".join(f"{type(exc).__name__}: {exc}".split()), 200)
        super().__init__(key, what=redact(what), log=str(log) if log is not None else "-")
        self.log = log


def caught(exc: BaseException, run_dir: str | os.PathLike[str] | None, key: str = "crash") -> Crash:
    """Record `exc`'s traceback (`record`) and return what to tell the person: what failed, where the log is,
    that nothing was lost and how to continue."""
    return Crash(exc, record(exc, run_dir), key)
