"""The commands that speak to the engine (D11): `flower serve`, and the terminal's side of a run the engine holds."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import logging
import os
import signal
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import wire as p  # the names alone: the terminal imports no pygls (issue 34)
from ..core.approvals import Approval, Decision
from ..core.banner import RULE, label
from ..core.events import (
    AssistantText,
    Banner,
    Event,
    Handoff,
    Header,
    Notice,
    Question,
    StepEnded,
    StepStarted,
    ToolCall,
    Verdict,
    Waiting,
)
from .args import UsageError
from .console import Console, first_line
from .exits import EXIT_BUSY, EXIT_FAILED, EXIT_OK, EXIT_USAGE
from .keyboard import Asker, Keyboard, listen
from .running import PERSON, engine_runs, held_in, run_dir_of, running_here
from .trust import settle

if TYPE_CHECKING:
    from ..engine.client import EngineClient


async def serve_command(args: argparse.Namespace, locale: str) -> int:
    """`flower serve`: the engine in this process; `--background`: make sure one runs, print its socket, return."""
    from ..engine.engine import Engine, EngineRunning
    from ..engine.place import PlaceError, socket_path
    from ..engine.start import StartError, ensure

    try:
        sock = socket_path()
    except RuntimeError as exc:  # no home directory to put it in
        raise UsageError(f"no place for the engine's socket ({exc}); set FLOWER_ENGINE to a socket path") from None
    if args.background:
        try:
            running, note = await ensure(args.idle, locale, sock)
        except (StartError, PlaceError) as exc:
            sys.stderr.write(f"flower: {exc}\n")
            return EXIT_FAILED
        if note:
            sys.stderr.write(f"flower: {note}\n")
        sys.stdout.write(f"{running.sock}\n")
        return EXIT_OK
    from ..engine.place import log_path
    from ..lsp.__main__ import log_to_stderr

    # Started by --background, stderr is the log file already; at a terminal, the log goes to that file too,
    # so a person sees one line, never a traceback.
    log = log_path()
    log_file = None
    if sys.stderr.isatty():
        from ..engine.place import private_dir

        private_dir(log.parent)
        log_file = open(log, "a", encoding="utf-8")  # noqa: SIM115 - open for the engine's whole life, closed below
        sys.stderr.write(f"flower: the engine serves {sock} (log: {log}; Ctrl-C stops it)\n")
    log_to_stderr(args.log_level, log_file)
    try:
        return await Engine(sock, args.idle if args.idle is not None else default_idle()).serve()
    except EngineRunning as exc:
        sys.stderr.write(f"flower: {exc}\n")
        return EXIT_FAILED
    except (PlaceError, OSError) as exc:
        sys.stderr.write(f"flower: cannot serve at {sock}: {exc}\n")
        return EXIT_USAGE
    except Exception:
        logging.getLogger("flower.engine").exception("the engine stopped on an error")
        sys.stderr.write(f"flower: the engine stopped on an error; the details are in {log}\n")
        return EXIT_FAILED
    finally:
        if log_file is not None:
            log_file.close()


def default_idle() -> float:
    """`FLOWER_ENGINE_IDLE` seconds if set to a number > 0, else 600."""
    import os

    from ..engine.engine import IDLE

    try:
        value = float(os.environ.get("FLOWER_ENGINE_IDLE", ""))
    except ValueError:
        return IDLE
    return value if value > 0 else IDLE


# -- the terminal's side of a run the engine holds -------------------------------------------------
async def held_here(workspace: Path, locale: str) -> Path | None:
    """The engine's socket if an engine answers and runs a wake in `workspace`; None otherwise (nothing is started)."""
    found = held_in(await engine_runs(locale), workspace, None)
    return found.engine if found is not None else None


