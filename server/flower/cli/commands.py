"""The commands: `flower [text]`, `flower once`, `flower status` (`flower demo` is in flower/demo.py)."""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..core import host
from ..core.approvals import Approval, Decision
from ..core.banner import kilo, label
from ..core.caller import Caller
from ..core.errors import FlowerError
from ..core.identity import workspace_identity
from ..core.shared import is_postgres_url
from ..core.text import megabytes
from ..core.texts import Said
from ..core.trust import why
from ..settings import FLAGS, Settings, load
from .args import UsageError, given, writable_run_dir
from .console import Console, first_line, setup_logging
from .exits import EXIT_FAILED, EXIT_OK
from .keyboard import Asker, Keyboard, listen, prompt
from .trust import settle

if TYPE_CHECKING:
    from ..sessions import Sessions
    from ..task import Task
    from .running import Running



def settings_of(args: argparse.Namespace, workspace: Path, trusted: bool) -> Settings:
    """This directory's settings: flags > environment > `.flower.toml` / `[tool.flower]` > defaults (flower.settings).

    An untrusted folder's file may not name a store or a run_dir outside it (D10).
    """
    return load(workspace, given(args), labels=FLAGS, trusted=trusted)


async def flower_command(args: argparse.Namespace, locale: str) -> int:
    """`flower [text]`, `flower --new text`: drive the FlowerService and render its events (or the engine's run, D11)."""
    from ..engine.place import existing_socket

    text = " ".join(args.text).strip()
    # The engine's side (its protocol: lsprotocol, cattrs, pygls) is imported only when it is asked for or may run
    # a wake here: a wake with no engine's socket goes straight on to its own.
    if args.detach and not host.ENGINE:
        raise FlowerError("engine_unix_only")
    if args.detach or (not args.new and existing_socket() is not None):
        from . import engine

        if args.detach:
            return await engine.detach_command(args, text, locale)
        if (held := await engine.held_here(Path.cwd(), locale)) is not None:
            return await engine.attach_command(held, Path.cwd(), locale, text or None)  # the run lives in the engine
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    console = Console(locale, workspace=Path.cwd())
    console.interactive = interactive
    keyboard = Keyboard() if interactive else None
    try:
        return await _drive(args, locale, console, keyboard)
    finally:
        if keyboard is not None:
            keyboard.close()


async def _drive(args: argparse.Namespace, locale: str, console: Console, keyboard: Keyboard | None) -> int:
    text = " ".join(args.text).strip()
    workspace = Path.cwd()
    trust = await settle(workspace, console, keyboard)  # before the settings: an untrusted folder's file may set less
    setup_logging(console)
    from ..task import open_task  # SDK-free; here, not at import: `flower --help` needs none of it

    # The prefetch worker starts before the runtime (and the SDK behind it) is imported: it prunes the work session
    # on another core meanwhile. A new task resumes nothing.
    made: list[Path] = []

    def prepare(run_dir: Path) -> Path:
        if not run_dir.exists():
            made.append(run_dir)
        return writable_run_dir(run_dir, locale)

    task = open_task(workspace, locale=locale, given=given(args), labels=FLAGS, trust=trust, prepare=prepare,
                     prefetch=not args.new)
    # Imported now, while the worker prunes, rather than by the service's first wake (which imports it too, issue 34):
    # by then the ticker and the keyboard run, and a second of imports would freeze them.
    from .. import runtime  # noqa: F401

    svc = task.service
    try:
        await store_ready(task.sessions, locale)
        # -- what to do: from the arguments, or asked at the terminal (S28) ------------------
        new = args.new
        started = svc.status().started  # a task was started here: the next wake continues it
        if not text:
            if args.new or not started:
                if keyboard is None:
                    raise UsageError(console.text("new_needs_task" if args.new else "nothing_here"))
                text = await prompt(keyboard, console, console.text("new_prompt"), allow_empty=False)
            elif keyboard is not None:
                text = await prompt(keyboard, console, console.text("wake_prompt"))
                if text == "/new":
                    new = True
                    text = await prompt(keyboard, console, console.text("new_prompt"), allow_empty=False)

        # -- run it, showing what happens as it happens -------------------------------------
        if new or not started:
            console.note(console.text("starting", where=workspace, runs=os.path.relpath(task.run_dir)))
        svc.subscribe(console)
        tasks = [asyncio.create_task(console.ticker())]
        if keyboard is not None:
            asker = Asker(keyboard, console)
            caller = Caller(ask=asker, approve=asker.approve)  # this process's own variables: no `env` to add
            tasks.append(asyncio.create_task(listen(keyboard, lambda line: svc.say(line, caller), asker)))
        else:
            caller = unattended(task, console)
        try:
            result = await (task.new(text, caller) if new else task.wake(text or None, caller))
        finally:
            for t in tasks:
                t.cancel()
            console.clear()
    finally:
        # Ctrl-C stops the agent cleanly (bounded; the lineage already holds its sessions); an unused prefetch and a
        # shared store's connections end with the command, not at interpreter exit.
        await asyncio.wait_for(task.close(), 15)
        for run_dir in made:  # nothing was run (nothing to do, no key): no empty runs/ left behind (issue 34)
            with contextlib.suppress(OSError):
                run_dir.rmdir()
    if keyboard is not None:
        console.out.write("\a")  # the wake ended: the bell tells a person who looked away (issue 24)
    if result.ok:
        verdict = result.verdict
        done = console.text("done", rounds=verdict.rounds) if verdict and verdict.passed else console.text("done_plain")
        console.line(console.style(done, "1;32"))
        return EXIT_OK
    if svc.budget.exhausted():  # a run stopped at the cap: say so in one line, not as the step's failure
        console.error(svc.budget.said().text(locale))
        return EXIT_FAILED
    console.error(said_lines(result.said, locale) if result.said else first_line(result.error) or console.text("run_unfinished"))
    return EXIT_FAILED


