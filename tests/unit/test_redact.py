"""D6: an API key never leaves the process — not on the terminal, not in logs, not in any file under runs/."""

from __future__ import annotations

import secrets

from flower.core.manifest import Manifest, StepResult
from flower.core.redact import REDACTED, cut, redact, redact_encoded


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




def test_redact_encoded_replaces_keys_in_bytes_and_text(monkeypatch):
    token = "opaque-" + secrets.token_hex(8)
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", token)
    clean = b'{"a":"nothing here"}'
    bodies: list[bytes | str] = [clean, b'{"a":"x sk-ant-api03-abcdefgh"}', f'{{"a":"{token}"}}'.encode(), f'"\\ud800 {token}"']
    out = redact_encoded(bodies)
    assert out == [clean, f'{{"a":"x {REDACTED}"}}'.encode(), f'{{"a":"{REDACTED}"}}'.encode(), f'"\\ud800 {REDACTED}"']
    assert out[0] is clean and bodies[1] == b'{"a":"x sk-ant-api03-abcdefgh"}'  # the input list is left as it was
