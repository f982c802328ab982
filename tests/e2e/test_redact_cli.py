"""redact: the tests that run separate processes (moved from tests/unit/test_redact.py)."""

from __future__ import annotations

import secrets
import sqlite3
from pathlib import Path

from test_cli import flower, seed_frozen

from flower.core.redact import REDACTED
from flower.stores.bodies import codec, raw
from flower.testing import server_error, text, unauthorized


def stored_json(db: Path) -> bytes:
    """Every body of sessions.db as the JSON it holds: since #26 they are zstd frames, whose bytes hide any text."""
    conn = sqlite3.connect(db)
    try:
        own = conn.execute("SELECT id, data FROM dictionary").fetchone()
        rows = [b if isinstance(b, bytes) else b.encode() for (b,) in conn.execute("SELECT body FROM entries")]
    finally:
        conn.close()
    return b"\n".join(raw(rows, codec(*own) if own else None))


async def test_a_key_echoed_by_failures_appears_nowhere(model, env, workspace, run_dir):
    key = "sk-ant-test-" + secrets.token_hex(16)
    keyed = {**env, "ANTHROPIC_API_KEY": key}
    seed_frozen(workspace)
    # A 500 whose body quotes the key (waited out and retried), then a 401 that echoes it: the run fails.
    model.push(server_error(message=f"upstream rejected {key}"), unauthorized(message=f"invalid x-api-key: {key}"))
    failed = await flower("-r", str(run_dir), env=keyed, cwd=workspace)
    assert failed.code == 1
    assert "401" in failed.err and f"upstream rejected {REDACTED}" in failed.out  # the failure is shown, the key is not
    # `flower once`: the same 401 through the Runtime alone.
    model.push(unauthorized(message=f"invalid x-api-key: {key}"))
    once = await flower("once", "hi", "-r", str(run_dir), env=keyed, cwd=workspace)
    assert once.code == 1 and "401" in once.err
    # A reply that quotes the key is printed without it.
    model.push(text(f"your key is {key}"))
    said = await flower("once", "what is my key?", "-r", str(run_dir), env=keyed, cwd=workspace)
    assert said.code == 0 and "your key is " + REDACTED in said.out
    for shown in (failed, once, said):
        assert key not in shown.out + shown.err and key[12:] not in shown.out + shown.err
    files = [p for p in run_dir.rglob("*") if p.is_file()]
    assert {p.name for p in files} >= {"manifest.json", "sessions.db", "lineage.json"}
    leaked = [str(p.relative_to(run_dir)) for p in files if key[12:].encode() in p.read_bytes()]
    assert not leaked, f"the key is in {leaked}"
    bodies = stored_json(run_dir / "sessions.db")
    assert f"your key is {REDACTED}".encode() in bodies and key[12:].encode() not in bodies
