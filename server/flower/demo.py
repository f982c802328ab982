"""`flower demo`: continuity, offline, in one command — start, `kill -9` mid-step, wake again.

The model is flower's own scripted Messages API server (`flower.testing`) on 127.0.0.1, so the
real Claude Code CLI runs with no API key and no network (D1). The demo starts `flower "task"`
in a temporary workspace, waits until the work step is mid-reply (a held reply) and its session
is on disk, kills it with SIGKILL (no cleanup runs), runs `flower` again and shows the resume
banner, then checks on the model server that the woken request carried the first conversation.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from .core import host, texts
from .testing import Reply, ScriptedModel, reply, say, text, tool, tool_use

REQUIREMENTS = """# 需求

## 目标 Goal
A script `md2html.py` that turns a Markdown file into an HTML page.

## 范围 Scope
Headings (`#`, `##`), paragraphs and fenced code blocks; nothing else.

## 约束 Constraints
Python standard library only; reads a path, prints HTML to stdout.

## 验收 Acceptance
`python md2html.py notes.md` prints `<h1>`, `<p>` and `<pre><code>` for those constructs.
"""

GOALS = """# 目标

- [ ] md2html.py turns `#` / `##` headings into `<h1>` / `<h2>`
- [ ] md2html.py wraps paragraphs in `<p>`
- [ ] md2html.py renders fenced code blocks as `<pre><code>`
"""

HALF = '''"""md2html: Markdown to HTML (headings so far)."""
import sys

def convert(md: str) -> str:
    out = []
    for line in md.splitlines():
        if line.startswith("## "):
            out.append(f"<h2>{line[3:]}</h2>")
        elif line.startswith("# "):
            out.append(f"<h1>{line[2:]}</h1>")
    return "\\n".join(out)
'''

WHOLE = '''"""md2html: Markdown to HTML — headings, paragraphs, fenced code blocks."""
import html
import sys


def convert(md: str) -> str:
    out, para, code = [], [], None
    def flush():
        if para:
            out.append("<p>" + html.escape(" ".join(para)) + "</p>")
            para.clear()
    for line in md.splitlines():
        if line.startswith("```"):
            if code is None:
                flush()
                code = []
            else:
                out.append("<pre><code>" + html.escape("\\n".join(code)) + "</code></pre>")
                code = None
        elif code is not None:
            code.append(line)
        elif line.startswith("## "):
            flush()
            out.append(f"<h2>{html.escape(line[3:])}</h2>")
        elif line.startswith("# "):
            flush()
            out.append(f"<h1>{html.escape(line[2:])}</h1>")
        elif line.strip():
            para.append(line.strip())
        else:
            flush()
    flush()
    return "\\n".join(out)


if __name__ == "__main__":
    print(convert(open(sys.argv[1], encoding="utf-8").read()))
'''

def script(ws: Path, lang: str) -> list[Reply]:
    """The model's side of the demo, request by request (the flower path's order: clarify, goals, work, judge)."""
    clarified = "需求已写好: 需求.md" if lang == "zh" else "The requirements are written to 需求.md."
    return [
        # run 1 — clarify (nobody at a terminal to ask, so it writes the requirements at once)
        tool("Write", {"file_path": str(ws / "需求.md"), "content": REQUIREMENTS}, input_tokens=2100),
        text(clarified, input_tokens=2400),
        # goals
        tool("Write", {"file_path": str(ws / "目标.md"), "content": GOALS}, input_tokens=1900),
        text("目标.md: 3 goals.", input_tokens=2200),
        # work: the first half of the script, then a reply that never comes (the kill lands here)
        reply(say("Starting with the headings." if lang == "en" else "先做标题。"),
              tool_use("Write", {"file_path": str(ws / "md2html.py"), "content": HALF}),
              input_tokens=6400, cache_read=12000),
        Reply(blocks=[say("(this reply never arrives: flower is killed while waiting for it)")], hold=True),
        # run 2 — the woken work session picks up where it was
        reply(say("Picking up where I stopped: md2html.py has headings; adding paragraphs and code blocks."
                  if lang == "en" else "接着上次: md2html.py 已有标题;补上段落和代码块。"),
              tool_use("Write", {"file_path": str(ws / "md2html.py"), "content": WHOLE}),
              input_tokens=7100, cache_read=18500),
        tool("Write", {"file_path": str(ws / "目标.md"), "content": GOALS.replace("- [ ]", "- [x]")},
             input_tokens=7600, cache_read=19000),
        text("All three goals are met; 目标.md is ticked." if lang == "en" else "三条目标都完成了,目标.md 已勾选。",
             input_tokens=7900, cache_read=19400),
        # the judge: a new session that sees only 目标.md, 需求.md and the workspace
        text("md2html.py handles headings, paragraphs and fenced code.\nVERDICT: PASS", input_tokens=1500),
    ]


def child_env(model: ScriptedModel, config: Path) -> dict[str, str]:
    """The user's environment without their credentials or endpoint, pointed at the scripted model (D6)."""
    keep = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    return {**keep, **model.env(config)}


