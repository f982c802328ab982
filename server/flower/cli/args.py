"""The command line's arguments: one parser per command, whose errors are one line and exit 2."""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ..core.approvals import DEFAULT_MODE, MODES
from ..core.shared import is_postgres_url, safe_url
from ..core.texts import text
from ..settings import FLAGS


class UsageError(Exception):
    """Bad input on the command line: exit 2 with this one line."""


class Parser(argparse.ArgumentParser):
    """argparse whose errors are one line and exit 2; `locale` picks the language of flower's own words."""

    def __init__(self, *, locale: str, **kw: Any) -> None:
        # Exact flags only (issue 34): with argparse's prefix matching `--mode X` was silently taken as `--model X`.
        super().__init__(allow_abbrev=False, **kw)
        self.locale = locale

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(text("see_help", self.locale, problem=message, prog=self.prog))


def rounds_type(locale: str) -> Callable[[str], int]:
    """`--rounds N`: a whole number ≥ 1."""

    def rounds(value: str) -> int:
        try:
            n = int(value)
        except ValueError:
            raise argparse.ArgumentTypeError(text("rounds_not_number", locale, value=repr(value))) from None
        if n < 1:
            raise argparse.ArgumentTypeError(text("rounds_too_small", locale, n=n))
        return n

    return rounds


def cost_type(locale: str) -> Callable[[str], float]:
    """`--max-cost USD`: a number > 0."""

    def cost(value: str) -> float:
        try:
            usd = float(value)
        except ValueError:
            usd = 0.0
        if not usd > 0 or usd == float("inf"):
            raise argparse.ArgumentTypeError(text("max_cost_bad", locale, value=repr(value)))
        return usd

    return cost


def add_run_dir(parser: argparse.ArgumentParser) -> None:
    """The `-r/--run-dir DIR` every command that records takes (default: settings, else ./runs)."""
    parser.add_argument("-r", "--run-dir", metavar="DIR",
                        help="where lineage.json, manifest.json and sessions.db live (default: ./runs, relative to the current directory)")


def add_agent_settings(parser: argparse.ArgumentParser) -> None:
    """`--model`, `--fallback-model`, `--isolated`: how agents run."""
    parser.add_argument("--model", metavar="NAME", help="the model agents run on (default: $ANTHROPIC_MODEL, else Claude Code's default)")
    parser.add_argument("--fallback-model", metavar="NAME", help="the model to fall back to when the first one is overloaded")
    parser.add_argument("--isolated", action="store_true", default=None,
                        help="ignore CLAUDE.md, .claude/settings*.json, .mcp.json and ~/.claude (they apply by default)")


def given(args: argparse.Namespace) -> dict[str, object]:
    """The settings given as flags (absent ones are None, so the environment or the file decides)."""
    return {key: getattr(args, key, None) for key in FLAGS}


def store_type(value: str) -> str:
    """`--store`: `sqlite` or a `postgresql://` URL (checked here; connecting is the store's, D9)."""
    if value.strip().lower() == "sqlite" or is_postgres_url(value.strip()):
        return value.strip()
    raise argparse.ArgumentTypeError(f"{safe_url(value)} is neither sqlite nor a postgresql:// URL")


def add_store(parser: argparse.ArgumentParser) -> None:
    """`--store URL` and `--project NAME`: where a task's records live (D9); unset, the environment or the file decides."""
    parser.add_argument("--store", metavar="URL", type=store_type,
                        help="sqlite (default: run_dir/sessions.db) or postgresql://user@host/db, shared by a team; env FLOWER_STORE")
    parser.add_argument("--project", metavar="NAME",
                        help="the task's name in a shared store (default: git remote + path in the repo); env FLOWER_PROJECT")


