"""A task: one folder's work, opened once — its trust, settings, records, store, service and history (D3, issue 33).

`open_task` is the one place these are composed. The command line (`flower`, `once`, `status`, `changes`), the
editor server (`lsp/folders.py`) and the engine (through the same folders) call it and adapt what it returns: a
terminal renders its events, the editor sends them as notifications. Nothing here imports the SDK at import time:
the command line opens a task before the SDK is loaded, so the prefetch worker it asks for starts first and prunes
the work session on another core meanwhile (stores/prefetch.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import os
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING
from urllib.parse import unquote, urlparse

from .core.caller import Caller
from .core.trust import Trust, decide
from .settings import Settings, SettingsError, load

if TYPE_CHECKING:
    from .history import History, Page, Pruned, StepRun
    from .runtime import Runtime
    from .service import FlowerService
    from .sessions import Sessions
    from .status import WakeOutcome
    from .stores.prefetch import Prefetch

log = logging.getLogger(__name__)


class NotASession(ValueError):
    """A session id that is not one of the task's: `known` holds the ones it has, for a message that names them."""

    def __init__(self, session_id: str, known: list[str]) -> None:
        super().__init__(session_id)
        self.session_id, self.known = session_id, known


def folder_of(uri: str) -> Path | None:
    """The local folder a `file:` URI names (an editor's workspace folder); None for any other URI."""
    try:
        parsed = urlparse(uri)
    except ValueError:
        return None
    if parsed.scheme != "file" or not parsed.path:
        return None
    if os.name == "nt":
        from urllib.request import url2pathname  # here: urllib.request (http, email) would slow `flower status` (issue 34)

        path = url2pathname(parsed.path)
    else:
        path = unquote(parsed.path)
    if parsed.netloc and parsed.netloc != "localhost":  # a UNC share: //server/share/...
        path = f"//{parsed.netloc}{path}"
    return Path(path)


def folder_key(path: Path) -> str:
    """A folder as tasks are told apart: one task per key, whichever spelling of its path a client sent (P2)."""
    return os.path.normcase(os.path.abspath(path))


