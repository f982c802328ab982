"""The journal: what flower saw of each session as it arrived, kept where a kill cannot take it (issue #22).

The CLI writes its transcript lazily: killed the moment its second model request goes out (the model answered with a
tool call, the tool ran), CLI 2.1.332 leaves no transcript file at all, and the store mirror nothing either. flower
saw that turn anyway: the SDK streams every message to it as it happens. So each message is appended to
`<run_dir>/journal/<session id>.jsonl` the moment it arrives (one line, flushed; API keys removed, D6):

    {"k": "prompt", "text": …}                          what this process asked the session
    {"k": "said", "id": <message id>, "text": …}          the model's words
    {"k": "call", "id": <message id>, "tool": <tool_use id>, "name": …, "input": {…}}
    {"k": "result", "tool": <tool_use id>, "text": <head>, "error": bool}
    {"k": "task", "id": <task id>, "tool": <tool_use id>, "type": "local_agent" | "local_bash" | …,
     "description": …, "background": bool, "status": "running" | "completed" | …}

A subagent's messages (a sidechain, issue 32) are recorded the same way with `"parent": <the Agent call's tool_use
id>`, and each subagent or background shell the CLI reports as a `task` record when it starts and when it ends.

A sidechain is in the main conversation once its `Agent` call's result is stored (a foreground subagent's hand-back) or
the CLI's `<task-notification>` of it is (a background one's); until then its records are told, under the call that
started it, and a task that never ended so is named as ended (the model must not wait on a shell id that is gone).

At the next wake, what the journal saw and the store lacks (`missed`) is told to the model in the step's next prompt
(`note`): a session missing from both the store and the CLI's files starts afresh with that note before its prompt;
a session that ends before the journal's last record resumes with it. flower does not rebuild the CLI's transcript
from the journal: a transcript entry carries fields the stream never shows (parent uuids, the CLI's own metadata), and
a hand-made chain the CLI later rewrites on resume is a silent way to lose history (S23's red line); the note loses
nothing the model needs (each call with its input, the head of its result, its last words) and cannot be malformed.
"""

from __future__ import annotations

import json
import logging
import os
import re
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from .durable import write_atomic
from .redact import redact
from .text import clip

log = logging.getLogger(__name__)

JOURNAL_DIR = "journal"
SEEN = ".seen"
"""Beside `<session id>.jsonl`: how far its records were all found in the store (`Journal.seen`)."""
RESULT_HEAD = 1500
"""Characters of a tool result kept: the head is what the note quotes; the effect itself is in the workspace."""
NOTE_HEAD = "[flower: {why} What it had already done there, as flower recorded it when it happened:]"
NOTE_END = "[end of that record. Its effects on the workspace are real: go on from them instead of doing them again.]"
WHY_LOST = "an earlier attempt at this step was cut off before its conversation was saved, so this is a new conversation."
WHY_SHORT = "the conversation above ends before the last things this session did; they were cut off before they were saved."
_NOTE = re.compile(re.escape(NOTE_HEAD).replace(r"\{why\}", ".*?") + r"\n(.*?)\n" + re.escape(NOTE_END), re.DOTALL)
_DEBRIS = ("[Tool call interrupted", "[Request interrupted")
"""The CLI's own interruption filler: never recorded, never told (S23)."""
_LAUNCHED = ("Async agent launched", "Command running in background")
"""How the CLI's result of an `Agent` or `Bash` call that went on in the background begins (CLI 2.1.332)."""
_NOTIFIED = re.compile(r"<tool-use-id>([^<\s]+)</tool-use-id>")
"""In a `<task-notification>` the CLI told the model: the call whose background work it reports."""

Record = dict[str, Any]


