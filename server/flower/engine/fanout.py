"""One folder's peer in the engine: what the folder sends goes to every connection attached to it (D11).

A `Folder` (lsp/folders.py) talks to "its client" through `ls.protocol` (notify, ask) and
`ls.work_done_progress`. In the engine it is given a Fanout instead of one client's server: the
same calls, spread over the connections attached to the folder at that moment. The folder's own
queue keeps the order (one pump per folder), so every connection sees the folder's notifications
in the same order, and a connection that attaches between two notifications gets every later one.
"""

from __future__ import annotations

import asyncio
import collections
import logging
import time
from typing import TYPE_CHECKING, Any

from lsprotocol import types
from pygls.exceptions import JsonRpcException, JsonRpcMethodNotFound

from ..lsp import protocol as p
from ..lsp.folders import Left

if TYPE_CHECKING:
    from .connection import Connection

log = logging.getLogger(__name__)

RECENT = 500
"""Live transcript entries of the running wake kept for a client that attaches mid-wake (`flower/attach` `recent`)."""
CREATE_BOUND = 5.0
"""Bound on one client's answer to `window/workDoneProgress/create`; a slow window never holds the others up."""


class Fanout:
    """The connections attached to one folder, standing in for the single client a stdio server has."""

    def __init__(self) -> None:
        self.connections: list[Connection] = []
        """Attached connections, in the order they attached."""
        self.protocol = FanProtocol(self)
        self.work_done_progress = FanProgress(self)
        self.recent: collections.deque[dict[str, Any]] = collections.deque(maxlen=RECENT)
        """The running wake's live `flower/transcript` payloads, oldest first (cleared when a wake begins)."""
        self.since = time.time()
        """When the folder began being served, or its last wake began or ended (`flower/runs`)."""

    def attach(self, connection: Connection) -> None:
        """Send this folder's notifications to `connection` from now on (idempotent)."""
        if connection not in self.connections:
            self.connections.append(connection)
            self.work_done_progress.join(connection)

    def detach(self, connection: Connection) -> None:
        """Stop sending to `connection` (idempotent)."""
        if connection in self.connections:
            self.connections.remove(connection)

    def live(self) -> list[Connection]:
        """The attached connections whose socket is still open."""
        return [c for c in self.connections if c.open]


class FanProtocol:
    """`ls.protocol` for a Folder: notifications to every attached connection, `flower/ask` to one of them."""

    def __init__(self, fan: Fanout) -> None:
        self.fan = fan

    @property
    def client_capabilities(self) -> types.ClientCapabilities:
        """Work-done progress is always on: a window attaching mid-step joins it (each client gets it only if it can)."""
        return types.ClientCapabilities(window=types.WindowClientCapabilities(work_done_progress=True))

    def notify(self, method: str, params: Any = None) -> None:
        """Send one notification to every attached connection; remember the running wake's transcript."""
        if method == p.STATE and isinstance(params, dict):
            self.fan.since = time.time()
            if params.get("running"):
                self.fan.recent.clear()
        elif method == p.TRANSCRIPT and isinstance(params, dict):
            self.fan.recent.append(params)
        for connection in self.fan.live():
            connection.protocol.notify(method, params)

    async def send_request_async(self, method: str, params: Any = None) -> Any:
        """Ask every attached client that declared it answers `method` (`flower/ask`, `flower/approve`): the first answer wins.

        None declared it can (issue 31: asking one that cannot left the question to nobody): MethodNotFound goes to
        the folder, as from a stdio client that cannot ask, and the rule for nobody applies. Every client asked
        withdrew without an answer (a window reloading answers with an error, a terminal's Ctrl-C leaves): `Left`,
        and a tool question stays open for whoever attaches next (`FolderStatus.waitingFor`, `flower/answer`).
        """
        asking = {asyncio.ensure_future(self._ask(c, method, params)) for c in self.fan.live() if method in c.answers}
        if not asking:
            raise JsonRpcMethodNotFound(message=f"no client attached declared that it answers {method}")
        try:
            for done in asyncio.as_completed(asking):
                try:
                    answered, value = await done
                except JsonRpcException as exc:
                    log.info("a client withdrew %s: %s", method, exc.message)
                    continue
                if answered:
                    return value
        finally:
            for task in asking:
                task.cancel()
        raise Left(message=f"every client asked {method} withdrew without an answer")

    async def _ask(self, connection: Connection, method: str, params: Any) -> tuple[bool, Any]:
        """(True, its answer), or (False, None) when the client left before answering."""
        answer = asyncio.ensure_future(connection.protocol.send_request_async(method, params))
        gone = asyncio.ensure_future(connection.closed.wait())
        try:
            await asyncio.wait({answer, gone}, return_when=asyncio.FIRST_COMPLETED)
        except asyncio.CancelledError:  # another client answered first
            answer.cancel()
            raise
        finally:
            gone.cancel()
        if not answer.done():
            answer.cancel()
            return False, None
        return True, answer.result()


