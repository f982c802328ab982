"""What the command line shows: service events rendered as lines, and every write with API keys removed (D3, D6)."""

from __future__ import annotations

import asyncio
import io
import logging
import os
import sys
import time
import unicodedata
from collections.abc import Mapping
from pathlib import Path
from typing import TextIO

from ..core import texts
from ..core.banner import label
from ..core.events import (
    AssistantText,
    Banner,
    Event,
    Handoff,
    Header,
    Notice,
    Question,
    StepEnded,
    StepStarted,
    ToolCall,
    Verdict,
    Waiting,
)
from ..core.manifest import parse_name
from ..core.redact import redact
from ..core.resilience import endpoint
from ..core.text import clip, tool_arg

SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"
QUIET_S = 1.0
"""The live line shows once the model has been silent this long: a reply arriving at once needs no line (issue 34)."""


def elapsed(seconds: float) -> str:
    """`42s`, `3m05s`, `1h02m`: how long something has lasted, in a live line."""
    s = max(0, int(seconds))
    return f"{s}s" if s < 60 else f"{s // 60}m{s % 60:02d}s" if s < 3600 else f"{s // 3600}h{s % 3600 // 60:02d}m"


def _cells(ch: str) -> int:
    return 2 if unicodedata.east_asian_width(ch) in "WF" else 1


def fit(text: str, columns: int) -> str:
    """`text` cut to fit `columns` terminal cells (a wide CJK character takes two), with `…` where it was cut."""
    widths = [_cells(ch) for ch in text]
    if sum(widths) <= columns:
        return text
    used = 0
    for i, cells in enumerate(widths):
        if used + cells > columns - 1:
            return text[:i] + "…"
        used += cells
    return text


def first_line(text: str | None, width: int = 160) -> str:
    """The first non-empty line of `text`, cut to `width` characters."""
    return clip(next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), ""), width)


def api_host(environ: Mapping[str, str] = os.environ) -> str:
    """`host:port` the agent talks to (the probe's endpoint, S20): what an offline wait waits for."""
    host, port = endpoint(environ)
    return f"{host}:{port}"


class Redacted(io.TextIOBase):
    """A text stream that removes API keys from everything written through it (D6).

    Installed over stdout and stderr for the whole `flower` process, so no line it prints
    (rendered events, log lines, error messages, a traceback) can carry a key.
    """

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream

    def write(self, s: str) -> int:
        """Write `s` with keys replaced; returns len(s), as a caller expects."""
        self.stream.write(redact(s))
        return len(s)

    def flush(self) -> None:
        """Flush the wrapped stream."""
        self.stream.flush()

    def isatty(self) -> bool:
        """Whether the wrapped stream is a terminal."""
        return self.stream.isatty()

    def fileno(self) -> int:
        """The wrapped stream's descriptor."""
        return self.stream.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        """The wrapped stream's encoding."""
        return self.stream.encoding


