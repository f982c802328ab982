"""The `flower` command line: parse input, render the service's events, nothing else (D3).

    flower "task"            first time here: start; afterwards: one more sentence (S1, S15)
    flower                   continue where it stopped (on a terminal: the wake prompt of S28)
    flower --new "task"      archive this task and start another (S28)
    flower once "prompt"     one agent, no workflow, no lineage; --resume SID to continue it (S29)
    flower status            what the next run would resume
    flower demo              the whole thing offline on the built-in scripted model

Exit codes: 0 done; 1 the run did not finish (the reason is the last line on stderr);
2 bad input; 3 another flower drives this workspace; 130 interrupted (run `flower` again).
"""

from __future__ import annotations

import argparse
import asyncio
import codecs
import json
import logging
import os
import re
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from .core.errors import FlowerError
from .core.lock import WorkspaceBusy
from .core.resilience import endpoint

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_BUSY, EXIT_INTERRUPTED = 0, 1, 2, 3, 130
COMMANDS = ("once", "status", "demo")
JUDGE_MARK = "·判定#"
"""Step names of the judge's rounds contain this (S7: `<step>·判定#<N>`)."""

# ---------------------------------------------------------------------------------------- words

TEXTS: dict[str, dict[str, str]] = {
    "zh": {
        "wake_prompt": "接着上次? 直接回车 = 接着做;也可以说点新的;/new = 重开一件事(Ctrl-C 退出)",
        "new_prompt": "要做什么? 一句话就够,回车开始(Ctrl-C 退出)",
        "answer_prompt": "回答(直接回车 = 让它自己假设)",
        "nobody": "(没人在终端前回答;它会自己做合理假设)",
        "starting": "-> 在 {where} 开始  (记录在 {runs})",
        "interrupted": "已中断。在这里再运行 `flower` 就接着做。",
        "done": "完成 · 判定通过(第 {rounds} 轮)",
        "done_plain": "完成",
        "verdict_pass": "判定 #{round}: 通过",
        "verdict_fail": "判定 #{round}: 未通过 — {reasons}",
        "offline": "离线,等 {host} 恢复 · {seconds} 后再探 · 第 {attempt}/{max} 次",
        "backoff": "{seconds} 后重试(第 {next}/{max} 次) · {error}",
        "handoff": "交接: 上下文太大,换新会话继续;交接文档 {path}",
        "failed_step": "x {step}: {error}",
        "session": "session: {sid}",
        "resume_hint": "接着问: flower once --resume {sid} \"…\"",
    },
    "en": {
        "wake_prompt": "Continue? Enter = carry on; or say something new; /new = start something else (Ctrl-C to quit)",
        "new_prompt": "What should it do? One sentence is enough; Enter to start (Ctrl-C to quit)",
        "answer_prompt": "Your answer (Enter = let it assume)",
        "nobody": "(nobody at a terminal to answer; it will make reasonable assumptions)",
        "starting": "-> starting in {where}  (records in {runs})",
        "interrupted": "Interrupted. Run `flower` here again to continue where it stopped.",
        "done": "done · the judge passed it (round {rounds})",
        "done_plain": "done",
        "verdict_pass": "judge #{round}: passed",
        "verdict_fail": "judge #{round}: not passed — {reasons}",
        "offline": "offline, waiting for {host} to answer · next probe in {seconds} · attempt {attempt}/{max}",
        "backoff": "retrying in {seconds} (attempt {next}/{max}) after: {error}",
        "handoff": "handoff: the context grew too large, work goes on in a new session; document {path}",
        "failed_step": "x {step}: {error}",
        "session": "session: {sid}",
        "resume_hint": "continue it: flower once --resume {sid} \"…\"",
    },
}


def language(environ: dict[str, str] | os._Environ = os.environ) -> str:
    """`zh` when the locale (LC_ALL, LC_MESSAGES, then LANG) is Chinese, else `en` (D4)."""
    for name in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = environ.get(name)
        if value:
            return "zh" if value.lower().startswith("zh") else "en"
    return "en"


