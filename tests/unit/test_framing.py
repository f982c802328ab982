"""The editor server's stdio framing: the same frames from a pipe (read by the event loop) as from a file (threads),
and messages of plain JSON sent in one orjson pass with the pygls path kept for what orjson refuses."""

from __future__ import annotations

import asyncio
import json
import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from pygls.protocol import JsonRPCNotification

from flower.lsp.framing import stdin_bodies
from flower.lsp.server import FlowerServer

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
