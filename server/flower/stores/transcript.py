"""The pruning algorithm: what the model sees of a CLI transcript on resume (S23, S25, S26). Pure: no SDK, no I/O.

`prune` runs three phases. `index` reads every entry once and records where the tool calls, their
results, the outage residue and the rounds are; `plan` decides, from that index alone, which entries
are hidden, which tool_result bodies are rewritten and which results are added; `rebuild` applies the
plan to a new list, re-linking children to the nearest living ancestor.

Entries are never altered (D2): unchanged entries are returned as the same objects, changed ones
are copies. The CLI's transcript is a `parentUuid` tree that is one chain in the common case;
parallel tool calls hang their results off their own tool_use entries and the CLI re-attaches
them by tool_use id. So pruning only removes entries, rewrites tool_result bodies, adds results
for tool calls a kill left open, and re-links children to the nearest living ancestor (the
structural red line of S23).
"""

from __future__ import annotations

import functools
import os
import re
import shlex
import uuid as uuidlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, NamedTuple

from ..core.text import clip, tool_label

__all__ = [
    "EPHEMERAL_COMMANDS", "INTERRUPTED_NOTE", "INTERRUPTED_REPLY", "TRIM_KEEP_ROUNDS", "TRIM_THRESHOLD",
    "Index", "Plan", "PruneResult", "index", "is_ephemeral", "plan", "prune", "rebuild",
]

Entry = dict[str, Any]
"""One transcript line as the CLI writes it (JSON object)."""
Block = dict[str, Any]
"""One content block of a message (text, tool_use, tool_result, …)."""
Verdict = Literal["hidden", "rewritten", "added"]

INTERRUPTED_NOTE = "[the previous round was interrupted here; this tool result was not produced]"
"""S23c: the body of a tool_result an interruption left (or that a kill never wrote)."""

INTERRUPTED_REPLY = "[the previous round was interrupted here]"
"""S23a: the text of an API-error reply that ends the transcript. It is kept, not hidden: the CLI
drops such rows from the request itself, and a transcript ending on a user row would make it add
its own "No response requested." filler to the request."""

EPHEMERAL_COMMANDS = frozenset({
    "ls", "ll", "tree", "pwd", "ps", "pgrep", "top", "htop", "df", "du", "free", "uptime", "date", "who",
    "w", "jobs", "lsof", "netstat", "ss", "env", "printenv", "git status", "git diff", "git branch",
    "git stash list", "docker ps", "kubectl get", "systemctl status",
})
"""S25: Bash commands whose output is only true at that moment (matched on the leading words)."""

TRIM_THRESHOLD = 20_000
"""S26: characters above which an old tool result is trimmed to a file pointer."""
TRIM_KEEP_ROUNDS = 3
"""S26: results of the last rounds stay resident whatever their size."""

SYNTHETIC_MODEL = "<synthetic>"

# toolDenialKind values the CLI (2.1.332) writes on tool_result entries.
_INTERRUPTED_KINDS = frozenset({"interrupted", "cancelled"})
_DENIAL_KINDS = frozenset({"user-rejected", "permission-rule", "automode-blocked"})
# Bodies of results the CLI writes for calls that never ran to the end (its own list, by prefix).
_INTERRUPTED_PREFIXES = (
    "[Tool call interrupted", "[Request interrupted", "[Tool call did not complete", "[Tool call skipped",
    "[Tool call not completed", "[Tool call result not in this copy", "[Agent call interrupted",
)
# Denials that carry no toolDenialKind (e.g. a disallowed tool) or come from older CLIs.
_DENIAL_PREFIXES = (
    "Claude requested permissions to", "Permission to use", "No such tool available",
    "The user doesn't want to", "This tool call was refused", "User denied permission",
)
# Fields a synthesized entry copies from its tool_use entry so the CLI reads it as its own.
_CONTEXT_KEYS = ("isSidechain", "agentId", "userType", "entrypoint", "cwd", "sessionId", "version", "gitBranch", "slug", "timestamp")
_SYNTH_NS = uuidlib.UUID("5f0c3b1e-6a52-4b7e-9d0b-8c1f2e3a4b5c")
_SEGMENTS = re.compile(r"&&|\|\||;|\n")
_NEUTRAL_REPLY = [{"type": "text", "text": INTERRUPTED_REPLY}]