def first_line(text: str | None, width: int = 160) -> str:
    """The first non-empty line of `text`, cut to `width` characters."""
    line = next((ln.strip() for ln in (text or "").splitlines() if ln.strip()), "")
    return line if len(line) <= width else line[: width - 1] + "…"


def api_host(environ: dict[str, str] | os._Environ = os.environ) -> str:
    """`host:port` the agent talks to (the probe's endpoint, S20): what an offline wait waits for."""
    host, port = endpoint(environ)
    return f"{host}:{port}"


class UsageError(Exception):
    """Bad input on the command line: exit 2 with this one line."""


# ---------------------------------------------------------------------------------------- output

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


class Console:
    """Renders service events as lines; on a terminal, colours and a live line during waits."""

    def __init__(self, lang: str, out: TextIO = sys.stdout, info: TextIO | None = None, *,
                 live: bool | None = None, workspace: Path | None = None):
        self.lang = lang
        self.t = TEXTS[lang]
        self.out = out
        self.info = info or out
        self.live = out.isatty() if live is None else live
        self.color = self.live and os.environ.get("TERM") != "dumb" and "NO_COLOR" not in os.environ
        self.workspace = workspace
        self.host = api_host()
        self._wait: tuple[float, Any] | None = None  # (deadline, Waiting event) while a wait is shown live
        self._shown = False  # a live line is on screen
        self._frame = 0
        self.verdict: Any = None

    # -- plumbing --------------------------------------------------------------------------
    def style(self, text: str, code: str) -> str:
        """`text` in an SGR style on a colour terminal, else as it is."""
        return f"\x1b[{code}m{text}\x1b[0m" if self.color else text

    def clear(self) -> None:
        """Remove the live line, if one is shown."""
        if self._shown:
            self.info.write("\r\x1b[2K")
            self._shown = False

    def line(self, text: str, stream: TextIO | None = None) -> None:
        """Print one line (after clearing the live line)."""
        self.clear()
        stream = stream or self.out
        stream.write(text + "\n")
        stream.flush()

    def note(self, text: str) -> None:
        """A line of information (dim on a terminal)."""
        self.line(self.style(text, "2"), self.info)

    def error(self, text: str) -> None:
        """The one-line reason of a failure, on stderr."""
        self.clear()
        sys.stderr.write(f"flower: {text}\n")
        sys.stderr.flush()

    # -- events ----------------------------------------------------------------------------
    def __call__(self, event: Any) -> None:
        """The service listener: one event in, its lines out."""
        kind = event.kind
        if kind != "wait":
            self._wait = None
        render = getattr(self, f"on_{kind}", None)
        if render is not None:
            render(event)

    def on_banner(self, e: Any) -> None:
        self.line(self.style(e.text, "1;32"))

    def on_header(self, e: Any) -> None:
        self.line(self.style(e.text, "1"))

    def on_text(self, e: Any) -> None:
        if JUDGE_MARK in (e.step or ""):  # the judge's reasoning: shown, but quieter than the work
            self.note("\n".join("  " + ln for ln in e.text.rstrip("\n").splitlines()))
        else:
            self.line(e.text.rstrip("\n"))

    def on_tool(self, e: Any) -> None:
        self.line(self.style(f"  · {e.name} {self.describe(e.input)}".rstrip(), "36"), self.info)

    def on_step_end(self, e: Any) -> None:
        if not e.ok:
            self.line(self.style(self.t["failed_step"].format(step=e.step, error=first_line(e.error)), "31"), self.info)

    def on_verdict(self, e: Any) -> None:
        self.verdict = e
        if e.passed:
            self.line(self.style(self.t["verdict_pass"].format(round=e.round), "1;32"), self.info)
        else:
            self.line(self.style(self.t["verdict_fail"].format(round=e.round, reasons=first_line(e.reasons)), "33"), self.info)

    def on_question(self, e: Any) -> None:
        if not self.interactive:
            self.note(self.t["nobody"])

    def on_handoff(self, e: Any) -> None:
        self.note(self.t["handoff"].format(path=self.relative(e.path)))

    def on_notice(self, e: Any) -> None:
        self.note(f"· {e.text}")

    def on_wait(self, e: Any) -> None:
        if self.live:
            self._wait = (time.monotonic() + e.seconds, e)
            self.tick()
        else:
            self.note(self.waiting(e, e.seconds))

    interactive = False
    """Set when a person can answer questions at this terminal."""

    # -- waits -----------------------------------------------------------------------------
    def waiting(self, e: Any, left: float) -> str:
        """What a wait waits for, with the time left."""
        seconds = f"{max(0, round(left))}s"
        if e.reason == "offline":
            return self.t["offline"].format(host=self.host, seconds=seconds, attempt=e.attempt, max=e.max_attempts)
        return self.t["backoff"].format(seconds=seconds, next=e.attempt + 1, max=e.max_attempts, error=first_line(e.error, 100))

    def tick(self) -> None:
        """Redraw the live line of the current wait (a spinner and a countdown)."""
        if not self._wait or not self.live:
            return
        deadline, e = self._wait
        self._frame = (self._frame + 1) % len(SPINNER)
        self.info.write("\r\x1b[2K" + self.style(f"{SPINNER[self._frame]} {self.waiting(e, deadline - time.monotonic())}", "33"))
        self.info.flush()
        self._shown = True

    async def ticker(self) -> None:
        """Keep the live line moving while the run lasts."""
        while True:
            await asyncio.sleep(0.1)
            self.tick()

    # -- helpers ---------------------------------------------------------------------------
    def relative(self, path: str) -> str:
        """A path under the workspace shown relative to it."""
        if self.workspace:
            try:
                return str(Path(path).relative_to(self.workspace))
            except ValueError:
                pass
        return path

    def describe(self, data: Any) -> str:
        """The one argument that says what a tool call does (a path, a command, a pattern)."""
        if not isinstance(data, dict):
            return ""
        for key in ("file_path", "command", "path", "pattern", "url", "query", "description"):
            value = data.get(key)
            if isinstance(value, str) and value:
                value = self.relative(value) if key in ("file_path", "path") else value
                value = " ".join(value.split())
                return value if len(value) <= 100 else value[:99] + "…"
        return ""


