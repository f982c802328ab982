"""prune() and PruningSessionStore without the CLI: rules, structure, delegation, and a property test (S23, S25, S26).

Entries are built in the shapes CLI 2.1.332 writes (see test_prune_cli.py for the real thing): one
assistant entry per content block sharing `message.id`, one user entry per tool_result carrying
`toolUseResult` and `sourceToolAssistantUUID`, entries without uuid in between.
"""

from __future__ import annotations

import asyncio
import copy
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk._internal.session_store_validation import _store_implements
from claude_agent_sdk.testing import run_session_store_conformance
from claude_agent_sdk.types import SessionStore
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from flower.core.text import clip, tool_label
from flower.stores.prune import INTERRUPTED_NOTE, INTERRUPTED_REPLY, PruningSessionStore, is_ephemeral, prune
from flower.stores.sqlite import SqliteSessionStore
from flower.stores.transcript import Plan, index, plan, rebuild
from flower.testing import validate

INTERRUPTED_BY_CLI = ("[Tool call interrupted: the session ended before this call's result was recorded, so its "
                      "outcome is unknown. Check whether it took effect before relying on it or running it again.]")
DENIED = "Claude requested permissions to write to /w/a.txt, but you haven't granted it yet."
KEY = {"project_key": "-w", "session_id": "s-1"}


class Transcript:
    """Builds a transcript the way the CLI writes it; `tree=True` hangs parallel results off their own tool_use."""

    def __init__(self, tree: bool = False):
        self.entries: list[dict] = []
        self.tree = tree
        self.leaf: str | None = None
        self._n = itertools.count(1)
        self.use_entry: dict[str, str] = {}

    def _add(self, entry: dict, parent: str | None = None) -> dict:
        """Append an entry; its parent is the previous leaf unless given."""
        uid = f"u{next(self._n):04d}"
        entry = {"parentUuid": parent or self.leaf, "isSidechain": False, "type": entry.pop("type"),
                 "uuid": uid, "timestamp": "2026-01-01T00:00:00.000Z", **entry, "sessionId": "s-1", "cwd": "/w"}
        self.entries.append(entry)
        self.leaf = uid
        return entry

    def note(self, **fields) -> None:
        """An entry without uuid (last-prompt, queue-operation, …)."""
        self.entries.append({"type": "last-prompt", "leafUuid": self.leaf, **fields})

    def prompt(self, text: str) -> str:
        return self._add({"type": "user", "message": {"role": "user", "content": text}})["uuid"]

    def reply(self, *blocks: dict, model: str = "claude-x", **fields) -> list[str]:
        """One API response: one entry per block, sharing message.id; returns the entries' uuids."""
        mid = f"msg_{next(self._n)}"
        uuids = []
        for block in blocks:
            message = {"id": mid, "model": model, "role": "assistant", "type": "message", "content": [block],
                       "usage": {"input_tokens": 1, "output_tokens": 1}}
            entry = self._add({"type": "assistant", "message": message, **fields})
            uuids.append(entry["uuid"])
            if block["type"] == "tool_use":
                self.use_entry[block["id"]] = entry["uuid"]
        return uuids

    def api_error(self, text: str = "API Error: Connection refused (ECONNREFUSED)") -> str:
        return self.reply({"type": "text", "text": text}, model="<synthetic>", isApiErrorMessage=True,
                          error="server_error", apiError="connection_failed")[0]

    def filler(self) -> str:
        return self.reply({"type": "text", "text": "No response requested."}, model="<synthetic>", isApiErrorMessage=False)[0]

    def result(self, tool_use_id: str, content, *, is_error: bool = False, **fields) -> str:
        parent = self.use_entry[tool_use_id] if self.tree else None
        block = {"type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": is_error}
        return self._add({"type": "user", "message": {"role": "user", "content": [block]}, "toolUseResult": fields.pop("tur", content),
                          "sourceToolAssistantUUID": self.use_entry[tool_use_id], **fields}, parent)["uuid"]

    def denied(self, tool_use_id: str) -> str:
        return self.result(tool_use_id, DENIED, is_error=True, toolDenialKind="user-rejected",
                           permissionDecision={"decision": "reject", "source": "config"}, tur=f"Error: {DENIED}")

    def interrupted(self, tool_use_id: str) -> str:
        return self.result(tool_use_id, INTERRUPTED_BY_CLI, is_error=True, toolDenialKind="interrupted")