@dataclass
class PruneResult:
    """What `prune` made of a transcript: the entries to hand to the CLI and what changed."""

    entries: list[Entry]
    """The pruned transcript (unchanged entries are the input objects, changed ones are copies)."""
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    """uuid → "hidden" (not returned), "rewritten" (content changed) or "added" (synthesized result)."""
    relinked: dict[str, str | None] = field(default_factory=dict)
    """uuid → its new parentUuid, for kept entries whose parent was hidden or missing."""
    spills: dict[Path, str] = field(default_factory=dict)
    """Files to write for trimmed results (S26): path → the full result text."""


def prune(
    entries: list[Entry],
    *,
    keep_denials: int = 1,
    ephemeral: bool | Iterable[str] = True,
    trim: bool = False,
    spill_dir: str | os.PathLike[str] | None = None,
    trim_threshold: int = TRIM_THRESHOLD,
    trim_keep_rounds: int = TRIM_KEEP_ROUNDS,
) -> PruneResult:
    """Clean a transcript for the model (S23, S25, S26) without touching `entries` or its dicts."""
    trimming = None
    if trim:
        if spill_dir is None:
            raise ValueError("trim needs a spill_dir to keep the trimmed results in")
        trimming = Trim(Path(spill_dir), trim_threshold, trim_keep_rounds)
    commands = EPHEMERAL_COMMANDS if ephemeral is True else frozenset(ephemeral or ())
    found = index(entries, commands=commands, sizes=trim)
    return rebuild(entries, found, plan(entries, found, keep_denials=keep_denials, trim=trimming))


# -- index -------------------------------------------------------------------------------------------

# Plain tuples, not NamedTuples: one is made per tool call and per result, and a NamedTuple costs
# four times as much to make (measured: 3 ms of a 35 ms prune on benchmarks/prune.py's transcript).
Kind = Literal["interrupted", "denied"] | None
Call = tuple[int, Block, bool]
"""A tool_use: (index of its assistant entry, the block, whether it is an ephemeral Bash command (S25))."""
Result = tuple[int, int, Block, Kind, int]
"""A call's first tool_result: (index of its user entry, index of the block in that entry's content,
the block, its kind, characters of text in its body (counted only when trimming))."""


@dataclass(slots=True)
class Index:
    """What one pass over a transcript found; positions are indexes into the entry list."""

    parents: list[str | None]
    """Each entry's parentUuid, by position."""
    parent_of: dict[str, str | None]
    """uuid → parentUuid, for the entries that have a uuid."""
    calls: dict[str | None, Call]
    """tool_use id → its (first) tool_use (None: a block without an id, which the API would refuse)."""
    results: dict[str | None, Result]
    """tool_use id → its first tool_result."""
    extra: list[tuple[int, int]]
    """(entry, slot) of further results for a call already answered."""
    round_of: dict[int, int]
    """Index of an assistant entry with calls → its round (one round = one real API response)."""
    rounds: int
    residue: list[int]
    """S23a: API-error replies and the CLI's synthetic filler, except an API error that ends the transcript."""
    tail_error: int | None
    """S23a: the API-error reply that ends the transcript, if one does."""
    leaves: list[int]
    """`last-prompt` entries (they point at a leaf by uuid)."""


