"""A JSON-RPC client of the engine over its socket: what the terminal (and `serve --background`) speak to it."""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import os
from collections.abc import Awaitable, Callable, Iterable
from pathlib import Path
from typing import Any

from ..core import host
from ..core.wire import ANSWERS_OPTION, VERSION, VERSION_OPTION, file_uri
from .stream import bodies, frame

log = logging.getLogger(__name__)

REQUEST_TIMEOUT = 60.0
"""Bound on any one answer from the engine."""


class EngineError(Exception):
    """The engine answered a request with an error (its message is meant for a person)."""

    def __init__(self, code: int, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


class Gone(Exception):
    """The connection to the engine closed."""


Listener = Callable[[str, Any], None]
Answerer = Callable[[str, Any], Awaitable[Any]]
"""Answers a request from the engine (`flower/ask`, `flower/approve`): its result, or raises to answer MethodNotFound."""


class EngineClient:
    """One connection to the engine: requests with bounded answers, notifications to `listener`."""

    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter, listener: Listener | None = None) -> None:
        self.reader, self.writer = reader, writer
        self.listener = listener
        self.answerer: Answerer | None = None
        """Set to answer the engine's requests (a terminal answers `flower/ask` and `flower/approve`); None: MethodNotFound to all."""
        self._answering: set[asyncio.Task[None]] = set()
        self._ids = itertools.count(1)
        self._waiting: dict[int, asyncio.Future[Any]] = {}
        self._reading = asyncio.create_task(self._read())

    @classmethod
    async def connect(cls, sock: Path, listener: Listener | None = None, timeout: float = 5.0) -> EngineClient:
        """Connect to the engine at `sock` (OSError when nothing listens there)."""
        reader, writer = await asyncio.wait_for(host.connect(sock, 2**20), timeout)
        return cls(reader, writer, listener)

    async def initialize(self, root: Path | None = None, locale: str = "en", options: dict[str, Any] | None = None,
                         answers: Iterable[str] = ()) -> Any:
        """`initialize` with this flower's version, serving `root` (if given) as the only folder.

        `answers`: the questions (`flower/approve`, `flower/ask`) `answerer` puts to a person here; none are sent otherwise.
        """
        declared = {ANSWERS_OPTION: list(answers)} if answers else {}
        params: dict[str, Any] = {"processId": os.getpid(), "rootUri": file_uri(root) if root else None, "capabilities": {},
                  "locale": locale, "initializationOptions": {**(options or {}), **declared, VERSION_OPTION: VERSION}}
        if root is not None:
            params["workspaceFolders"] = [{"uri": file_uri(root), "name": root.name}]
        result = await self.request("initialize", params)
        self.notify("initialized", {})
        return result

    async def request(self, method: str, params: Any = None, timeout: float = REQUEST_TIMEOUT) -> Any:
        """Send a request and wait (bounded) for its result; EngineError for an error answer, Gone if the engine left."""
        msg_id = next(self._ids)
        future: asyncio.Future[Any] = asyncio.get_running_loop().create_future()
        self._waiting[msg_id] = future
        self._send({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})
        try:
            return await asyncio.wait_for(future, timeout)
        finally:
            self._waiting.pop(msg_id, None)

    def notify(self, method: str, params: Any = None) -> None:
        """Send a notification."""
        self._send({"jsonrpc": "2.0", "method": method, "params": params})

    async def close(self) -> None:
        """Leave (the engine's runs go on)."""
        self._reading.cancel()
        self.writer.close()
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.writer.wait_closed(), 2)

    @property
    def closed(self) -> bool:
        """Whether the engine's end has gone."""
        return self._reading.done()

    def _send(self, message: dict[str, Any]) -> None:
        if self.writer.is_closing():
            raise Gone("the flower engine closed the connection")
        self.writer.write(frame(message))

    async def _read(self) -> None:
        try:
            async for body in bodies(self.reader):
                try:
                    message = json.loads(body)
                except ValueError:
                    log.warning("the engine sent a frame that is not JSON")
                    continue
                self._dispatch(message)
        finally:
            for future in self._waiting.values():
                if not future.done():
                    future.set_exception(Gone("the flower engine closed the connection"))

    async def _answer(self, message: dict[str, Any]) -> None:
        method = message.get("method", "")
        try:
            if self.answerer is None:
                raise LookupError(method)
            reply: dict[str, Any] = {"result": await self.answerer(method, message.get("params"))}
        except Exception:
            reply = {"error": {"code": -32601, "message": f"Method Not Found: {method}"}}
        with contextlib.suppress(Gone):
            self._send({"jsonrpc": "2.0", "id": message["id"], **reply})

    def _dispatch(self, message: dict[str, Any]) -> None:
        if "id" in message and "method" not in message:
            future = self._waiting.get(message["id"])
            if future is not None and not future.done():
                error = message.get("error")
                if error:
                    future.set_exception(EngineError(error.get("code", 0), error.get("message", ""), error.get("data")))
                else:
                    future.set_result(message.get("result"))
        elif "id" in message:  # a request to us (flower/ask, progress)
            task = asyncio.create_task(self._answer(message))
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)
        elif self.listener is not None:
            try:
                self.listener(message.get("method", ""), message.get("params"))
            except Exception:
                log.exception("handling %s", message.get("method"))


async def engine_runs(sock: Path, locale: str = "en") -> dict[str, Any] | None:
    """The engine's `flower/runs` at `sock` (telling it this flower's version at initialize); None when nothing answers.

    The one query `flower status`/`ps`/`stop` (cli/running.py) and the engine's starter (start.py) both ask.
    """
    try:
        client = await EngineClient.connect(sock, timeout=2.0)
    except (OSError, TimeoutError):
        return None
    try:
        await client.initialize(locale=locale)
        runs = await client.request("flower/runs", None, timeout=10.0)
    except (EngineError, Gone, TimeoutError, OSError):
        return None
    finally:
        await client.close()
    return runs if isinstance(runs, dict) else None