_ids = itertools.count(1)


def use(name: str = "Bash", **inp) -> dict:
    return {"type": "tool_use", "id": f"toolu_{next(_ids):06d}", "name": name, "input": inp or {"command": "make"}}


def say(text: str) -> dict:
    return {"type": "text", "text": text}


def by_uuid(entries: list[dict]) -> dict[str, dict]:
    return {e["uuid"]: e for e in entries if "uuid" in e}


def body_of(entries: list[dict], tool_use_id: str) -> str:
    (found,) = [b["content"] for e in entries if e.get("type") == "user" and isinstance(e["message"]["content"], list)
                for b in e["message"]["content"] if b.get("tool_use_id") == tool_use_id]
    return found


def api_messages(entries: list[dict]) -> list[dict]:
    """The request the CLI builds from a chain: rows in order, same roles merged, API-error rows dropped (CLI 2.1.332)."""
    messages: list[dict] = []
    for e in entries:
        if e.get("type") not in ("user", "assistant") or e.get("isApiErrorMessage"):
            continue
        content = e["message"]["content"]
        blocks = [{"type": "text", "text": content}] if isinstance(content, str) else list(content)
        if messages and messages[-1]["role"] == e["type"]:
            messages[-1]["content"].extend(blocks)
        else:
            messages.append({"role": e["type"], "content": blocks})
    return messages


def single_chain(entries: list[dict]) -> None:
    """The red line (S23): every uuid entry's parent is the uuid entry just before it, from the root to the leaf."""
    chain = [e for e in entries if "uuid" in e]
    assert chain[0]["parentUuid"] is None
    assert all(b["parentUuid"] == a["uuid"] for a, b in zip(chain, chain[1:], strict=False))


# -- S23a: outage residue ------------------------------------------------------------------------

def test_api_errors_are_hidden_and_their_children_relinked():
    t = Transcript()
    t.prompt("start")
    t.reply(say("first answer"))
    asked = t.prompt("go on")
    error = t.api_error()
    t.note()
    retry = t.prompt("the previous round was interrupted midway")
    t.reply(say("continuing"))
    out = prune(t.entries)
    assert out.verdicts == {error: "hidden"}
    assert out.relinked == {retry: asked}
    assert "API Error" not in json.dumps(out.entries)
    assert [e["leafUuid"] for e in out.entries if e["type"] == "last-prompt"] == [asked]  # leaf pointers follow
    single_chain(out.entries)


def test_an_api_error_that_ends_the_transcript_stays_as_a_neutral_row():
    # The CLI drops such a row from the request itself; removing it would leave the transcript ending on a
    # user row, and the CLI would then put its own "No response requested." filler in the request.
    t = Transcript()
    t.prompt("start")
    error = t.api_error()
    t.note()
    out = prune(t.entries)
    assert out.verdicts == {error: "rewritten"}
    row = by_uuid(out.entries)[error]
    assert row["message"]["content"] == [{"type": "text", "text": INTERRUPTED_REPLY}] and row["isApiErrorMessage"]
    assert "API Error" not in json.dumps(out.entries)


def test_synthetic_filler_is_hidden():
    t = Transcript()
    t.prompt("start")
    call = use()
    t.reply(call)
    t.interrupted(call["id"])
    filler = t.filler()
    t.prompt("continue")
    out = prune(t.entries)
    assert out.verdicts[filler] == "hidden"
    assert "No response requested." not in json.dumps(out.entries)
    single_chain(out.entries)


# -- S23b: denials ---------------------------------------------------------------------------------