class FanProgress:
    """`ls.work_done_progress` for a Folder: each token is created on, and reported to, the clients that support it."""

    def __init__(self, fan: Fanout) -> None:
        self.fan = fan
        self.tokens: dict[str, list[Connection]] = {}
        """Token → the connections that created it."""
        self.shown: dict[str, tuple[types.WorkDoneProgressBegin, types.WorkDoneProgressReport | None]] = {}
        """Token → its begin and latest report: what a connection joining mid-step is shown first."""
        self._joining: set[asyncio.Task[None]] = set()

    async def create_async(self, token: str) -> None:
        """Create the token on every attached client that supports progress (bounded per client)."""
        targets = [c for c in self.fan.live() if c.supports_progress]
        results = await asyncio.gather(
            *(asyncio.wait_for(c.work_done_progress.create_async(token), CREATE_BOUND) for c in targets),
            return_exceptions=True)
        made = [c for c, r in zip(targets, results, strict=True) if not isinstance(r, BaseException)]
        if targets and not made:
            first = next(r for r in results if isinstance(r, BaseException))
            raise first if isinstance(first, (TimeoutError, JsonRpcException)) else JsonRpcException(message=str(first))
        self.tokens[token] = made

    def join(self, connection: Connection) -> None:
        """A connection attaching mid-step gets the running step's progress as well (created on it, then begun)."""
        if connection.supports_progress:
            for token in list(self.tokens):
                task = asyncio.ensure_future(self._join(connection, token))
                self._joining.add(task)
                task.add_done_callback(self._joining.discard)

    async def _join(self, connection: Connection, token: str) -> None:
        try:
            await asyncio.wait_for(connection.work_done_progress.create_async(token), CREATE_BOUND)
        except (TimeoutError, JsonRpcException) as exc:
            log.info("a joining client did not create progress %s (%s)", token, exc)
            return
        shown, made = self.shown.get(token), self.tokens.get(token)
        if shown is None or made is None or connection in made or not connection.open:
            return  # the step ended meanwhile
        begin, latest = shown
        connection.work_done_progress.begin(token, begin)
        if latest is not None:
            connection.work_done_progress.report(token, latest)
        made.append(connection)

    def _send(self, token: str, kind: str, value: Any) -> None:
        for connection in self.tokens.get(token, []):
            if connection.open:
                getattr(connection.work_done_progress, kind)(token, value)

    def begin(self, token: str, value: types.WorkDoneProgressBegin) -> None:
        """Progress begins on the clients that created the token."""
        self.shown[token] = (value, None)
        self._send(token, "begin", value)

    def report(self, token: str, value: types.WorkDoneProgressReport) -> None:
        """A progress line to the clients that created the token."""
        if token in self.shown:
            self.shown[token] = (self.shown[token][0], value)
        self._send(token, "report", value)

    def end(self, token: str, value: types.WorkDoneProgressEnd) -> None:
        """Progress ends; the token is forgotten."""
        self._send(token, "end", value)
        self.tokens.pop(token, None)
        self.shown.pop(token, None)
