"""Outage resilience: probe the API endpoint, classify errors, back off, wait for the network (S20–S22)."""

from __future__ import annotations

import asyncio
import inspect
import os
import random
import re
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal
from urllib.parse import urlsplit

from . import texts
from .texts import Said, say

Kind = Literal["transient", "fatal", "unknown"]

DEFAULT_BASE_URL = "https://api.anthropic.com"


# ---------------------------------------------------------------- endpoint + probe (S20)


def endpoint(env: Mapping[str, str] | None = None) -> tuple[str, int]:
    """The (host, port) to probe: `ANTHROPIC_BASE_URL` (default api.anthropic.com:443), so a gateway is probed itself (S20)."""
    url = (os.environ if env is None else env).get("ANTHROPIC_BASE_URL", "").strip() or DEFAULT_BASE_URL
    if "://" not in url:  # "host:port" without a scheme; the CLI would treat it as https
        url = "https://" + url
    parts = urlsplit(url)
    default = 80 if parts.scheme.lower() == "http" else 443
    try:
        port = parts.port or default
    except ValueError:  # malformed port: probe the scheme default rather than crash
        port = default
    return parts.hostname or "api.anthropic.com", port


def reachable(host: str, port: int, timeout: float = 5.0) -> bool:
    """True if DNS resolves `host` and a TCP handshake to `port` succeeds within `timeout`; nothing is sent (S20)."""
    deadline = time.monotonic() + timeout
    try:
        infos = _resolve(host, port, timeout)
        for family, type_, proto, _name, addr in infos:
            left = deadline - time.monotonic()
            if left <= 0:
                return False
            with socket.socket(family, type_, proto) as sock:
                sock.settimeout(left)
                try:
                    sock.connect(addr)
                    return True
                except OSError:
                    continue  # try the next address (e.g. IPv6 then IPv4)
        return False
    except Exception:  # any failure = unreachable (S20)
        return False


async def reachable_async(host: str, port: int, timeout: float = 5.0) -> bool:
    """`reachable` run in a worker thread; returns within about `timeout`."""
    return await asyncio.to_thread(reachable, host, port, timeout)


def _resolve(host: str, port: int, timeout: float) -> list[tuple[Any, ...]]:
    """getaddrinfo bounded by `timeout` (it has no timeout of its own), in a daemon thread that may be abandoned."""
    box: dict[str, Any] = {}

    def run() -> None:
        try:
            box["ok"] = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
        except BaseException as exc:  # noqa: BLE001 - reported to the caller below
            box["err"] = exc

    t = threading.Thread(target=run, name="flower-probe-dns", daemon=True)
    t.start()
    t.join(timeout)
    if "ok" in box:
        return list(box["ok"])
    raise box.get("err") or TimeoutError(f"DNS lookup of {host} took longer than {timeout}s")


# ---------------------------------------------------------------- classify (S21)


def _status(code: int, reason: str) -> str:
    """Regex for an HTTP status in context ("API Error: 401", "status code 401", "401 Unauthorized"), not a bare number like "400 ms"."""
    return (
        rf"(?:api error|error code|status(?:[ _]?code)?|http(?:/[\d.]+)?)[\"']?\s*[:=]?\s*[\"']?{code}\b"
        rf"|\b{code}\s+{reason}"
    )


# Tested FIRST: a 401 text often also says "connection"; checking transient first would retry forever (S21).
# Extend these tuples with the real CLI texts as they are captured.
FATAL_PATTERNS: tuple[str, ...] = (
    # authentication
    _status(401, "unauthorized"),
    r"authentication_error",
    r"authentication_failed",
    r"invalid x-api-key",
    r"invalid api[ _-]?key",
    r"oauth token",
    r"please run /login",
    # permission
    _status(403, "forbidden"),
    r"permission_error",
    # billing / quota
    r"credit balance is too low",
    r"quota",
    r"billing_error",
    # invalid request
    _status(400, "bad request"),
    r"invalid_request_error",
    # context too long
    r"prompt is too long",
    r"context[ _]length",
    r"too many tokens",
    # model not found
    _status(404, "not found"),
    r"not_found_error",
    r"issue with the selected model",
)