def test_only_the_most_recent_denial_is_kept_as_whole_pairs():
    t = Transcript()
    t.prompt("write")
    calls = [use("Write", file_path=f"/w/{n}.txt", content="x") for n in range(4)]
    for call in calls:
        t.reply(call)
        t.denied(call["id"])
    t.reply(say("I cannot write"))
    out = prune(t.entries)
    left = [b for e in out.entries if e["type"] == "user" for b in e["message"]["content"] if isinstance(b, dict)]
    assert [b["tool_use_id"] for b in left if b.get("type") == "tool_result"] == [calls[3]["id"]]
    assert sum(v == "hidden" for v in out.verdicts.values()) == 6
    validate({"model": "m", "max_tokens": 1, "tools": [{"name": "Bash"}], "messages": api_messages(out.entries)})
    single_chain(out.entries)
    assert len(prune(t.entries, keep_denials=0).entries) == len(out.entries) - 2
    assert len(prune(t.entries, keep_denials=9).entries) == len(t.entries)


def test_a_denied_call_sharing_a_response_goes_alone():
    # Parallel calls in the CLI's tree shape: each result hangs off its own tool_use entry.
    t = Transcript(tree=True)
    t.prompt("go")
    old, write, echo = use("Write", file_path="/w/0"), use("Write", file_path="/w/a"), use(command="echo hi")
    t.reply(old)
    t.denied(old["id"])
    text_at, write_at, echo_at = t.reply(say("two things"), write, echo)
    t.denied(write["id"])
    echoed = t.result(echo["id"], "hi")
    after = t.reply(say("done"))[0]
    newest = use("Write", file_path="/w/b")
    t.reply(newest)
    t.denied(newest["id"])
    out = prune(t.entries)
    entries = by_uuid(out.entries)
    assert write_at not in entries and text_at in entries and echo_at in entries
    assert entries[echo_at]["parentUuid"] == text_at  # re-linked past the removed tool_use entry
    assert entries[echoed]["parentUuid"] == echo_at and entries[after]["parentUuid"] == echoed
    validate({"model": "m", "max_tokens": 1, "tools": [{"name": "Bash"}], "messages": api_messages(out.entries)})


def test_denials_without_a_denial_kind_are_recognized():
    t = Transcript()
    t.prompt("go")
    first, second = use(), use()
    t.reply(first)
    t.result(first["id"], "<tool_use_error>Error: No such tool available: Bash. Bash is disabled for this session</tool_use_error>", is_error=True)
    t.reply(second)
    t.result(second["id"], "Permission to use Bash has been denied because Claude Code is running in don't ask mode.", is_error=True)
    failed = use(command="false")
    t.reply(failed)
    t.result(failed["id"], "Exit code 1", is_error=True)  # a failing tool is not a denial
    out = prune(t.entries)
    ids = {b.get("tool_use_id") for e in out.entries if e["type"] == "user" for b in e["message"]["content"] if isinstance(b, dict)}
    assert ids == {second["id"], failed["id"]}


# -- S23c: interruptions -------------------------------------------------------------------------

def test_an_interruption_result_keeps_its_entry_with_the_neutral_body():
    t = Transcript()
    t.prompt("go")
    call = use()
    t.reply(call)
    at = t.interrupted(call["id"])
    out = prune(t.entries)
    assert out.verdicts[at] == "rewritten" and out.entries[-1]["message"]["content"] == [{"type": "text", "text": INTERRUPTED_REPLY}]
    entry = by_uuid(out.entries)[at]
    assert entry["message"]["content"][0]["content"] == INTERRUPTED_NOTE
    assert entry["toolUseResult"] == INTERRUPTED_NOTE and entry["message"]["content"][0]["is_error"] is True
    assert t.entries[-1]["message"]["content"][0]["content"] == INTERRUPTED_BY_CLI  # the input is untouched


def test_a_kill_after_a_tool_ran_ends_the_transcript_on_the_neutral_reply():
    # chaos --seed 2: killed after the Bash result was written, before the model answered it. The CLI
    # would send its own "No response requested." for the rest of the resumed round (issue 13).
    t = Transcript()
    t.prompt("go")
    call = use(command="echo 1")
    t.reply(call)
    at = t.result(call["id"], "1")
    out = prune(t.entries)
    assert out.entries[-1]["parentUuid"] == at and out.entries[-1]["message"]["content"] == [{"type": "text", "text": INTERRUPTED_REPLY}]
    validate({"model": "m", "max_tokens": 1, "tools": [{"name": "Bash"}], "messages": api_messages(out.entries)})