def forecast_line(f: dict[str, Any], console: Console) -> str:
    """`forecast  +2.2K a round: the handoff in 38 rounds, the window in 74 · $0.58 a round …` (issue 34; S19, S26)."""
    if f["slope"] is None:
        growth, left = console.text("forecast_unknown"), ""
    elif f["to_handoff"] is None:
        growth, left = console.text("forecast_flat"), ""
    else:
        growth = console.text("forecast_growth", slope=kilo(round(f["slope"])))
        left = console.text("forecast_left", handoff=f["to_handoff"], window=f["to_window"])
    cost = console.text("forecast_cost", wake=f"{f['wake_per_round'] or 0:.2f}", task=f"{f['task_per_round'] or 0:.2f}")
    return console.text("status_forecast", growth=growth, left=left, cost=cost) if left else \
        console.text("status_forecast_short", growth=growth, cost=cost)


def said_running(held: Running, console: Console) -> str:
    """Who runs the wake here, by pid; a run waiting for the person says so, with the command that attaches."""
    if held.engine is not None and held.for_you:
        return console.text("waiting_for_you", what=console.text(f"waiting_{held.waiting_for}"), pid=held.pid,
                            where=Path.cwd())
    return console.text("running_engine" if held.engine is not None else "running_pid", pid=held.pid if held.pid else "?")


def unattended(task: Task, console: Console) -> Caller:
    """Without a terminal nobody can answer a tool question: the unattended rule applies at once, said in one line.

    Unless the person set `approvals.wait` themselves: then they expect an answer from elsewhere (issue 24).
    """
    def said(approval: Approval, decision: Decision | None) -> None:
        if decision is not None and decision.by == "unattended":
            console.line(console.style(console.text("approval_unattended", tool=approval.tool, summary=approval.summary), "33"),
                         sys.stderr)

    task.service.approvals.on_change.append(said)
    return Caller(wait=0.0 if task.settings.sources.get("approvals_wait", "default") == "default" else None)


async def store_ready(sessions: Sessions, locale: str) -> None:
    """Open the store before anything else: a bad `--store` is one line and exit 2, nothing touched (D9)."""
    try:
        await sessions.ready()
    except FlowerError as exc:
        raise UsageError(exc.text(locale)) from None


def said_lines(said: Said, locale: str) -> str:
    """A failure in the terminal's language: its first line, and its last when that differs (a fatal error's advice, S21)."""
    lines = [ln for ln in said.text(locale).splitlines() if ln.strip()]
    return "\n".join(dict.fromkeys(first_line(ln) for ln in lines[:1] + lines[-1:]))


