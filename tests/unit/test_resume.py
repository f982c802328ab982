"""flower's own materialisation of a resume (stores/resume.py): the pruned view, laid out as the SDK lays it out (D2, S23).

The real CLI resuming from it is tested in tests/e2e (test_prune_cli.py, test_reconcile_resume.py): what the
scripted model receives there is the pruned transcript.
"""

from __future__ import annotations

import asyncio
import copy
import json
import stat
import tempfile
from pathlib import Path

import pytest
from claude_agent_sdk._internal.session_store_validation import _store_implements
from test_prune import Transcript

from flower.stores.prefetch import PREFIX as PREFETCH
from flower.stores.prefetch import Prefetch
from flower.stores.prune import PruningSessionStore, prune, write_jsonl
from flower.stores.reconcile import RESUME_PREFIX, SWEPT_FILE, reconcile, transcript_path
from flower.stores.resume import Mirror, materialize
from flower.stores.sqlite import SqliteSessionStore

SID = "0b6f2a3c-1d4e-4f50-8a6b-7c8d9e0f1a2b"
KEY = {"project_key": "-w", "session_id": SID}


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's temporary dir as the process's (where the SDK, and flower after it, make `claude-resume-*`)."""
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    return base


def _session() -> Transcript:
    t = Transcript()
    t.prompt("build it")
    t.api_error()  # S23a residue: stored, never shown to the model
    t.prompt("go on")
    t.reply({"type": "text", "text": "done"})
    return t


def _lines(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_bytes().splitlines()]


async def test_a_resume_is_the_pruned_view_beside_the_callers_auth_files(tmp_path: Path, tmp: Path) -> None:
    t = _session()
    config = tmp_path / "claude-config"
    config.mkdir()
    (config / ".credentials.json").write_text(json.dumps({"claudeAiOauth": {"accessToken": "a", "refreshToken": "r"}}))
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    view = PruningSessionStore(raw)
    try:
        await raw.append(KEY, copy.deepcopy(t.entries))  # type: ignore[arg-type]
        resume = await asyncio.wait_for(materialize(view, "-w", SID, {"CLAUDE_CONFIG_DIR": str(config)}, 10), 10)
        assert resume is not None and resume.config_dir.parent == tmp and resume.config_dir.name.startswith(RESUME_PREFIX)
        jsonl = resume.config_dir / "projects" / "-w" / f"{SID}.jsonl"
        assert _lines(jsonl) == prune(t.entries).entries == await view.load(KEY)  # type: ignore[arg-type]
        assert "API Error" not in jsonl.read_text() and len(_lines(jsonl)) < len(t.entries)
        assert stat.S_IMODE(jsonl.stat().st_mode) == 0o600
        # The SDK's own helper copied the credentials, without the refresh token a resumed CLI must not spend.
        assert json.loads((resume.config_dir / ".credentials.json").read_text()) == {"claudeAiOauth": {"accessToken": "a"}}
        resume.remove()
        assert not resume.config_dir.exists()
        # Nothing stored, or an id that is no uuid: nothing to materialise, and no dir is left behind.
        assert await materialize(view, "-w", "4a1c9d2e-0000-4000-8000-000000000000", {}, 10) is None
        assert await materialize(view, "-w", "../../etc", {}, 10) is None
        assert list(tmp.iterdir()) == []
        assert await raw.load(KEY) == t.entries  # type: ignore[arg-type]  # what is stored is never altered (D2)
    finally:
        await raw.close()


def test_the_jsonl_keeps_what_orjson_cannot_encode(tmp_path: Path) -> None:
    entries = [{"type": "user", "text": "cut \ud83d"}, {"type": "user", "n": 2**70}, {"type": "user", "text": "été ✓"}]
    write_jsonl(tmp_path / "s.jsonl", entries)
    assert _lines(tmp_path / "s.jsonl") == entries


async def test_the_mirror_stores_what_the_cli_writes_and_loads_nothing(tmp_path: Path) -> None:
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    mirror = Mirror(raw)
    try:
        await mirror.append(KEY, [{"type": "user", "uuid": "u1"}])  # type: ignore[arg-type, list-item]
        assert await raw.load(KEY) == [{"type": "user", "uuid": "u1"}]  # type: ignore[arg-type]
        assert await mirror.load(KEY) is None  # type: ignore[arg-type]
        # The SDK sees no optional method: it never lists or materialises through the mirror.
        assert not any(_store_implements(mirror, m) for m in ("list_sessions", "list_session_summaries", "delete", "list_subkeys"))
    finally:
        await raw.close()


async def test_a_prefetched_view_is_taken_only_while_the_store_holds_what_the_worker_read(tmp_path: Path, tmp: Path) -> None:
    t = _session()
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    view = PruningSessionStore(raw)
    try:
        await raw.append(KEY, copy.deepcopy(t.entries))  # type: ignore[arg-type]
        dead = tmp / f"{PREFETCH}999999999-x"  # a killed command's output: removed at the next start
        dead.mkdir()
        first = Prefetch.start(tmp_path / "sessions.db", SID, trim=False, spill_dir=tmp_path / "spill",
                               swept=tmp_path / SWEPT_FILE)
        assert first is not None and not dead.exists()
        path = await asyncio.wait_for(first.take(view, "-w", {}, 30), 40)
        assert path is not None and _lines(path) == prune(t.entries).entries
        first.discard()
        assert not first.out.exists()

        # Through materialize: the resume holds the worker's file, and nothing of the worker is left.
        second = Prefetch.start(tmp_path / "sessions.db", SID, trim=False, spill_dir=tmp_path / "spill",
                               swept=tmp_path / SWEPT_FILE)
        assert second is not None
        resume = await asyncio.wait_for(materialize(view, "-w", SID, {}, 30, second), 40)
        assert resume is not None and not second.out.exists()
        assert _lines(resume.config_dir / "projects" / "-w" / f"{SID}.jsonl") == prune(t.entries).entries
        resume.remove()

        # The store gained an entry since the worker read it (a reconcile's import): not taken.
        stale = Prefetch.start(tmp_path / "sessions.db", SID, trim=False, spill_dir=tmp_path / "spill",
                               swept=tmp_path / SWEPT_FILE)
        assert stale is not None
        assert await asyncio.wait_for(asyncio.to_thread(stale.proc.wait), 30) == 0  # it read the store before the append
        t.prompt("one more")
        await raw.append(KEY, copy.deepcopy(t.entries[-1:]))  # type: ignore[arg-type]
        assert await asyncio.wait_for(stale.take(view, "-w", {}, 30), 40) is None
        stale.discard()
        # A view that prunes otherwise (trimming on), or another project key: not taken either.
        other = Prefetch.start(tmp_path / "sessions.db", SID, trim=False, spill_dir=tmp_path / "spill",
                               swept=tmp_path / SWEPT_FILE)
        assert other is not None
        trimming = PruningSessionStore(raw, trim=True, spill_dir=tmp_path / "spill")
        assert await asyncio.wait_for(other.take(trimming, "-w", {}, 30), 40) is None
        other.discard()
        again = Prefetch.start(tmp_path / "sessions.db", SID, trim=False, spill_dir=tmp_path / "spill",
                               swept=tmp_path / SWEPT_FILE)
        assert again is not None
        assert await asyncio.wait_for(again.take(view, "-elsewhere", {}, 30), 40) is None
        again.discard()
        assert list(tmp.iterdir()) == []
    finally:
        await raw.close()


async def test_after_a_kill_the_prefetched_view_holds_what_the_reconcile_imports(tmp_path: Path, tmp: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    # A kill between the CLI's own file and the mirror: the file holds two entries the store lacks, one quoting a
    # key (D6: the store redacts it). The worker predicts the reconcile, and the resume takes its file once the
    # wake's reconcile has imported them: byte for byte what the resume writes from the store.
    config = tmp_path / "config"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config))  # the CLI's config dir, for the worker (a child) too
    t = _session()
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    view = PruningSessionStore(raw)
    try:
        await raw.append(KEY, copy.deepcopy(t.entries))  # type: ignore[arg-type]
        t.prompt("keep going")
        t.reply({"type": "text", "text": "the key was sk-ant-api03-abcdefghijklmnop, now gone"})
        own = transcript_path(config, "-w", SID)
        own.parent.mkdir(parents=True)
        own.write_bytes(b"".join(json.dumps(e).encode() + b"\n" for e in t.entries))
        assert len(t.entries) == (await raw.count("-w", SID)) + 2

        # The reconcile has not run: the store is not what the worker predicted, not taken.
        early = Prefetch.start(tmp_path / "sessions.db", SID, trim=False, spill_dir=tmp_path / "spill",
                               swept=tmp_path / SWEPT_FILE)
        assert early is not None
        assert await asyncio.wait_for(early.take(view, "-w", {}, 30), 40) is None
        early.discard()

        ahead = Prefetch.start(tmp_path / "sessions.db", SID, trim=False, spill_dir=tmp_path / "spill",
                               swept=tmp_path / SWEPT_FILE)
        other = Prefetch.start(tmp_path / "sessions.db", SID, trim=False, spill_dir=tmp_path / "spill",
                               swept=tmp_path / SWEPT_FILE)
        assert ahead is not None and other is not None
        for worker in (ahead, other):  # both read the store before the import
            assert await asyncio.wait_for(asyncio.to_thread(worker.proc.wait), 30) == 0
        assert await reconcile(raw, "-w", SID, {}, tmp_path) == 2  # what the wake's sweep does, under its lock
        path = await asyncio.wait_for(ahead.take(view, "-w", {}, 30), 40)
        assert path is not None
        from_store = tmp_path / "from-store.jsonl"
        assert await view.write(KEY, from_store)  # type: ignore[arg-type]
        assert path.read_bytes() == from_store.read_bytes() and len(_lines(path)) == len(t.entries) - 1  # S23a residue
        assert b"sk-ant-api03-abcdefghijklmnop" not in path.read_bytes()
        ahead.discard()
        # The CLI's config dir is another one than the worker read: not taken.
        assert await asyncio.wait_for(other.take(view, "-w", {"CLAUDE_CONFIG_DIR": str(tmp_path)}, 30), 40) is None
        other.discard()

        # Read after the import, with the sweep's memory: nothing more to predict, taken.
        after = Prefetch.start(tmp_path / "sessions.db", SID, trim=False, spill_dir=tmp_path / "spill",
                               swept=tmp_path / SWEPT_FILE)
        assert after is not None
        path = await asyncio.wait_for(after.take(view, "-w", {}, 30), 40)
        assert path is not None and path.read_bytes() == from_store.read_bytes()
        after.discard()
    finally:
        await raw.close()
