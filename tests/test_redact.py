"""D6: an API key never leaves the process — not on the terminal, not in logs, not in any file under runs/."""

from __future__ import annotations

import secrets

from flower.core.manifest import Manifest, StepResult
from flower.core.redact import REDACTED, cut, redact
from flower.testing import server_error, text, unauthorized
from test_cli import flower, seed_frozen


def test_redact_replaces_credential_env_values_and_key_shapes(monkeypatch):
    token = "opaque-" + secrets.token_hex(8)  # not shaped like a key: found because it is the env's value
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", token)
    payload = {"a": f"Bearer {token}", "b": ["x sk-ant-api03-abcdefgh y", ("t", 1)], "c": 7}
    assert redact(payload) == {"a": f"Bearer {REDACTED}", "b": [f"x {REDACTED} y", ["t", 1]], "c": 7}
    monkeypatch.delenv("ANTHROPIC_AUTH_TOKEN")
    assert redact(f"Bearer {token}") == f"Bearer {token}"  # the env is read at each call, not once at import


def test_cut_says_how_much_was_left_out():
    assert cut({"content": "x" * 10, "n": [1, "y" * 3]}, 4) == {"content": "xxxx… [6 more characters]", "n": [1, "yyy"]}


def test_manifest_rows_carry_no_key(tmp_path, monkeypatch):
    key = "sk-ant-test-" + secrets.token_hex(12)
    monkeypatch.setenv("ANTHROPIC_API_KEY", key)
    manifest = Manifest(tmp_path)
    manifest.add(StepResult("干活", error=f"401 invalid x-api-key {key}", errors=[f"500 {key}"], text=f"said {key}"))
    raw = (tmp_path / "manifest.json").read_text()
    assert key not in raw and key[-8:] not in raw
    row = manifest.rows()[0]
    assert row["error"] == f"401 invalid x-api-key {REDACTED}" and row["errors"] == [f"500 {REDACTED}"]


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
