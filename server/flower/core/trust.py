"""Whether a folder's own code may run: hooks, `env`, `apiKeyHelper`, `.mcp.json` servers (D10).

The Claude Code CLI skips its trust dialog when it runs non-interactively, so flower decides. A folder is
trusted when the person said so to flower (`flower trust`), or accepted Claude Code's own trust dialog for it
or a parent (its record is read, never written), or the editor says its workspace trust covers it. The
nearest folder with a record decides; flower's record beats Claude Code's at the same folder, so `flower
untrust` can take back a trust that Claude Code granted. Paths are compared by their real path: a symlinked
or moved folder is decided by where it really is.

flower's record is `$XDG_CONFIG_HOME/flower/trust.json` (else `~/.config/flower/trust.json`): in the user's
config directory, never in the workspace, which the repository controls.
"""

from __future__ import annotations

import json
import logging
import os
import shlex
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .durable import write_atomic
from .shared import safe_url
from .texts import Said, say

log = logging.getLogger(__name__)

Why = Literal["flower", "claude", "editor", "flower_no", "nobody"]
"""Who decided: flower's record (yes / no), Claude Code's trust dialog, the editor's workspace trust, or nobody yet."""

MEMORY_FILES = ("CLAUDE.md", ".claude/CLAUDE.md")
"""The project's CLAUDE.md: text the agent reads, as Claude Code reads it before trust (D10)."""
MEMORY_LIMIT = 64 * 1024
"""At most this many bytes of each memory file reach the prompt of an untrusted folder."""


@dataclass(frozen=True)
class Trust:
    """A folder's trust: whether its own configuration may run, who decided, and for which folder (itself or a parent)."""

    trusted: bool
    why: Why
    where: Path | None = None
    """The folder whose record decided (None: nobody decided, or the editor did)."""

    @property
    def asked(self) -> bool:
        """Whether the person already answered for this folder (to flower or Claude Code), so it is not asked again."""
        return self.why != "nobody"


def _env(env: Mapping[str, str] | None) -> Mapping[str, str]:
    return os.environ if env is None else env


def _home(env: Mapping[str, str]) -> Path:
    return Path(env.get("HOME") or Path.home())


def record_path(env: Mapping[str, str] | None = None) -> Path:
    """flower's own record of trusted and untrusted folders, in the user's config directory."""
    env = _env(env)
    base = env.get("XDG_CONFIG_HOME") or str(_home(env) / ".config")
    return Path(base) / "flower" / "trust.json"


def claude_record_path(env: Mapping[str, str] | None = None) -> Path:
    """Claude Code's global config, where it records `hasTrustDialogAccepted` per folder."""
    env = _env(env)
    config = env.get("CLAUDE_CONFIG_DIR")
    return Path(config) / ".claude.json" if config else _home(env) / ".claude.json"


def _read_json(path: Path) -> dict[str, Any]:
    """A JSON object from `path`; {} when missing or unreadable (an unreadable record trusts nothing)."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    except (OSError, ValueError) as exc:
        log.warning("trust: cannot read %s (%s); it counts as no record", path, exc)
        return {}
    return data if isinstance(data, dict) else {}


def _flower_record(env: Mapping[str, str]) -> dict[str, bool]:
    folders = _read_json(record_path(env)).get("folders")
    return {str(k): v for k, v in folders.items() if isinstance(v, bool)} if isinstance(folders, dict) else {}


def _claude_accepted(env: Mapping[str, str]) -> set[str]:
    """The real paths of every folder whose Claude Code trust dialog was accepted."""
    projects = _read_json(claude_record_path(env)).get("projects")
    if not isinstance(projects, dict):
        return set()
    return {os.path.realpath(k) for k, v in projects.items() if isinstance(v, dict) and v.get("hasTrustDialogAccepted") is True}


def real(folder: str | os.PathLike[str]) -> Path:
    """The folder's real path: symlinks resolved, so a link and its target are one folder."""
    return Path(os.path.realpath(folder))


