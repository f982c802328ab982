"""Durable file writes and keeping bad files aside, shared by the lineage and the manifest.

A continuity file is only useful if a kill at any instant leaves either the old whole file
or the new whole file (S11), and a file we cannot read is evidence, not garbage: it is
moved aside next to the original, never overwritten or deleted (S12).
"""

from __future__ import annotations

import logging
import os
import sys
import time
from pathlib import Path

log = logging.getLogger(__name__)

_DEFAULT_MODE = 0o644


def write_atomic(path: str | os.PathLike[str], data: bytes) -> None:
    """Replace `path` with `data` so that a reader or a crash sees the old or the new file, whole.

    Temp file in the same directory, flush + fsync, `os.replace`, then fsync of the directory
    so the rename itself survives a power cut. Raises OSError; the temp file is removed on failure.
    """
    path = Path(path)
    directory = path.parent
    os.makedirs(directory, exist_ok=True)
    try:
        mode = os.stat(path).st_mode & 0o777
    except OSError:
        mode = _DEFAULT_MODE
    import tempfile  # here, not at import: the light commands never need it (issue 34)

    fd, tmp = tempfile.mkstemp(dir=directory, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            if sys.platform != "win32":  # Windows keeps no mode bits but read-only, which mkstemp does not set
                os.fchmod(f.fileno(), mode)  # mkstemp makes 0600; keep what a plain open would give
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    fsync_dir(directory)


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Flush a directory entry change (a rename) to disk; silently skipped where unsupported."""
    try:
        dfd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    except OSError:
        return
    try:
        os.fsync(dfd)
    except OSError:
        pass
    finally:
        os.close(dfd)


def stamp(t: float | None = None) -> str:
    """Local time as `YYYYmmdd-HHMMSS`, the seed's timestamp for archives and marks."""
    return time.strftime("%Y%m%d-%H%M%S", time.localtime(t))


def move_aside(path: str | os.PathLike[str], tag: str = "corrupt", *, expect: os.stat_result | None = None) -> Path | None:
    """Rename `path` to `<name>.<tag>-<YYYYmmdd-HHMMSS>[-N]` beside it; never overwrites; never raises.

    `expect`: the stat of the file that was judged bad; if the path now names a different
    file (another process replaced it meanwhile with a good one), it is left alone.
    Returns the new path, or None if nothing was moved.
    """
    path = Path(path)
    try:
        if expect is not None:
            now = os.stat(path)
            if (now.st_dev, now.st_ino) != (expect.st_dev, expect.st_ino):
                return None
        base = f"{path.name}.{tag}-{stamp()}"
        for n in range(1000):
            dest = path.with_name(base if n == 0 else f"{base}-{n}")
            if _rename_no_clobber(path, dest):
                log.warning("kept unreadable %s aside as %s", path, dest.name)
                return dest
    except FileNotFoundError:
        return None
    except OSError as e:
        log.warning("could not move %s aside: %s", path, e)
    return None


def _rename_no_clobber(src: Path, dest: Path) -> bool:
    """Rename src to dest unless dest exists; False if it does. Raises FileNotFoundError if src is gone."""
    try:
        os.link(src, dest)  # fails if dest exists: no silent overwrite, unlike rename
    except FileExistsError:
        return False
    except FileNotFoundError:
        raise
    except OSError:
        # Filesystems without hard links: check-then-rename (a narrow race, but still no delete).
        if os.path.lexists(dest):
            return False
        os.rename(src, dest)
        return True
    os.unlink(src)
    return True


def free_name(directory: Path, name: str) -> Path:
    """`directory/name`, or `directory/<stem>-N<suffix>` when two archived files share a name."""
    target = directory / name
    n = 1
    while target.exists():
        p = Path(name)
        target = directory / f"{p.stem}-{n}{p.suffix}"
        n += 1
    return target
