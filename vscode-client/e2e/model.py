"""The scripted model for one editor end-to-end scenario, driven over stdin/stdout by the harness.

`python model.py SCENARIO WORKSPACE...` starts `flower.testing.ScriptedModel` with the replies
of SCENARIO (the flower path: clarify → goals → work → judge, per workspace folder), then:

- prints JSON lines on stdout: `{"event": "listening", "url": …}` once, and one
  `{"event": "request", …}` per `POST /v1/messages` with what the model received (message count,
  the text it saw, the model asked for, the sha-256 of its `x-api-key` header — never the key itself);
- reads commands on stdin: `release` lets held replies answer; end of input stops the server,
  as does SIGTERM.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import signal
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from aiohttp import web

from flower.testing import (
    MAIN,
    Reply,
    ScriptedModel,
    agent_call,
    for_subagent,
    overloaded,
    reply,
    say,
    text,
    tool,
    tool_use,
)

REQUIREMENTS = (
    "# 需求\n\n## 目标 Goal\nA calculator CLI.\n\n## 范围 Scope\nAdd and subtract.\n\n"
    "## 约束 Constraints\nPython only.\n\n## 验收 Acceptance\n`calc 1 + 2` prints 3.\n"
)
GOALS = "# 目标\n\n- [ ] calc.py adds\n- [ ] calc.py subtracts\n"
DONE = GOALS.replace("- [ ]", "- [x]")
HOSTILE = 'Here is markup: <img src=x onerror=alert(1)> and <script>document.title="pwned"</script> done.'


def only(ws: Path) -> Callable[[dict[str, Any]], bool]:
    """Match requests of agents working in `ws` (the CLI names its working directory in the system prompt)."""
    needle = str(ws)
    return lambda body: needle in json.dumps(body, ensure_ascii=False)


def path(ws: Path, *, work: list[Reply], outage: bool = False) -> list[Reply]:
    """A whole first wake in `ws`: clarify (after one 529 if `outage`), goals, the work replies, a passing judge."""
    replies = [overloaded()] if outage else []
    replies += [
        tool("Write", {"file_path": str(ws / "需求.md"), "content": REQUIREMENTS}, input_tokens=2100),
        text("The requirements are written to 需求.md.", input_tokens=2400),
        tool("Write", {"file_path": str(ws / "目标.md"), "content": GOALS}, input_tokens=1900),
        text("目标.md: 2 goals.", input_tokens=2200),
        *work,
        text("Checked every goal.\nVERDICT: PASS", input_tokens=1500),
    ]
    return replies


def finish(ws: Path, usage: dict[str, int], words: str = "Ticking the goals.", *, hold: bool = False) -> list[Reply]:
    """The end of a work round: say `words` and tick the goals (held until released if `hold`), then report."""
    return [
        reply(say(words), tool_use("Write", {"file_path": str(ws / "目标.md"), "content": DONE}), hold=hold, **usage),
        text("Both goals are met; 目标.md is ticked.", **usage),
    ]


def begin(ws: Path, usage: dict[str, int]) -> Reply:
    """The first work reply: say something and write calc.py."""
    return reply(say("Writing calc.py now."),
                 tool_use("Write", {"file_path": str(ws / "calc.py"), "content": "print(1 + 2)  # CALC_MARKER\n"}),
                 **usage)


def refused(body: dict[str, Any]) -> bool:
    """The request's last message is a tool call whose permission request failed (its asker went away)."""
    return "Tool permission request failed" in json.dumps(body.get("messages", [])[-1:], ensure_ascii=False)


def never() -> Reply:
    """A reply held for good: the step is mid-reply until the harness cancels or reloads it away."""
    return Reply(blocks=[say("(never sent: the step was cut off while waiting)")], hold=True)