CTRL_C = ("The user doesn't want to proceed with this tool use. The tool use was rejected (eg. if it was a file edit, "
          "the new_string was NOT written to the file). STOP what you are doing and wait for the user to tell you how to proceed.")


def test_ctrl_c_during_a_tool_is_an_interruption_not_a_denial():
    # chaos --seed 7, as CLI 2.1.332 writes it: the result as a rejection, then "[Request interrupted by user for tool use]".
    t = Transcript()
    t.prompt("go")
    call = use(command="sleep 1")
    t.reply(call)
    at = t.result(call["id"], CTRL_C, is_error=True, toolDenialKind="user-rejected")
    line = t._add({"type": "user", "message": {"role": "user", "content": [say("[Request interrupted by user for tool use]")]}})["uuid"]
    out = prune(t.entries)
    assert out.verdicts[at] == "rewritten" and out.verdicts[line] == "hidden"
    assert body_of(out.entries, call["id"]) == INTERRUPTED_NOTE
    assert out.entries[-1]["parentUuid"] == at and out.entries[-1]["message"]["content"] == [say(INTERRUPTED_REPLY)]
    validate({"model": "m", "max_tokens": 1, "tools": [{"name": "Bash"}], "messages": api_messages(out.entries)})


def test_a_prompt_the_model_never_answered_ends_on_the_neutral_reply():
    # chaos --seed 7: killed after the prompt was written; the CLI would answer it with "No response requested.".
    t = Transcript()
    t.prompt("go")
    t.reply(say("done"))
    t.prompt("continue")
    # The CLI hangs the prompt's attachments off it and reads its chain from the newest entry: the reply
    # goes after them, or the request carries an empty system message (a 400; chaos --seed 1).
    attached = t._add({"type": "attachment", "attachment": {"type": "date", "date": "2026-12-01"}})["uuid"]
    out = prune(t.entries)
    assert out.entries[-1]["parentUuid"] == attached and out.entries[-1]["message"]["content"] == [say(INTERRUPTED_REPLY)]


def test_a_call_left_open_by_a_kill_is_closed_after_its_response():
    t = Transcript(tree=True)
    t.prompt("go")
    done, open_ = use(command="echo 1"), use(command="sleep 99")
    text_at, done_at, open_at = t.reply(say("two calls"), done, open_)
    t.result(done["id"], "1")
    t.note()
    out = prune(t.entries)
    added, reply = [u for u, v in out.verdicts.items() if v == "added"]
    entry = by_uuid(out.entries)[added]
    # The model never answered: the transcript ends on the neutral reply, not on the CLI's filler.
    assert out.entries[-1]["uuid"] == reply and out.entries[-1]["message"]["content"] == [{"type": "text", "text": INTERRUPTED_REPLY}]
    assert entry["parentUuid"] == open_at and entry["sourceToolAssistantUUID"] == open_at
    assert entry["message"]["content"] == [{"type": "tool_result", "tool_use_id": open_["id"], "content": INTERRUPTED_NOTE, "is_error": True}]
    assert entry["sessionId"] == "s-1" and entry["cwd"] == "/w"
    validate({"model": "m", "max_tokens": 1, "tools": [{"name": "Bash"}], "messages": api_messages(out.entries)})
    # The same uuid on every load: what the CLI appends after it stays linked when loaded again.
    t.leaf = added
    later = t.prompt("continue")
    again = prune(t.entries)
    assert by_uuid(again.entries)[later]["parentUuid"] == added and later not in again.relinked


# -- S25: ephemeral commands ---------------------------------------------------------------------

@pytest.mark.parametrize(("command", "expected"), [
    ("ls", True), ("ls -la src", True), ("git status --short", True), ("cd repo && git status", True),
    ("ps aux | grep python", True), ("git diff; ls", True), ("git commit -m x", False), ("make test", False),
    ("ls && rm -rf build", False), ("cd repo", False), ("", False), ("echo 'unclosed", False),
])
def test_is_ephemeral(command, expected):
    assert is_ephemeral(command) is expected


