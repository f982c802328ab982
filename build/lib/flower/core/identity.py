"""The workspace identity a shared store keys a task by (D9): git remote + path in the repository, else the absolute path.

Two clones of one repository, at different paths on different machines, have one identity; the CLI's local
project key (from the path) differs, and the shared store maps it to this identity both ways.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

_SCP = re.compile(r"^(?:[^@/]+@)?(?P<host>[^:/]+):(?P<path>(?!//).+)$")
"""`git@host:team/repo.git`, git's scp-like form."""


def normalize_remote(url: str) -> str:
    """`host/path` of a git remote URL, the same for its https, ssh and scp-like forms; no user, password or `.git`."""
    url = url.strip()
    scp = _SCP.match(url) if "://" not in url else None
    if scp:
        host, path = scp.group("host"), scp.group("path")
    else:
        rest = url.split("://", 1)[-1]
        netloc, _, path = rest.partition("/")
        host = netloc.rsplit("@", 1)[-1]  # credentials never enter the identity (D6)
        host = re.sub(r":\d+$", "", host)
    path = path.strip("/")
    if path.endswith(".git"):
        path = path[:-4]
    return f"{host.lower()}/{path}" if host else path


def _git(workspace: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", "-C", str(workspace), *args], capture_output=True, text=True, timeout=10,
                              env={**os.environ, "GIT_TERMINAL_PROMPT": "0"})
    except (OSError, subprocess.SubprocessError):
        return None  # no git here: the path is the identity
    return done.stdout.strip() if done.returncode == 0 and done.stdout.strip() else None


def workspace_identity(workspace: str | os.PathLike[str], project: str | None = None) -> str:
    """`project` if given; else `<remote host/path>[/<path in repo>]` of the git remote (origin first); else the absolute path."""
    if project and project.strip():
        return project.strip()
    path = Path(os.path.abspath(workspace))
    top = _git(path, "rev-parse", "--show-toplevel")
    remotes = (_git(path, "remote") or "").split()
    if top and remotes:
        name = "origin" if "origin" in remotes else sorted(remotes)[0]
        url = _git(path, "remote", "get-url", name)
        if url:
            inside = os.path.relpath(path.resolve(), Path(top).resolve())
            remote = normalize_remote(url)
            return remote if inside == "." else f"{remote}/{Path(inside).as_posix()}"
    return str(path)
