"""flower.core.resilience: endpoint, probe, classify, backoff, offline wait (S20–S22)."""

from __future__ import annotations

import asyncio
import dataclasses
import random
import re
import socket
import time

import pytest

from flower.core.resilience import (
    FATAL_PATTERNS,
    TRANSIENT_PATTERNS,
    Failure,
    OfflineWait,
    Resilience,
    advice,
    classify,
    endpoint,
    reachable,
    reachable_async,
    wait_online,
)

# ---------------------------------------------------------------- classify (S21)

FATAL = [
    'API Error: 401 {"type":"error","error":{"type":"authentication_error","message":"invalid x-api-key"}}',
    "Invalid API key · Please run /login",
    'Error code: 401 - {"error": {"type": "authentication_error"}}',
    "authentication_failed",
    "OAuth token has expired. Please obtain a new token or refresh your existing token.",
    'API Error: 403 {"type":"error","error":{"type":"permission_error","message":"forbidden"}}',
    "Your credit balance is too low to access the Anthropic API.",
    "You exceeded your current quota",
    '{"type":"error","error":{"type":"billing_error"}}',
    'API Error: 400 {"type":"error","error":{"type":"invalid_request_error","message":"messages.1: bad"}}',
    "prompt is too long: 210000 tokens > 200000 maximum",
    "input exceeds the context length of the model",
    "too many tokens in the request",
    'API Error: 404 {"type":"error","error":{"type":"not_found_error","message":"model: claude-nope"}}',
]

TRANSIENT = [
    "API Error: Can't reach the API server. Check your internet connection.",
    "Unable to connect to API (ConnectionRefused)",
    "connect ECONNREFUSED 127.0.0.1:443",
    "read ECONNRESET",
    "socket hang up",
    "API Error: Connection error.",
    "TypeError: fetch failed",
    "Request timed out.",
    "connect ETIMEDOUT 160.79.104.10:443",
    'API Error: 529 {"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}',
    'API Error: 500 {"type":"error","error":{"type":"api_error","message":"Internal server error"}}',
    "502 Bad Gateway",
    "status code 503",
    "HTTP/1.1 504 Gateway Timeout",
    'API Error: 429 {"type":"error","error":{"type":"rate_limit_error"}}',
    "terminated",
    "network error while streaming",
    "Connection error after 400 ms",  # a bare "400" is not a status code
]


@pytest.mark.parametrize("text", FATAL)
def test_classify_fatal(text):
    assert classify(text) == "fatal"


@pytest.mark.parametrize("text", TRANSIENT)
def test_classify_transient(text):
    assert classify(text) == "transient"


@pytest.mark.parametrize("text", ["", None, "   ", "something odd happened", "ok 42"])
def test_classify_unknown(text):
    assert classify(text) == "unknown"


def test_classify_fatal_before_transient():
    """A 401 that also mentions a connection must not be retried forever (S21)."""
    text = "API Error: 401 authentication_error · connection error while refreshing credentials"
    assert any(re.search(p, text, re.I) for p in TRANSIENT_PATTERNS)  # transient would match too...
    assert classify(text) == "fatal"  # ...but fatal is tested first


def test_classify_case_insensitive():
    assert classify("CONNECT ECONNREFUSED") == "transient"
    assert classify("INVALID X-API-KEY") == "fatal"


def test_pattern_tables_are_plain_tuples_of_strings():
    assert isinstance(FATAL_PATTERNS, tuple) and isinstance(TRANSIENT_PATTERNS, tuple)
    assert all(isinstance(p, str) for p in FATAL_PATTERNS + TRANSIENT_PATTERNS)


# ---------------------------------------------------------------- endpoint (S20)