class Demo:
    """One demo run in a temporary folder."""

    def __init__(self, lang: str, root: Path):
        self.lang = texts.locale_from(lang)
        self.root = root
        self.ws = root / "md2html"
        self.ws.mkdir()
        self.config = root / "claude-config"
        self.config.mkdir()
        self.runs = self.ws / "runs"  # the default run_dir: ./runs of where flower runs (S4)

    def say(self, line: str = "") -> None:
        """One line of the demo (the `flower` process's stdout removes any API key, D6)."""
        print(line, flush=True)

    def words(self, key: str, **fields: object) -> str:
        """The catalog sentence `demo_<key>` in the demo's language."""
        return texts.text(f"demo_{key}", self.lang, **fields)

    async def start(self, model: ScriptedModel, *args: str) -> tuple[asyncio.subprocess.Process, asyncio.Task[None]]:
        """Start `flower *args` in the workspace (its own process group) and echo its output as it comes."""
        shown = " ".join(f'"{a}"' if " " in a else a for a in args)
        self.say(f"$ flower {shown}".rstrip())
        proc = await asyncio.create_subprocess_exec(
            sys.executable, "-m", "flower.cli", *args, cwd=self.ws, env=child_env(model, self.config),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT,
            start_new_session=True,
        )
        return proc, asyncio.create_task(self.echo(proc))

    async def echo(self, proc: asyncio.subprocess.Process) -> None:
        if proc.stdout is None:  # started with stdout=PIPE, so never; the check is for the type checker
            return
        async for raw in proc.stdout:
            self.say("   │ " + raw.decode("utf-8", "replace").rstrip("\n"))

    async def work_session_on_disk(self, timeout: float = 30.0) -> str:
        """Wait until the lineage maps the work step to a session whose tool result is in sessions.db."""
        from .runtime import Runtime
        from .workflow.base import wake_state
        from .workflow.flower import WORK

        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        async with Runtime(self.ws, self.runs) as rt:
            while True:
                sid = wake_state(self.ws, self.runs)["steps"].get(WORK)
                entries = await rt.entries(sid) if sid else None
                if entries and any(b.get("type") == "tool_result" for e in entries if e.get("type") == "user"
                                   for b in _content(e) if isinstance(b, dict)):
                    return str(sid)
                if loop.time() > deadline:
                    raise TimeoutError(self.words("not_on_disk"))
                await asyncio.sleep(0.05)

    async def run(self) -> int:
        model = ScriptedModel(script(self.ws, self.lang))
        await model.start()
        try:
            self.say(self.words("title", url=model.url))
            self.say(self.words("workspace", ws=self.ws))
            self.say()
            task = self.words("task")
            # 1. start, and kill it mid-step
            proc, echo = await self.start(model, task)
            try:
                await model.wait_for_requests(6, timeout=120)  # the held reply: the work step is mid-turn
                sid = await self.work_session_on_disk()
                self.say(self.words("kill", pid=proc.pid))
                host.kill_group(proc.pid)
                await asyncio.wait_for(proc.wait(), 30)
                await asyncio.wait_for(echo, 10)
                self.say(self.words("killed"))
            finally:
                if proc.returncode is None:
                    host.kill_group(proc.pid)
                    await proc.wait()
            seen_before = len(model.conversation)
            # 2. wake again: no text = carry on
            self.say()
            self.say(self.words("again"))
            proc, echo = await self.start(model)
            code = await asyncio.wait_for(proc.wait(), 180)
            await asyncio.wait_for(echo, 10)
            # 3. check on the model server what the woken session saw
            woken = model.conversation[seen_before]
            if code != 0:
                raise RuntimeError(self.words("exited", code=code))
            said_before = "Starting with the headings." if self.lang == "en" else "先做标题。"
            if woken.session_id != sid or said_before not in woken.texts("assistant"):
                raise RuntimeError(self.words("not_carried"))
            self.say(self.words("explain", task=task, sid=sid, seen=len(woken.messages)))
            return 0
        except (TimeoutError, RuntimeError, OSError, IndexError) as exc:
            self.say(self.words("failed", why=exc or type(exc).__name__))
            return 1
        finally:
            await model.stop()


async def demo_command(args: argparse.Namespace, lang: str) -> int:
    """`flower demo [--keep]`."""
    root = Path(tempfile.mkdtemp(prefix="flower-demo-"))
    try:
        return await Demo(lang, root).run()
    finally:
        if args.keep:
            print(texts.text("demo_kept", lang, dir=root), flush=True)
        else:
            shutil.rmtree(root, ignore_errors=True)


def _content(entry: Mapping[str, Any]) -> list[Any]:
    """The content blocks of a stored transcript entry's message (none when it has no list)."""
    message = entry.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, list) else []