def main_parser(locale: str) -> Parser:
    """`flower [text] [--new] [--no-trim] [--rounds N] [--max-cost USD] [--model NAME] [--isolated] [-r DIR]`."""
    made = Parser(
        locale=locale, prog="flower",
        description="Run a long coding-agent task in this directory; run it again and it continues the same conversation.",
        epilog="Also: flower once \"prompt\" [--resume SID] · flower status · flower log [--follow] · flower changes · flower revert FILE|--wake N · "
               "flower gc [--older-than 90d] [--yes] · flower trust|untrust [DIR] · flower demo (offline, no API key) · flower serve · flower ps · flower stop. "
               "Exit codes: 0 done, 1 not finished, 2 bad input, 3 workspace busy, 130 interrupted.",
    )
    made.add_argument("text", nargs="*", help="the task (first time) or one more sentence (afterwards)")
    made.add_argument("--new", action="store_true", help="archive this task (lineage, 需求.md, 目标.md) and start the text as a new one")
    made.add_argument("--detach", action="store_true",
                      help="run it in the flower engine (started if none runs) and return at once; `flower` here attaches to it")
    made.add_argument("--no-trim", dest="trim", action="store_false", default=None,
                      help="keep large old tool results resident on resume (trim is on by default)")
    made.add_argument("--rounds", type=rounds_type(locale), metavar="N",
                      help="at most N work rounds in this wake (default 10; resets every wake)")
    made.add_argument("--max-cost", type=cost_type(locale), metavar="USD",
                      help="stop this wake cleanly once it has spent USD (every step, round and judge); the next wake continues")
    made.add_argument("--allow", metavar="RULES",
                      help='tools the work agent may use unasked, comma-separated, e.g. "Read,Edit,Bash(npm test:*)" '
                           "(default: Read,Write,Edit,Glob,Grep,Bash; env FLOWER_ALLOW)")
    made.add_argument("--mode", metavar="MODE",
                      help="the CLI's permission mode: " + ", ".join(MODES) + f" (default: {DEFAULT_MODE}; env FLOWER_MODE)")
    add_agent_settings(made)
    add_run_dir(made)
    add_store(made)
    return made


def once_parser(locale: str) -> Parser:
    """`flower once "prompt" [--resume SID] [--tools …] [-r DIR]` (S29)."""
    made = Parser(locale=locale, prog="flower once",
                  description="One agent turn here: no workflow, no lineage (S29). Prints the reply and its session id.")
    made.add_argument("prompt", nargs="+", help="what to ask")
    made.add_argument("--resume", metavar="SID", help="continue this session (printed by an earlier `flower once`)")
    made.add_argument("--tools", default="Read,Glob,Grep,Write,Edit",
                      help="comma-separated tools the agent may use (default: Read,Glob,Grep,Write,Edit)")
    add_agent_settings(made)
    add_run_dir(made)
    add_store(made)
    return made


def status_parser(locale: str) -> Parser:
    """`flower status [--json] [-r DIR]`."""
    made = Parser(locale=locale, prog="flower status", description="What the next run here would resume.")
    made.add_argument("--json", action="store_true", help="print the status as JSON")
    add_run_dir(made)
    add_store(made)
    return made


def log_parser(locale: str) -> Parser:
    """`flower log [-n N | --all] [--follow] [-r DIR] [--store URL]` (issue 34)."""
    made = Parser(locale=locale, prog="flower log",
                  description="The task's transcript as stored: every step's conversation, oldest first, through a pager "
                              "on a terminal. No wake, no lock, nothing written.")
    made.add_argument("-n", "--lines", type=rounds_type(locale), default=200, metavar="N",
                      help="the newest N entries (default 200)")
    made.add_argument("--all", action="store_true", help="every entry from the task's start")
    made.add_argument("-f", "--follow", action="store_true",
                      help="then keep printing new entries as a run here (or in the engine) writes them; Ctrl-C ends it")
    add_run_dir(made)
    add_store(made)
    return made


def trust_parser(locale: str, yes: bool) -> Parser:
    """`flower trust [DIR]` / `flower untrust [DIR]` (D10)."""
    name = "trust" if yes else "untrust"
    made = Parser(locale=locale, prog=f"flower {name}",
                  description="Let this folder's own Claude Code settings (hooks, env), and its .mcp.json servers, run for every agent "
                              "flower starts here." if yes else
                              "Take back the trust of a folder: its own hooks, env and MCP servers no longer run.")
    made.add_argument("dir", nargs="?", metavar="DIR", help="the folder (default: the current directory)")
    made.set_defaults(yes=yes)
    return made


def stop_parser(locale: str) -> Parser:
    """`flower stop`."""
    return Parser(locale=locale, prog="flower stop",
                  description="Stop the run in this directory, in the flower engine or in another flower process "
                              "(the next `flower` here continues it).")


