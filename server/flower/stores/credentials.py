"""The caller's auth files, copied into a resume's config dir so the resumed CLI can log in (S23, D2; issue 33).

The resumed CLI runs with `CLAUDE_CONFIG_DIR` pointing at a fresh temp dir (stores/resume.py), so it finds none of the
caller's own login unless it is copied there: `.credentials.json`, `.claude.json`, and the user settings (which can
carry `apiKeyHelper`, a login of its own). Written by flower rather than by the SDK's private helper, which the next
SDK release may move (D3: only the SDK's public API); the behaviour is the one the CLI expects:

- the refresh token is removed from the copied credentials: a resumed CLI that refreshed would spend the single-use
  token and keep the new one in a dir that is deleted, leaving the caller's own login revoked;
- the settings lose their plugin declarations (they would reconcile against the temp dir's empty plugin cache and
  install every marketplace again on each resume) and any `env.CLAUDE_CONFIG_DIR` (it would point the CLI away);
- on macOS, where the CLI keeps its login in the Keychain under a name derived from the config dir, the Keychain's
  credentials are written as the file the redirected CLI falls back to, unless the caller logs in by environment;
- a missing file is skipped, an unreadable one (no permission, a directory, a FIFO) is skipped with a log line: these
  files help the CLI log in, and must never stop, or hang, the resume.
"""

from __future__ import annotations

import getpass
import json
import logging
import os
import platform
import stat
import subprocess
from collections.abc import Callable, Mapping
from pathlib import Path

__all__ = ["copy_auth_files", "redact_credentials", "strip_settings"]

log = logging.getLogger("flower")

CREDENTIALS = ".credentials.json"
SETTINGS = ("settings.json", "cowork_settings.json")  # the second is the CLI's settings file in cowork mode
STRIPPED = ("enabledPlugins", "extraKnownMarketplaces")
ENV_LOGINS = ("ANTHROPIC_API_KEY", "CLAUDE_CODE_OAUTH_TOKEN")
KEYCHAIN_SERVICE = "Claude Code-credentials"  # the CLI's name when CLAUDE_CONFIG_DIR is unset


def copy_auth_files(config: Path, env: Mapping[str, str]) -> None:
    """Copy the caller's login and user settings into `config`, the resumed CLI's config dir (mode 0o600)."""
    chosen = env.get("CLAUDE_CONFIG_DIR") or os.environ.get("CLAUDE_CONFIG_DIR")
    source = Path(chosen) if chosen else Path.home() / ".claude"
    credentials = _read(source / CREDENTIALS)
    if not chosen and not any(env.get(name) or os.environ.get(name) for name in ENV_LOGINS):
        credentials = _keychain() or credentials
    if credentials is not None:
        _write(config / CREDENTIALS, redact_credentials(credentials))
    # `.claude.json` sits inside a chosen config dir, but beside (not in) the default `~/.claude`.
    account = _read(Path(chosen) / ".claude.json" if chosen else Path.home() / ".claude.json")
    if account is not None:
        _write(config / ".claude.json", account)
    for name in SETTINGS:
        settings = _read(source / name)
        if settings is not None:
            _write(config / name, strip_settings(settings))


def redact_credentials(content: bytes) -> bytes:
    """`content` without `claudeAiOauth.refreshToken`; as it is when it holds none or is no JSON."""
    return _edited(content, _drop_refresh_token, "utf-8")


def strip_settings(content: bytes) -> bytes:
    """User settings without plugin declarations or `env.CLAUDE_CONFIG_DIR`; as they are when nothing is dropped."""
    return _edited(content, _drop_redirects, "utf-8-sig")  # -sig: PowerShell writes settings.json with a BOM


def _drop_refresh_token(data: dict[str, object]) -> bool:
    oauth = data.get("claudeAiOauth")
    if not isinstance(oauth, dict) or "refreshToken" not in oauth:
        return False
    del oauth["refreshToken"]
    return True


def _drop_redirects(data: dict[str, object]) -> bool:
    dropped = [data.pop(key) for key in STRIPPED if key in data]
    env = data.get("env")
    if isinstance(env, dict) and "CLAUDE_CONFIG_DIR" in env:
        dropped.append(env.pop("CLAUDE_CONFIG_DIR"))
    return bool(dropped)


def _edited(content: bytes, edit: Callable[[dict[str, object]], bool], encoding: str) -> bytes:
    """`content` re-encoded after `edit` changed its JSON object; the original bytes when it did not, or could not."""
    try:
        data = json.loads(content.decode(encoding))
    except ValueError:  # not UTF-8 or not JSON: the CLI gets exactly what it would have read
        return content
    if not isinstance(data, dict) or not edit(data):
        return content
    try:
        return json.dumps(data, allow_nan=False).encode()  # a 1e999 read back as inf has no JSON: keep the original
    except ValueError:
        return content


def _read(path: Path) -> bytes | None:
    """The file's bytes; None when it is missing or is no regular readable file (said in the log)."""
    try:
        if not stat.S_ISREG(path.stat().st_mode):  # a FIFO would block the read, a directory fail it
            raise OSError(f"{path} is not a regular file")
        return path.read_bytes()
    except FileNotFoundError:
        return None
    except OSError as e:
        log.warning("resume: %s not copied (%s)", path, e)
        return None


def _write(path: Path, data: bytes) -> None:
    """Write `data` readable by its owner only (a login); a failed write leaves no partial file to misread."""
    try:
        with open(os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600), "wb") as f:
            f.write(data)
    except OSError as e:
        path.unlink(missing_ok=True)
        log.warning("resume: %s not written (%s)", path, e)


def _keychain() -> bytes | None:
    """The CLI's login in the macOS Keychain; None elsewhere or when there is none."""
    if platform.system() != "Darwin":  # not sys.platform: mypy would call the rest unreachable on Linux
        return None
    try:
        user = os.environ.get("USER") or getpass.getuser()
        found = subprocess.run(["security", "find-generic-password", "-a", user, "-w", "-s", KEYCHAIN_SERVICE],
                               capture_output=True, timeout=5, check=False)
    except (OSError, KeyError, subprocess.SubprocessError):  # KeyError: getpass finds no user name
        return None
    out = found.stdout.strip()
    return out if found.returncode == 0 and out else None