def scenario(name: str, folders: list[Path]) -> list[Reply]:
    """The replies of one scenario, in order (per folder when there are several)."""
    ws = folders[0]
    big = {"input_tokens": 2300, "cache_read": 40000}  # the gauge: 42.3K
    if name == "start":
        # Held after the first work reply so the harness sees the run mid-step, then released.
        return path(ws, work=[begin(ws, big), *finish(ws, big, hold=True)])
    if name in ("nokey", "store"):
        return path(ws, work=[begin(ws, big), *finish(ws, big)])
    if name == "cancel":
        # Held mid-step and never released: the step is cancelled there; the resumed work
        # session answers with the rest and the judge passes.
        return path(ws, work=[begin(ws, big), never(), *finish(ws, {"input_tokens": 2500, "cache_read": 41000})])
    if name == "reload":
        # Held mid-step at each of three wakes (the window reloads under the first two).
        return path(ws, work=[begin(ws, big), never(), never(), never()])
    if name == "pruned":
        return path(ws, outage=True, work=[begin(ws, big), *finish(ws, big)])
    if name == "escape":
        return path(ws, work=[begin(ws, big), *finish(ws, big, HOSTILE)]) + [
            # The second wake (a sentence said): goals re-derived, one more work round, the judge.
            tool("Write", {"file_path": str(ws / "目标.md"), "content": DONE}, input_tokens=1900),
            text("目标.md re-derived.", input_tokens=2000),
            text("Nothing else to do.", **big),
            text("VERDICT: PASS", input_tokens=1500),
        ]
    if name == "multiroot":
        a, b = folders
        out = []
        for f, usage in ((a, {"input_tokens": 1100, "cache_read": 10000}), (b, {"input_tokens": 2200, "cache_read": 20000})):
            replies = path(f, work=[begin(f, usage), *finish(f, usage, f"Work in {f.name} is done.")])
            for r in replies:
                r.match = only(f)
            out += replies
        return out
    if name == "cost":
        # flower.model claude-sonnet-4-5, flower.maxCost $0.25 (issue 15). With that model the CLI
        # writes a file that exists only after a Read of it (the default model does not ask):
        # 需求.md and 目标.md are read first. Clarify and goals cost about a cent each, each work
        # reply $0.15 (50 000 input tokens at $3/M): the work round goes over the cap, the judge
        # (the last reply) is never asked.
        pricey = {"input_tokens": 50000}
        read = tool("Read", {"file_path": str(ws / "需求.md")}, input_tokens=2000)
        work = [begin(ws, pricey), tool("Read", {"file_path": str(ws / "目标.md")}, **pricey), *finish(ws, pricey)]
        return [read, *path(ws, work=work)[:-1]]
    if name == "approve":
        # flower.allow without Bash (issue 24): each Bash call is a question to the person. The
        # outputs (APPROVED_42, SECOND_48) exist only once the shell ran the commands: in what the
        # model received they prove the tool ran (`sh -c`: acceptEdits runs a bare `echo` unasked). The second question is held until the harness has
        # hidden the transcript (it then comes as a notification) and survives a Reload Window.
        first = reply(say("Checking the shell."), tool_use("Bash", {"command": 'sh -c "echo APPROVED_$((6*7))"', "description": "Print a marker"}), **big)
        second = reply(say("One more check."), tool_use("Bash", {"command": 'sh -c "echo SECOND_$((6*8))"', "description": "Print another marker"}),
                       hold=True, **big)
        # A Reload Window ends a stdio server and its wake with the question open: the resumed wake's
        # model asks again (retry). Only while SECOND_48 is not in the conversation: where the question
        # outlives the reload (the engine) and is answered, the model goes on to finish instead.
        retry = reply(say("Trying that check again."), tool_use("Bash", {"command": 'sh -c "echo SECOND_$((6*8))"', "description": "Print another marker"}),
                      **big)
        # The work session's own retry: its conversation holds the first call's output (the judge's does not).
        retry.match = lambda body: "APPROVED_42" in (d := json.dumps(body)) and "SECOND_48" not in d and not refused(body)
        # The old server's CLI, its permission stream closed by the reload, goes on with its turn for a
        # moment: it gets one reply that ends the turn, so the script is left for the resumed wake.
        orphan = text("(the window went away: stopping here)", **big)
        orphan.match = refused
        return path(ws, work=[first, second, orphan, retry, *finish(ws, big)])
    if name == "reading":
        # Issue 34: a long command (denied with a sentence: it never runs), then a short one (allowed). The reply after
        # the denial is held, so the progress can be read while nothing newer has replaced it.
        long = (f"python3 {ws}/tools/benchmarks/run_all_the_benchmarks.py "
                f"--output={ws}/runs/benchmarks/results-2026-12-03.json --repeat 5 --compare-with={ws}/runs/benchmarks/baseline.json")
        first = reply(say("Running the benchmarks first."), tool_use("Bash", {"command": long, "description": "Run every benchmark"}), **big)
        second = reply(say("Then just a quick check."), tool_use("Bash", {"command": 'sh -c "echo READING_$((6*9))"', "description": "Print a marker"}),
                       hold=True, **big)
        return path(ws, work=[first, second, *finish(ws, big)])
    if name == "changes":
        # Issue 25: the work round writes calc.py and edits the README.md the harness wrote (Read first, as Edit needs).
        readme = ws / "README.md"
        work = [
            reply(say("Writing calc.py."), tool_use("Write", {"file_path": str(ws / "calc.py"), "content": "print(1 + 2)\nprint(3 - 1)\n"}), **big),
            tool("Read", {"file_path": str(readme)}, **big),
            tool("Edit", {"file_path": str(readme), "old_string": "TODO: usage",
                          "new_string": "Usage: python calc.py\nIt prints 3, then 2."}, **big),
            *finish(ws, big),
        ]
        return path(ws, work=work)
    if name == "subagent":
        # Issue 32: the work agent delegates docs.md to a subagent in the background (the CLI's default) and goes
        # on; the subagent says what it does, writes the file and reports; its result wakes the work agent, which
        # ticks the goals. Every reply says whose request it answers (the main agents' or the subagent's).
        work = [
            reply(say("Delegating the docs to a subagent."),
                  agent_call("Write docs.md describing calc.py.", description="write the docs"), **big),
            text("The subagent is writing the docs; waiting for it.", **big),
            *finish(ws, big, "The docs are written; ticking the goals."),
        ]
        main = path(ws, work=work)
        for r in main:
            r.agent = MAIN
        sub = for_subagent(
            reply(say("Writing docs.md now."), tool_use("Write", {"file_path": str(ws / "docs.md"), "content": "# calc\n\nAdds and subtracts.\n"})),
            text("docs.md is written."))
        return main + sub
    if name == "chart":
        # Issue 34's chart, flower.handoffAt 50000: round 1 ends at 30K and round 2 at 55K (the judge fails both), so
        # round 3 hands off (the outgoing session writes its note) to a new session that ends at 12K — its reply held
        # until the harness has seen the chart with two points —, then round 4 at 20K ticks the goals and passes.
        def ctx(k: int) -> dict[str, int]:
            return {"input_tokens": 2000, "cache_read": k * 1000 - 2000}

        def fail() -> Reply:
            return text("VERDICT: FAIL subtraction is missing", input_tokens=1500)

        work = [
            begin(ws, ctx(29)), text("calc.py adds; subtraction next.", **ctx(30)), fail(),
            text("Subtraction is half written.", **ctx(55)), fail(),
            text("## State of the work\nAddition works.\n## Next steps\nFinish subtraction.\n", **ctx(56)),
            reply(say("Picking up from the handoff document."), hold=True, **ctx(12)), fail(),
            *finish(ws, ctx(20)),
        ]
        return path(ws, work=work)
    if name in ("bench", "settings"):  # settings: a bad setting refuses every wake, the model is never asked
        return []
    raise SystemExit(f"unknown scenario {name!r}; known: start, cancel, reload, pruned, escape, multiroot, nokey, cost, store, "
                     "approve, reading, changes, subagent, chart, bench, settings")