# ---------------------------------------------------------------------------------------- input


class Keyboard:
    """Lines typed at the terminal, read without blocking the event loop (so Ctrl-C stays immediate)."""

    def __init__(self, fd: int = 0):
        self.fd = fd
        self.lines: asyncio.Queue[str | None] = asyncio.Queue()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._partial = ""
        self._loop = asyncio.get_running_loop()
        self._loop.add_reader(fd, self._readable)
        self._closed = False

    def _readable(self) -> None:
        try:
            data = os.read(self.fd, 4096)
        except OSError:
            data = b""
        if not data:
            self.close()
            return
        self._partial += self._decoder.decode(data)
        while "\n" in self._partial:
            line, self._partial = self._partial.split("\n", 1)
            self.lines.put_nowait(line.rstrip("\r"))

    async def readline(self) -> str | None:
        """The next line, or None at end of input (Ctrl-D)."""
        if self._closed and self.lines.empty():
            return None
        return await self.lines.get()

    def close(self) -> None:
        """Stop reading; a waiting `readline` gets None."""
        if not self._closed:
            self._closed = True
            self._loop.remove_reader(self.fd)
            self.lines.put_nowait(None)


async def prompt(keyboard: Keyboard, console: Console, question: str, *, allow_empty: bool = True) -> str:
    """Ask on the terminal; Ctrl-D counts as Ctrl-C (the person left)."""
    console.line(console.style(question, "1"))
    while True:
        console.out.write("> ")
        console.out.flush()
        line = await keyboard.readline()
        if line is None:
            raise KeyboardInterrupt
        if line.strip() or allow_empty:
            return line.strip()