def test_ephemeral_output_expires_only_once_newer_rounds_exist():
    t = Transcript()
    t.prompt("go")
    old, recent = use(command="git status"), use(command="ls")
    t.reply(old)
    at = t.result(old["id"], "On branch main\nnothing to commit", tur={"stdout": "On branch main", "stderr": ""})
    t.reply(recent)
    t.result(recent["id"], "a.txt")
    out = prune(t.entries)
    assert body_of(out.entries, old["id"]) == "[expired: output of `git status` from an earlier round; run it again if needed]"
    assert body_of(out.entries, recent["id"]) == "a.txt"  # the latest round still reads it
    assert by_uuid(out.entries)[at]["toolUseResult"] == body_of(out.entries, old["id"])
    assert body_of(prune(t.entries, ephemeral=False).entries, old["id"]).startswith("On branch")
    assert body_of(prune(t.entries, ephemeral={"ls"}).entries, old["id"]).startswith("On branch")


# -- S26: trim -----------------------------------------------------------------------------------

def _big_read(rounds_after: int) -> tuple[Transcript, dict, str]:
    t = Transcript()
    t.prompt("read")
    read = use("Read", file_path="/w/big.txt")
    t.reply(read)
    content = "".join(f"{n}\tline {n}\n" for n in range(20_000))
    at = t.result(read["id"], content, tur={"type": "text", "file": {"filePath": "/w/big.txt", "content": content}})
    for n in range(rounds_after):
        call = use(command=f"echo {n}")
        t.reply(call)
        t.result(call["id"], str(n))
    return t, read, at


def test_trim_spills_large_old_results_and_points_at_them(tmp_path):
    t, read, at = _big_read(rounds_after=3)
    original = body_of(t.entries, read["id"])
    out = prune(t.entries, trim=True, spill_dir=tmp_path)
    pointer = body_of(out.entries, read["id"])
    path = tmp_path / f"{read['id']}.txt"
    assert pointer == f"[trimmed: {len(original) // 1024} KB result of Read(/w/big.txt) saved to {path}; Read that file if you need it]"
    assert out.spills == {path: original} and {u: v for u, v in out.verdicts.items() if v != "added"} == {at: "rewritten"}
    assert by_uuid(out.entries)[at]["toolUseResult"] == pointer  # the CLI's copy is not left resident either
    assert body_of(prune(t.entries).entries, read["id"]) == original  # trim off: intact
    assert prune(t.entries, trim=True, spill_dir=tmp_path, trim_keep_rounds=4).spills == {}  # not old enough
    assert prune(t.entries, trim=True, spill_dir=tmp_path, trim_threshold=len(original)).spills == {}
    with pytest.raises(ValueError):
        prune(t.entries, trim=True)


def test_trim_handles_results_made_of_text_blocks(tmp_path):
    t = Transcript()
    t.prompt("fetch")
    call = use("WebFetch", url="https://example.com/big")
    t.reply(call)
    t.result(call["id"], [{"type": "text", "text": "a" * 15_000}, {"type": "text", "text": "b" * 15_000}])
    for n in range(3):
        t.reply(say(f"round {n}"))
    out = prune(t.entries, trim=True, spill_dir=tmp_path)
    assert body_of(out.entries, call["id"]).startswith("[trimmed: 29 KB result of WebFetch(https://example.com/big) saved to ")
    assert out.spills == {tmp_path / f"{call['id']}.txt": "a" * 15_000 + "\n" + "b" * 15_000}


# -- the store -------------------------------------------------------------------------------------