class Journal:
    """The journals of one run dir: `write` appends a record to a session's file, `read` gives them back."""

    def __init__(self, run_dir: str | os.PathLike[str]) -> None:
        self.dir = Path(run_dir) / JOURNAL_DIR
        self._files: dict[str, IO[str]] = {}
        self._broken = False
        self.checked: set[str] = set()
        """Sessions already compared with the store in this process: what it writes from here on, it journals too."""

    def path(self, session_id: str) -> Path:
        """`<run_dir>/journal/<session id>.jsonl`."""
        return self.dir / f"{_safe(session_id)}.jsonl"

    def write(self, session_id: str, record: Record) -> None:
        """Append one record and flush it to the OS (a kill of this process then loses nothing); never raises."""
        if self._broken:
            return
        try:
            f = self._files.get(session_id)
            if f is None:
                self.dir.mkdir(parents=True, exist_ok=True)
                f = self._files[session_id] = open(self.path(session_id), "a", encoding="utf-8")
                self.checked.add(session_id)  # written by this process from here on: nothing to recall
            f.write(json.dumps(redact(record), ensure_ascii=False) + "\n")
            f.flush()
        except (OSError, ValueError, TypeError) as e:  # a journal is a bonus: the run never stops for it (S12)
            self._broken = True
            log.warning("could not write the journal in %s (%s); going on without it", self.dir, e)

    def prompt(self, session_id: str, text: str) -> None:
        """What this process asked the session."""
        self.write(session_id, {"k": "prompt", "text": text})

    def said(self, session_id: str, message_id: str | None, text: str, parent: str | None = None) -> None:
        """The model's words (`parent`: the `Agent` call whose subagent said them)."""
        self.write(session_id, _in({"k": "said", "id": message_id, "text": text}, parent))

    def call(self, session_id: str, message_id: str | None, tool_use_id: str, name: str, input: Mapping[str, Any],
             parent: str | None = None) -> None:
        """The model called a tool."""
        self.write(session_id, _in({"k": "call", "id": message_id, "tool": tool_use_id, "name": name, "input": dict(input)},
                                   parent))

    def result(self, session_id: str, tool_use_id: str, content: Any, is_error: bool | None, parent: str | None = None) -> None:
        """A tool's result (its head), unless it is the CLI's interruption filler."""
        text = _text(content)
        if not text.startswith(_DEBRIS):
            self.write(session_id, _in({"k": "result", "tool": tool_use_id, "text": clip(text, RESULT_HEAD, count=True),
                                        "error": bool(is_error)}, parent))

    def task(self, session_id: str, task_id: str, tool_use_id: str | None, type: str, description: str,
             background: bool, status: str) -> None:
        """A subagent or background shell started or ended (issue 32)."""
        self.write(session_id, {"k": "task", "id": task_id, "tool": tool_use_id, "type": type,
                                "description": description, "background": background, "status": status})

    def read(self, session_id: str) -> list[Record]:
        """The session's records, oldest first; a torn last line (a kill mid-write) and unreadable files give what is whole."""
        return self.read_from(session_id, 0)[0]

    def read_from(self, session_id: str, start: int) -> tuple[list[Record], int]:
        """The session's records from byte `start` on, and the offset after the last whole line read."""
        try:
            with self.path(session_id).open("rb") as f:
                f.seek(start)
                raw = f.read()
        except OSError:
            return [], start
        records = []
        for line in raw.decode("utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
            except ValueError:
                continue
            if isinstance(record, dict) and isinstance(record.get("k"), str):
                records.append(record)
        # The offset ends at the last whole line: a torn one (a kill mid-write) is read again from its start.
        return records, start + raw.rfind(b"\n") + 1

    def seen(self, session_id: str) -> tuple[int, int]:
        """(offset, entries): the records before that offset were all in the store when it held that many entries of
        the session; (0, 0) when no comparison found them all."""
        try:
            mark = json.loads(self.path(session_id).with_suffix(SEEN).read_bytes())
            offset, count = mark["offset"], mark["count"]
        except (OSError, ValueError, KeyError, TypeError):
            return 0, 0
        return (offset, count) if type(offset) is int and type(count) is int and offset >= 0 else (0, 0)

    def mark_seen(self, session_id: str, offset: int, count: int) -> None:
        """Remember that the records before `offset` are in the store, which held `count` entries; never raises."""
        try:
            write_atomic(self.path(session_id).with_suffix(SEEN), json.dumps({"offset": offset, "count": count}).encode())
        except OSError as e:  # the next wake then compares them again: only slower
            log.warning("could not write %s (%s)", self.path(session_id).with_suffix(SEEN), e)

    def remove(self, session_id: str) -> None:
        """Remove the session's journal and its mark (its session is collected)."""
        for path in (self.path(session_id), self.path(session_id).with_suffix(SEEN)):
            path.unlink(missing_ok=True)

    def close(self) -> None:
        """Close the open files (they are flushed already)."""
        for f in self._files.values():
            try:
                f.close()
            except OSError:
                pass
        self._files.clear()


class Seen:
    """What stored transcript entries hold that journal records are matched with: answers by message id, results by
    tool_use id, prompts by text."""

    def __init__(self) -> None:
        self.answers: set[str] = set()
        self.results: set[str] = set()
        self.asked: set[str] = set()
        self.told: set[str] = set()
        """Lines of flower's notes the store holds: a record told once is not told again after the next kill (#31)."""
        self.launched: set[str] = set()
        """Calls whose stored result only says their work went on in the background."""
        self.failed: set[str] = set()
        """Calls whose stored result is an error: for an `Agent` call, its subagent's report never reached the model (a
        Ctrl-C inside a foreground subagent makes the CLI store its refusal text as the call's result)."""
        self.notified: set[str] = set()
        """Calls whose background work a stored `<task-notification>` reported to the model."""

    def add(self, entries: Iterable[Mapping[str, Any]]) -> None:
        """Take in more stored entries (in any order)."""
        for entry in entries:
            attachment = entry.get("attachment")
            if entry.get("type") == "attachment" and isinstance(attachment, dict):  # a notification told mid-turn
                self._notified(attachment.get("prompt"))
            message = entry.get("message")
            if not isinstance(message, dict):
                continue
            if entry.get("type") == "assistant" and isinstance(message.get("id"), str):
                self.answers.add(message["id"])
            elif entry.get("type") == "user":
                content = message.get("content")
                for block in content if isinstance(content, list) else [{"type": "text", "text": content}]:
                    if not isinstance(block, dict):
                        continue
                    if block.get("type") == "tool_result":
                        self.results.add(str(block.get("tool_use_id")))
                        if _text(block.get("content")).startswith(_LAUNCHED):
                            self.launched.add(str(block.get("tool_use_id")))
                        if block.get("is_error"):
                            self.failed.add(str(block.get("tool_use_id")))
                    elif isinstance(block.get("text"), str):
                        self.asked.add(block["text"])
                        if NOTE_END in block["text"]:  # only flower's notes: most stored texts are not one
                            for told in _NOTE.finditer(block["text"]):  # as lines stand alone: a subagent's are indented
                                self.told.update(line.strip() for line in told.group(1).splitlines())
                        self._notified(block["text"])

    def _notified(self, text: object) -> None:
        if isinstance(text, str) and "<task-notification>" in text:
            self.notified.update(_NOTIFIED.findall(text))

    def reached(self, tool_use_id: object) -> bool:
        """Whether what the call started is in the stored conversation: its result (not an error: a subagent cut off
        hands back nothing), or for work that went on in the background, the CLI's notification of its end."""
        return tool_use_id in self.notified or (tool_use_id in self.results and tool_use_id not in self.launched
                                                and tool_use_id not in self.failed)

    def lacks(self, records: list[Record]) -> list[Record]:
        """The records none of the entries taken in so far match (a sidechain's and a task's: see `reached`)."""
        out = []
        calls = {r.get("tool"): r for r in records if r["k"] == "call"}
        tasks = {r.get("tool"): r for r in records if r["k"] == "task"}  # the newest of each, as a note tells it
        for r in records:
            kind = r["k"]
            if "parent" in r or kind == "task":
                tool = r.get("parent") or r.get("tool")
                # A stored note that told what the call started told all of it: the work ended with the run it ran in.
                if not self.reached(tool) and _head(tool, tasks.get(tool)) not in self.told:
                    out.append(r)
            elif (kind in ("said", "call") and r.get("id") not in self.answers
                    or kind == "result" and r.get("tool") not in self.results
                    or kind == "prompt" and r.get("text") not in self.asked):
                # Told in a note the store holds (a cut-off wake's note, then a second kill): told, not lacking. A
                # result goes with its call's line; else the same note grew by one copy per kill (chaos --seed 1).
                told = _line(calls.get(r.get("tool"), r) if kind == "result" else r, calls)
                if told is None or told not in self.told:
                    out.append(r)
        return out


def sidechain(entries: Iterable[Mapping[str, Any]], parent: str) -> list[Record]:
    """A subagent's stored transcript (`subagents/agent-<id>`) as its journal records: the CLI streams a foreground
    subagent's tool calls but not its words, which its stored transcript has (CLI 2.1.332, issue 32)."""
    out: list[Record] = []
    for entry in entries:
        message = entry.get("message")
        content = message.get("content") if isinstance(message, dict) else None
        if not isinstance(message, dict) or not isinstance(content, list):
            continue
        for block in content:
            if not isinstance(block, dict):
                continue
            if entry.get("type") == "assistant" and block.get("type") == "text" and str(block.get("text", "")).strip():
                out.append({"k": "said", "id": message.get("id"), "text": block["text"], "parent": parent})
            elif entry.get("type") == "assistant" and block.get("type") == "tool_use":
                out.append({"k": "call", "id": message.get("id"), "tool": block.get("id"), "name": block.get("name"),
                            "input": block.get("input") or {}, "parent": parent})
            elif entry.get("type") == "user" and block.get("type") == "tool_result" and not _text(block.get("content")).startswith(_DEBRIS):
                out.append({"k": "result", "tool": block.get("tool_use_id"), "text": clip(_text(block.get("content")), RESULT_HEAD, count=True),
                            "error": bool(block.get("is_error")), "parent": parent})
    return out


def with_stored(records: list[Record], stored: list[Record]) -> list[Record]:
    """`records` with a subagent's sidechain told from its stored transcript (`stored`, in its order) and what only
    the journal saw after it: the store has its words, the journal what the store did not get to."""
    if not stored:
        return records
    parent = stored[0]["parent"]
    known = {_key(r) for r in stored}
    at = next((i for i, r in enumerate(records) if r.get("parent") == parent), len(records))
    rest = [r for r in records if r.get("parent") != parent]
    extra = [r for r in records if r.get("parent") == parent and _key(r) not in known]
    return rest[:at] + stored + extra + rest[at:]


def _key(r: Record) -> tuple[Any, ...]:
    return (r["k"], r.get("tool"), r.get("id"), r.get("text") if r["k"] == "said" else None)


def missed(records: list[Record], entries: Iterable[Mapping[str, Any]] | None) -> list[Record]:
    """The records the stored transcript `entries` lacks (see `Seen`)."""
    seen = Seen()
    seen.add(entries or [])
    return seen.lacks(records)


def note(records: list[Record], *, resumed: bool, prompt: str = "") -> str:
    """What the cut-off attempt had already done, told briefly and neutrally; "" when there is nothing to tell.

    `prompt` is what the step sends now: an earlier prompt equal to it is not repeated; a note inside an earlier
    prompt (a second cut-off in a row) is carried over as it was, so nothing told once is lost.
    """
    lines: list[str] = []
    main = [r for r in records if "parent" not in r and r["k"] != "task"]
    calls = {r.get("tool"): r for r in main if r["k"] == "call"}
    delegated = _delegated(records)
    for r in main:
        kind = r["k"]
        if kind == "prompt":
            earlier = _NOTE.search(str(r.get("text", "")))
            if earlier:
                lines.append(earlier.group(1))
            line = _line(r, calls)
            if line and _asked(r).strip() != prompt.strip():
                lines.append(line)
        elif kind == "call":
            lines.append(str(_line(r, calls)))
            result = next((x for x in main if x["k"] == "result" and x.get("tool") == r.get("tool")), None)
            if r.get("tool") in delegated:
                lines.extend("  " + line for line in delegated.pop(r.get("tool")))
            elif result is None:
                lines.append("  Its result was not recorded: the attempt was cut off while it ran, so check its effect.")
            else:
                lines.append(f"  {_returned(result)}")
        elif kind != "result" or r.get("tool") not in calls:  # a result's call is in the conversation, the result not
            line = _line(r, calls)
            if line:
                lines.append(line)
    for told in delegated.values():  # their calls are in the conversation, what they started is not
        lines.extend(told)
    if not lines:
        return ""
    return "\n".join([NOTE_HEAD.format(why=WHY_SHORT if resumed else WHY_LOST), *lines, NOTE_END])


def _asked(prompt: Record) -> str:
    """A prompt's own words, without the note of an earlier cut-off it carried (that note is carried over as it was)."""
    text = str(prompt.get("text", ""))
    earlier = _NOTE.search(text)
    return (text[:earlier.start()] + text[earlier.end():]).strip() if earlier else text


def _line(r: Record, calls: Mapping[Any, Record]) -> str | None:
    """The line a note tells record `r` with (None: it tells nothing of it); also how a stored note is recognised."""
    kind = r["k"]
    if kind == "prompt":
        text = _asked(r)
        return f"- You were asked: {json.dumps(clip(text, 600, count=True), ensure_ascii=False)}" if text else None
    if kind == "said":
        return f"- You said: {json.dumps(r['text'], ensure_ascii=False)}" if str(r.get("text", "")).strip() else None
    if kind == "call":
        return f"- You called {r.get('name')} with {json.dumps(r.get('input', {}), ensure_ascii=False)}"
    if kind == "result" and r.get("tool") not in calls:
        return f"- Your tool call {r.get('tool')} above: {_returned(r)}"
    return None


def _delegated(records: list[Record]) -> dict[Any, list[str]]:
    """Per call that started background work or a subagent: what the note says of it (issue 32). A subagent's tool
    calls with their inputs and result heads, and its words, under the call; work that never ended, named as ended."""
    tasks: dict[Any, Record] = {}
    for r in records:
        if r["k"] == "task":
            tasks[r.get("tool")] = r  # the newest record of each: its last status
    sidechains: dict[Any, list[Record]] = {}
    for r in records:
        if "parent" in r:
            sidechains.setdefault(r["parent"], []).append(r)
    out: dict[Any, list[str]] = {}
    for tool in [*tasks, *(p for p in sidechains if p not in tasks)]:
        task, done = tasks.get(tool), sidechains.get(tool, [])
        lines = [_head(tool, task)]
        if task is not None and task.get("type") == "local_bash":
            out[tool] = lines
            continue
        sub_calls = {r.get("tool") for r in done if r["k"] == "call"}
        for r in done:
            if r["k"] == "said" and str(r.get("text", "")).strip():
                lines.append(f"  - It said: {json.dumps(r['text'], ensure_ascii=False)}")
            elif r["k"] == "call":
                lines.append(f"  - It called {r.get('name')} with {json.dumps(r.get('input', {}), ensure_ascii=False)}")
                result = next((x for x in done if x["k"] == "result" and x.get("tool") == r.get("tool")), None)
                lines.append(f"    {_returned(result)}" if result is not None else
                             "    Its result was not recorded: it was cut off while it ran, so check its effect.")
            elif r["k"] == "result" and r.get("tool") not in sub_calls:
                lines.append(f"  - Its tool call {r.get('tool')}: {_returned(r)}")
        if len(lines) == 1:
            lines.append("  - Nothing yet: it had made no tool call.")
        out[tool] = lines
    return out


def _head(tool: Any, task: Record | None) -> str:
    """The first line a note tells of what call `tool` started (`task`: its newest task record, if any); also how a
    stored note is recognised to have told it."""
    name = json.dumps(str(task.get("description") or "") if task else "", ensure_ascii=False)
    if task is not None and task.get("type") == "local_bash":
        # The CLI ends its shells when it exits; a CLI killed outright leaves them running in their own session.
        return (f"- Your background shell {name} (your Bash call {tool}, shell id {task.get('id')}) was cut off by the "
                "interruption: it will not report back and its id is gone, so do not wait for it; check whether it "
                "still runs or what it left before you start it again.")
    ended = task is None or task.get("status") != "completed"
    how = "was ended by the interruption before it finished" if ended else "finished, but its report was lost"
    return f"- The subagent {name} that your Agent call {tool} started {how}. What it had already done:"


def _in(record: Record, parent: str | None) -> Record:
    """The record, marked as a subagent's (`parent`: its Agent call) when it is one."""
    if parent:
        record["parent"] = parent
    return record


def _returned(result: Record) -> str:
    label = "It failed with" if result.get("error") else "It returned"
    return f"{label}: {json.dumps(result.get('text', ''), ensure_ascii=False)}"


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(c.get("text", "")) for c in content if isinstance(c, dict) and c.get("type") == "text")
    return ""


def _safe(session_id: str) -> str:
    """A session id as a file name (ids are uuids; anything else is made harmless)."""
    return re.sub(r"[^A-Za-z0-9_.-]", "_", session_id)[:200] or "_"