class Console:
    """Renders service events as lines; on a terminal, colours and a live line during waits."""

    interactive = False
    """Set when a person can answer questions at this terminal."""

    def __init__(self, locale: str, out: TextIO | None = None, info: TextIO | None = None, *,
                 live: bool | None = None, workspace: Path | None = None):
        self.locale = locale
        self.out = out or sys.stdout
        self.info = info or self.out
        self.live = self.out.isatty() if live is None else live
        self.color = self.live and os.environ.get("TERM") != "dumb" and "NO_COLOR" not in os.environ
        self.workspace = workspace
        self.host = api_host()
        self._wait: tuple[float, Waiting] | None = None  # (deadline, event) while a wait is shown live
        self._shown = False  # a live line is on screen
        self._frame = 0
        self._step: str | None = None
        """The step running now (its manifest name), for the live line; None between steps."""
        self._since = time.monotonic()
        """When the model was last heard from: the request in flight has lasted since then."""
        self.asking: str | None = None
        """What a question on the terminal waits for (`approval`, `answer`); the live line then sits below its prompt."""
        self._asked = 0.0

    # -- plumbing --------------------------------------------------------------------------
    def text(self, key: str, **fields: object) -> str:
        """The catalog sentence `key` in this console's locale."""
        return texts.text(key, self.locale, **fields)

    def style(self, text: str, code: str) -> str:
        """`text` in an SGR style on a colour terminal, else as it is."""
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def clear(self) -> None:
        """Remove the live line, if one is shown."""
        if self._shown:
            self.info.write("\r\x1b[2K")
            self._shown = False

    def line(self, text: str, stream: TextIO | None = None) -> None:
        """Print one line (after clearing the live line)."""
        self.clear()
        stream = stream or self.out
        stream.write(text + "\n")
        stream.flush()

    def note(self, text: str) -> None:
        """A line of information (dim on a terminal)."""
        self.line(self.style(text, "2"), self.info)

    def error(self, text: str) -> None:
        """The one-line reason of a failure, on stderr."""
        self.clear()
        sys.stderr.write(f"flower: {text}\n")
        sys.stderr.flush()

    # -- events ----------------------------------------------------------------------------
    def __call__(self, event: Event) -> None:
        """The service listener: one event in, its lines out."""
        if not isinstance(event, Waiting):
            self._wait = None
            self._since = time.monotonic()  # the model (or the step) said something: a new request is in flight
        match event:
            case StepStarted(step=step):
                self._step = step
            case StepEnded():
                self._step = None
        match event:
            case Banner(text=text):
                self.line(self.style(text, "1;32"))
            case Header(text=text):
                self.line(self.style(text, "1"))
            case AssistantText(text=text, step=step) if parse_name(step or "")[1] == "judge":
                # the judge's reasoning (S14): shown, but quieter than the work
                self.note("\n".join("  " + ln for ln in text.rstrip("\n").splitlines()))
            case AssistantText(text=text, parent=str()):  # a subagent's words (issue 32): quieter, under its call
                self.note("\n".join("    " + ln for ln in text.rstrip("\n").splitlines()))
            case AssistantText(text=text):
                self.line(text.rstrip("\n"))
            case ToolCall(name=name, input=data, parent=parent):
                indent = "    ↳" if parent else "  ·"  # a subagent's call sits under its Agent call (issue 32)
                self.line(self.style(f"{indent} {name} {tool_arg(data, limit=100, path=self.relative)}".rstrip(), "36"), self.info)
            case StepEnded(ok=False, step=step, error=error, said=said):
                shown = said.text(self.locale) if said else error  # the terminal's language (D4)
                self.line(self.style(self.text("failed_step", step=step, error=first_line(shown)), "31"), self.info)
            case Verdict(round=n, passed=True):
                self.line(self.style(self.text("verdict_pass", round=n), "1;32"), self.info)
            case Verdict(round=n, reasons=reasons):
                self.line(self.style(self.text("verdict_fail", round=n, reasons=first_line(reasons)), "33"), self.info)
            case Question() if not self.interactive:
                self.note(self.text("nobody"))
            case Handoff(path=path):
                self.note(self.text("handoff", path=self.relative(path)))
            case Notice(text=text):
                self.note(f"· {text}")
            case Waiting(seconds=seconds) if self.live:
                self._wait = (time.monotonic() + seconds, event)
                self.tick()
            case Waiting(seconds=seconds):
                self.note(self.waiting(event, seconds))

    # -- waits -----------------------------------------------------------------------------
    def waiting(self, e: Waiting, left: float) -> str:
        """What a wait waits for, with the time left."""
        seconds = f"{max(0, round(left))}s"
        if e.reason == "offline":  # probes use no attempt: the time offline is what moves (issue 34)
            since = time.time() - e.offline_since if e.offline_since else 0.0
            return self.text("offline", host=self.host, seconds=seconds, down=elapsed(since))
        return self.text("backoff", seconds=seconds, next=e.attempt + 1, max=e.max_attempts, error=first_line(e.error, 100))

    def status_line(self) -> str | None:
        """The live line now: the step, what it waits for and for how long (issue 34); None when there is nothing to say."""
        if self._wait:
            deadline, e = self._wait
            if e.reason == "offline" or time.monotonic() < deadline:
                return self.stepped(self.waiting(e, deadline - time.monotonic()))
            # The backoff is over and the retry is in flight: it waits for the model again, not `retrying in 0s`.
            self._wait, self._since = None, deadline
        quiet = time.monotonic() - self._since
        if self._step is None or quiet < QUIET_S:
            return None
        return self.text("live_model", step=label(self.locale, self._step), seconds=elapsed(quiet))

    # -- a question waiting for the person (issue 34: the live line says what it waits for) ---------------------
    def ask(self, what: str | None) -> None:
        """A question waits for the person from now (`approval`, `answer`), or no longer (None)."""
        if what is None and self.asking and self.live:
            # The cursor is past the answer (on the row below the prompt after Enter) or past the prompt (answered
            # elsewhere): everything from there down is the live line's, never the question's.
            self.info.write("\x1b[0J")
            self.info.flush()
        elif what is not None:
            self.clear()
        self.asking, self._asked = what, time.monotonic()

    def make_room(self, prompt: str) -> None:
        """Scroll now, before `prompt` is written, so a row is free below it: the live line is drawn there in place."""
        if not self.live:
            return
        rows = max(1, -(-sum(_cells(ch) for ch in prompt) // max(1, self.columns())))
        self.out.write("\n" * rows + f"\x1b[{rows}A")

    def asked_line(self) -> str:
        """`work · waiting for your approval · 12s`: the question's step and how long the person has been asked."""
        return self.stepped(self.text(f"live_{self.asking}", seconds=elapsed(time.monotonic() - self._asked)))

    def stepped(self, said: str) -> str:
        """`said` after the step's label (`work · …`), as every live line names its step (issue 34)."""
        return f"{label(self.locale, self._step)} · {said}" if self._step else said

    def _tick_below(self) -> None:
        # Saved and restored around the draw: the cursor goes back where the person types; the prompt's row and
        # what they typed are above the row drawn (CSI E: the next row, which make_room left free), never touched.
        self._frame = (self._frame + 1) % len(SPINNER)
        line = fit(f"{SPINNER[self._frame]} {self.asked_line()}", self.columns() - 1)
        self.info.write("\x1b7\x1b[0J\x1b[1E\x1b[2K" + self.style(line, "2") + "\x1b8")
        self.info.flush()

    def tick(self) -> None:
        """Redraw the live line (a spinner, the step, what it waits for and how long); below a question's prompt."""
        if self.asking and self.live:
            self._tick_below()
            return
        line = None if self.asking or not self.live else self.status_line()
        if line is None:
            self.clear()
            return
        self._frame = (self._frame + 1) % len(SPINNER)
        # One row, never more: a line that wrapped would leave its first row behind at every redraw (issue 34).
        line = fit(f"{SPINNER[self._frame]} {line}", self.columns() - 1)
        self.info.write("\r\x1b[2K" + self.style(line, "33" if self._wait else "2"))
        self.info.flush()
        self._shown = True

    def columns(self) -> int:
        """The terminal's width now (it may have been resized); 80 when it cannot be read."""
        try:
            return os.get_terminal_size(self.info.fileno()).columns
        except (OSError, ValueError, io.UnsupportedOperation):
            return 80

    async def ticker(self) -> None:
        """Keep the live line moving while the run lasts."""
        while True:
            await asyncio.sleep(0.1)
            self.tick()

    def relative(self, path: str) -> str:
        """A path under the workspace shown relative to it."""
        if self.workspace:
            try:
                return str(Path(path).relative_to(self.workspace))
            except ValueError:
                pass
        return path


def setup_logging(console: Console) -> None:
    """Warnings of flower's own modules (a corrupt lineage kept aside, an unwritable file) as `flower: …` lines."""

    class ToConsole(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            console.error(redact(record.getMessage()))

    log = logging.getLogger("flower")
    log.handlers[:] = [ToConsole(logging.WARNING)]
    log.setLevel(logging.WARNING)
    log.propagate = False