def index(entries: list[Entry], *, commands: frozenset[str] = EPHEMERAL_COMMANDS, sizes: bool = False) -> Index:
    """Read each entry once: tool calls and their results, outage residue, rounds, leaf pointers."""
    # One pass that touches each entry once: they are scattered in memory, so reading them again
    # would cost more than all the work; hence one loop and local names rather than helpers.
    parents: list[str | None] = []
    parent_of: dict[str, str | None] = {}
    calls: dict[str | None, Call] = {}
    results: dict[str | None, Result] = {}
    extra: list[tuple[int, int]] = []
    round_of: dict[int, int] = {}
    residue: list[int] = []
    leaves: list[int] = []
    tail = next((i for i in range(len(entries) - 1, -1, -1) if entries[i].get("type") in ("user", "assistant")), None)
    tail_error: int | None = None
    rounds, previous, response = 0, None, None  # API responses so far; the last message entry's type and id
    for i, entry in enumerate(entries):
        uid, parent = entry.get("uuid"), entry.get("parentUuid")
        parents.append(parent)
        if uid is not None:
            parent_of[uid] = parent
        kind = entry.get("type")
        if kind == "assistant":
            message = entry.get("message")
            if not isinstance(message, dict):
                continue
            content = message.get("content")
            uses: list[Block] = []
            if type(content) is list:
                for b in content:
                    if type(b) is dict and b.get("type") == "tool_use":
                        uses.append(b)
            # S23a: API-error replies and the CLI's other synthetic filler ("No response requested.").
            if entry.get("isApiErrorMessage") or (not uses and message.get("model") == SYNTHETIC_MODEL):
                if content == _NEUTRAL_REPLY:
                    continue  # our own closing reply: kept, and no round of its own
                if i == tail and entry.get("isApiErrorMessage"):
                    tail_error = i
                else:
                    residue.append(i)
                continue
            key = message.get("id")  # one API response is several assistant entries in a row (D1)
            if previous != "assistant" or key != response or key is None:
                rounds += 1
            previous, response = "assistant", key
            if uses:
                round_of[i] = rounds - 1
                for b in uses:
                    if b.get("id") not in calls:
                        command = b.get("name") == "Bash" and (b.get("input") or {}).get("command")
                        calls[b.get("id")] = (i, b, isinstance(command, str) and bool(commands) and _ephemeral(command, commands))
        elif kind == "user":
            previous = "user"
            message = entry.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if _is_interruption_marker(content):
                # S23c: Ctrl-C during a tool makes the CLI write the call's result as a person's rejection,
                # then this "[Request interrupted by user for tool use]" line: an interruption, not a denial.
                # The line is residue; the results it follows are interruption results (chaos --seed 7).
                residue.append(i)
                for tid, (at, j, b, found_kind, size) in list(results.items()):
                    if found_kind == "denied" and entries[at].get("uuid") == parent:
                        results[tid] = (at, j, b, "interrupted", size)
                continue
            if type(content) is list:
                for j, b in enumerate(content):
                    if type(b) is dict and b.get("type") == "tool_result":
                        tid = b.get("tool_use_id")
                        if tid in results:
                            extra.append((i, j))
                        else:
                            results[tid] = (i, j, b, _kind(entry, b), _size(b.get("content")) if sizes else 0)
        elif kind == "last-prompt":
            leaves.append(i)
    return Index(parents, parent_of, calls, results, extra, round_of, rounds, residue, tail_error, leaves)


def is_ephemeral(command: str, commands: Iterable[str] = EPHEMERAL_COMMANDS) -> bool:
    """Whether a Bash command only reports momentary state (S25): every step, `cd` aside, is in `commands`."""
    return _ephemeral(command, commands if isinstance(commands, frozenset) else frozenset(commands))


@functools.lru_cache(maxsize=4096)
def _ephemeral(command: str, commands: frozenset[str]) -> bool:
    known = [c.split() for c in commands]
    heads = []
    for segment in _SEGMENTS.split(command):
        head = segment.split("|", 1)[0].strip()  # a pipeline's output is its head's, filtered
        if not head:
            continue
        try:
            words = shlex.split(head)
        except ValueError:
            return False
        if words and words[0] != "cd":
            heads.append(words)
    return bool(heads) and all(any(w[:len(k)] == k for k in known) for w in heads)


