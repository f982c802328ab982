"""PruningSessionStore: what the model sees on resume, cleaned of outage and interruption debris (S23, S25, S26).

Stored entries are never altered (D2): `prune` works on the list `load()` returns and copies
every entry it changes. The CLI's transcript is a `parentUuid` tree that is one chain in the
common case; parallel tool calls hang their results off their own tool_use entries and the CLI
re-attaches them by tool_use id. So pruning only removes entries, rewrites tool_result bodies,
adds results for tool calls a kill left open, and re-links children to the nearest living
ancestor (the structural red line of S23).
"""

from __future__ import annotations

import asyncio
import functools
import gc
import os
import re
import shlex
import uuid as uuidlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from claude_agent_sdk.types import SessionStore

__all__ = ["EPHEMERAL_COMMANDS", "INTERRUPTED_NOTE", "INTERRUPTED_REPLY", "PruneResult", "PruningSessionStore", "is_ephemeral", "prune"]

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

SYNTHETIC_MODEL = "<synthetic>"
TRIM_THRESHOLD = 20_000
TRIM_KEEP_ROUNDS = 3

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


@dataclass
class PruneResult:
    """What `prune` made of a transcript: the entries to hand to the CLI and what changed."""

    entries: list[dict]
    """The pruned transcript (unchanged entries are the input objects, changed ones are copies)."""
    verdicts: dict[str, str] = field(default_factory=dict)
    """uuid → "hidden" (not returned), "rewritten" (content changed) or "added" (synthesized result)."""
    relinked: dict[str, str | None] = field(default_factory=dict)
    """uuid → its new parentUuid, for kept entries whose parent was hidden or missing."""
    spills: dict[Path, str] = field(default_factory=dict)
    """Files to write for trimmed results (S26): path → the full result text."""


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
    text = text.strip()
    if text.startswith("<tool_use_error>"):
        text = text[len("<tool_use_error>"):]
    return text[7:] if text.startswith("Error: ") else text


def _kind(entry: dict, block: dict) -> str | None:
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


def _label(block: dict) -> str:
    """`Read(/path)`, `Bash(ls -la)`: a tool call as the pointers name it."""
    data = block.get("input") if isinstance(block.get("input"), dict) else {}
    arg = next((v for k in ("file_path", "command", "path", "url", "pattern") if isinstance(v := data.get(k), str)), "")
    arg = arg if len(arg) <= 80 else arg[:77] + "..."
    return f"{block.get('name', 'tool')}({arg})"