@dataclass
class Task:
    """One folder's task, opened: what every front-end drives and shows."""

    workspace: Path
    trust: Trust
    settings: Settings
    settings_error: SettingsError | None
    """A settings file, variable or option that cannot be used (an editor's task opens anyway and says so)."""
    run_dir: Path
    """Where the task's records and sessions.db live (S4), absolute."""
    locale: str = "en"
    prefetch: Prefetch | None = None
    """The work session's pruned view a worker is preparing: the next wake's resume takes it (stores/prefetch.py)."""
    closed: bool = False

    @functools.cached_property
    def service(self) -> FlowerService:
        """The task's service, made on first use: `flower once` runs single turns (`turns`) and never makes one."""
        from .service import Config, FlowerService

        try:
            return FlowerService(self.workspace, self.run_dir, Config.of(self.settings, locale=self.locale, trust=self.trust))
        except BaseException:
            self._discard()  # the prefetch worker is the service's first wake's: without a service, nobody takes it
            raise

    @property
    def sessions(self) -> Sessions:
        """The task's store: the same one every wake, status and history read."""
        return self.service.sessions

    @functools.cached_property
    def history(self) -> History:
        """The stored transcript, page by page, from the task's own store and records."""
        from .history import History

        return History(self.workspace, self.run_dir, trim=self.settings.trim, store=self.sessions.raw,
                       records=self.sessions.records)

    async def page(self, session_id: str | None, before: int | None, limit: int) -> tuple[Page, list[StepRun]]:
        """A page of the stored transcript (the newest first) and every step run the records hold; NotASession else."""
        from .history import UnknownSession

        try:
            page = await self.history.page(session_id, before, limit)
        except UnknownSession:
            raise NotASession(session_id or "", [s.session_id for s in await self.history.sessions()]) from None
        return page, await asyncio.to_thread(self.history.step_runs)

    async def pruned(self, session_id: str) -> dict[str, Pruned] | None:
        """How the pruner treats a session's stored entries on resume, read back from the store now (S23).

        None when the store holds none of its entries; `{}` when it keeps every one as stored."""
        verdicts = await self.history.verdicts(session_id, await self.history.count(session_id))  # large: in a process
        return verdicts.verdicts if verdicts.count else None

    async def ready(self) -> None:
        """The settings error, or the store opened: either way one line before anything runs or is written (D9)."""
        if self.settings_error is not None:
            raise self.settings_error
        await self.sessions.ready()

    async def wake(self, text: str | None, caller: Caller) -> WakeOutcome:
        """Wake the task for `caller` (or join the wake running): the first wake takes the prefetched resume."""
        prefetch, self.prefetch = self.prefetch, None
        return await self.service.wake(text, caller, prefetch=prefetch)

    def prefetch_next(self) -> None:
        """Start preparing the next wake's resume now, as a wake has ended (a server holding the task between wakes).

        Issue 35's warm wake: an engine's or editor's next wake then starts from a pruned view already written, as a
        terminal's starts from the one its worker wrote while the SDK was imported; `take` checks it is still the
        store's session, and writes it from the store otherwise."""
        if not self.closed and self.prefetch is None:
            from .stores.prefetch import Prefetch  # here: status and changes import none of it (issue 34)

            self.prefetch = Prefetch.work(self.run_dir, self.workspace, self.settings.store, trim=self.settings.trim)

    async def new(self, text: str, caller: Caller) -> WakeOutcome:
        """Archive the task and start `text` for `caller` (S28): nothing of the old work session is resumed."""
        self._discard()
        return await self.service.new(text, caller)

    @contextlib.asynccontextmanager
    async def turns(self) -> AsyncIterator[Runtime]:
        """A Runtime for single agent turns on this task's store and settings (`flower once`): no workflow, no lineage.

        Its own store connection, without the flower path's large-result trimming: a turn resumes what was stored.
        """
        from .runtime import Budget, Runtime, Sessions

        s = self.settings
        sessions = Sessions.open(self.run_dir, store=s.store, workspace=self.workspace, project=s.project)
        async with sessions, Runtime(self.workspace, self.run_dir, sessions=sessions, model=s.model,
                                     fallback_model=s.fallback_model, isolated=s.isolated,
                                     budget=Budget(s.max_cost), trust=self.trust) as rt:
            yield rt

    async def close(self) -> None:
        """Cancel a running wake (the next one resumes it), and let go of the store, the history and an unused prefetch."""
        self.closed = True  # no prefetch starts after this (a wake cancelled here ends after it)
        try:
            if "service" in self.__dict__:  # made: a task that only ran turns has none to close
                await self.service.close()
        finally:
            self._discard()
            if "history" in self.__dict__:
                self.history.close()

    def _discard(self) -> None:
        if self.prefetch is not None:
            self.prefetch.discard()
            self.prefetch = None


def open_task(workspace: Path, *, locale: str = "en", given: Mapping[str, object] | None = None,
              labels: Mapping[str, str] | None = None, trust: Trust | None = None, editor_trust: bool = False,
              lenient: bool = False, prepare: Callable[[Path], Path] | None = None, prefetch: bool = False) -> Task:
    """Open the task of `workspace`: its trust, settings, run dir, and (when asked) the prefetch worker; its service and
    store are made on first use (`Task.service`), so a command that runs single turns (`flower once`) makes none.

    `trust`: a front-end's own decision (a terminal asks the person first); else the records decide, with the
    editor's workspace trust when `editor_trust` (D10). `given`: flags or editor options over the settings file,
    named in errors by `labels`. `lenient`: a bad setting opens the task on the defaults and `ready` says what is
    wrong (an editor stays up and tells the person); else it raises. `prepare`: checks the run dir before anything
    is started in it. `prefetch`: start the worker on the work session before the SDK is imported.
    """
    trust = trust or decide(workspace, editor=editor_trust)
    try:
        settings, error = load(workspace, given, labels=labels, trusted=trust.trusted), None
    except SettingsError as exc:
        if not lenient:
            raise
        log.warning("%s: %s", workspace, exc)
        settings, error = Settings(), exc
    run_dir = settings.run_dir_path(workspace)
    if prepare is not None:
        run_dir = prepare(run_dir)
    early = None
    if prefetch:  # only a wake's: status and changes import none of it (the pruner, the reconciler, issue 34)
        from .stores.prefetch import Prefetch

        # Started first: the worker prunes and writes while this process imports the rest (the runtime and the SDK).
        early = Prefetch.work(run_dir, workspace, settings.store, trim=settings.trim)
    return Task(workspace, trust, settings, error, Path(os.path.abspath(run_dir)), locale, early)