def _is_interruption_marker(content: Any) -> bool:
    """A user message that is only the CLI's "[Request interrupted by user…]" line(s)."""
    if isinstance(content, str):
        return content.startswith("[Request interrupted")
    return (type(content) is list and bool(content)
            and all(type(b) is dict and b.get("type") == "text" and str(b.get("text", "")).startswith("[Request interrupted")
                    for b in content))


def _kind(entry: Entry, block: Block) -> Kind:
    """"interrupted", "denied" or None for one tool_result block."""
    kind = entry.get("toolDenialKind")
    if kind in _INTERRUPTED_KINDS:
        return "interrupted"
    if not block.get("is_error"):  # the common case; the CLI marks every interruption and denial as an error
        return None
    body = _bare(_text(block.get("content")) or "")
    if body.startswith(_INTERRUPTED_PREFIXES) or body == INTERRUPTED_NOTE:
        return "interrupted"
    decision = entry.get("permissionDecision")
    if kind in _DENIAL_KINDS or (isinstance(decision, dict) and decision.get("decision") in ("reject", "deny")):
        return "denied"
    return "denied" if body.startswith(_DENIAL_PREFIXES) else None


def is_denial(entry: Entry, block: Block) -> bool:
    """Whether a tool_result block is a denial (the person's, flower's unattended rule, a permission rule), not output.

    The pruner's rule (`_kind`), and what the CLI marks on a denial its host (flower's `can_use_tool`) made: any
    `toolDenialKind` but an interruption, or `toolDenialFromHost` (issue 34: history marks the call as denied).
    """
    if not block.get("is_error"):
        return False
    kind = _kind(entry, block)
    if kind is not None:
        return kind == "denied"
    return bool(entry.get("toolDenialFromHost")) or (entry.get("toolDenialKind") not in (None, *_INTERRUPTED_KINDS))


def _text(content: Any) -> str | None:
    """The text of a tool_result body; None if it holds something else (an image)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list) and all(isinstance(b, dict) and b.get("type") == "text" for b in content):
        return "\n".join(b.get("text", "") for b in content)
    return None


def _size(content: Any) -> int:
    """Characters of text in a tool_result body."""
    if type(content) is str:
        return len(content)
    return sum(len(b.get("text") or "") for b in content if type(b) is dict) if type(content) is list else 0


def _bare(text: str) -> str:
    """An error body without the CLI's `<tool_use_error>` / `Error: ` wrapping."""
    text = text.strip()
    if text.startswith("<tool_use_error>"):
        text = text[len("<tool_use_error>"):]
    return text[7:] if text.startswith("Error: ") else text


# -- plan --------------------------------------------------------------------------------------------

class Trim(NamedTuple):
    """S26 settings: old results above `threshold` characters go to files in `spill_dir`."""

    spill_dir: Path
    threshold: int
    keep_rounds: int


@dataclass(slots=True)
class Plan:
    """What `rebuild` does, by entry index; nothing in it has been applied yet."""

    hidden: set[int] = field(default_factory=set)
    """Entries not returned: outage residue (S23a) and entries whose every block is dropped."""
    drop: dict[int, set[int]] = field(default_factory=dict)
    """Entry → content slots to remove (S23b denied pairs, results without a call, second results)."""
    body: dict[int, dict[int, str]] = field(default_factory=dict)
    """Entry → {slot: new tool_result body} (S23c interrupted, S25 expired, S26 trimmed)."""
    spills: dict[Path, str] = field(default_factory=dict)
    """S26: file → the full text of a trimmed result."""
    closers: dict[int, list[str | None]] = field(default_factory=dict)
    """Entry → tool_use ids a kill left open, answered right after it (S23c)."""
    closing: dict[int, list[str]] = field(default_factory=dict)
    """Entry → the uuids of those added results, in the same order."""
    tail_error: int | None = None
    """S23a: the API-error reply that ends the transcript, kept with a neutral text."""