async def test_the_store_prunes_loads_spills_once_and_never_alters_what_is_stored(tmp_path):
    t, read, _ = _big_read(rounds_after=3)
    t.prompt("go on")
    t.api_error()
    t.prompt("again")
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    store = PruningSessionStore(raw, trim=True, spill_dir=tmp_path / "spill")
    try:
        await store.append(KEY, copy.deepcopy(t.entries))
        loaded = await asyncio.wait_for(store.load(KEY), 10)
        assert loaded == prune(t.entries, trim=True, spill_dir=tmp_path / "spill").entries
        assert "API Error" not in json.dumps(loaded)
        spilled = tmp_path / "spill" / f"{read['id']}.txt"
        assert spilled.read_text() == body_of(t.entries, read["id"])
        assert await raw.load(KEY) == t.entries  # sessions.db holds every original entry, unchanged
        before = spilled.stat().st_mtime_ns
        assert await asyncio.wait_for(store.load(KEY), 10) == loaded and spilled.stat().st_mtime_ns == before
        assert await store.load({**KEY, "session_id": "nope"}) is None
        assert store.has_session_sync(KEY["project_key"], KEY["session_id"])
        assert [s["session_id"] for s in await store.list_sessions(KEY["project_key"])] == ["s-1"]
        assert store.path == raw.path  # anything else reaches the inner store
    finally:
        await store.close()


async def test_the_store_passes_the_sdk_conformance_suite(tmp_path):
    made: list[PruningSessionStore] = []

    def make() -> PruningSessionStore:
        made.append(PruningSessionStore(SqliteSessionStore(tmp_path / f"{len(made)}" / "sessions.db")))
        return made[-1]

    try:
        await asyncio.wait_for(run_session_store_conformance(make, skip_optional=frozenset()), 60)
    finally:
        for store in made:
            await store.close()


class _Minimal(SessionStore):
    """A store with only the required methods."""

    def __init__(self):
        self.data: dict[str, list] = {}

    async def append(self, key, entries):
        self.data.setdefault(key["session_id"], []).extend(entries)

    async def load(self, key):
        return self.data.get(key["session_id"])


def test_the_sdk_sees_exactly_the_optional_methods_of_the_inner_store(tmp_path):
    optional = ("list_sessions", "list_session_summaries", "delete", "list_subkeys")
    full = PruningSessionStore(SqliteSessionStore(tmp_path / "sessions.db"))
    minimal = PruningSessionStore(_Minimal())
    assert all(_store_implements(full, m) for m in optional)
    assert not any(_store_implements(minimal, m) for m in optional)
    assert isinstance(minimal, PruningSessionStore) and type(minimal) is type(PruningSessionStore(_Minimal()))


# -- the property: any transcript, any debris ------------------------------------------------------

OUTCOMES = ("ok", "ok", "denied", "interrupted", "failed", "big", "ephemeral", "open")


