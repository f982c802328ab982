"""D6: no API key leaves the process — one redaction for every exit (wire, terminal, logs, files on disk)."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any, overload

from .text import clip

SECRET_ENV = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "CLAUDE_CODE_OAUTH_TOKEN", "AWS_SECRET_ACCESS_KEY",
              "AWS_SESSION_TOKEN", "AWS_BEARER_TOKEN_BEDROCK")
"""Env vars whose values are credentials."""
REDACTED = "[redacted]"
TOOL_INPUT_LIMIT = 4000
"""Longest string inside a tool input that is passed on whole; longer ones are cut (`cut`)."""

_KEY_SHAPE = re.compile(r"sk-ant-[A-Za-z0-9_\-]{6,}")
_HELD: set[str] = set()
"""Credential values that arrived with a client's request (the engine, D11), redacted like this process's own."""


def hold_secrets(env: Mapping[str, str]) -> None:
    """Redact from now on the credential values in `env` (a request's travelling variables), wherever they appear."""
    _HELD.update(v for k in SECRET_ENV if len(v := env.get(k, "")) >= 8 and not _KEY_SHAPE.fullmatch(v))


def _secrets() -> list[str]:
    """This process's credential values not already caught by their `sk-ant-…` shape, longest first.

    Shaped ones are left to the one `sk-ant-` scan, so the usual case costs a single substring search.
    """
    values = {v for k in SECRET_ENV if len(v := os.environ.get(k, "")) >= 8 and not _KEY_SHAPE.fullmatch(v)} | _HELD
    return sorted(values, key=len, reverse=True)


@overload
def redact(value: str) -> str: ...
@overload
def redact(value: Any) -> Any: ...


def redact(value: Any) -> Any:
    """`value` with every API key (this process's credential env values, anything shaped `sk-ant-…`) replaced.

    Strings, and the strings inside dicts, lists and tuples (as lists); anything else as it is.
    The env is read once per call (not once at import), so a key set later is still caught:
    redact a batch in one call rather than item by item where speed matters.
    """
    return _redact(value, _secrets())


def _redact(value: Any, secrets: list[str]) -> Any:
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return _KEY_SHAPE.sub(REDACTED, value) if "sk-ant-" in value else value
    if isinstance(value, dict):
        return {k: _redact(v, secrets) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_redact(v, secrets) for v in value]
    return value


def redact_encoded(bodies: list[bytes | str]) -> list[bytes | str]:
    """Encoded JSON texts (UTF-8 bytes or str) with every API key replaced, for what is written to disk.

    Keys are ASCII `[A-Za-z0-9_-]`, which JSON never escapes, so searching the encoded text is exact
    and far cheaper than walking the decoded entries.
    """
    secrets = _secrets()
    others = [s.encode() for s in secrets]  # usually none: keys are sk-ant- shaped
    out = list(bodies)
    for i, body in enumerate(out):
        if type(body) is not bytes:
            out[i] = _redact(body, secrets)
        # The scan of every byte is the whole cost (~25 ms per 40 MB): no per-body generator on top.
        elif b"sk-ant-" in body or (others and any(n in body for n in others)):
            out[i] = _redact(body.decode(), secrets).encode()
    return out


def cut(value: Any, limit: int = TOOL_INPUT_LIMIT) -> Any:
    """Long strings inside `value` cut to `limit` characters, saying how much was left out."""
    if isinstance(value, str):
        return clip(value, limit, count=True)
    if isinstance(value, dict):
        return {k: cut(v, limit) for k, v in value.items()}
    if isinstance(value, list):
        return [cut(v, limit) for v in value]
    return value
