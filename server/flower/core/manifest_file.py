"""`<run_dir>/manifest.json` on disk: one JSON row a line, appended, read from where the last read stopped (issue 35).

Until issue 35 the file was one JSON list that every write read, merged and replaced whole (temp file, fsync,
rename) on the event loop: a write cost the whole task's rows, twice a round. Now a write appends only the rows that
changed, each line a row with its writer's `run` and its `slot` (its place in that writer's list), under the same
sidecar lock, with one fsync; a reader folds the lines: the newest line of a (run, slot) is that row, and rows come
in the order their writers first wrote, each writer's in slot order (S8's meaning, kept). A reader keeps its fold
and reads only the bytes appended since, so neither side's cost grows with the task.

Crash safety (issue 31): a kill at any instant leaves every line written before it whole, and at worst the start of
one more line without its newline (a torn line), which no reader counts and the next writer cuts off before it
appends; a failed write (a full disk) cuts its own part off again. A line that is not JSON anywhere else means the
file is not a manifest: it counts as empty and the next write keeps it aside (never overwritten), as before. A file
in the older form (a JSON list) is read as it is, and the next write turns it into lines in one atomic replace.
"""

from __future__ import annotations

import json
import logging
import os
import threading
from collections.abc import Hashable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .durable import fsync_dir, move_aside, write_atomic

log = logging.getLogger(__name__)

SLOT = "slot"
"""The key a line adds to its row: the row's index in its writer's list (its `run`); not part of the row read back."""
_CHECK = 64
"""Bytes before the read offset kept to see, at the next read, that the file was appended to and not rewritten."""
_BINARY = getattr(os, "O_BINARY", 0)
"""Windows: no newline translation."""


@dataclass
class _Fold:
    """What one reader has made of the file so far."""

    ident: tuple[int, int] | None = None
    """(st_dev, st_ino) of the file read; another one is read from its start."""
    offset: int = 0
    """Bytes read and folded: always the end of a whole line (or of a whole row written without its newline)."""
    check: bytes = b""
    """The last bytes before `offset`, as read: a file rewritten in place (shorter, or its last row changed) is read
    again from its start. flower never does that; an edit by hand that keeps both the size and the end is seen by a
    reader that starts afresh (another process, or this one once the file is replaced)."""
    groups: dict[Hashable, dict[int, Any]] = field(default_factory=dict)
    """A writer (its run) or a line standing alone → slot → row, each in the order first seen."""
    whole: tuple[int, int] | None = None
    """(size, mtime_ns) of a file read whole (the older form, or corrupt): read again only when it changes."""
    legacy: bool = False
    """The file is in the older form, a JSON list."""
    corrupt: os.stat_result | None = None
    """The file as it was read when a line of it was not JSON: no rows, and the next write keeps it aside."""
    torn: int = 0
    """Bytes after `offset` that start a line but end none: a write cut off (or one under way), not counted."""
    unterminated: bool = False
    """The file ends with a whole row and no newline (written by hand): a write adds the newline first."""
    rows: list[Any] | None = None
    """The folded rows, flattened; kept up to date by what is appended (a change costs its rows, issue 35), or None
    until the next `rows()` when a change was not at the end (a new slot of an earlier writer, the older form)."""
    places: dict[tuple[Hashable, int], int] = field(default_factory=dict)
    """(group, slot) → its index in `rows`, so a row written again replaces its place there."""