@st.composite
def transcripts(draw) -> list[dict]:
    """Random sessions: replies with parallel calls, outages, denials, interruptions, kills; then lost entries."""
    t = Transcript()
    t.prompt("start")
    for _ in range(draw(st.integers(1, 10))):
        step = draw(st.sampled_from(("reply", "reply", "reply", "prompt", "outage", "note")))
        if step == "prompt":
            t.prompt("more")
        elif step == "outage":
            t.api_error()
        elif step == "note":
            t.note()
        else:
            calls = [use(command=draw(st.sampled_from(("ls", "make", "git status")))) for _ in range(draw(st.integers(0, 3)))]
            t.reply(*([say("thinking")] if draw(st.booleans()) or not calls else []), *calls)
            for call in calls:
                outcome = draw(st.sampled_from(OUTCOMES))
                if outcome == "denied":
                    t.denied(call["id"])
                elif outcome == "interrupted":
                    t.interrupted(call["id"])
                elif outcome == "failed":
                    t.result(call["id"], "Exit code 2", is_error=True)
                elif outcome == "big":
                    t.result(call["id"], "x" * 30_000)
                elif outcome != "open":
                    t.result(call["id"], [{"type": "text", "text": "output"}])
            if calls and any(e.get("toolDenialKind") == "interrupted" for e in t.entries[-len(calls):]) and draw(st.booleans()):
                t.filler()
    entries = t.entries
    cut = draw(st.integers(1, len(entries)))  # a kill, or the store lagging it, loses the tail
    lost = draw(st.sets(st.integers(1, len(entries) - 1), max_size=3))  # …and entries may go missing
    return [e for i, e in enumerate(entries[:cut]) if i not in lost]


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(transcripts(), st.integers(0, 2), st.booleans())
def test_property_one_chain_valid_pairs_and_only_declared_changes(entries, keep_denials, trim):
    frozen = copy.deepcopy(entries)
    out = prune(entries, keep_denials=keep_denials, trim=trim, spill_dir="/spill", trim_keep_rounds=1)
    assert entries == frozen  # the input (what sessions.db holds) is never altered

    # One chain root → leaf, and a request the API accepts: every tool_use has exactly one tool_result.
    single_chain(out.entries)
    messages = api_messages(out.entries)
    if messages:
        validate({"model": "m", "max_tokens": 1, "tools": [{"name": "Bash"}], "messages": messages})
    uses = [b["id"] for m in messages for b in m["content"] if b["type"] == "tool_use"]
    results = [b["tool_use_id"] for m in messages for b in m["content"] if b["type"] == "tool_result"]
    assert sorted(uses) == sorted(results) and len(set(uses)) == len(uses)

    # What the model reads: no outage residue, no CLI interruption text or filler, at most keep_denials denials.
    seen = json.dumps(messages)
    assert "API Error" not in seen and "[Tool call interrupted" not in seen and "No response requested." not in seen
    assert seen.count("haven't granted it") <= keep_denials

    # Every kept entry is unchanged except the declared rewrites and re-links.
    before = by_uuid(entries)
    for entry in out.entries:
        uid = entry.get("uuid")
        verdict = out.verdicts.get(uid)
        if verdict == "added":  # a closing note, or the neutral reply that ends the transcript after one
            content = entry["message"]["content"][0]
            assert uid not in before and (content.get("content") == INTERRUPTED_NOTE or (
                entry is out.entries[-1] and content == {"type": "text", "text": INTERRUPTED_REPLY}))
            continue
        if uid is None:  # kept as is; a last-prompt's leaf pointer may follow a re-link
            assert any(e is entry for e in entries) or (
                entry["type"] == "last-prompt" and any({**e, "leafUuid": entry["leafUuid"]} == entry for e in entries))
            continue
        original = before[uid]
        assert verdict in (None, "rewritten")
        if uid in out.relinked:
            assert entry["parentUuid"] == out.relinked[uid] != original["parentUuid"]
        else:
            assert entry["parentUuid"] == original["parentUuid"]
        if verdict is None:
            assert entry == {**original, "parentUuid": entry["parentUuid"]}
        else:
            assert {k: v for k, v in entry.items() if k not in ("message", "toolUseResult", "parentUuid")} == \
                   {k: v for k, v in original.items() if k not in ("message", "toolUseResult", "parentUuid")}
    assert {u for u, v in out.verdicts.items() if v == "hidden"} == before.keys() - by_uuid(out.entries).keys()

    # Pruning what was pruned changes nothing more.
    again = prune(out.entries, keep_denials=keep_denials, trim=trim, spill_dir="/spill", trim_keep_rounds=1)
    assert again.entries == out.entries


# -- the phases: index → plan → rebuild ------------------------------------------------------------

def _positions(entries: list[dict[str, Any]]) -> dict[str, int]:
    return {e["uuid"]: i for i, e in enumerate(entries) if "uuid" in e}


def test_index_pairs_each_call_with_its_first_result_and_counts_rounds() -> None:
    t = Transcript(tree=True)
    t.prompt("go")
    status, make = use(command="git status"), use(command="make")
    _, status_at, make_at = t.reply(say("two calls"), status, make)  # one API response: one round
    first = t.result(status["id"], "clean")
    again = t.result(status["id"], "clean again")  # a second result for the same call
    denied = t.denied(make["id"])
    error = t.api_error()
    t.prompt("retry")
    left_open = use()
    (open_at,) = t.reply(left_open)
    t.note()
    at = _positions(t.entries)
    found = index(t.entries)
    assert found.rounds == 2  # the API error is no response of the model's
    assert found.calls[status["id"]] == (at[status_at], status, True) and found.calls[make["id"]][2] is False
    assert found.results[status["id"]][:4] == (at[first], 0, t.entries[at[first]]["message"]["content"][0], None)
    assert found.results[make["id"]][0] == at[denied] and found.results[make["id"]][3] == "denied"
    assert found.extra == [(at[again], 0)] and left_open["id"] not in found.results
    assert found.round_of == {at[status_at]: 0, at[make_at]: 0, at[open_at]: 1}
    assert found.residue == [at[error]] and found.tail_error is None and found.leaves == [len(t.entries) - 1]
    assert found.parents == [e.get("parentUuid") for e in t.entries]
    ending = index(t.entries[:at[error] + 1])  # the API error ends this copy: kept, neutralized (S23a)
    assert ending.tail_error == at[error] and ending.residue == []