def plan(entries: list[Entry], found: Index, *, keep_denials: int = 1, trim: Trim | None = None) -> Plan:
    """Decide, per entry, what is hidden, which tool_result bodies change and which results are added."""
    todo = Plan(hidden=set(found.residue), tail_error=found.tail_error)
    _plan_results(entries, found, todo, keep_denials, trim)
    for i, gone in todo.drop.items():  # an entry left with no block at all goes, its children re-linked (S23)
        if len(gone) == len(entries[i]["message"]["content"]):
            todo.hidden.add(i)
    _plan_closing(entries, found, todo)
    return todo


def _plan_results(entries: list[Entry], found: Index, todo: Plan, keep_denials: int, trim: Trim | None) -> None:
    """Slots to drop and bodies to rewrite, one tool_result at a time."""
    drop, body, calls, round_of = todo.drop, todo.body, found.calls, found.round_of
    denials: list[tuple[int, str | None]] = []
    last_round = found.rounds - 1
    for i, j in found.extra:  # one result per call: the first one counts (or none, if the call is gone)
        drop.setdefault(i, set()).add(j)
    for tid, (i, j, block, kind, size) in found.results.items():
        if tid not in calls:  # a result whose call is gone would be a 400: drop it
            drop.setdefault(i, set()).add(j)
            continue
        use_at, use, expires = calls[tid]
        age = last_round - round_of[use_at]
        if kind == "denied":
            denials.append((i, tid))
        elif kind == "interrupted":
            body.setdefault(i, {})[j] = INTERRUPTED_NOTE  # S23c: only the body changes
        elif expires and age >= 1:  # S25: a newer round exists, so the output is stale
            command = clip(use["input"]["command"].strip(), 80)
            body.setdefault(i, {})[j] = f"[expired: output of `{command}` from an earlier round; run it again if needed]"
        elif trim and age >= trim.keep_rounds and size > trim.threshold and (text := _text(block.get("content"))) is not None:
            # S26: not resident, not lost: the full text goes to a file the model can Read.
            path = trim.spill_dir / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', str(tid))}.txt"
            todo.spills[path] = text
            label = tool_label(str(use.get("name") or "tool"), use.get("input"))
            body.setdefault(i, {})[j] = f"[trimmed: {len(text) // 1024} KB result of {label} saved to {path}; Read that file if you need it]"
    denials.sort()
    for i, tid in denials[:max(0, len(denials) - keep_denials)]:  # S23b: the oldest go, as whole pairs
        use_at, use, _ = calls[tid]
        drop.setdefault(use_at, set()).add(next(j for j, b in enumerate(entries[use_at]["message"]["content"]) if b is use))
        drop.setdefault(i, set()).add(found.results[tid][1])


def _plan_closing(entries: list[Entry], found: Index, todo: Plan) -> None:
    """S23c: a call a kill left open is answered with the note, after its response's last living entry."""
    for tid, (use_at, _, _) in found.calls.items():
        if tid not in found.results:
            todo.closers.setdefault(_response_end(entries, use_at, todo.hidden), []).append(tid)
    for i, tids in todo.closers.items():
        todo.closing[i] = [_closing_uuid(entries[found.calls[t][0]], t) for t in tids]


def _response_end(entries: list[Entry], i: int, hidden: set[int]) -> int:
    """The last returned entry of the API response entry `i` belongs to (its entries come in a row)."""
    key, last = entries[i]["message"].get("id"), i
    for k in range(i + 1, len(entries)):
        entry = entries[k]
        kind = entry.get("type")
        if kind != "user" and kind != "assistant":
            continue  # bookkeeping lines may sit between a response's entries
        message = entry.get("message")
        if kind == "user" or key is None or not isinstance(message, dict) or message.get("id") != key:
            break
        if k not in hidden:
            last = k
    return last


def _closing_uuid(use_entry: Entry, tool_use_id: str | None) -> str:
    """The same uuid on every load, so entries the CLI appends after it stay linked."""
    return str(uuidlib.uuid5(_SYNTH_NS, f"{use_entry.get('sessionId')}:{tool_use_id}"))