def event_of(method: str, params: dict[str, Any]) -> Event | None:
    """A notification as the service event the terminal's Console renders (None: nothing to show)."""
    step = params.get("step")
    match method:
        case p.BANNER:
            return Banner(text=params["text"], woke=params["woke"], step=step)
        case p.HEADER:
            return Header(text=params["text"], step=step)
        case p.TRANSCRIPT if params["role"] == "assistant" and params["kind"] == "tool":
            return ToolCall(name=params["toolName"] or "", input=params["toolInput"] or {}, tool_use_id=params["toolUseId"] or "",
                            session_id=params["sessionId"], uuid=params["uuid"], step=step)
        case p.TRANSCRIPT if params["role"] == "assistant" and params["kind"] == "text":
            return AssistantText(text=params["text"], session_id=params["sessionId"], uuid=params["uuid"], step=step)
        case p.STEP_START:  # the live line's step (issue 34)
            return StepStarted(index=params["index"], total=params["total"], session_id=params.get("sessionId"), step=step)
        case p.STEP_END:
            return StepEnded(ok=params["ok"], session_id=params["sessionId"], error=params["error"], step=step)
        case p.VERDICT:
            return Verdict(round=params["round"], passed=params["passed"], reasons=params["reasons"], step=step)
        case p.HANDOFF:
            return Handoff(old_session=params["oldSession"], new_session=params["newSession"], path=params["path"])
        case p.NOTICE:
            return Notice(text=params["text"])
        case p.WAIT:
            return Waiting(reason=params["reason"], attempt=params["attempt"], max_attempts=params["maxAttempts"],
                           seconds=params["seconds"], error=params["error"], offline_since=params["offlineSince"], step=step)
        case p.QUESTION:
            return Question(text=params["text"])
    return None


RECENT_SHOWN = 30
"""Transcript entries printed when the terminal attaches (the newest)."""


async def attach_command(sock: Path, workspace: Path, locale: str, text: str | None = None) -> int:
    """Attach this terminal to the run the engine holds here: its recent transcript, then live; Ctrl-C detaches."""
    from ..core.travel import travelling
    from ..engine.client import EngineClient, EngineError, Gone

    console = Console(locale, workspace=workspace)
    interactive = sys.stdin.isatty()
    end: asyncio.Future[dict[str, Any] | None] = asyncio.get_running_loop().create_future()
    folder: str | None = None
    answers: Answers | None = None
    verdicts: list[dict[str, Any]] = []

    def on(method: str, params: Any) -> None:
        if not isinstance(params, dict) or params.get("folder") != folder:
            return
        if method == p.VERDICT:
            verdicts.append(params)
        if method == p.STATE and not params["running"] and not end.done():
            end.set_result(params)
        elif method == p.APPROVED and answers is not None:
            answers.closed(params["id"], params["decision"])
        elif (event := event_of(method, params)) is not None:
            console(event)

    client = await EngineClient.connect(sock, on)
    loop = asyncio.get_running_loop()
    def leave() -> None:
        if not end.done():
            end.set_result(None)

    loop.add_signal_handler(signal.SIGINT, leave)  # Ctrl-C: this terminal leaves; the run goes on
    keyboard = Keyboard() if interactive else None
    typing: asyncio.Task[None] | None = None
    say: Sayer | None = None
    answers = Answers(client, Asker(keyboard, console), console) if keyboard is not None else None
    try:
        # A person at this terminal answers the run's questions here, with the foreground run's prompts (issue 31);
        # declared, so that the engine asks this terminal (a piped `flower` declares nothing and is never asked).
        await client.initialize(workspace, locale, answers=(p.APPROVE, p.ASK) if answers is not None else ())
        if answers is not None:
            client.answerer = answers
        attached = await client.request(p.ATTACH, {"folder": uri_of(workspace)})
        folder = attached["folder"]
        if answers is not None:
            answers.folder = folder
        page = await client.request(p.HISTORY, {"folder": folder, "limit": RECENT_SHOWN})
        known = {e["uuid"] for e in page["entries"] if e["uuid"]}
        shown = page["entries"] + [e for e in attached["recent"] if e["uuid"] and e["uuid"] not in known]
        for entry in shown[-RECENT_SHOWN:]:
            if (event := event_of(p.TRANSCRIPT, entry)) is not None:
                console(event)
        console.note(console.text("engine_attached"))
        if (step := attached["status"].get("step")) is not None:  # attached mid-step: its header, as a foreground run shows
            console(Header(text=f"== {label(locale, step)} {RULE}", step=step))
            console(StepStarted(index=0, total=0, step=step))
        env = travelling()
        if text:
            await client.request(p.SAY, {"folder": folder, "text": text, "env": env})
        if keyboard is not None and answers is not None:
            console.interactive = True
            say = Sayer(client, folder, env, console)
            typing = asyncio.create_task(listen(keyboard, say, answers.asker))
            waiting = attached["status"]["waitingFor"]
            if waiting is not None and waiting["approval"] is not None:  # asked before this terminal attached
                answers.late(waiting["approval"])
        gone: asyncio.Future[Any] = asyncio.ensure_future(_closed(client))
        await asyncio.wait({end, gone}, return_when=asyncio.FIRST_COMPLETED)
        gone.cancel()
        if say is not None:  # a sentence typed as the run ended: its answer (or that there was none) before leaving
            await say.settled()
    except (EngineError, Gone) as exc:
        console.error(getattr(exc, "message", str(exc)))
        return EXIT_FAILED
    finally:
        loop.remove_signal_handler(signal.SIGINT)
        if answers is not None:
            answers.close()
        if typing is not None:
            typing.cancel()
        if keyboard is not None:
            keyboard.close()
        await client.close()
    if not end.done():
        console.error(console.text("engine_gone"))
        return EXIT_FAILED
    outcome = end.result()
    if outcome is None:
        console.line("")
        console.note(console.text("engine_detached"))
        return EXIT_OK
    if outcome["ok"]:  # the foreground run's closing line (issue 34): the judge's round when it passed
        passed = verdicts[-1]["round"] if verdicts and verdicts[-1]["passed"] else None
        console.line(console.style(console.text("done", rounds=passed) if passed else console.text("done_plain"), "1;32"))
        return EXIT_OK
    console.error(first_line(outcome["error"]) if outcome["error"] else console.text("run_unfinished"))
    return EXIT_FAILED