def ps_parser(locale: str) -> Parser:
    """`flower ps [--json]`."""
    made = Parser(locale=locale, prog="flower ps",
                  description="The folders the flower engine holds, running, waiting for you or idle, and a run here outside it.")
    made.add_argument("--json", action="store_true", help="print them as JSON (flower/runs)")
    return made


def serve_parser(locale: str) -> Parser:
    """`flower serve [--background] [--idle SECONDS] [--log-level LEVEL]` (D11)."""
    made = Parser(locale=locale, prog="flower serve",
                  description="The flower engine: one per user, holding every folder's run for every window and terminal.")
    made.add_argument("--background", action="store_true",
                      help="make sure one engine runs (start it detached if none answers), print its socket path, return")
    made.add_argument("--idle", type=seconds_type, metavar="SECONDS",
                      help="stop after this long with no wake running and no client (default 600; env FLOWER_ENGINE_IDLE)")
    made.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR"],
                      help="what the engine logs (to stderr; to its log file with --background)")
    return made


def seconds_type(value: str) -> float:
    """A number of seconds > 0."""
    try:
        seconds = float(value)
    except ValueError:
        seconds = 0.0
    if not 0 < seconds < float("inf"):
        raise argparse.ArgumentTypeError(f"{value!r} is not a number of seconds > 0")
    return seconds


def changes_parser(locale: str) -> Parser:
    """`flower changes [--json] [-r DIR]`."""
    made = Parser(locale=locale, prog="flower changes",
                  description="What the agents changed here, per wake, with +/- lines against the files now.")
    made.add_argument("--json", action="store_true", help="print the changes as JSON")
    add_run_dir(made)
    return made


def revert_parser(locale: str) -> Parser:
    """`flower revert FILE | --wake N [--yes] [-r DIR]`."""
    made = Parser(locale=locale, prog="flower revert",
                  description="Put a file (or every file of one wake) back as it was before the wake changed it.")
    made.add_argument("file", nargs="?", help="the file (of the newest wake that changed it, or of --wake N)")
    made.add_argument("--wake", type=rounds_type(locale), metavar="N", help="the wake whose before-images to restore")
    made.add_argument("--yes", action="store_true", help="restore without asking (needed when not on a terminal)")
    add_run_dir(made)
    return made


def age_type(locale: str) -> Callable[[str], tuple[str, float]]:
    """`--older-than 90d`: days or hours, as (what was typed, seconds)."""

    def age(value: str) -> tuple[str, float]:
        from ..retention import age_seconds  # here: `flower --help` imports no store

        try:
            return value.strip(), age_seconds(value)
        except ValueError:
            raise argparse.ArgumentTypeError(text("gc_bad_age", locale, value=repr(value))) from None

    return age


def gc_parser(locale: str) -> Parser:
    """`flower gc [--older-than 90d] [--yes] [-r DIR] [--store URL]` (#26)."""
    made = Parser(locale=locale, prog="flower gc",
                  description="What the current task and each archived one (flower --new, notes/archive/) hold in flower's store: "
                              "sessions, entries, bytes on disk, last use; with --yes, delete the archived tasks' sessions and "
                              "give the space back. The current task's sessions are never deleted, nor any file of an archive "
                              "(需求.md, 目标.md, notes), nor the Claude Code CLI's own transcripts under ~/.claude: flower only "
                              "collects its own store.")
    made.add_argument("--older-than", type=age_type(locale), metavar="AGE",
                      help="only archived tasks last used longer ago than AGE, e.g. 90d or 12h (default: every archived task)")
    made.add_argument("--yes", action="store_true",
                      help="delete without asking (without it a terminal asks, and piped output only lists)")
    add_run_dir(made)
    add_store(made)
    return made


def demo_parser(locale: str) -> Parser:
    """`flower demo [--keep]`."""
    made = Parser(locale=locale, prog="flower demo",
                  description="Run the flower path offline on the built-in scripted model: start, kill -9, wake again.")
    made.add_argument("--keep", action="store_true", help="keep the temporary workspace to look at afterwards")
    return made


def writable_run_dir(run_dir: str | os.PathLike[str], locale: str) -> Path:
    """The run dir as an absolute path (S4: relative to the current directory), created and proven writable."""
    import tempfile  # here, not at import: the light commands never need it (issue 34)

    path = Path(os.path.abspath(run_dir))
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise UsageError(text("run_dir_unwritable", locale, path=path, reason=exc.strerror or exc)) from None
    return path