# ---------------------------------------------------------------------------------------- parsing


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line and exit 2."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see `{self.prog} --help`)")


def rounds_type(value: str) -> int:
    """`--rounds N`: a whole number ≥ 1."""
    try:
        n = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"takes a whole number of work rounds ≥ 1, not {value!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1 (got {n}): it caps the work rounds of this wake")
    return n


def add_run_dir(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("-r", "--run-dir", default="runs", metavar="DIR",
                        help="where lineage.json, manifest.json and sessions.db live (default: ./runs, relative to the current directory)")


def main_parser() -> Parser:
    parser = Parser(
        prog="flower",
        description="Run a long coding-agent task in this directory; run it again and it continues the same conversation.",
        epilog="Also: flower once \"prompt\" [--resume SID] · flower status · flower demo (offline, no API key). "
               "Exit codes: 0 done, 1 not finished, 2 bad input, 3 workspace busy, 130 interrupted.",
    )
    parser.add_argument("text", nargs="*", help="the task (first time) or one more sentence (afterwards)")
    parser.add_argument("--new", action="store_true", help="archive this task (lineage, 需求.md, 目标.md) and start the text as a new one")
    parser.add_argument("--no-trim", dest="trim", action="store_false",
                        help="keep large old tool results resident on resume (trim is on by default)")
    parser.add_argument("--rounds", type=rounds_type, metavar="N", help="at most N work rounds in this wake (default 10; resets every wake)")
    add_run_dir(parser)
    return parser


def once_parser() -> Parser:
    parser = Parser(prog="flower once", description="One agent turn here: no workflow, no lineage (S29). Prints the reply and its session id.")
    parser.add_argument("prompt", nargs="+", help="what to ask")
    parser.add_argument("--resume", metavar="SID", help="continue this session (printed by an earlier `flower once`)")
    parser.add_argument("--tools", default="Read,Glob,Grep,Write,Edit",
                        help="comma-separated tools the agent may use (default: Read,Glob,Grep,Write,Edit)")
    add_run_dir(parser)
    return parser


def status_parser() -> Parser:
    parser = Parser(prog="flower status", description="What the next run here would resume.")
    parser.add_argument("--json", action="store_true", help="print the status as JSON")
    add_run_dir(parser)
    return parser


def demo_parser() -> Parser:
    parser = Parser(prog="flower demo", description="Run the flower path offline on the built-in scripted model: start, kill -9, wake again.")
    parser.add_argument("--keep", action="store_true", help="keep the temporary workspace to look at afterwards")
    return parser


def writable_run_dir(run_dir: str) -> Path:
    """The run dir as an absolute path (S4: relative to the current directory), created and proven writable."""
    path = Path(os.path.abspath(run_dir))
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise UsageError(f"cannot write the run dir {path}: {exc.strerror or exc}; choose another with -r DIR") from None
    return path


# ---------------------------------------------------------------------------------------- commands


def setup_logging(console: Console) -> None:
    """Warnings of flower's own modules (a corrupt lineage kept aside, an unwritable file) as `flower: …` lines."""

    class ToConsole(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            console.error(record.getMessage())

    log = logging.getLogger("flower")
    log.handlers[:] = [ToConsole(logging.WARNING)]
    log.setLevel(logging.WARNING)
    log.propagate = False


def used_here(svc: Any) -> bool:
    """Whether a task was started here: the next wake continues it rather than asking what to do."""
    return bool(svc.status().started)


async def flower_command(args: argparse.Namespace, lang: str) -> int:
    """`flower [text]`, `flower --new text`: drive the FlowerService and render its events."""
    from .service import FlowerService

    text = " ".join(args.text).strip()
    interactive = sys.stdin.isatty() and sys.stdout.isatty()
    workspace = Path.cwd()
    run_dir = writable_run_dir(args.run_dir)
    console = Console(lang, workspace=workspace)
    console.interactive = interactive
    setup_logging(console)
    t = TEXTS[lang]
    svc = FlowerService(workspace, run_dir, locale=lang, trim=args.trim, rounds=args.rounds)
    keyboard = Keyboard() if interactive else None
    try:
        # -- what to do: from the arguments, or asked at the terminal (S28) ------------------
        new = args.new
        if not text:
            if args.new or not used_here(svc):
                if keyboard is None:
                    hint = 'flower --new "…"' if args.new else 'flower "what to build"'
                    reason = "say what the new task is" if args.new else "nothing to continue here"
                    raise UsageError(f"{reason}: give the task in one sentence, e.g. {hint}")
                text = await prompt(keyboard, console, t["new_prompt"], allow_empty=False)
            else:
                if keyboard is not None:
                    text = await prompt(keyboard, console, t["wake_prompt"])
                    if text == "/new":
                        new = True
                        text = await prompt(keyboard, console, t["new_prompt"], allow_empty=False)
        if new and not text:
            raise UsageError('say what the new task is, e.g. flower --new "write the docs"')

        # -- run it, showing what happens as it happens -------------------------------------
        if new or not used_here(svc):
            console.note(t["starting"].format(where=workspace, runs=os.path.relpath(run_dir)))
        svc.subscribe(console)
        if keyboard is not None:
            svc.ask = Asker(keyboard, console)
        tasks = [asyncio.create_task(console.ticker())]
        if keyboard is not None:
            tasks.append(asyncio.create_task(listen(keyboard, svc, svc.ask)))
        try:
            result = await (svc.new(text) if new else svc.wake(text or None))
        finally:
            for task in tasks:
                task.cancel()
            console.clear()
    except asyncio.CancelledError:
        # Ctrl-C: stop the agent cleanly (bounded); the lineage already holds its sessions.
        await asyncio.wait_for(svc.close(), 15)
        raise
    finally:
        if keyboard is not None:
            keyboard.close()
    if result.ok:
        verdict = result.verdict
        console.line(console.style(t["done"].format(rounds=verdict.rounds) if verdict and verdict.passed else t["done_plain"], "1;32"))
        return EXIT_OK
    console.error(first_line(result.error) or "the run did not finish")
    return EXIT_FAILED


class Asker:
    """`svc.ask` on a terminal: the clarify question was streamed already; read the person's answer."""

    def __init__(self, keyboard: Keyboard, console: Console):
        self.keyboard, self.console = keyboard, console
        self.waiting: asyncio.Future[str | None] | None = None

    async def __call__(self, question: str) -> str | None:
        self.console.line(self.console.style(self.console.t["answer_prompt"], "1"))
        self.console.out.write("> ")
        self.console.out.flush()
        self.waiting = asyncio.get_running_loop().create_future()
        try:
            answer = await self.waiting
        finally:
            self.waiting = None
        return answer or None


async def listen(keyboard: Keyboard, svc: Any, asker: Asker) -> None:
    """Lines typed while the agent works: an answer when a question is open, else a sentence for the work session."""
    while True:
        line = await keyboard.readline()
        if asker.waiting is not None and not asker.waiting.done():
            asker.waiting.set_result(None if line is None else line.strip())
            continue
        if line is None:
            return
        if line.strip():
            await svc.say(line.strip())


async def once_command(args: argparse.Namespace, lang: str) -> int:
    """`flower once`: one agent turn through the Runtime; no workflow, no lineage (S29)."""
    from .runtime import AgentSpec, Runtime

    run_dir = writable_run_dir(args.run_dir)
    console = Console(lang, sys.stdout, sys.stderr, workspace=Path.cwd())
    setup_logging(console)
    tools = [name.strip() for name in args.tools.split(",") if name.strip()]
    agent = AgentSpec("once", allowed_tools=tools, permission_mode="acceptEdits")
    async with Runtime(Path.cwd(), run_dir) as rt:
        if args.resume and not rt.has_session(args.resume):
            raise UsageError(f"no session {args.resume} for this directory in {rt.db_path}; "
                             "run `flower once` from the directory (and with the -r DIR) it was started in")
        rt.listeners.append(console)
        ticker = asyncio.create_task(console.ticker())
        try:
            result = await rt.run(agent, " ".join(args.prompt), resume=args.resume, step="once")
        finally:
            ticker.cancel()
            console.clear()
    if result.session_id:
        console.line(TEXTS[lang]["session"].format(sid=result.session_id))
        console.note(TEXTS[lang]["resume_hint"].format(sid=result.session_id))
    if result.ok:
        return EXIT_OK
    console.error(first_line(result.error) or "the agent did not finish")
    return EXIT_FAILED


async def status_command(args: argparse.Namespace, lang: str) -> int:
    """`flower status`: the service's status of this directory, for people or (--json) scripts."""
    from .service import FlowerService
    from .status import to_json

    console = Console(lang, workspace=Path.cwd())
    setup_logging(console)
    st = to_json(FlowerService(Path.cwd(), Path(os.path.abspath(args.run_dir)), locale=lang).status())
    if args.json:
        print(json.dumps(st, ensure_ascii=False, indent=2))
        return EXIT_OK
    done = sum(1 for g in st["goals"] if g["done"])
    zh = lang == "zh"
    print(("工作区   " if zh else "workspace ") + st["workspace"])
    print(("记录     " if zh else "run dir   ") + st["run_dir"])
    if st["steps"]:
        print(f"已唤醒 {st['woke']} 次;下次运行接着做(第 {st['woke'] + 1} 次唤醒)" if zh
               else f"woke {st['woke']} time(s); the next run resumes (wake #{st['woke'] + 1})")
        for step, sid in st["steps"].items():
            print(f"  {step}  {sid}")
    else:
        print("这里还没有可接续的会话:flower \"任务\" 开始" if zh else 'nothing to resume here: flower "task" starts one')
    if st["goals"]:
        print(f"目标 {done}/{len(st['goals'])} 条已完成" if zh else f"goals {done}/{len(st['goals'])} done")
        for goal in st["goals"]:
            print(f"  [{'x' if goal['done'] else ' '}] {goal['text']}")
    return EXIT_OK


# ---------------------------------------------------------------------------------------- entry


def parse(argv: list[str]) -> tuple[Callable[..., Any], argparse.Namespace]:
    """Pick the command and parse its arguments (UsageError on bad input)."""
    if argv and argv[0] in COMMANDS:
        command, rest = argv[0], argv[1:]
        if command == "once":
            return once_command, once_parser().parse_intermixed_args(rest)
        if command == "status":
            return status_command, status_parser().parse_args(rest)
        from .demo import demo_command
        return demo_command, demo_parser().parse_args(rest)
    return flower_command, main_parser().parse_intermixed_args(argv)


def run(argv: list[str] | None = None) -> int:
    """Run the command line and return its exit code; expected failures are one line, never a traceback."""
    argv = sys.argv[1:] if argv is None else argv
    lang = language()
    try:
        command, args = parse(argv)
        return asyncio.run(command(args, lang))
    except UsageError as exc:
        sys.stderr.write(f"flower: {exc}\n")
        return EXIT_USAGE
    except WorkspaceBusy as exc:
        sys.stderr.write(f"flower: {exc}\n")
        return EXIT_BUSY
    except FlowerError as exc:  # expected: the message says what to do
        sys.stderr.write(f"flower: {exc}\n")
        return EXIT_FAILED
    except KeyboardInterrupt:
        sys.stdout.write("\n")
        sys.stderr.write(f"flower: {TEXTS[lang]['interrupted']}\n")
        return EXIT_INTERRUPTED


def main() -> None:
    """Console script entry point (`flower`)."""
    sys.exit(run())


if __name__ == "__main__":
    main()