SAY_SETTLE = 10.0
"""Bound on how long a terminal leaving waits for the engine's answer to a sentence typed just before."""


class Sayer:
    """Sentences typed at the attached terminal, for the work session (S15), each one accounted for (issues 31, 34).

    The engine says `received; queued` (a `flower/notice`) once the sentence is on disk, so every attached client
    sees it at once; one the engine did not confirm (it left, refused, or did not answer) is said here with the
    sentence itself, and one that found the run ended (it started the next wake with it) says so too.
    """

    def __init__(self, client: EngineClient, folder: str, env: dict[str, str], console: Console) -> None:
        self.client, self.folder, self.env, self.console = client, folder, env, console
        self._sending: set[asyncio.Task[None]] = set()

    async def __call__(self, text: str) -> None:
        """Say `text` and wait for the engine's answer (shielded: a terminal leaving meanwhile still hears it)."""
        task = asyncio.ensure_future(self._send(text))
        self._sending.add(task)
        task.add_done_callback(self._sending.discard)
        await asyncio.shield(task)

    async def settled(self) -> None:
        """Wait (bounded) for the answers to sentences still on their way."""
        if self._sending:
            await asyncio.wait(set(self._sending), timeout=SAY_SETTLE)

    async def _send(self, text: str) -> None:
        from ..engine.client import REQUEST_TIMEOUT, EngineError, Gone

        try:
            said = await self.client.request(p.SAY, {"folder": self.folder, "text": text, "env": self.env})
        except EngineError as exc:
            reason = exc.message
        except Gone:
            reason = self.console.text("say_engine_left")
        except TimeoutError:
            reason = self.console.text("say_no_answer", seconds=int(REQUEST_TIMEOUT))
        else:
            if isinstance(said, dict) and said.get("action") == "started":
                self.console.note("· " + self.console.text("say_started", sentence=text))
            return
        self.console.error(self.console.text("say_unconfirmed", reason=reason, sentence=text))