def test_plan_decides_from_the_index_and_alters_nothing() -> None:
    t = Transcript()
    t.prompt("go")
    denied, interrupted, status, left_open = use(command="rm x"), use(), use(command="git status"), use(command="sleep 9")
    (denied_at,) = t.reply(denied)
    refused = t.denied(denied["id"])
    t.reply(interrupted)
    cut = t.interrupted(interrupted["id"])
    t.reply(status)
    clean = t.result(status["id"], "clean")
    _, open_at = t.reply(say("later"), left_open)
    frozen = copy.deepcopy(t.entries)
    at = _positions(t.entries)
    todo = plan(t.entries, index(t.entries), keep_denials=0)
    assert t.entries == frozen
    assert todo.drop == {at[denied_at]: {0}, at[refused]: {0}} and todo.hidden == {at[denied_at], at[refused]}  # S23b
    assert todo.body == {at[cut]: {0: INTERRUPTED_NOTE},  # S23c
                         at[clean]: {0: "[expired: output of `git status` from an earlier round; run it again if needed]"}}  # S25
    assert todo.closers == {at[open_at]: [left_open["id"]]} and len(todo.closing[at[open_at]]) == 1  # S23c
    assert todo.spills == {} and todo.tail_error is None
    assert plan(t.entries, index(t.entries), keep_denials=1).hidden == set()


def test_rebuild_applies_a_plan_and_relinks_to_the_nearest_living_ancestor() -> None:
    t = Transcript()
    first = t.prompt("a")
    (answer,) = t.reply(say("b"))
    middle = t.prompt("c")
    t.note()  # points at `middle`
    (after,) = t.reply(say("d"))
    at = _positions(t.entries)
    out = rebuild(t.entries, index(t.entries), Plan(hidden={at[answer], at[middle]}))
    assert [e.get("uuid") for e in out.entries] == [first, None, after]
    assert out.verdicts == {answer: "hidden", middle: "hidden"} and out.relinked == {after: first}
    assert out.entries[1]["leafUuid"] == first and out.entries[2]["parentUuid"] == first  # two hops up
    assert out.entries[0] is t.entries[0]  # an untouched entry is the same object
    assert t.entries[at[after]]["parentUuid"] == middle and t.entries[3]["leafUuid"] == middle  # the input is not altered
    single_chain(out.entries)


def test_notes_clip_long_commands_and_arguments_with_the_shared_helpers(tmp_path: Path) -> None:
    t = Transcript()
    t.prompt("go")
    command = "git status -- " + " ".join(f"src/module_{n}.py" for n in range(20))
    status, read = use(command=command), use("Read", file_path="/w/" + "deep/" * 30 + "big.txt")
    t.reply(status)
    t.result(status["id"], "clean")
    t.reply(read)
    t.result(read["id"], "x" * 30_000)
    for n in range(3):
        t.reply(say(f"round {n}"))
    out = prune(t.entries, trim=True, spill_dir=tmp_path)
    assert body_of(out.entries, status["id"]) == f"[expired: output of `{clip(command, 80)}` from an earlier round; run it again if needed]"
    label = tool_label("Read", read["input"])
    assert label.endswith("…)") and len(label) == len("Read()") + 80
    assert body_of(out.entries, read["id"]).startswith(f"[trimmed: 29 KB result of {label} saved to ")