def test_endpoint_default(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_BASE_URL", raising=False)
    assert endpoint() == ("api.anthropic.com", 443)


def test_endpoint_empty_is_default(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "")
    assert endpoint() == ("api.anthropic.com", 443)


def test_endpoint_http_gateway(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://gateway.internal/anthropic")
    assert endpoint() == ("gateway.internal", 80)


def test_endpoint_https_gateway(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gw.example.com/v1/")
    assert endpoint() == ("gw.example.com", 443)


def test_endpoint_explicit_port_wins(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://127.0.0.1:8765")
    assert endpoint() == ("127.0.0.1", 8765)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "https://gw.example.com:8443")
    assert endpoint() == ("gw.example.com", 8443)


# ---------------------------------------------------------------- reachable (S20)


@pytest.fixture
def listener():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    s.listen()
    yield s.getsockname()[1]
    s.close()


@pytest.fixture
def closed_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def test_reachable_listening(listener):
    assert reachable("127.0.0.1", listener, timeout=2.0) is True


def test_reachable_closed_port(closed_port):
    assert reachable("127.0.0.1", closed_port, timeout=2.0) is False


def test_reachable_unresolvable_host_is_quick():
    t = time.monotonic()
    assert reachable("nonexistent.invalid", 443, timeout=1.0) is False
    assert time.monotonic() - t < 2.0


def test_reachable_bad_input_is_false():
    assert reachable("127.0.0.1", -1, timeout=1.0) is False


async def test_reachable_async(listener, closed_port):
    assert await reachable_async("127.0.0.1", listener, timeout=2.0) is True
    assert await reachable_async("127.0.0.1", closed_port, timeout=2.0) is False


# ---------------------------------------------------------------- policy (S21, S22)


def test_defaults():
    r = Resilience()
    assert (r.max_attempts, r.base_delay, r.max_delay) == (6, 4.0, 120.0)
    assert (r.probe_timeout, r.probe_interval, r.max_offline_wait) == (5.0, 15.0, 3600.0)
    assert r.retry_unknown is True
    with pytest.raises(dataclasses.FrozenInstanceError):
        r.max_attempts = 3  # type: ignore[misc]


def test_resume_prompt_carries_no_error_detail():
    p = Resilience.resume_prompt
    assert p == Resilience().resume_prompt
    assert "interrupted" in p and "do not start over" in p
    assert classify(p) == "unknown"  # no error text leaks into the resumed context (S22)


@pytest.mark.parametrize("r", [Resilience(), Resilience(max_attempts=12, base_delay=1.5, max_delay=30.0)])
def test_delay_bounds_and_determinism(r):
    for attempt in range(1, r.max_attempts + 1):
        nominal = min(r.base_delay * 2 ** (attempt - 1), r.max_delay)
        d = r.delay(attempt, random.Random(attempt))
        assert 0.75 * nominal <= d <= 1.25 * nominal
        assert d == r.delay(attempt, random.Random(attempt))
    seq_a = [r.delay(a, rng) for rng in [random.Random(7)] for a in range(1, r.max_attempts + 1)]
    seq_b = [r.delay(a, rng) for rng in [random.Random(7)] for a in range(1, r.max_attempts + 1)]
    assert seq_a == seq_b


def test_delay_cap():
    r = Resilience()
    rng = random.Random(3)
    for attempt in (7, 8, 20, 1000):
        assert 90.0 <= r.delay(attempt, rng) <= 150.0
    assert r.delay(1, random.Random(0)) <= 5.0


def test_should_retry():
    r = Resilience()
    assert r.should_retry("transient", 1)
    assert r.should_retry("transient", 5)
    assert not r.should_retry("transient", 6)  # six attempts in all, first included
    assert not r.should_retry("fatal", 1)
    assert r.should_retry("unknown", 1)
    assert not Resilience(retry_unknown=False).should_retry("unknown", 1)
    assert not Resilience(max_attempts=1).should_retry("transient", 1)


# ---------------------------------------------------------------- wait_online


async def test_wait_online_immediately_reachable(listener):
    events = []
    assert await wait_online(Resilience(probe_timeout=1.0), "127.0.0.1", listener, on_wait=events.append)
    assert events == []


async def test_wait_online_returns_when_port_opens(closed_port):
    res = Resilience(probe_interval=0.05, probe_timeout=1.0, max_offline_wait=10.0)
    server: list[socket.socket] = []
    events: list[OfflineWait] = []

    def open_port():
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        s.bind(("127.0.0.1", closed_port))
        s.listen()
        server.append(s)

    loop = asyncio.get_running_loop()
    loop.call_later(0.3, open_port)
    t = time.monotonic()
    try:
        ok = await wait_online(res, "127.0.0.1", closed_port, on_wait=events.append)
    finally:
        for s in server:
            s.close()
    assert ok is True
    assert server, "returned before the port was opened"
    assert time.monotonic() - t < 5.0
    assert len(events) >= 2
    assert all(e.host == "127.0.0.1" and e.port == closed_port for e in events)
    assert all(0 < e.next_probe_in <= 0.05 for e in events)
    assert len({e.offline_since for e in events}) == 1
    waits = [e.waited for e in events]
    assert waits == sorted(waits)


async def test_wait_online_gives_up(closed_port):
    res = Resilience(probe_interval=0.05, probe_timeout=1.0, max_offline_wait=0.3)
    seen = []

    async def on_wait(e):  # async callbacks are awaited too
        seen.append(e)

    t = time.monotonic()
    assert await wait_online(res, "127.0.0.1", closed_port, on_wait=on_wait) is False
    elapsed = time.monotonic() - t
    assert 0.3 <= elapsed < 2.0
    assert seen and all(e.waited < 0.3 for e in seen)


async def test_wait_online_schedule_with_fake_clock(closed_port):
    """Probes every probe_interval, the last pause shortened to end exactly at max_offline_wait."""
    now = [0.0]
    pauses = []

    async def fake_sleep(s):
        pauses.append(s)
        now[0] += s

    res = Resilience(probe_interval=15.0, probe_timeout=1.0, max_offline_wait=40.0)
    ok = await wait_online(res, "127.0.0.1", closed_port, clock=lambda: now[0], sleep=fake_sleep)
    assert ok is False
    assert pauses == [15.0, 15.0, 10.0]


@pytest.mark.parametrize("text, says", [
    ("Invalid API key · Fix external API key (HTTP 401)", "ANTHROPIC_API_KEY"),
    ("Your credit balance is too low to access the API", "credit"),
    ("prompt is too long: 250000 tokens > 200000 maximum", "flower --new"),
    ("something odd and fatal", "fix its cause"),
])
def test_fatal_errors_come_with_what_to_fix(text, says):
    assert says in advice(text)


# ---------------------------------------------------------------- structured failures (S21)


@pytest.mark.parametrize("fields, kind", [
    ({"status": 503}, "transient"),
    ({"status": 529}, "transient"),
    ({"status": 429}, "transient"),
    ({"status": 401}, "fatal"),
    ({"status": 413}, "fatal"),
    ({"category": "rate_limit"}, "transient"),
    ({"category": "server_error"}, "transient"),
    ({"category": "authentication_failed"}, "fatal"),
    ({"category": "cli_not_found"}, "fatal"),
    ({"reason": "prompt_too_long"}, "fatal"),
], ids=lambda v: str(v))
def test_failure_kind_comes_from_fields_before_the_text(fields, kind):
    # Each text says the opposite of the fields, so only the fields can give the expected kind.
    text = "invalid x-api-key" if kind == "transient" else "connect ECONNREFUSED 127.0.0.1:443"
    assert Failure.of(text, **fields).kind == kind


def test_status_outranks_category_and_unknown_fields_fall_back_to_the_text():
    assert Failure.of("x", status=503, category="authentication_failed").kind == "transient"
    assert Failure.of("read ECONNRESET", status=302, category="unknown", reason="api_error").kind == "transient"
    assert Failure.of("Invalid API key · Fix external API key").kind == "fatal"
    assert Failure.of("something odd").kind == "unknown"


def test_failure_detail_and_advice_from_fields():
    f = Failure.of("Failed to authenticate. API Error: 403 connection not allowed", status=403, category="authentication_failed")
    assert f.detail.endswith("(HTTP 403)") and "permissions" in f.advice
    assert "context" in Failure.of("Prompt is too long", status=400, reason="prompt_too_long").advice
    assert "billing" in Failure.of("no", category="billing_error").advice
    assert "reinstall" in Failure.of("CLINotFoundError: Claude Code not found", category="cli_not_found").advice
    assert Failure.of("credit balance is too low").advice == advice("credit balance is too low")