class Answers:
    """The engine's questions to the person at this terminal, asked with the foreground run's own prompts (issue 31).

    `flower/ask` and `flower/approve` are answered as the engine asks them; a tool question already open when the
    terminal attached (its status) is answered with `flower/answer`. One prompt per question, however it came; a
    question answered elsewhere first (another window, the rule) closes its prompt here.
    """

    def __init__(self, client: EngineClient, asker: Asker, console: Console) -> None:
        self.client, self.asker, self.console = client, asker, console
        self.folder = ""
        self.open: dict[str, asyncio.Task[Decision]] = {}
        """Approval id → its prompt at this terminal."""
        self._late: set[asyncio.Task[None]] = set()

    async def __call__(self, method: str, params: Any) -> Any:
        """The engine's request, answered here (LookupError: MethodNotFound, for anything else)."""
        if not isinstance(params, dict):
            raise LookupError(method)
        if method == p.ASK:
            return {"answer": await self.asker(str(params.get("question", "")))}
        if method == p.APPROVE:
            decision = await self._prompt(params)
            return {"decision": decision.choice, "message": decision.message}
        raise LookupError(method)

    def late(self, params: dict[str, Any]) -> None:
        """Ask about a question that was open before this terminal attached, and answer it by id."""
        task = asyncio.ensure_future(self._answer_late(params))
        self._late.add(task)
        task.add_done_callback(self._late.discard)

    async def _answer_late(self, params: dict[str, Any]) -> None:
        from ..engine.client import EngineError, Gone

        decision = await self._prompt(params)
        with contextlib.suppress(EngineError, Gone, TimeoutError):  # answered elsewhere meanwhile, or the engine left
            await self.client.request(p.ANSWER, {"folder": self.folder, "id": params["id"], "decision": decision.choice,
                                                 "message": decision.message})

    async def _prompt(self, params: dict[str, Any]) -> Decision:
        approval = approval_of(params)
        task = self.open.get(approval.id)
        if task is None:
            task = self.open[approval.id] = asyncio.ensure_future(self.asker.approve(approval))
        return await asyncio.shield(task)

    def closed(self, approval_id: str, decision: str) -> None:
        """`flower/approved`: the question is closed; a prompt still open for it here goes."""
        task = self.open.pop(approval_id, None)
        if task is not None and not task.done():
            task.cancel()
            self.console.line("")
            self.console.note(self.console.text("approval_elsewhere", decision=decision))

    def close(self) -> None:
        """The terminal leaves: its prompts go (the questions stay open in the engine for another client)."""
        for task in [*self.open.values(), *self._late]:
            task.cancel()
        self.open.clear()


def approval_of(params: dict[str, Any]) -> Approval:
    """A `flower/approve` payload (`ApproveParams`) as the Approval the terminal's prompt shows."""
    detail = params.get("detail") or {}
    return Approval(id=str(params["id"]), step=str(params.get("step", "")), tool=str(params.get("tool", "")),
                    input=params.get("input") or {}, summary=str(params.get("summary", "")),
                    detail_kind=detail.get("kind", "input"), detail=str(detail.get("text", "")),
                    suggestions=list(params.get("suggestions") or []), since=float(params.get("since") or time.time()))


async def _closed(client: EngineClient) -> None:
    while not client.closed:
        await asyncio.sleep(0.1)


def uri_of(path: Path) -> str:
    """A folder's file:// URI (core/wire.py: no pygls in a terminal, issue 34)."""
    return p.file_uri(path)


async def detach_command(args: argparse.Namespace, text: str, locale: str) -> int:
    """`flower --detach [text]`: start (or continue) the wake in the engine, starting the engine if needed; return at once."""
    from ..core.travel import travelling
    from ..engine.client import EngineClient, EngineError
    from ..engine.place import PlaceError
    from ..engine.start import StartError, ensure

    workspace = Path.cwd()
    console = Console(locale, workspace=workspace)
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    keyboard = Keyboard() if interactive else None
    try:  # asked here, at the terminal, not in the engine: the engine reads the remembered answer (D10)
        await settle(workspace, console, keyboard)
    finally:
        if keyboard is not None:
            keyboard.close()
    try:
        running, note = await ensure(None, locale)
    except (StartError, PlaceError) as exc:
        console.error(str(exc))
        return EXIT_FAILED
    if note:
        console.note(note)
    client = await EngineClient.connect(running.sock)
    try:
        await client.initialize(workspace, locale, options=options_of(args))
        folder = uri_of(workspace)
        params = {"folder": folder, "text": text or None, "env": travelling()}
        if args.new:
            await client.request(p.NEW, params)
        else:
            await client.request(p.WAKE, params)
    except EngineError as exc:
        console.error(exc.message)
        return EXIT_BUSY if exc.code == p.WORKSPACE_BUSY else EXIT_FAILED
    finally:
        await client.close()
    console.note(console.text("engine_started"))
    return EXIT_OK


def options_of(args: argparse.Namespace) -> dict[str, Any]:
    """The command line's settings flags as `initializationOptions` (unset ones left out)."""
    names = {"rounds": "rounds", "trim": "trim", "model": "model", "fallback_model": "fallbackModel", "max_cost": "maxCost",
             "isolated": "isolated", "store": "store", "project": "project"}
    return {wire: getattr(args, name) for name, wire in names.items() if getattr(args, name, None) is not None}


STOP_WAIT = 30.0
"""Bound on how long `flower stop` waits for another flower process to let the folder go."""