class ManifestFile:
    """One manifest.json: `rows()` reads it incrementally, `append()` adds rows (its caller holds the sidecar lock); thread-safe."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fold = _Fold()
        self._mutex = threading.Lock()

    def rows(self) -> list[Any]:
        """Every row of every writer (a non-object too, as the older form's list could hold); [] when missing or corrupt.

        The rows are the fold's own objects, handed out again by later reads (so status parses each once): never modify them.
        """
        with self._mutex:
            fold = self._read()
            if fold.corrupt is not None:
                log.warning("%s is not a valid manifest", self.path)
                return []
            if fold.rows is None:
                fold.places = {(key, slot): i for i, (key, slot) in
                               enumerate((key, slot) for key, group in fold.groups.items() for slot in group)}
                fold.rows = [row for group in fold.groups.values() for row in group.values()]
            return list(fold.rows)

    def valid(self) -> bool:
        """False when the file is there and is not a manifest (a line that is not JSON, an older list that does not parse)."""
        with self._mutex:
            return self._read().corrupt is None

    def append(self, run: str, rows: Iterable[tuple[int, dict[str, Any]]]) -> None:
        """Append writer `run`'s rows at their slots with one fsync; raises OSError. The caller holds the sidecar lock.

        First a corrupt file is kept aside (raising if it cannot be: it is never overwritten), a file in the older form
        becomes lines in the atomic replace that adds these rows, and a torn last line is cut off.
        """
        lines = b"".join(_line(run, slot, row) for slot, row in rows)
        if not lines:
            return
        with self._mutex:
            fold = self._read()
            if fold.corrupt is not None:
                log.warning("%s is not a valid manifest; keeping it aside and starting a new one", self.path)
                if move_aside(self.path, expect=fold.corrupt) is None and self.path.exists():
                    raise OSError(f"cannot move corrupt {self.path} aside; not overwriting it")
                fold = self._fold = _Fold()
            if fold.legacy:
                older = [row for group in fold.groups.values() for row in group.values()]
                write_atomic(self.path, b"".join(map(_json_line, older)) + lines)
                log.info("%s: its %d rows in the older form (a JSON list) are lines now (issue 35)", self.path, len(older))
                self._fold = _Fold()
                return
            self._append(fold, lines)

    def _append(self, fold: _Fold, lines: bytes) -> None:
        fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | _BINARY, 0o644)
        try:
            st = os.fstat(fd)
            if fold.ident not in (None, (st.st_dev, st.st_ino)):
                raise OSError(f"{self.path} was replaced while its lock was held")  # nothing of flower's does that
            size = st.st_size
            if fold.torn:
                if size != fold.offset + fold.torn:
                    raise OSError(f"{self.path} changed while its lock was held")
                log.warning("%s: a write cut off left %d bytes of a line; cut off before appending", self.path, fold.torn)
                os.ftruncate(fd, fold.offset)
                size = fold.offset
            data = (b"\n" if fold.unterminated else b"") + lines
            try:
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view):]
                os.fsync(fd)
            except BaseException:
                try:  # a full disk: no half line is left behind
                    os.ftruncate(fd, size)
                except OSError:
                    pass
                raise
        finally:
            os.close(fd)
        if size == 0:
            fsync_dir(self.path.parent)  # a new file: its name survives a power cut too

    def _read(self) -> _Fold:
        """The fold brought up to the file's end: from where the last read stopped, or from the start of another file."""
        try:
            fd = os.open(self.path, os.O_RDONLY | _BINARY)
        except FileNotFoundError:
            self._fold = _Fold()
            return self._fold
        try:
            st = os.fstat(fd)
            fold, ident = self._fold, (st.st_dev, st.st_ino)
            if fold.ident == ident and fold.whole is not None and fold.whole == (st.st_size, st.st_mtime_ns):
                return fold
            if fold.ident != ident or fold.whole is not None or st.st_size < fold.offset or \
                    _pread(fd, len(fold.check), fold.offset - len(fold.check)) != fold.check:
                fold = self._fold = _Fold(ident=ident)
            data = _pread(fd, st.st_size - fold.offset, fold.offset)
        finally:
            os.close(fd)
        if fold.offset == 0 and data.lstrip()[:1] == b"[":
            _fold_list(fold, data, st)
        else:
            _fold_lines(fold, data, st)
        return fold


def _fold_list(fold: _Fold, data: bytes, st: os.stat_result) -> None:
    """The older form: one JSON list, every element standing alone in file order."""
    fold.whole, fold.legacy, fold.rows = (st.st_size, st.st_mtime_ns), True, None
    try:
        rows = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        rows = None
    if isinstance(rows, list):
        fold.groups = {("line", i): {0: row} for i, row in enumerate(rows)}
    else:
        fold.corrupt = st


def _fold_lines(fold: _Fold, data: bytes, st: os.stat_result) -> None:
    """Fold the lines appended since the last read; a torn last line waits for the next read."""
    if not data:
        fold.torn = 0
        return
    end = data.rfind(b"\n") + 1
    at = fold.offset
    for line in data[:end].split(b"\n")[:-1]:
        if line.strip():
            value = _parse(line)
            if value is _BAD:
                fold.corrupt, fold.whole = st, (st.st_size, st.st_mtime_ns)
                return
            _put(fold, value, at)
        at += len(line) + 1
    rest = data[end:]
    fold.torn, fold.unterminated = 0, False
    if rest.strip():
        value = _parse(rest)
        if isinstance(value, dict):  # a whole row with no newline after it: a person's edit, not a cut
            _put(fold, value, at)
            end, fold.unterminated = len(data), True
        elif rest[:2] == b'{"'[:len(rest[:2])]:  # how every line flower writes starts: a cut-off write
            fold.torn = len(rest)
        else:
            fold.corrupt, fold.whole = st, (st.st_size, st.st_mtime_ns)
            return
    elif rest:
        end = len(data)  # blanks at the end
    if end:
        fold.offset += end
        fold.check = (fold.check + data[:end])[-_CHECK:]


_BAD = object()
"""A line that is not JSON."""


def _parse(line: bytes) -> Any:
    try:
        return json.loads(line.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return _BAD


def _put(fold: _Fold, value: Any, at: int) -> None:
    """Fold one line in: a row with its writer's run and slot replaces that slot's row; anything else stands alone."""
    key: Hashable = ("line", at)
    slot = 0
    if isinstance(value, dict):
        given, run = value.get(SLOT), value.get("run")
        if isinstance(given, int) and not isinstance(given, bool) and isinstance(run, str):
            del value[SLOT]
            key, slot = ("run", run), given
    group = fold.groups.setdefault(key, {})
    group[slot] = value
    if fold.rows is None:
        return
    # The flattened rows follow: a row written again takes its place; a new one of the last writer (the usual
    # case: the current wake's) goes at the end; a new one of an earlier writer moves the rest, read whole next time.
    place = fold.places.get((key, slot))
    if place is not None:
        fold.rows[place] = value
    elif next(reversed(fold.groups)) == key:
        fold.places[(key, slot)] = len(fold.rows)
        fold.rows.append(value)
    else:
        fold.rows = None


def _pread(fd: int, n: int, at: int) -> bytes:
    """`n` bytes at offset `at` (fewer at the end); portable, unlike os.pread. The descriptor is this thread's own."""
    os.lseek(fd, at, os.SEEK_SET)
    chunks: list[bytes] = []
    while n > 0:
        chunk = os.read(fd, n)
        if not chunk:
            break
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def _line(run: str, slot: int, row: dict[str, Any]) -> bytes:
    return _json_line({**row, "run": run, SLOT: slot})


def _json_line(value: Any) -> bytes:
    return (json.dumps(value, ensure_ascii=False, default=str) + "\n").encode()
