"""Hostile input to the editor server (issue 13): `python -m flower.lsp` on stdio, driven by benchmarks/fuzz_lsp.py's own
wire and fuzzer (one implementation; the benchmark runs it long, these tests short)."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import ROOT
from flower.lsp.framing import LINE_LIMIT

sys.path.insert(0, str(ROOT / "benchmarks"))
import fuzz_lsp as fz  # noqa: E402  # benchmarks/ is no package

ANSWER = 15.0
"""Seconds a request may take on a loaded 2-core machine before it counts as never answered."""


@pytest.fixture
def server(tmp_path: Path) -> Iterator[tuple[fz.Wire, str]]:
    """An initialized server on stdio (no credentials), killed at the end if it still runs."""
    with open(tmp_path / "server.stderr", "wb") as stderr:
        wire, folder = fz.start(tmp_path, stderr)
        try:
            assert wire.initialize(folder), (tmp_path / "server.stderr").read_text()
            yield wire, folder
        finally:
            wire.close()


def status(wire: fz.Wire, msg_id: int) -> dict | None:
    answer, _ = wire.request(msg_id, "flower/status", None, ANSWER)
    return answer


def body(msg_id: int, method: str = "flower/status") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": None}).encode()


def test_frames_the_server_cannot_use_are_skipped_or_get_the_json_rpc_error_and_it_keeps_answering(server):
    wire, _ = server
    bad = {
        101: b"Content-Length: abc\r\n\r\n" + body(101),
        102: b"Content-Length: -5\r\n\r\n" + body(102),
        103: body(103),  # no header at all
        104: b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n" + body(104),
        105: b"Content-Length: 99999999999\r\n\r\n" + body(105),  # more than any frame may be
    }
    for n, (skipped, data) in enumerate(bad.items()):
        wire.send(data)
        # pygls alone went deaf here for good: the skipped body glued the next header onto its line.
        assert status(wire, 200 + n) is not None, f"no answer after {data[:40]!r}"
        assert skipped not in wire.answers
    wire.send(b"Content-Length: 5")  # a header cut short by the next frame's header: the later header wins
    assert status(wire, 300) is not None
    # Garbage longer than a line is read in pieces: the next header, cut across two pieces, is still found.
    wire.send(b"x" * (LINE_LIMIT - 5))
    assert status(wire, 301) is not None

    # JSON-RPC 2.0: a body that is not JSON gets a ParseError, JSON that is no request an InvalidRequest (id null if unknown).
    wire.send(fz.frame(b'{"jsonrpc": "2.0", "id": 7, "method": "flower/status", "params": {"folder": "\xff"}}'))
    wire.send(fz.frame(b"[" * 100_000))
    wire.send(fz.frame(json.dumps([json.loads(body(8))])))  # a batch: LSP has none
    wire.send(fz.frame(json.dumps({"id": 9, "method": "flower/status"})))  # no "jsonrpc": "2.0"
    assert wire.wait(lambda: wire.null_errors[fz.PARSE_ERROR] >= 2 and wire.null_errors[fz.INVALID_REQUEST] >= 1
                     and 9 in wire.answers, ANSWER), (wire.null_errors, wire.answers)
    assert wire.null_errors == {fz.PARSE_ERROR: 2, fz.INVALID_REQUEST: 1}
    assert fz.code(wire.answers[9]) == fz.INVALID_REQUEST
    assert 7 not in wire.answers and 8 not in wire.answers
    assert status(wire, 10) is not None

    # LSP: exit without shutdown ends the process with 1.
    wire.send(fz.frame(json.dumps({"jsonrpc": "2.0", "method": "exit"})))
    assert wire.proc.wait(30) == 1


def test_after_shutdown_a_request_gets_invalid_request_and_exit_ends_with_0(server):
    wire, folder = server
    answer, _ = wire.request(20, "shutdown", None, 60)
    assert answer == {"jsonrpc": "2.0", "id": 20, "result": None}
    # LSP: after shutdown, requests get InvalidRequest; pygls dropped them unanswered, and the client waited forever.
    answer = status(wire, 21)
    assert answer is not None and fz.code(answer) == fz.INVALID_REQUEST, answer
    answer, _ = wire.request(22, "flower/wake", {"folder": folder, "text": "go"}, ANSWER)
    assert answer is not None and fz.code(answer) == fz.INVALID_REQUEST, answer
    wire.send(fz.frame(json.dumps({"jsonrpc": "2.0", "method": "exit"})))
    assert wire.proc.wait(30) == 0


def test_seeded_hostile_frames_are_survived_and_answered(tmp_path):
    # A liveness bound, not a timing (D7): the benchmark holds the server to 1 s.
    report = fz.fuzz(frames=200, seed=13, every=50, within=ANSWER, workdir=tmp_path)
    summary = "\n".join(report.lines()) + "\n" + report.stderr_tail
    assert set(report.kinds) == set(fz.Fuzz(0, "file:///x").kinds), summary  # every kind of frame was sent
    assert report.crashes == 0 and report.hangs == 0, summary
    assert report.unanswered == [] and report.wrong == [], summary
    assert report.internal_errors == [], summary
    assert report.parse_errors[1] >= report.parse_errors[0] > 0, summary
    assert report.invalid_requests[1] >= report.invalid_requests[0] > 0, summary
    assert report.after_shutdown == fz.INVALID_REQUEST and report.exit_code == 0, summary
    assert report.rss_growth_kb <= fz.RSS_GROWTH, summary