async def stop_command(args: argparse.Namespace, locale: str) -> int:
    """`flower stop`: stop the wake under way here, in the engine or in another flower process (it resumes at the next wake).

    The engine's run is cancelled through it; another process (a terminal's `flower`) gets SIGINT, its Ctrl-C, and
    the command waits (bounded) until it has let the folder's lock go (issue 31: stop, status and ps agree).
    """
    from ..engine.client import EngineClient, EngineError, Gone
    from ..engine.place import socket_path

    workspace = Path.cwd()
    console = Console(locale, workspace=workspace)
    run_dir = run_dir_of(workspace)
    found = await running_here(workspace, run_dir, locale)
    if found is None:
        console.error(console.text("engine_nothing_here" if socket_path().exists() else "stop_nothing", where=workspace))
        return EXIT_FAILED
    if found.engine is None:
        return await _stop_process(found.pid, run_dir, console)
    client = await EngineClient.connect(found.engine)
    try:
        await client.initialize(workspace, locale)
        done = await client.request(p.CANCEL, {"folder": uri_of(workspace)})
    except (EngineError, Gone) as exc:
        console.error(getattr(exc, "message", str(exc)))
        return EXIT_FAILED
    finally:
        await client.close()
    if not done["cancelled"]:
        console.error(console.text("engine_nothing_here", where=workspace))
        return EXIT_FAILED
    console.line(console.text("engine_stopped", pid=found.pid))
    return EXIT_OK


async def _stop_process(pid: int | None, run_dir: Path | None, console: Console) -> int:
    """SIGINT to the flower process holding the folder (as Ctrl-C in its terminal), then wait until it let go."""
    from ..core.lock import holder

    if pid is None or run_dir is None:
        console.error(console.text("stop_unknown"))
        return EXIT_FAILED
    try:
        os.kill(pid, signal.SIGINT)
    except ProcessLookupError:  # it ended on its own meanwhile
        pass
    except PermissionError:
        console.error(console.text("stop_denied", pid=pid))
        return EXIT_FAILED
    deadline = time.monotonic() + STOP_WAIT
    while (held := holder(run_dir)) is not None and held.get("pid") == pid:
        if time.monotonic() > deadline:
            console.error(console.text("stop_slow", pid=pid, seconds=int(STOP_WAIT)))
            return EXIT_FAILED
        await asyncio.sleep(0.1)
    console.line(console.text("stopped_pid", pid=pid))
    return EXIT_OK


async def ps_command(args: argparse.Namespace, locale: str) -> int:
    """`flower ps`: the folders the engine holds, running, waiting for the person or idle, and a run here outside it."""
    from ..core.banner import kilo

    console = Console(locale)
    found = await engine_runs(locale)
    workspace = Path.cwd()
    here = held_in(found, workspace, run_dir_of(workspace))
    # A run in this folder outside the engine (a terminal's `flower`): the engine cannot list it, this command can.
    elsewhere = here if here is not None and here.engine is None else None
    if args.json:
        shown = dict(found[1]) if found is not None else {"runs": [], "version": None, "pid": None}
        shown["here"] = None if elsewhere is None else {"workspace": str(workspace), **elsewhere.to_json()}
        console.line(json.dumps(shown, ensure_ascii=False, indent=2))
        return EXIT_OK
    if found is None:
        console.line(console.text("engine_none"))
    else:
        runs = found[1]
        console.note(f"flower engine {runs['version']} · pid {runs['pid']}")
        for run in runs["runs"]:
            since = time.strftime("%H:%M", time.localtime(run["since"]))
            context = kilo(run["context"]) if run["context"] is not None else "-"
            waiting = (run.get("waitingFor") or {}).get("what") in PERSON
            state = "waiting" if waiting else "running" if run["running"] else "idle"
            pid = f"pid {runs['pid']}  " if run["running"] else ""
            step = label(locale, run["step"]) if run["step"] else "-"  # the person's language (issue 34)
            line = f"{state:<8} {step:<12} {context:>7}  {run['clients']} attached  since {since}  {pid}{run['workspace']}"
            if waiting:
                line += "  (" + console.text("ps_waiting", where=run["workspace"]) + ")"
            console.line(line)
            for work in run.get("background") or []:  # what its wake runs in the background (issue 32)
                console.line(f"{'':<8} {console.text('ps_background', what=work)}")
    if elsewhere is not None:
        pid = f"pid {elsewhere.pid}" if elsewhere.pid is not None else "pid ?"
        console.line(f"{'running':<8} {pid} ({console.text('ps_elsewhere')})  {workspace}")
    return EXIT_OK
