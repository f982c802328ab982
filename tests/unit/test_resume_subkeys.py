"""A resume's subagent transcripts as flower writes them from the store's subkeys (stores/resume.py, issue 33).

The real CLI continuing such a subagent is tests/e2e/test_resume_subagents.py; here, the layout, and that a subpath
which would leave the session's dir is never written.
"""

from __future__ import annotations

import asyncio
import json
import stat
import tempfile
from pathlib import Path

import pytest

from flower.stores.prune import PruningSessionStore
from flower.stores.resume import is_session_id, materialize
from flower.stores.sqlite import SqliteSessionStore

SID = "0b6f2a3c-1d4e-4f50-8a6b-7c8d9e0f1a2b"
KEY = {"project_key": "-w", "session_id": SID}
META = {"type": "agent_metadata", "agentType": "general-purpose", "toolUseId": "toolu_1"}
LINES = [{"type": "user", "uuid": "s1", "message": {"role": "user", "content": "look"}},
         {"type": "assistant", "uuid": "s2", "message": {"role": "assistant", "content": [{"type": "text", "text": "found"}]}}]


@pytest.fixture
def tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    base = tmp_path / "tmp"
    base.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(base))
    return base


async def test_each_subkey_is_written_where_the_cli_reads_it_and_none_outside_the_session(tmp_path: Path, tmp: Path) -> None:
    raw = SqliteSessionStore(tmp_path / "sessions.db")
    try:
        await raw.append(KEY, [{"type": "user", "uuid": "m1", "message": {"role": "user", "content": "go"}}])  # type: ignore[arg-type, list-item]
        sub = {**KEY, "subpath": "subagents/agent-a1"}
        await raw.append(sub, [{**META, "agentType": "old"}, *LINES, META])  # type: ignore[arg-type, list-item]
        # An absolute one names this test's dir: were it written, it would land here, not somewhere in the system.
        for bad in ("../agent-x", "subagents/../../agent-y", f"{tmp_path}/agent-z", "subagents\\agent-w", "C:agent-v"):
            await raw.append({**KEY, "subpath": bad}, LINES)  # type: ignore[arg-type, typeddict-item]
        config = tmp_path / "claude-config"
        resume = await asyncio.wait_for(materialize(PruningSessionStore(raw), "-w", SID, {"CLAUDE_CONFIG_DIR": str(config)}, 10), 10)
        assert resume is not None
        session = resume.config_dir / "projects" / "-w" / SID
        jsonl, meta = session / "subagents" / "agent-a1.jsonl", session / "subagents" / "agent-a1.meta.json"
        assert [json.loads(line) for line in jsonl.read_bytes().splitlines()] == LINES
        assert json.loads(meta.read_bytes()) == {"agentType": "general-purpose", "toolUseId": "toolu_1"}  # the last one
        assert {stat.S_IMODE(p.stat().st_mode) for p in (jsonl, meta)} == {0o600}
        written = {str(p.relative_to(resume.config_dir)) for p in resume.config_dir.rglob("*") if p.is_file()}
        assert written == {f"projects/-w/{SID}.jsonl", f"projects/-w/{SID}/subagents/agent-a1.jsonl",
                           f"projects/-w/{SID}/subagents/agent-a1.meta.json"}
        assert not list(tmp_path.glob("agent-z*"))
        resume.remove()
    finally:
        await raw.close()


def test_only_a_uuid_is_a_session_id() -> None:
    assert is_session_id(SID) and is_session_id(SID.upper())
    assert not any(is_session_id(s) for s in ("", "../../etc", SID + "\n", SID[:-1], f"x{SID}", SID.replace("-", "_")))