def prune(
    entries: list[dict],
    *,
    keep_denials: int = 1,
    ephemeral: bool | Iterable[str] = True,
    trim: bool = False,
    spill_dir: str | os.PathLike | None = None,
    trim_threshold: int = TRIM_THRESHOLD,
    trim_keep_rounds: int = TRIM_KEEP_ROUNDS,
) -> PruneResult:
    """Clean a transcript for the model (S23, S25, S26) without touching `entries` or its dicts."""
    if trim and spill_dir is None:
        raise ValueError("trim needs a spill_dir to keep the trimmed results in")
    commands = EPHEMERAL_COMMANDS if ephemeral is True else frozenset(ephemeral or ())

    # -- index: tool calls, their results, rounds (one round = one real API response) ------
    parents: list[str | None] = []
    parent_of: dict[Any, Any] = {}
    hidden: set[int] = set()
    uses: dict[str, tuple[int, dict, bool]] = {}    # tool_use id → (entry index, block, an ephemeral command?)
    results: dict[str, tuple[int, int, dict, str | None, int]] = {}  # tool_use id → (index, block index, block, kind, size)
    extra: list[tuple[int, int]] = []               # further results for a call already answered
    round_of: dict[int, int] = {}                   # index of an assistant entry with calls → its round
    rounds, previous, response = 0, None, None      # API responses so far; the last message entry's type, id
    leaves: list[int] = []                          # `last-prompt` entries (they point at a leaf)
    tail = next((i for i in range(len(entries) - 1, -1, -1) if entries[i].get("type") in ("user", "assistant")), None)
    tail_error: int | None = None
    # One pass that reads each entry once (they are scattered in memory: re-reading costs more than the work).
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
            calls = []
            if type(content) is list:
                for b in content:
                    if type(b) is dict and b.get("type") == "tool_use":
                        calls.append(b)
            # S23a: API-error replies and the CLI's other synthetic filler ("No response requested.").
            if entry.get("isApiErrorMessage") or (not calls and message.get("model") == SYNTHETIC_MODEL):
                if content == _NEUTRAL_REPLY:
                    continue  # our own closing reply: kept, and no round of its own
                if i == tail and entry.get("isApiErrorMessage"):
                    tail_error = i  # kept, neutralized: see INTERRUPTED_REPLY
                else:
                    hidden.add(i)
                continue
            key = message.get("id")  # one API response is several assistant entries in a row (D1)
            if previous != "assistant" or key != response or key is None:
                rounds += 1
            previous, response = "assistant", key
            if calls:
                round_of[i] = rounds - 1
                for b in calls:
                    if b.get("id") not in uses:
                        command = b.get("name") == "Bash" and (b.get("input") or {}).get("command")
                        uses[b.get("id")] = (i, b, isinstance(command, str) and bool(commands) and _ephemeral(command, commands))
        elif kind == "user":
            previous = "user"
            message = entry.get("message")
            content = message.get("content") if isinstance(message, dict) else None
            if type(content) is list:
                for j, b in enumerate(content):
                    if type(b) is dict and b.get("type") == "tool_result":
                        tid = b.get("tool_use_id")
                        if tid in results:
                            extra.append((i, j))
                        else:
                            results[tid] = (i, j, b, _kind(entry, b), _size(b.get("content")) if trim else 0)
        elif kind == "last-prompt":
            leaves.append(i)

    # -- decide: blocks to drop, bodies to replace, results to add ---------------------------
    drop: dict[int, set[int]] = {}         # entry index → content indexes to remove
    body: dict[int, dict[int, str]] = {}   # entry index → {content index: new tool_result body}
    spills: dict[Path, str] = {}
    denials: list[tuple[int, str]] = []
    last_round = rounds - 1
    for i, j in extra:  # one result per call: the first one counts (or none, if the call is gone)
        drop.setdefault(i, set()).add(j)
    for tid, (i, j, block, kind, size) in results.items():
        if tid not in uses:  # a result whose call is gone would be a 400: drop it
            drop.setdefault(i, set()).add(j)
            continue
        use_at, use, expires = uses[tid]
        age = last_round - round_of[use_at]
        if kind == "denied":
            denials.append((i, tid))
        elif kind == "interrupted":
            body.setdefault(i, {})[j] = INTERRUPTED_NOTE  # S23c: only the body changes
        elif expires and age >= 1:
            command = use["input"]["command"].strip()
            command = command if len(command) <= 80 else command[:77] + "..."
            body.setdefault(i, {})[j] = f"[expired: output of `{command}` from an earlier round; run it again if needed]"
        elif trim and age >= trim_keep_rounds and size > trim_threshold and (text := _text(block.get("content"))) is not None:
            # S26: not resident, not lost: the full text goes to a file the model can Read.
            path = Path(spill_dir) / f"{re.sub(r'[^A-Za-z0-9_.-]', '_', str(tid))}.txt"
            spills[path] = text
            body.setdefault(i, {})[j] = f"[trimmed: {len(text) // 1024} KB result of {_label(use)} saved to {path}; Read that file if you need it]"
    denials.sort()
    for i, tid in denials[:max(0, len(denials) - keep_denials)]:  # S23b: whole pairs go
        use_at, use, _ = uses.pop(tid)
        drop.setdefault(use_at, set()).add(next(j for j, b in enumerate(entries[use_at]["message"]["content"]) if b is use))
        drop.setdefault(i, set()).add(results[tid][1])
    for i, gone in drop.items():
        if len(gone) == len(entries[i]["message"]["content"]):
            hidden.add(i)
    # A call a kill left open is closed with the note (S23c), after its response's last living entry.
    closers: dict[int, list[str]] = {}
    for tid, (use_at, _, _) in uses.items():
        if tid not in results:
            closers.setdefault(_response_end(entries, use_at, hidden), []).append(tid)
    closing = {i: [_closing_uuid(entries[uses[t][0]], t) for t in tids] for i, tids in closers.items()}
    uuids = {i: entries[i].get("uuid") for i in hidden | closers.keys()}

    # -- rebuild: untouched entries stay the same objects; children re-link to living ancestors
    hidden_uuids = {uuids[i] for i in hidden} - {None}
    redirect = {uuids[i]: made[-1] for i, made in closing.items()}  # a closed response's children follow its note
    moved = hidden_uuids | redirect.keys()
    added = {u for made in closing.values() for u in made}
    orphaned = [i for i, p in enumerate(parents) if p in moved or (p not in parent_of and p is not None)]
    lost = {parents[i] for i in orphaned} - parent_of.keys() - added  # parents that were never stored
    special = sorted(hidden | drop.keys() | body.keys() | closers.keys() | {tail_error} - {None} | set(orphaned)
                     | {i for i in leaves if entries[i].get("leafUuid") in moved})
    verdicts = dict.fromkeys(hidden_uuids, "hidden")
    relinked: dict[str, str | None] = {}

    def living(parent: Any, before: int, repair: bool = True) -> Any:
        hops = 0
        while parent in hidden_uuids and hops <= len(parent_of):
            parent, hops = parent_of.get(parent), hops + 1
        if repair and parent in lost:
            parent = _last_living(entries, before, hidden, closing)  # a lost entry: the nearest living one before
        return redirect.get(parent, parent)

    out: list[dict] = []
    done = 0
    for i in special:
        out.extend(entries[done:i])
        done = i + 1
        if i in hidden:
            continue
        entry = new = entries[i]
        uid = entry.get("uuid")
        if i == tail_error:
            new = {**entry, "message": {**entry["message"], "content": [{"type": "text", "text": INTERRUPTED_REPLY}]}}
            verdicts[uid] = "rewritten"
        elif i in drop or i in body:
            changed, gone = body.get(i, {}), drop.get(i, ())
            message = {**entry["message"], "content": [({**b, "content": changed[j]} if j in changed else b)
                                                       for j, b in enumerate(entry["message"]["content"]) if j not in gone]}
            new = {**entry, "message": message}
            if changed and "toolUseResult" in entry:
                new["toolUseResult"] = next(iter(changed.values()))  # the CLI's copy of the body (S26)
            verdicts[uid] = "rewritten"
        if parents[i] is not None:
            parent = living(parents[i], i)
            if parent != parents[i]:
                new = new if new is not entry else dict(entry)
                new["parentUuid"] = parent
                if isinstance(uid, str):
                    relinked[uid] = parent
        elif entry.get("type") == "last-prompt" and entry.get("leafUuid") in moved:
            new = {**entry, "leafUuid": living(entry["leafUuid"], i, repair=False)}
        out.append(new)
        parent = uid
        for tid, made in zip(closers.get(i, ()), closing.get(i, ())):
            out.append(_closing_result(entries[uses[tid][0]], tid, made, parent))
            verdicts[made] = "added"
            parent = made
    out.extend(entries[done:])
    tail = next((e for e in reversed(out) if e.get("type") in ("user", "assistant")), None)
    if tail is not None and tail.get("uuid") and _is_tool_result(tail) and "added" in verdicts.values():
        # A kill left calls open and the model never answered the last tool result. The CLI answers a
        # resumed transcript ending on a tool result with its own "No response requested."; end it on
        # the neutral reply instead.
        closing_reply = _closing_reply(tail)
        out.append(closing_reply)
        verdicts[closing_reply["uuid"]] = "added"
    return PruneResult(out, verdicts, relinked, spills)


