"""The editor server's stdio framing: the same frames from a pipe (read by the event loop) as from a file (threads),
and messages of plain JSON sent in one orjson pass with the pygls path kept for what orjson refuses."""

from __future__ import annotations

import asyncio
import gc
import json
import logging
import os
import threading
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pygls.protocol import JsonRPCNotification

from flower.core import host
from flower.lsp import protocol as p
from flower.lsp.framing import LARGE_BODY, serve, stdin_bodies
from flower.lsp.server import FlowerServer, say

WIRE = (b"Content-Length: 2\r\n\r\n{}"
        b"Content-Length: abc\r\n\r\n"  # a bad header: skipped to the next one
        b"Content-Length: 12\r\n\r\n{\"a\": \"\xe4\xbd\xa0\"}"  # a length in bytes, not characters
        b"Content-Length: 4\r\n\r\n[1]\n")


async def read_all(stream: object) -> list[bytes]:
    with ThreadPoolExecutor(1) as pool:
        return [body async for body in stdin_bodies(stream, pool)]  # type: ignore[arg-type]


async def test_a_pipe_and_a_file_give_the_same_frames(tmp_path: Path) -> None:
    file = tmp_path / "frames"
    file.write_bytes(WIRE)
    with file.open("rb") as f:
        from_file = await asyncio.wait_for(read_all(f), 10)
    read, write = os.pipe()
    os.write(write, WIRE)
    os.close(write)  # end of input after the frames
    with os.fdopen(read, "rb") as f:
        from_pipe = await asyncio.wait_for(read_all(f), 10)
    assert from_pipe == from_file == [b"{}", '{"a": "你"}'.encode(), b"[1]\n"]


class Wire:
    """A writer keeping what the protocol wrote."""

    def __init__(self) -> None:
        self.written: list[bytes] = []

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def close(self) -> None:
        pass


def sent(data: bytes) -> tuple[int, dict[str, object]]:
    header, _, body = data.partition(b"\r\n\r\n")
    length = next(int(line.split(b":")[1]) for line in header.split(b"\r\n") if line.lower().startswith(b"content-length"))
    assert length == len(body), "Content-Length counts the body's bytes"
    return length, json.loads(body)


def test_plain_json_is_sent_in_one_pass_and_what_orjson_refuses_still_goes_out() -> None:
    protocol = FlowerServer().protocol
    wire = Wire()
    protocol.set_writer(wire)
    protocol.notify("flower/notice", {"folder": "f", "text": "你好"})
    _, message = sent(wire.written[-1])
    assert message == {"jsonrpc": "2.0", "method": "flower/notice", "params": {"folder": "f", "text": "你好"}}
    assert "你好".encode() in wire.written[-1], "UTF-8 on the wire, not \\u escapes: orjson encoded it"
    # A lone surrogate (the CLI can cut text mid-emoji): orjson refuses it, pygls' json.dumps sends it escaped.
    protocol._send_data(JsonRPCNotification(method="flower/notice", params={"text": "cut \ud83d"}, jsonrpc="2.0"))
    _, message = sent(wire.written[-1])
    assert message["params"] == {"text": "cut \ud83d"}


async def test_a_request_that_fails_validation_leaves_nothing_behind_without_the_cycle_collector() -> None:
    # Issue 35: a failed handler's traceback held its params in reference cycles (the future and pygls' callback frame;
    # cattrs' error list and its frame) that only the rarely running cyclic collector freed: 10 MB params a frame
    # left the server +192 MB after 2,000 hostile frames. With the collector off, anything still held is a leak.
    ls = FlowerServer()
    ls.feature(p.SAY)(say)  # the real handler, on a server of its own
    protocol = ls.protocol
    wire = Wire()
    protocol.set_writer(wire)
    big = "x" * 4 * 2**20
    body = json.dumps({"jsonrpc": "2.0", "id": 7, "method": p.SAY, "params": {"folder": "file:///f", "text": 1, "big": big}})
    del big
    # pytest keeps every log record, and pygls logs the failure with its traceback: the server's handlers keep none.
    quiet, null = [logging.getLogger(name) for name in ("pygls", "flower")], logging.NullHandler()
    for logger in quiet:
        logger.propagate = False
        logger.addHandler(null)
    gc.disable()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        protocol.receive(body.encode())
        for _ in range(1000):  # bounded: the answer is sent a few loop turns later
            if wire.written:
                break
            await asyncio.sleep(0)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
        gc.enable()
        for logger in quiet:
            logger.propagate = True
            logger.removeHandler(null)
    _, answer = sent(wire.written[-1])
    assert answer["id"] == 7 and answer["error"]["code"] == -32602, answer  # InvalidParams, as before
    assert held < 2**20, f"{held / 2**20:.1f} MB still held after the answer"


async def test_large_bodies_are_followed_by_giving_the_heap_back_once(tmp_path: Path, monkeypatch) -> None:
    # Issue 35: the freed blocks of large bodies stay at the top of malloc's heap; a moment after the last one they
    # go back to the system (debounced: once for a run of them, not once per body).
    calls: list[int] = []
    monkeypatch.setattr(host, "give_back", lambda: calls.append(1))
    protocol = FlowerServer().protocol
    protocol.set_writer(Wire())
    large = b"[" + b"1," * (LARGE_BODY // 2) + b"1]"
    file = tmp_path / "frames"
    file.write_bytes(b"".join(b"Content-Length: %d\r\n\r\n%s" % (len(body), body) for body in (large, large, b"{}")))
    with ThreadPoolExecutor(1) as pool, file.open("rb") as stdin:
        await asyncio.wait_for(serve(protocol, stdin, pool, threading.Event()), 10)
        for _ in range(200):  # bounded: the trim comes TRIM_AFTER seconds after the last large body
            if calls:
                break
            await asyncio.sleep(0.05)
    assert calls == [1]
