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
import inspect
import json
import logging
import sys
import threading
from collections.abc import AsyncIterator, Awaitable
from concurrent.futures import ThreadPoolExecutor
from typing import Any, BinaryIO

import orjson
from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcInternalError, JsonRpcInvalidRequest, JsonRpcParseError
from pygls.io_ import StdoutWriter
from pygls.protocol import JsonRPCNotification, JsonRPCResponseMessage, LanguageServerProtocol
from pygls.server import JsonRPCServer

from ..core import host

# The frame reader is pygls-free, for the engine's client in a terminal too (issue 34); re-exported here.
from ..core.frames import LINE_LIMIT as LINE_LIMIT
from ..core.frames import MAX_FRAME as MAX_FRAME
from ..core.frames import bodies as bodies
from ..core.frames import frames as frames

log = logging.getLogger(__name__)

LARGE_BODY = 2**20
"""A body this large (bytes) is followed by giving the freed heap back to the system (`serve`)."""
TRIM_AFTER = 1.0
"""Seconds after the last large body before the heap is given back: the handlers are done with it by then."""


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

    def _send_handler_result(self, future: Any, *, msg_id: Any) -> None:
        """Answer a request as pygls does, then let go of a failed handler's traceback (`forget_failure`)."""
        try:
            super()._send_handler_result(future, msg_id=msg_id)
        finally:
            forget_failure(future)

    def _check_handler_result(self, future: Any) -> None:
        """Log a failed notification handler as pygls does, then let go of its traceback (`forget_failure`)."""
        try:
            super()._check_handler_result(future)
        finally:
            forget_failure(future)

    def _send_data(self, data: Any) -> None:
        """Plain JSON (a result, notification or error flower made with `p.to_wire`) goes out encoded in one pass by
        orjson; anything else (pygls' own LSP objects, a string orjson refuses) the way pygls sends it.

        Why: pygls runs every message through cattrs before `json.dumps`, walking a plain dict once more; for a status
        of three folders that was a fifth of the server's CPU per request (benchmarks/status.py).
        """
        message = _plain(data)
        if message is None or self.writer is None or not self._include_headers:
            super()._send_data(data)
            return
        try:
            body = orjson.dumps(message)
        except TypeError:  # orjson.JSONEncodeError: a lone surrogate, a number past 64 bits, a key that is not a string
            super()._send_data(data)
            return
        try:
            written = self.writer.write(b"Content-Length: %d\r\nContent-Type: %s; charset=%s\r\n\r\n%s" % (
                len(body), self.CONTENT_TYPE.encode(), self.CHARSET.encode(), body))
            if inspect.isawaitable(written):
                asyncio.ensure_future(written)
        except BrokenPipeError:
            log.error("the client closed the connection while a message was sent")
            raise
        except Exception as error:
            log.exception("sending a message")
            self._server._report_server_error(error, JsonRpcInternalError)

    def reject(self, msg_id: Any, error: JsonRpcException) -> None:
        """Answer a request with a JSON-RPC error; `"id": null` where its id is unknown (JSON-RPC 2.0, Response object)."""
        body: dict[str, Any] = {"code": error.code, "message": error.message}
        if error.data is not None:
            body["data"] = error.data
        usable = isinstance(msg_id, (int, str)) and not isinstance(msg_id, bool)
        self._send_data({"jsonrpc": self.VERSION, "id": msg_id if usable else None, "error": body})


class StdinReader:
    """Blocking reads of a binary stream in worker threads, so the event loop never waits on the client."""

    def __init__(self, stream: BinaryIO, pool: ThreadPoolExecutor) -> None:
        self.stream, self.pool = stream, pool

    def readline(self, limit: int) -> Awaitable[bytes]:
        return asyncio.get_running_loop().run_in_executor(self.pool, self.stream.readline, limit)

    def read(self, n: int) -> Awaitable[bytes]:
        return asyncio.get_running_loop().run_in_executor(self.pool, self.stream.read, n)