TRANSIENT_PATTERNS: tuple[str, ...] = (
    # cannot connect / connection dropped
    r"can(?:'|’|no)?t reach the api server",
    r"unable to connect",
    r"\beconnrefused\b",
    r"\beconnreset\b",
    r"\beconnaborted\b",
    r"\bepipe\b",
    r"\behostunreach\b",
    r"\benetunreach\b",
    r"\benotfound\b",
    r"\beai_again\b",
    r"socket hang up",
    r"connection[ _]?(?:error|refused|reset|closed)",
    r"fetch failed",
    r"\bterminated\b",
    r"\bnetwork\b",
    # timeouts
    r"timed out",
    r"\betimedout\b",
    r"time-?out",
    # overloaded / server errors
    _status(529, "overloaded"),
    r"overloaded",
    _status(500, "internal server error"),
    _status(502, "bad gateway"),
    _status(503, "service unavailable"),
    _status(504, "gateway time-?out"),
    r"api_error",
    r"internal server error",
    # rate limit
    _status(429, "too many requests"),
    r"rate_limit_error",
    r"rate limit",
)

_FATAL = tuple(re.compile(p, re.IGNORECASE) for p in FATAL_PATTERNS)
_TRANSIENT = tuple(re.compile(p, re.IGNORECASE) for p in TRANSIENT_PATTERNS)


def classify(text: str | None) -> Kind:
    """Return "fatal", "transient" or "unknown" for an error text; fatal patterns are tested first (S21)."""
    if not text:
        return "unknown"
    if any(p.search(text) for p in _FATAL):
        return "fatal"
    if any(p.search(text) for p in _TRANSIENT):
        return "transient"
    return "unknown"


# ---------------------------------------------------------------- policy (S21, S22)

RESUME_PROMPT = (
    "The previous round was interrupted midway and did not finish. Check what is already "
    "written in the workspace, continue from the point of interruption, and do not start over."
)


# What to fix for each family of fatal errors: said once, instead of retrying (S21); the sentences are catalog `fix_<family>` (D4).
_FIX = {family: f"fix_{family}" for family in ("auth", "permission", "billing", "too_long", "model", "invalid", "cli")}
_ADVICE: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.IGNORECASE), _FIX[key]) for p, key in (
    (r"401|authentication|api[ _-]?key|oauth|/login", "auth"),
    (r"403|permission_error", "permission"),
    (r"credit|quota|billing", "billing"),
    (r"too long|context[ _]length|too many tokens", "too_long"),
    (r"404|not_found|selected model", "model"),
    (r"400|invalid_request", "invalid"),
))
_STATUS_FIX = {401: "auth", 402: "billing", 403: "permission", 404: "model", 413: "too_long", 400: "invalid"}
_CATEGORY_FIX = {"authentication_failed": "auth", "billing_error": "billing", "invalid_request": "invalid",
                 "cli_not_found": "cli"}


def advice_key(text: str | None) -> str:
    """The catalog key of what to fix for a fatal error, from its text."""
    for pattern, key in _ADVICE:
        if pattern.search(text or ""):
            return key
    return "fix_other"


def advice(text: str | None) -> str:
    """One sentence (English) saying what to fix for a fatal error, from its text."""
    return texts.text(advice_key(text), "en")


# ---------------------------------------------------------------- structured failures (S21)

CLI_MISSING = "cli_not_found"
"""The category flower gives a Claude Code CLI that is not installed (the SDK's CLINotFoundError)."""
FATAL_STATUS = frozenset({400, 401, 402, 403, 404, 413})
"""HTTP statuses a retry cannot change: bad request, key, billing, permission, model, size."""
TRANSIENT_STATUS = frozenset({408, 409, 429})
"""Timeout, conflict and rate limit; every 5xx (529 overloaded included) is transient too."""
CATEGORY_KINDS: dict[str, Kind] = {
    "authentication_failed": "fatal", "billing_error": "fatal", "invalid_request": "fatal",
    "rate_limit": "transient", "server_error": "transient", CLI_MISSING: "fatal",
}
"""The CLI's own category of an API error (`AssistantMessage.error`), and flower's `CLI_MISSING`; "unknown" decides nothing."""
FATAL_REASONS = frozenset({"prompt_too_long"})
"""`ResultMessage.terminal_reason` values no retry can change."""


def status_kind(status: int | None) -> Kind | None:
    """The kind an HTTP status decides, or None when it decides nothing."""
    if status is None:
        return None
    if status in FATAL_STATUS:
        return "fatal"
    if status in TRANSIENT_STATUS or 500 <= status <= 599:
        return "transient"
    return None


