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
    return parts.hostname or urlsplit(DEFAULT_BASE_URL).hostname, port


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


def _resolve(host: str, port: int, timeout: float) -> list:
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
        return box["ok"]
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


# What to fix for each family of fatal errors: said once, instead of retrying (S21).
_ADVICE: tuple[tuple[re.Pattern[str], str], ...] = tuple((re.compile(p, re.IGNORECASE), a) for p, a in (
    (r"401|authentication|api[ _-]?key|oauth|/login",
     "the API key was refused: check ANTHROPIC_API_KEY (or log in again with `claude login`)"),
    (r"403|permission_error", "this key may not use this model or endpoint: check the key's permissions"),
    (r"credit|quota|billing", "the account is out of credit or quota: check billing, then run again"),
    (r"too long|context[ _]length|too many tokens",
     "the conversation no longer fits the model's context: start over with `flower --new`, or trim (no --no-trim)"),
    (r"404|not_found|selected model", "the model was not found: check the model name and ANTHROPIC_BASE_URL"),
    (r"400|invalid_request", "the API rejected the request as malformed: run again; if it repeats, report it"),
))


def advice(text: str | None) -> str:
    """One sentence saying what to fix for a fatal error."""
    for pattern, said in _ADVICE:
        if pattern.search(text or ""):
            return said
    return "this error will not go away by retrying: fix its cause, then run again"


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
        return raw * rng.uniform(0.75, 1.25)

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