async def stdin_bodies(stdin: BinaryIO, pool: ThreadPoolExecutor) -> AsyncIterator[bytes]:
    """Each frame's body from stdin: read by the event loop itself from a pipe or socket, else by worker threads.

    Why: a worker thread's read costs the loop two thread hops and a GIL handover per read, three reads a frame;
    on a loaded machine that was most of a status request's CPU and of its p99 (benchmarks/status.py).
    A file or a terminal cannot be polled the same way (epoll refuses /dev/null and regular files).
    """
    if host.loop_can_read(stdin.fileno()):
        reader = asyncio.StreamReader(limit=2 * LINE_LIMIT)
        await asyncio.get_running_loop().connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), stdin)
        source = bodies(reader)
    else:
        threaded = StdinReader(stdin, pool)
        source = frames(threaded.readline, threaded.read)
    async for body in source:
        yield body


async def serve(protocol: FlowerProtocol, stdin: BinaryIO, pool: ThreadPoolExecutor, stop: threading.Event) -> None:
    """Hand every frame to the protocol until end of input or stop; give the heap back a moment after large ones."""
    loop = asyncio.get_running_loop()
    trim: asyncio.TimerHandle | None = None

    def give_back() -> None:
        nonlocal trim
        trim = None
        loop.run_in_executor(pool, host.give_back)

    async for body in stdin_bodies(stdin, pool):
        large = len(body) >= LARGE_BODY
        protocol.receive(body)
        del body
        if large:
            # Why (issue 35): freed blocks of a 10 MB body stay mapped at the top of malloc's heap; a flood of them
            # after other traffic left the server +20 MB. Once the frames stop coming (debounced), they go back.
            if trim is not None:
                trim.cancel()
            trim = loop.call_later(TRIM_AFTER, give_back)
        if stop.is_set():
            return


def forget_failure(future: Any) -> None:
    """Drop the tracebacks of a handler's exception (and of those it chains or groups), once it has been answered.

    Why (issue 35): the future holds the exception, the exception's traceback holds the frames that raised it and
    re-raised it (`future.result()` in pygls' callback, whose locals hold the future): a reference cycle carrying the
    request's params. Only the cyclic collector frees it, and with startup frozen (`settle`) and a few objects per
    frame it ran rarely: 2,000 hostile frames (10 MB params failing validation) left the server +192 MB. cattrs adds
    a cycle of its own: the frame of a failed `structure` holds the list of errors whose tracebacks hold that frame
    (and the params). Without the tracebacks, reference counting frees it all the moment pygls lets go of the future.
    """
    if not future.done() or future.cancelled():
        return
    chain: list[BaseException | None] = [future.exception()]
    seen: set[int] = set()
    while chain:
        error = chain.pop()
        if error is not None and id(error) not in seen:
            seen.add(id(error))
            error.__traceback__ = None
            chain += [error.__cause__, error.__context__, *getattr(error, "exceptions", ())]  # cattrs' are groups


def _plain(data: Any) -> dict[str, Any] | None:
    """The JSON-RPC message `data` as a dict when its payload is plain JSON already, else None."""
    if type(data) is dict:
        return data
    if type(data) is JsonRPCResponseMessage and type(data.result) in (dict, list):
        return {"jsonrpc": data.jsonrpc, "id": data.id, "result": data.result}
    if type(data) is JsonRPCNotification and type(data.params) is dict:
        return {"jsonrpc": data.jsonrpc, "method": data.method, "params": data.params}
    return None


def serve_stdio(server: JsonRPCServer) -> int:
    """Serve on stdin/stdout until `exit` (0 after `shutdown`, else 1, as LSP says) or end of input (0)."""
    if not isinstance(server.protocol, FlowerProtocol):
        raise TypeError("serve_stdio needs a server built with protocol_cls=FlowerProtocol")
    server._stop_event = stop = threading.Event()
    server.protocol.set_writer(StdoutWriter(sys.stdout.buffer))
    try:
        asyncio.run(serve(server.protocol, sys.stdin.buffer, server.thread_pool, stop))
    except SystemExit as exc:  # pygls' exit handler raises it: 0 after shutdown, 1 without
        return exc.code if isinstance(exc.code, int) else 1
    except BrokenPipeError:
        log.error("the client closed the connection; stopping")
        return 1
    finally:
        server.shutdown()  # type: ignore[no-untyped-call]  # untyped in pygls
    return 0


__all__ = ["FlowerProtocol", "bodies", "frames", "serve_stdio"]