# -- rebuild -----------------------------------------------------------------------------------------

class _Links:
    """Where the children of hidden, closed or lost entries go (S23's structural red line)."""

    def __init__(self, entries: list[Entry], found: Index, todo: Plan):
        self.entries, self.parent_of, self.todo = entries, found.parent_of, todo
        self.hidden = {u for i in todo.hidden if (u := entries[i].get("uuid")) is not None}
        # A response that gets closing notes: its children follow the last note instead.
        self.redirect: dict[str | None, str] = {entries[i].get("uuid"): made[-1] for i, made in todo.closing.items()}
        self.moved = moved = self.hidden | self.redirect.keys()
        added = {u for made in todo.closing.values() for u in made}
        parents, parent_of = found.parents, found.parent_of
        # Entries whose parent is hidden, closed, or was never stored.
        self.orphaned = [i for i, p in enumerate(parents) if p in moved or (p not in parent_of and p is not None)]
        self.lost = {parents[i] for i in self.orphaned} - parent_of.keys() - added

    def living(self, parent: str | None, before: int, repair: bool = True) -> str | None:
        """The nearest returned ancestor of `parent`; for a lost parent, the nearest returned entry before `before`."""
        hops = 0
        while parent is not None and parent in self.hidden and hops <= len(self.parent_of):  # bounded: a corrupt transcript may hold a cycle
            parent, hops = self.parent_of.get(parent), hops + 1
        if repair and parent in self.lost:
            parent = self._last_living(before)
        return self.redirect.get(parent, parent)

    def _last_living(self, i: int) -> str | None:
        """The uuid of the last entry before index `i` that is returned (an added note counts)."""
        for k in range(i - 1, -1, -1):
            if k in self.todo.closing:
                return self.todo.closing[k][-1]
            uid: str | None = self.entries[k].get("uuid")
            if uid is not None and k not in self.todo.hidden:
                return uid
        return None


def rebuild(entries: list[Entry], found: Index, todo: Plan) -> PruneResult:
    """Apply a plan: a new list where untouched entries are the same objects and children re-link to living ancestors."""
    links = _Links(entries, found, todo)
    parents, hidden, drop, body, closers = found.parents, todo.hidden, todo.drop, todo.body, todo.closers
    special = sorted(hidden | drop.keys() | body.keys() | closers.keys() | set(links.orphaned)
                     | ({todo.tail_error} if todo.tail_error is not None else set())
                     | {i for i in found.leaves if entries[i].get("leafUuid") in links.moved})
    verdicts: dict[str, Verdict] = dict.fromkeys(links.hidden, "hidden")
    relinked: dict[str, str | None] = {}
    out: list[Entry] = []
    done = 0
    for i in special:  # the entries between two special ones are copied over as they are
        out.extend(entries[done:i])
        done = i + 1
        if i in hidden:
            continue
        entry = new = entries[i]
        uid = entry.get("uuid")
        if i == todo.tail_error:
            new = _neutral(entry)
        elif i in drop or i in body:
            new = _rewrite(entry, drop.get(i, set()), body.get(i, {}))
        if new is not entry and isinstance(uid, str):
            verdicts[uid] = "rewritten"
        if parents[i] is not None:
            parent = links.living(parents[i], i)
            if parent != parents[i]:
                new = new if new is not entry else dict(entry)
                new["parentUuid"] = parent
                if isinstance(uid, str):
                    relinked[uid] = parent
        elif entry.get("type") == "last-prompt" and entry.get("leafUuid") in links.moved:
            new = {**entry, "leafUuid": links.living(entry["leafUuid"], i, repair=False)}
        out.append(new)
        if i in closers:  # S23c: the notes for calls this response left open come right after it
            parent = uid
            for tid, made in zip(closers[i], todo.closing[i], strict=True):
                out.append(_closing_result(entries[found.calls[tid][0]], tid, made, parent))
                verdicts[made] = "added"
                parent = made
    out.extend(entries[done:])
    _end_on_a_reply(out, verdicts)
    return PruneResult(out, verdicts, relinked, todo.spills)