@dataclass(frozen=True, kw_only=True)
class Failure:
    """Why one attempt failed. Its kind comes from what the SDK reports in fields (HTTP status, the
    CLI's error category, the terminal reason, a process that could not start) before any text is
    matched: the text is the last resort, and `classify` keeps fatal before transient there (S21)."""

    kind: Kind
    text: str
    """What a person reads: the CLI's message, or the exception and the tail of the CLI's stderr."""
    status: int | None = None
    """HTTP status of the failing API call (`ResultMessage.api_error_status`)."""
    category: str | None = None
    """The CLI's category of the API error (`AssistantMessage.error`, e.g. "rate_limit")."""
    reason: str | None = None
    """Why the CLI's loop ended (`ResultMessage.terminal_reason`, e.g. "prompt_too_long")."""
    exit_code: int | None = None
    """The CLI process's exit code, when it died."""

    @classmethod
    def of(cls, text: str, *, status: int | None = None, category: str | None = None, reason: str | None = None,
           exit_code: int | None = None) -> Failure:
        """A Failure whose kind is decided by status, then category, then terminal reason, and only then text."""
        decided = (status_kind(status) or CATEGORY_KINDS.get(category or "")
                   or ("fatal" if reason in FATAL_REASONS else None) or classify(text))
        return cls(kind=decided, text=text, status=status, category=category, reason=reason, exit_code=exit_code)

    @property
    def detail(self) -> str:
        """The text with the HTTP status, as shown and recorded in the manifest's `errors[]`."""
        return f"{self.text} (HTTP {self.status})" if self.status is not None else self.text

    @property
    def fix(self) -> Said:
        """What to fix, from the structured fields first, else from the text; rendered in the reader's locale."""
        # The terminal reason is the most specific (a too-long prompt comes as a plain 400).
        key = (("too_long" if self.reason in FATAL_REASONS else None) or _STATUS_FIX.get(self.status or 0)
               or _CATEGORY_FIX.get(self.category or ""))
        return say(_FIX[key] if key else advice_key(self.text))

    @property
    def advice(self) -> str:
        """`fix` in English."""
        return str(self.fix)


@dataclass(frozen=True)
class Resilience:
    """Retry and offline-wait policy; defaults from S21."""

    max_attempts: int = 6  # first attempt included
    base_delay: float = 4.0
    max_delay: float = 120.0
    probe_timeout: float = 5.0
    probe_interval: float = 15.0
    max_offline_wait: float = 3600.0
    retry_unknown: bool = True
    # Sent on resume; deliberately no error detail, so the outage never enters the context (S22, S23).
    resume_prompt: str = RESUME_PROMPT

    def __post_init__(self) -> None:
        """Reject settings that would make the loops meaningless."""
        if self.max_attempts < 1:
            raise ValueError("max_attempts must be >= 1")
        if min(self.base_delay, self.max_delay, self.probe_timeout, self.max_offline_wait) < 0:
            raise ValueError("delays and timeouts must be >= 0")
        if self.probe_interval <= 0:
            raise ValueError("probe_interval must be > 0")

    def delay(self, attempt: int, rng: Any = random) -> float:
        """Seconds to wait after failed attempt `attempt` (1-based): min(base·2^(a-1), max) × jitter in [0.75, 1.25] (S21)."""
        a = max(1, int(attempt))
        raw = self.max_delay if a > 64 else min(self.base_delay * 2 ** (a - 1), self.max_delay)
        return raw * float(rng.uniform(0.75, 1.25))

    def should_retry(self, kind: str, attempt: int) -> bool:
        """Whether attempt `attempt` (1-based, just failed with `kind`) may be followed by another one."""
        if attempt >= self.max_attempts or kind == "fatal":
            return False
        return kind == "transient" or (kind == "unknown" and self.retry_unknown)


# ---------------------------------------------------------------- offline wait


@dataclass(frozen=True)
class OfflineWait:
    """One tick of an offline wait, for a live indicator: wall-clock start, seconds waited, seconds to the next probe."""

    host: str
    port: int
    offline_since: float  # time.time() of the first failed probe
    waited: float
    next_probe_in: float


async def wait_online(
    res: Resilience,
    host: str,
    port: int,
    on_wait: Callable[[OfflineWait], Awaitable[None] | None] | None = None,
    clock: Callable[[], float] = time.monotonic,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
) -> bool:
    """Probe every `probe_interval` s until reachable (True) or `max_offline_wait` s have passed (False)."""
    start = clock()
    since: float | None = None
    while True:
        if await reachable_async(host, port, res.probe_timeout):
            return True
        if since is None:
            since = time.time()
        waited = clock() - start
        left = res.max_offline_wait - waited
        if left <= 0:
            return False
        pause = min(res.probe_interval, left)
        if on_wait is not None:
            r = on_wait(OfflineWait(host, port, since, waited, pause))
            if inspect.isawaitable(r):
                await r
        await sleep(pause)