async def once_command(args: argparse.Namespace, locale: str) -> int:
    """`flower once`: one agent turn through the Runtime; no workflow, no lineage (S29)."""
    from ..runtime import AgentSpec
    from ..task import open_task

    console = Console(locale, sys.stdout, sys.stderr, workspace=Path.cwd())
    trust = await settle(Path.cwd(), console, None)  # one line when its own code is skipped; the question is `flower`'s
    setup_logging(console)
    task = open_task(Path.cwd(), locale=locale, given=given(args), labels=FLAGS, trust=trust,
                     prepare=lambda run_dir: writable_run_dir(run_dir, locale))
    tools = [name.strip() for name in args.tools.split(",") if name.strip()]
    agent = AgentSpec("once", allowed_tools=tools, permission_mode="acceptEdits")
    async with task.turns() as rt:
        await store_ready(rt.sessions, locale)
        if args.resume and not rt.has_session(args.resume):
            raise UsageError(console.text("no_session", sid=args.resume, db=rt.db_path))
        rt.listeners.append(console)
        ticker = asyncio.create_task(console.ticker())
        try:
            result = await rt.run(agent, " ".join(args.prompt), resume=args.resume, step="once")
        finally:
            ticker.cancel()
            console.clear()
    if result.session_id:
        console.line(console.text("session", sid=result.session_id))
        console.note(console.text("resume_hint", sid=result.session_id))
    if result.ok:
        return EXIT_OK
    console.error(said_lines(result.said, locale) if result.said else first_line(result.error) or console.text("agent_unfinished"))
    return EXIT_FAILED


async def status_command(args: argparse.Namespace, locale: str) -> int:
    """`flower status`: the service's status of this directory, for people or (--json) scripts."""
    from ..status import to_json
    from ..task import open_task

    console = Console(locale, workspace=Path.cwd())
    setup_logging(console)
    task = open_task(Path.cwd(), locale=locale, given=given(args), labels=FLAGS)
    svc, settings, trust = task.service, task.settings, task.trust
    try:
        await store_ready(task.sessions, locale)
        st: dict[str, Any] = to_json(svc.status())
    finally:
        await task.close()
    from .running import running_here  # the engine's side (lsprotocol) only for status, not for a wake's imports

    held = None if st["running"] else await running_here(Path.cwd(), svc.run_dir, locale)
    st["held_by"] = held.to_json() if held is not None else None  # who runs a wake here: the engine or a pid (issue 31)
    st["identity"] = workspace_identity(Path.cwd(), settings.project)
    st["store"] = svc.sessions.raw.path if is_postgres_url(settings.store) else "sqlite"
    st["trust"] = {"trusted": trust.trusted, "why": trust.why, "where": str(trust.where) if trust.where else None,
                   "text": why(trust).text(locale)}
    if args.json:
        console.line(json.dumps(st, ensure_ascii=False, indent=2))
        return EXIT_OK
    console.line(console.text("status_workspace", path=st["workspace"]))
    console.line(console.text("status_run_dir", path=st["run_dir"]))
    console.line(console.text("status_identity", identity=st["identity"], store=st["store"]))
    if st["store_bytes"] is not None:
        console.line(console.text("status_store_size", size=megabytes(st["store_bytes"])))
    answer = console.text("trust_yes_word" if trust.trusted else "trust_no_word")
    console.line(console.text("status_trusted", answer=answer, why=st["trust"]["text"]))
    console.line(console.text("status_model", model=st["model"]) if st["model"] else console.text("status_model_unknown"))
    cost = st["cost"]
    cap = console.text("status_cap", cap=f"{cost['max']:.2f}") if cost["max"] else ""
    console.line(console.text("status_cost", wake=f"{cost['wake']:.2f}", task=f"{cost['task']:.2f}", cap=cap))
    if st["context"]:
        console.line(console.text("status_context", size=kilo(st["context"]), window=kilo(st["window"]),
                                  handoff=kilo(st["handoff_at"])))
    if st["forecast"]:
        console.line(forecast_line(st["forecast"], console))
    if st["steps"]:
        console.line(console.text("status_resumes", woke=st["woke"], next=st["woke"] + 1))
        for step, sid in st["steps"].items():
            console.line(f"  {label(locale, step)}  {sid}")  # the person's language; the records keep the seed's names
    else:
        console.line(console.text("status_nothing"))
    if held is not None:
        console.line(said_running(held, console))
    elif st["interrupted"]:
        console.line(console.text("status_interrupted"))
    if st.get("background"):  # subagents and background shells of the wake running here (issue 32)
        console.line(console.text("status_background", what="; ".join(st["background"])))
    if st["goals"]:
        done = sum(1 for g in st["goals"] if g["done"])
        console.line(console.text("status_goals", done=done, total=len(st["goals"])))
        for goal in st["goals"]:
            console.line(f"  [{'x' if goal['done'] else ' '}] {goal['text']}")
    return EXIT_OK