def _end_on_a_reply(out: list[Entry], verdicts: dict[str, Verdict]) -> None:
    """End a transcript that ends on a user message (a tool result or a prompt) with the neutral reply (S23c).

    A kill left calls open, or came after a tool ran or a prompt was sent and before the model answered
    (chaos --seeds 2 and 7: the CLI then sent "No response requested." for the rest of the round). The CLI answers a
    resumed transcript ending on a tool result with its own "No response requested."; end it on
    the neutral reply instead.
    """
    tail = next((e for e in reversed(out) if e.get("type") in ("user", "assistant")), None)
    if tail is not None and tail.get("uuid") and tail.get("type") == "user":
        # After the prompt's attachments, which hang off it: the CLI reads its chain from the newest entry, and a
        # reply beside them gave it an empty system message, a 400 (chaos --seed 1).
        leaf = next(e["uuid"] for e in reversed(out) if isinstance(e.get("uuid"), str))
        reply = _closing_reply(tail, leaf)
        out.append(reply)
        verdicts[reply["uuid"]] = "added"


def _rewrite(entry: Entry, gone: set[int], changed: dict[int, str]) -> Entry:
    """A copy of a message entry without the `gone` blocks and with the `changed` tool_result bodies."""
    content = [({**b, "content": changed[j]} if j in changed else b)
               for j, b in enumerate(entry["message"]["content"]) if j not in gone]
    new = {**entry, "message": {**entry["message"], "content": content}}
    if changed and "toolUseResult" in entry:
        new["toolUseResult"] = next(iter(changed.values()))  # the CLI's copy of the body (S26)
    return new


def _neutral(entry: Entry) -> Entry:
    """S23a: a copy of the API-error reply that ends the transcript, with the neutral text (see INTERRUPTED_REPLY)."""
    return {**entry, "message": {**entry["message"], "content": [{"type": "text", "text": INTERRUPTED_REPLY}]}}


def _closing_result(use_entry: Entry, tool_use_id: str | None, uuid: str, parent: str | None) -> Entry:
    """A user entry answering an open tool call with the neutral note (S23c)."""
    entry = {k: use_entry[k] for k in _CONTEXT_KEYS if k in use_entry}
    entry.update({
        "type": "user",
        "parentUuid": parent,
        "uuid": uuid,
        "message": {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": tool_use_id, "content": INTERRUPTED_NOTE, "is_error": True},
        ]},
        "toolUseResult": INTERRUPTED_NOTE,
        "sourceToolAssistantUUID": use_entry.get("uuid"),
    })
    return entry


def _is_tool_result(entry: Entry) -> bool:
    """A user entry that carries tool results."""
    content = entry.get("message", {}).get("content") if entry.get("type") == "user" else None
    return type(content) is list and any(type(b) is dict and b.get("type") == "tool_result" for b in content)


def _closing_reply(note: Entry, parent: str) -> Entry:
    """The neutral reply after a closing note (under `parent`, the newest entry), where the CLI would put its own filler."""
    entry = {k: note[k] for k in _CONTEXT_KEYS if k in note}
    uid = str(uuidlib.uuid5(_SYNTH_NS, f"reply:{note['uuid']}"))
    entry.update({
        "type": "assistant",
        "parentUuid": parent,
        "uuid": uid,
        "isApiErrorMessage": False,
        "message": {
            "id": f"msg_interrupted_{uid[:8]}", "type": "message", "role": "assistant", "model": SYNTHETIC_MODEL,
            "content": [dict(b) for b in _NEUTRAL_REPLY], "stop_reason": "stop_sequence",
            "stop_sequence": "", "usage": {"input_tokens": 0, "output_tokens": 0,
                                           "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
        },
    })
    return entry
