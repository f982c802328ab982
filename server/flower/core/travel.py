"""The variables that travel with a request to the engine (D11): the client's environment for its wakes.

A window, a terminal and a test each have their own settings and key; the engine that runs their
wakes has whatever environment it was started with. So a request that may start a wake carries
the client's environment, and the engine keeps the variables the agent and the CLI read: the wake
runs with them over the engine's own (the engine's values are only the fallback for names the
request did not send). This is the one rule (issue 33): the editor sends what it has and the
engine filters here. Nothing here is ever logged: the values include API keys.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

PREFIXES = ("ANTHROPIC_", "CLAUDE_", "FLOWER_")
"""Families that travel whole: the model API's, Claude Code's, flower's own (as written: the CLI reads these upper-case)."""
NAMES = frozenset({"PATH", "HOME", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY"})
"""Single variables that travel: where programs and the user's setup are found, and how to reach the network.

Compared in any case: tools read `http_proxy` as well as `HTTP_PROXY`, and on Windows a name is
case-insensitive and `PATH` is usually spelled `Path` (issue 33: the editor's rule matched proxies
in any case, the engine's only in upper and lower case; the editor's was right).
"""


def travels(name: str) -> bool:
    """Whether a variable of this name travels with a request."""
    return name.upper() in NAMES or name.startswith(PREFIXES)


def travelling(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The travelling subset of `env` (default: this process's environment)."""
    env = os.environ if env is None else env
    return {k: v for k, v in env.items() if travels(k)}
