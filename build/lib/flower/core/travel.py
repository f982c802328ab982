"""The variables that travel with a request to the engine (D11): the client's environment for its wakes.

A window, a terminal and a test each have their own settings and key; the engine that runs their
wakes has whatever environment it was started with. So a request that may start a wake carries
the variables the agent and the CLI read, and the wake runs with them over the engine's own
(the engine's values are only the fallback for names the request did not send). Nothing here is
ever logged: the values include API keys.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

PREFIXES = ("ANTHROPIC_", "CLAUDE_", "FLOWER_")
"""Families that travel whole: the model API's, Claude Code's, flower's own."""
NAMES = frozenset({"PATH", "HOME", "HTTP_PROXY", "HTTPS_PROXY", "NO_PROXY", "ALL_PROXY",
                   "http_proxy", "https_proxy", "no_proxy", "all_proxy"})
"""Single variables that travel: where programs and the user's setup are found, and how to reach the network."""


def travels(name: str) -> bool:
    """Whether a variable of this name travels with a request."""
    return name in NAMES or name.startswith(PREFIXES)


def travelling(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """The travelling subset of `env` (default: this process's environment)."""
    env = os.environ if env is None else env
    return {k: v for k, v in env.items() if travels(k)}
