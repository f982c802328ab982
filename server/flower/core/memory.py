"""Freed memory handed back to the system: a wake holds a whole session only while it materialises a resume (stores/resume.py)."""

from __future__ import annotations

import ctypes
import functools
import sys
from collections.abc import Callable


@functools.cache
def _trim() -> Callable[[int], int] | None:
    """glibc's `malloc_trim`, or None where there is none (macOS, musl, Windows)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim: Callable[[int], int] | None = getattr(ctypes.CDLL(None), "malloc_trim", None)
    except OSError:
        return None
    return trim


def give_back() -> None:
    """Return the free pages of the C heap to the system (where glibc can); a no-op elsewhere.

    A resume decodes, prunes and writes out the whole session (hundreds of MB of objects for a long one), then frees
    it. CPython hands the freed blocks to malloc, which keeps them mapped: without this the wake's process would hold
    that peak for the hours it then waits on the CLI. ctypes releases the GIL for the call.
    """
    trim = _trim()
    if trim is not None:
        trim(0)
