"""A workspace's project key: the folder name the Claude Code CLI files its sessions under (~/.claude/projects/<key>).

The SDK's `project_key_for_directory` gives the same key; it is rebuilt here so that the commands that only read a
task's records (`flower status`, `changes`, `gc`) need not import the SDK for it (issue 34). tests/unit/test_projects.py
compares the two on many paths, so a change of the SDK's rule fails a test instead of orphaning stored sessions.
"""

from __future__ import annotations

import os
import re
import unicodedata

MAX_KEY = 200
"""A longer key is cut to this many characters and given a hash of the whole path, as the CLI does."""
_NOT_ALNUM = re.compile(r"[^a-zA-Z0-9]")


def project_key(workspace: str | os.PathLike[str]) -> str:
    """The project key of a workspace: sessions are stored under it (S12: the path is the key)."""
    path = os.path.abspath(workspace)
    try:
        path = os.path.realpath(path)  # a symlinked folder is its target's project, as the CLI sees it
    except OSError:
        pass
    path = unicodedata.normalize("NFC", path)  # one key however the file system spells it (macOS decomposes)
    key = _NOT_ALNUM.sub("-", path)
    return key if len(key) <= MAX_KEY else f"{key[:MAX_KEY]}-{_hash36(path)}"


def _hash36(text: str) -> str:
    """The CLI's 32-bit string hash (JavaScript's `h = (h << 5) - h + c | 0`), its magnitude in base 36."""
    h = 0
    for c in text:
        h = (h * 31 + ord(c)) & 0xFFFFFFFF
    n = abs(h - (1 << 32) if h >= 1 << 31 else h)
    digits = ""
    while True:
        n, d = divmod(n, 36)
        digits = "0123456789abcdefghijklmnopqrstuvwxyz"[d] + digits
        if not n:
            return digits