def decide(folder: str | os.PathLike[str], env: Mapping[str, str] | None = None, *, editor: bool = False) -> Trust:
    """The trust of `folder`: `editor` = the editor's workspace trust covers it; else the nearest record decides."""
    if editor:
        return Trust(True, "editor")
    env = _env(env)
    mine, claude = _flower_record(env), _claude_accepted(env)
    here = real(folder)
    for place in (here, *here.parents):
        key = str(place)
        if key in mine:
            return Trust(mine[key], "flower" if mine[key] else "flower_no", place)
        if key in claude:
            return Trust(True, "claude", place)
    return Trust(False, "nobody")


def remember(folder: str | os.PathLike[str], trusted: bool, env: Mapping[str, str] | None = None) -> Path:
    """Record the person's answer for `folder` (its real path) in flower's record, atomically; returns that path."""
    path = record_path(env)
    data = _read_json(path)
    folders = data.get("folders") if isinstance(data.get("folders"), dict) else {}
    assert isinstance(folders, dict)
    folders[str(real(folder))] = trusted
    data["folders"] = dict(sorted(folders.items()))
    path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
    write_atomic(path, (json.dumps(data, ensure_ascii=False, indent=2) + "\n").encode())
    return path


# -- what a folder would load -------------------------------------------------------------------------------------

def inventory(folder: str | os.PathLike[str]) -> list[str]:
    """What the folder's own configuration would run or change, one short phrase each; [] when it has none."""
    ws = Path(folder)
    found: list[str] = []
    for name in (".claude/settings.json", ".claude/settings.local.json"):
        settings = _read_json(ws / name) if (ws / name).is_file() else None
        if settings is None:
            continue
        parts = []
        hooks = settings.get("hooks")
        if isinstance(hooks, dict):
            n = sum(len(h.get("hooks", [])) for groups in hooks.values() if isinstance(groups, list)
                    for h in groups if isinstance(h, dict))
            if n:
                parts.append(f"{n} hook{'s' if n != 1 else ''}")
        env = settings.get("env")
        if isinstance(env, dict) and env:
            parts.append("env " + ", ".join(_variable(str(k), v) for k, v in sorted(env.items(), key=lambda kv: str(kv[0]))))
        parts.extend(key for key in ("apiKeyHelper", "awsAuthRefresh", "awsCredentialExport", "otelHeadersHelper",
                                     "statusLine", "enabledPlugins", "permissions") if settings.get(key))
        if parts:
            found.append(f"its {name} defines " + "; ".join(parts))
    mcp = _read_json(ws / ".mcp.json").get("mcpServers") if (ws / ".mcp.json").is_file() else None
    if isinstance(mcp, dict) and mcp:
        found.append("its .mcp.json starts " + ", ".join(_server(name, spec) for name, spec in mcp.items()))
    return found


def _server(name: str, spec: object) -> str:
    """`"helper" (sh -c …)`: an MCP server as the person should see it before it runs."""
    if not isinstance(spec, dict):
        return f'"{name}"'
    if spec.get("command"):
        # Whole and quoted as a shell would run it (issue 34): a cut or unquoted command hides what the person agrees to.
        return f'"{name}" ({shlex.join([str(spec["command"]), *map(str, spec.get("args") or [])])})'
    return f'"{name}" ({safe_url(str(spec.get("url") or spec.get("type") or "?"))})'


def _variable(name: str, value: object) -> str:
    """A variable the folder sets, with its value when it says where requests (and the API key in them) go (issue 34)."""
    if name.endswith(("_URL", "_PROXY")) or name.lower() in ("http_proxy", "https_proxy", "all_proxy"):
        return f"{name}={safe_url(str(value))}"
    return name


def project_memory(folder: str | os.PathLike[str]) -> str:
    """The folder's CLAUDE.md files as prompt text, for an untrusted folder (the CLI only reads them with project settings)."""
    ws = Path(folder)
    parts = []
    for name in MEMORY_FILES:
        try:
            with open(ws / name, "rb") as f:
                body = f.read(MEMORY_LIMIT).decode("utf-8", errors="replace").strip()
        except OSError:
            continue
        if body:
            parts.append(f"Contents of {ws / name} (project instructions, checked into the codebase):\n\n{body}")
    return "\n\n".join(parts)


def why(trust: Trust) -> Said:
    """Who decided, as a sentence: `flower status` and the editor's tooltip show it."""
    return say(f"trust_why_{trust.why}", where=str(trust.where or ""))