class RecordingModel(ScriptedModel):
    """The scripted model that also reports each request on stdout as it arrives."""

    async def _messages(self, http: web.Request) -> web.StreamResponse:
        key = http.headers.get("x-api-key")
        raw = await http.read()
        try:
            body = json.loads(raw)
        except ValueError:
            body = {}
        messages = body.get("messages", [])
        report = {
            "event": "request",
            "n": len(self.conversation) + 1,
            "messages": len(messages),
            "text": json.dumps(messages, ensure_ascii=False),
            "system": json.dumps(body.get("system", ""), ensure_ascii=False)[:2000],
            "keySha256": hashlib.sha256(key.encode()).hexdigest() if key else None,
            "model": body.get("model"),
            "authorization": bool(http.headers.get("authorization")),
        }
        print(json.dumps(report, ensure_ascii=False), flush=True)
        return await super()._messages(http)


async def serve(name: str, folders: list[Path]) -> None:
    """Serve until stdin closes or SIGTERM; `release` on stdin lets held replies answer."""
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with RecordingModel(scenario(name, folders)) as model:
        print(json.dumps({"event": "listening", "url": model.url}), flush=True)
        reader = asyncio.StreamReader()
        await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)

        async def commands() -> None:
            while line := await reader.readline():
                if line.strip() == b"release":
                    model.release()
            stop.set()

        task = asyncio.create_task(commands())
        await stop.wait()
        task.cancel()


def main() -> None:
    """`python model.py SCENARIO WORKSPACE...`."""
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    asyncio.run(serve(sys.argv[1], [Path(p) for p in sys.argv[2:]]))


if __name__ == "__main__":
    main()