def _response_end(entries: list[dict], i: int, hidden: set[int]) -> int:
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


def _last_living(entries: list[dict], i: int, hidden: set[int], closing: dict[int, list[str]]) -> str | None:
    """The uuid of the last entry before index `i` that is returned (an added note counts)."""
    for k in range(i - 1, -1, -1):
        if k in closing:
            return closing[k][-1]
        if entries[k].get("uuid") is not None and k not in hidden:
            return entries[k]["uuid"]
    return None


def _closing_uuid(use_entry: dict, tool_use_id: str) -> str:
    """The same uuid on every load, so entries the CLI appends after it stay linked."""
    return str(uuidlib.uuid5(_SYNTH_NS, f"{use_entry.get('sessionId')}:{tool_use_id}"))


def _closing_result(use_entry: dict, tool_use_id: str, uuid: str, parent: str | None) -> dict:
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


_NEUTRAL_REPLY = [{"type": "text", "text": INTERRUPTED_REPLY}]


def _is_tool_result(entry: dict) -> bool:
    """A user entry that carries tool results."""
    content = entry.get("message", {}).get("content") if entry.get("type") == "user" else None
    return type(content) is list and any(type(b) is dict and b.get("type") == "tool_result" for b in content)


def _closing_reply(note: dict) -> dict:
    """The neutral reply after a closing note, in the place where the CLI would put its own filler."""
    entry = {k: note[k] for k in _CONTEXT_KEYS if k in note}
    uid = str(uuidlib.uuid5(_SYNTH_NS, f"reply:{note['uuid']}"))
    entry.update({
        "type": "assistant",
        "parentUuid": note["uuid"],
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


_OPTIONAL = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")


class PruningSessionStore(SessionStore):
    """Wraps a SessionStore; rewrites only what `load()` returns, never what is stored (S23, D2)."""

    def __new__(cls, inner: Any, *args: Any, **kwargs: Any) -> PruningSessionStore:
        # The SDK probes optional methods on the class (`_store_implements`): offer exactly the inner's.
        missing = tuple(m for m in _OPTIONAL if not _implements(inner, m))
        if missing:
            cls = _without(cls, missing)
        return super().__new__(cls)

    def __init__(self, inner: Any, keep_denials: int = 1, ephemeral: bool | Iterable[str] = True, trim: bool = False,
                 spill_dir: str | os.PathLike | None = None, *, trim_threshold: int = TRIM_THRESHOLD,
                 trim_keep_rounds: int = TRIM_KEEP_ROUNDS):
        if trim and spill_dir is None:
            raise ValueError("trim=True needs a spill_dir (the Runtime uses run_dir/spill)")
        self.inner = inner
        self.keep_denials = keep_denials
        self.ephemeral = ephemeral
        self.trim = trim
        self.spill_dir = Path(spill_dir) if spill_dir is not None else None
        self.trim_threshold = trim_threshold
        self.trim_keep_rounds = trim_keep_rounds

    def prune(self, entries: list[dict]) -> PruneResult:
        """`prune` with this store's settings (for views that show what the model will see)."""
        return prune(entries, keep_denials=self.keep_denials, ephemeral=self.ephemeral, trim=self.trim,
                     spill_dir=self.spill_dir, trim_threshold=self.trim_threshold, trim_keep_rounds=self.trim_keep_rounds)

    async def append(self, key, entries) -> None:
        """Store entries unchanged."""
        await self.inner.append(key, entries)

    async def load(self, key):
        """The stored transcript, pruned; spilled results are on disk before it is returned."""
        entries = await self.inner.load(key)
        if not entries:
            return entries
        # Pruning builds no cycles: a GC pass over the transcript just loaded would cost more than
        # the pruning itself, so it waits until after, as it does after the inner store's decode.
        paused = gc.isenabled()
        gc.disable()
        try:
            result = self.prune(entries)
            fresh = {path: text for path, text in result.spills.items() if not path.exists()}
        finally:
            if paused:
                gc.enable()
        if fresh:
            await asyncio.to_thread(_write_spills, fresh)
        return result.entries

    async def list_sessions(self, project_key):
        """Delegated."""
        return await self.inner.list_sessions(project_key)

    async def list_session_summaries(self, project_key):
        """Delegated."""
        return await self.inner.list_session_summaries(project_key)

    async def delete(self, key) -> None:
        """Delegated."""
        await self.inner.delete(key)

    async def list_subkeys(self, key):
        """Delegated."""
        return await self.inner.list_subkeys(key)

    def has_session_sync(self, project_key: str, session_id: str) -> bool:
        """Delegated."""
        return self.inner.has_session_sync(project_key, session_id)

    async def close(self) -> None:
        """Delegated."""
        await self.inner.close()

    def __getattr__(self, name: str) -> Any:
        if name == "inner":  # not set yet (e.g. during unpickling): do not recurse
            raise AttributeError(name)
        return getattr(self.inner, name)


def _implements(store: Any, method: str) -> bool:
    impl = getattr(type(store), method, None)
    return impl is not None and impl is not getattr(SessionStore, method)


_variants: dict[tuple[type, tuple[str, ...]], type] = {}


def _without(cls: type, missing: tuple[str, ...]) -> type:
    """A subclass whose `missing` methods are the Protocol's defaults, so the SDK sees them as absent."""
    key = (cls, missing)
    if key not in _variants:
        _variants[key] = type(cls.__name__, (cls,), {m: getattr(SessionStore, m) for m in missing})
    return _variants[key]


def _write_spills(spills: dict[Path, str]) -> None:
    for path, text in spills.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
        tmp.write_text(text, encoding="utf-8", errors="surrogatepass")
        os.replace(tmp, path)  # whole or absent: a later load never points at half a file
