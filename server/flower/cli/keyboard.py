"""What a person types at the terminal: the wake prompt (S28), answers to clarify questions (S16), sentences while it works (S15)."""

from __future__ import annotations

import asyncio
import codecs
import os
from collections.abc import Awaitable, Callable

from ..core.approvals import Approval, Decision
from .console import Console

YES = ("y", "yes", "是", "好")
ALWAYS = ("a", "always", "总是")


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


class Asker:
    """`svc.ask` and a tool approval on a terminal: the question is shown (with the bell), the next line typed answers it."""

    def __init__(self, keyboard: Keyboard, console: Console):
        self.keyboard, self.console = keyboard, console
        self.waiting: asyncio.Future[str | None] | None = None
        self._turn = asyncio.Lock()  # one question at a time: parallel tool calls are asked one after the other

    async def __call__(self, question: str) -> str | None:
        answer = await self._read(self.console.text("answer_prompt"), "> ", "answer")
        return answer or None

    async def approve(self, approval: Approval) -> Decision:
        """`Allow Bash: rm -rf build? [y]es/[a]lways/[N]o:` — y, a, or anything else (a sentence after n is the reason)."""
        if approval.agent:  # a subagent's tool call says so (issue 32)
            self.console.line(self.console.text("approve_by_subagent", agent=approval.agent))
        if approval.detail_kind == "diff" and approval.detail:
            self.console.line(approval.detail)
        line = await self._read("", self.console.text("approve_prompt", tool=approval.tool, summary=approval.summary) + " ",
                                "approval")
        word, _, rest = (line or "").strip().partition(" ")
        if word.lower() in YES:
            return Decision("allow")
        if word.lower() in ALWAYS:
            return Decision("allowAlways")
        return Decision("deny", rest.strip() or None)

    async def _read(self, heading: str, prompt: str, what: str) -> str | None:
        async with self._turn:
            self.console.ask(what)  # the live line says the run waits for the person, below the prompt (issue 34)
            if heading:
                self.console.line(self.console.style(heading, "1"))
            self.console.make_room(prompt)
            self.console.out.write("\a" + prompt)  # the bell: the run waits for the person
            self.console.out.flush()
            self.waiting = asyncio.get_running_loop().create_future()
            try:
                return await self.waiting
            finally:
                self.waiting = None
                self.console.ask(None)


async def listen(keyboard: Keyboard, say: Callable[[str], Awaitable[object]], asker: Asker) -> None:
    """Lines typed while the agent works: an answer when a question is open, else a sentence for the work session."""
    while True:
        line = await keyboard.readline()
        if asker.waiting is not None and not asker.waiting.done():
            asker.waiting.set_result(None if line is None else line.strip())
            continue
        if line is None:
            return
        if line.strip():
            await say(line.strip())
