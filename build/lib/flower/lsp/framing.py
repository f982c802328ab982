"""LSP base-protocol framing on stdio that survives a hostile or buggy client.

pygls' own loop (`pygls.io_.run_async`) goes deaf for good after one header without a usable
`Content-Length` (`abc`, `-1`, none): it only recognises a header on a line of its own, and the
skipped body glues the next frame's header onto the end of a line. It also answers nothing to a
body that is not JSON, nor to requests after `shutdown`. This module reads the frames itself:
a bad header block is logged and skipped to the next `Content-Length` header (resync), a body
that is not UTF-8 JSON gets a ParseError, anything that is not a JSON-RPC 2.0 message gets an
InvalidRequest, and after `shutdown` every request but `exit` gets an InvalidRequest (LSP).
"""

from __future__ import annotations

import asyncio
import json
import logging
import sys
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.io_ import StdoutWriter
from pygls.protocol import LanguageServerProtocol
from pygls.server import JsonRPCServer

log = logging.getLogger(__name__)

MAX_FRAME = 64 * 2**20
"""Largest body accepted, in bytes; a header claiming more is treated as a bad header (skipped)."""
LINE_LIMIT = 64 * 2**10
"""Longest header line read at once; longer lines are garbage, read in pieces."""


class FlowerProtocol(LanguageServerProtocol):
    """pygls' protocol, plus the answers JSON-RPC and LSP require where pygls stays silent."""

    def receive(self, body: bytes) -> None:
        """Handle one frame's body: ParseError if it is not UTF-8 JSON, InvalidRequest if it is not a JSON-RPC 2.0 message."""
        try:
            data = json.loads(body.decode("utf-8"))
        except (ValueError, RecursionError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
            log.warning("a frame that is not UTF-8 JSON (%d bytes): %s", len(body), exc)
            self.reject(None, JsonRpcParseError(f"Parse error: the body is not UTF-8 JSON ({exc})"))
            return
        if not isinstance(data, dict) or data.get("jsonrpc") != self.VERSION:
            self.reject(data.get("id") if isinstance(data, dict) else None, JsonRpcInvalidRequest(
                'Invalid request: send one JSON object with "jsonrpc": "2.0" per frame (batches are not supported)'))
            return
        try:
            message = self.structure_message(data)
        except JsonRpcException as exc:  # pygls would answer nothing: the client would wait forever
            if "method" in data and "id" in data:
                self.reject(data["id"], exc)
            return
        try:
            self.handle_message(message)
        except Exception:
            log.exception("handling %s", data.get("method", "a response"))

    def handle_message(self, message: Any) -> None:
        """After `shutdown`, any request but `exit` gets InvalidRequest (LSP); pygls would drop it unanswered."""
        if self._shutdown and getattr(message, "method", types.EXIT) != types.EXIT and hasattr(message, "id"):
            self.reject(message.id, JsonRpcInvalidRequest(f"Invalid request: {message.method} after shutdown; "
                                                          "the server only accepts exit now"))
            return
        super().handle_message(message)

    def reject(self, msg_id: Any, error: JsonRpcException) -> None:
        """Answer a request with a JSON-RPC error; `"id": null` where its id is unknown (JSON-RPC 2.0, Response object)."""
        body: dict[str, Any] = {"code": error.code, "message": error.message}
        if error.data is not None:
            body["data"] = error.data
        usable = isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)
        self._send_data({"jsonrpc": self.VERSION, "id": msg_id if usable else None, "error": body})


async def frames(readline: Callable[[int], Awaitable[bytes]], read: Callable[[int], Awaitable[bytes]]) -> AsyncIterator[bytes]:
    """Each frame's body until end of input; a header block without a usable Content-Length is skipped to the next header."""
    length: int | None = None
    header = False  # the current block has a Content-Length header (usable or not)
    lines = 0  # lines in the current block
    carry = b""
    while True:
        piece = await readline(LINE_LIMIT)
        if not piece:
            return
        line, carry = carry + piece, b""
        if not line.endswith(b"\n"):
            carry = line[-64:]  # a header cut at LINE_LIMIT is whole in the next piece
            lines += 1
            continue
        if not line.strip():
            if length is not None:
                body = await read(length)
                if len(body) < length:  # end of input mid-body
                    return
                yield body
            elif lines and not header:
                log.warning("a frame without a Content-Length header: skipped to the next header")
            length, header, lines = None, False, 0
            continue
        lines += 1
        # The last header on the line: a truncated frame's header or a body without headers may come before it.
        at = line.lower().rfind(b"content-length:")
        if at >= 0:  # a new frame starts here, whatever came before it
            value = line[at + len(b"content-length:"):].strip()
            length = int(value) if value.isdigit() and len(value) < 12 and int(value) <= MAX_FRAME else None
            header = True
            if length is None:
                log.warning("bad header Content-Length: %s; skipped to the next header",
                            value[:40].decode("ascii", "replace"))


class StdinReader:
    """Blocking reads of a binary stream in worker threads, so the event loop never waits on the client."""

    def __init__(self, stream: BinaryIO, pool: ThreadPoolExecutor) -> None:
        self.stream, self.pool = stream, pool

    def readline(self, limit: int) -> Awaitable[bytes]:
        return asyncio.get_running_loop().run_in_executor(self.pool, self.stream.readline, limit)

    def read(self, n: int) -> Awaitable[bytes]:
        return asyncio.get_running_loop().run_in_executor(self.pool, self.stream.read, n)


async def serve(protocol: FlowerProtocol, reader: StdinReader, stop: threading.Event) -> None:
    """Hand every frame to the protocol until end of input or stop."""
    async for body in frames(reader.readline, reader.read):
        protocol.receive(body)
        if stop.is_set():
            return


def serve_stdio(server: JsonRPCServer) -> int:
    """Serve on stdin/stdout until `exit` (0 after `shutdown`, else 1, as LSP says) or end of input (0)."""
    if not isinstance(server.protocol, FlowerProtocol):
        raise TypeError("serve_stdio needs a server built with protocol_cls=FlowerProtocol")
    server._stop_event = stop = threading.Event()
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    try:
        asyncio.run(serve(server.protocol, StdinReader(sys.stdin.buffer, server.thread_pool), stop))
    except SystemExit as exc:  # pygls' exit handler raises it: 0 after shutdown, 1 without
        return exc.code if isinstance(exc.code, int) else 1
    except BrokenPipeError:
        log.error("the client closed the connection; stopping")
        return 1
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]  # untyped in pygls
    return 0


__all__ = ["FlowerProtocol", "frames", "serve_stdio"]
