"""One place for flower's settings: defaults < a settings file < the environment < flags (or editor options).

The file is the workspace's `.flower.toml` when it exists, else the `[tool.flower]` table of its
`pyproject.toml` (one file is read, never both: the dedicated file wins whole, so a key never
silently comes from two places). Keys, environment variables and flags:

    key             env                      CLI flag / editor option
    rounds          FLOWER_ROUNDS            --rounds / rounds
    trim            FLOWER_TRIM              --no-trim / trim
    handoff_at      FLOWER_HANDOFF_AT        - / handoffAt
    model           ANTHROPIC_MODEL          --model / model
    fallback_model  FLOWER_FALLBACK_MODEL    --fallback-model / fallbackModel
    max_cost        FLOWER_MAX_COST          --max-cost / maxCost
    isolated        FLOWER_ISOLATED          --isolated / isolated
    run_dir         FLOWER_RUN_DIR           -r, --run-dir / -
    store           FLOWER_STORE             --store / store
    project         FLOWER_PROJECT           --project / project
    allow           FLOWER_ALLOW             --allow / allow     (tool rules the work agent may use unasked)
    mode            FLOWER_MODE              --mode / mode       (the CLI's permission mode)
    approvals.wait  FLOWER_APPROVALS_WAIT    - / approvalsWait   (seconds a question waits for the person)
    approvals.unattended FLOWER_APPROVALS_UNATTENDED - / approvalsUnattended  (deny or wait, after that)
    retention_days  FLOWER_RETENTION_DAYS    - / retentionDays   (a wake collects archived tasks unused this long)

`ANTHROPIC_MODEL` is the Claude Code CLI's own variable: flower reads it so that the model in use
is shown, and passes the same name on. A file's relative `run_dir` is relative to the workspace;
from a flag or the environment it is relative to the current directory (S4).
"""

from __future__ import annotations

import dataclasses
import logging
import os
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .core.approvals import DEFAULT_ALLOW, DEFAULT_MODE, MODES, narrows
from .core.errors import FlowerError
from .core.shared import is_postgres_url, safe_url
from .core.texts import Said, say

log = logging.getLogger(__name__)

FILE = ".flower.toml"
PYPROJECT = "pyproject.toml"
MODEL_ENV = "ANTHROPIC_MODEL"


class SettingsError(FlowerError):
    """A setting that cannot be used: which file (or variable, or option), which key, and what is expected."""

    def __init__(self, where: str, key: str, expected: str, got: object, *, file: str | None = None) -> None:
        super().__init__("settings_bad", where=where, name=key, expected=expected, got=repr(got))
        self.where, self.setting = where, key
        self.file = file
        """The settings file the value came from (None: a variable, a flag or an option), for a front-end to open."""


class UntrustedSetting(SettingsError):
    """An untrusted folder's file tried to set what only the person may: where records go, or a path outside it (D10)."""

    def __init__(self, where: str, key: str, why: Said, folder: Path, file: Path) -> None:
        # Only ways that exist (issue 34): the flag where there is one, and the variable.
        how = f"{FLAGS[key]} or ${ENV[key]}" if key in FLAGS else f"${ENV[key]}"
        FlowerError.__init__(self, "settings_untrusted", where=where, name=key, why=why, how=how, folder=str(folder))
        self.where, self.setting, self.file = where, key, str(file)


UNTRUSTED_KEYS = {"store": "untrusted_store", "mode": "untrusted_mode", "retention_days": "untrusted_retention"}
"""Keys an untrusted folder's file may never set (D10): a URL or credentials, how permissions work, or when the
person's archived transcripts are deleted (retention is the person's to decide, #26). Its run_dir
must stay inside the folder, and its `allow` may only narrow the default, never widen it."""


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Every setting flower reads, and where each value came from (`sources`: key → "default", a file, a variable, "flag")."""

    rounds: int = 10
    trim: bool = True
    handoff_at: int | None = None
    """Tokens of work context above which work hands off to a new session (None: 60% of the window, S26)."""
    model: str | None = None
    """The model agents run on (None: the CLI's default)."""
    fallback_model: str | None = None
    max_cost: float | None = None
    """The spending cap of one wake in USD (None: no cap)."""
    isolated: bool = False
    """Run agents without the user's and the project's Claude Code settings, CLAUDE.md and MCP servers."""
    run_dir: str = "runs"
    store: str = "sqlite"
    project: str | None = None
    allow: list[str] = field(default_factory=lambda: list(DEFAULT_ALLOW))
    """Tool rules (Claude Code syntax) the work agent may use without asking; anything else is asked (issue 24)."""
    mode: str = DEFAULT_MODE
    approvals_wait: float | None = None
    """Seconds a tool question waits for the person (None: as long as it takes), then `approvals_unattended` applies."""
    approvals_unattended: str = "deny"
    retention_days: int | None = None
    """Days after which a wake deletes an archived task's sessions from the store (`flower gc`, #26); None: never."""
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    def run_dir_path(self, base: str | os.PathLike[str]) -> Path:
        """The run dir as an absolute path: a relative one is taken from `base` (a file's is already absolute)."""
        return Path(os.path.abspath(Path(base) / self.run_dir))

    def shown(self) -> dict[str, Any]:
        """The values and their sources, as `flower status --json` prints them."""
        values = {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name != "sources"}
        values["store"] = safe_url(self.store)  # D6: a store URL's password is never shown
        return {"values": values, "sources": dict(self.sources)}


def _positive_int(value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError
    return value


def _positive_number(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise ValueError
    return float(value)


def _boolean(value: object) -> bool:
    if not isinstance(value, bool):
        raise ValueError
    return value


def _store(value: object) -> str:
    if not isinstance(value, str) or not (value.strip().lower() == "sqlite" or is_postgres_url(value.strip())):
        raise ValueError
    return value.strip()


def _rules(value: object) -> list[str]:
    items = [v.strip() for v in value.split(",")] if isinstance(value, str) else value
    if not isinstance(items, list) or not all(isinstance(r, str) and r.strip() for r in items):
        raise ValueError
    return [r.strip() for r in items if r.strip()]


def _mode(value: object) -> str:
    if value not in MODES:
        raise ValueError
    assert isinstance(value, str)
    return value


def _unattended(value: object) -> str:
    if value not in ("deny", "wait"):
        raise ValueError
    assert isinstance(value, str)
    return value


def _name(value: object) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ValueError
    return value.strip()


@dataclass(frozen=True)
class Key:
    """One setting: its check, what is expected of it, the variable and the editor option that set it."""

    check: Callable[[object], Any]
    """Returns the value to use, or raises ValueError."""
    expected: str
    """What is expected, said in the error line."""
    env: str
    option: str | None = None
    """Its name in the editor's options (`initializationOptions`, protocol.md); None: not an editor option."""


KEYS: dict[str, Key] = {
    "rounds": Key(_positive_int, "a whole number >= 1, e.g. rounds = 10", "FLOWER_ROUNDS", "rounds"),
    "trim": Key(_boolean, "true or false, e.g. trim = true", "FLOWER_TRIM", "trim"),
    "handoff_at": Key(_positive_int, "a number of tokens >= 1, e.g. handoff_at = 120000", "FLOWER_HANDOFF_AT", "handoffAt"),
    "model": Key(_name, 'a model name, e.g. model = "claude-sonnet-4-5"', MODEL_ENV, "model"),
    "fallback_model": Key(_name, 'a model name, e.g. fallback_model = "claude-haiku-4-5"', "FLOWER_FALLBACK_MODEL",
                          "fallbackModel"),
    "max_cost": Key(_positive_number, "US dollars > 0, e.g. max_cost = 20", "FLOWER_MAX_COST", "maxCost"),
    "isolated": Key(_boolean, "true or false, e.g. isolated = false", "FLOWER_ISOLATED", "isolated"),
    "run_dir": Key(_name, 'a directory, e.g. run_dir = "runs"', "FLOWER_RUN_DIR"),
    "store": Key(_store, 'sqlite or a postgresql:// URL, e.g. store = "postgresql://me@db.example.org/flower"',
                 "FLOWER_STORE", "store"),
    "project": Key(_name, 'a project name, e.g. project = "my-app"', "FLOWER_PROJECT", "project"),
    "allow": Key(_rules, 'a list of tool rules, e.g. allow = ["Read", "Edit", "Bash(npm test:*)"]', "FLOWER_ALLOW", "allow"),
    "mode": Key(_mode, "one of " + ", ".join(MODES) + ', e.g. mode = "acceptEdits"', "FLOWER_MODE", "mode"),
    "approvals_wait": Key(_positive_number, "seconds > 0, e.g. [approvals] wait = 600", "FLOWER_APPROVALS_WAIT", "approvalsWait"),
    "approvals_unattended": Key(_unattended, 'deny or wait, e.g. [approvals] unattended = "deny"', "FLOWER_APPROVALS_UNATTENDED",
                                "approvalsUnattended"),
    "retention_days": Key(_positive_int, "a whole number of days >= 1, e.g. retention_days = 90", "FLOWER_RETENTION_DAYS",
                          "retentionDays"),
}
"""Every key flower reads: the one schema the settings file, the environment, the flags and the editor's options are checked by."""

FLAGS = {"rounds": "--rounds", "trim": "--no-trim", "model": "--model", "fallback_model": "--fallback-model",
         "max_cost": "--max-cost", "isolated": "--isolated", "run_dir": "--run-dir", "store": "--store", "project": "--project",
         "allow": "--allow", "mode": "--mode"}
"""Key → the `flower` flag that sets it (cli/args.py defines them; `flower status --json` names a value's source by it)."""

ENV = {key: k.env for key, k in KEYS.items()}
"""Key → the environment variable that sets it."""

OPTIONS = {k.option: key for key, k in KEYS.items() if k.option is not None}
"""Editor option (camelCase, as `initializationOptions` names it) → key."""
OPTION_LABELS = {key: f"flower.{option}" for option, key in OPTIONS.items()}
"""Setting key → the editor setting that sends its option: a value's source in status, and in error lines."""
NOT_SETTINGS = ("trusted",)
"""Editor options that are no setting: VS Code's workspace trust (D10), read by the editor server."""


def options_of(raw: Any) -> dict[str, object]:
    """An editor's options (`initializationOptions`, protocol.md) as setting key → value, unchecked: `load` checks them.

    A bad value is the folder's settings error, said to the person like a bad settings file; an unknown key is
    ignored with a warning; null, and a blank string (a text setting the editor's UI cleared), is not given.
    """
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        log.warning("initializationOptions: ignoring %s (an object is expected)", type(raw).__name__)
        return {}
    given: dict[str, object] = {}
    for option, value in raw.items():
        key = OPTIONS.get(option)
        if option in NOT_SETTINGS:
            continue
        if key is None:
            log.warning("initializationOptions: ignoring unknown %s", option)
        elif value is not None and not (isinstance(value, str) and not value.strip()):
            given[key] = value
    return given


def _from_env(raw: str, check: Callable[[object], Any]) -> object:
    """An environment string as the type its key expects: true/false for a switch, a number for a number, else the string.

    Decided by the key, so `FLOWER_ROUNDS=1` is the number 1, never `true`.
    """
    text = raw.strip()
    if check is _boolean and text.lower() in ("true", "1", "yes", "on", "false", "0", "no", "off"):
        return text.lower() in ("true", "1", "yes", "on")
    if check in (_positive_int, _positive_number):
        for kind in (int, float):
            try:
                return kind(text)
            except ValueError:
                pass
    return text


def _checked(key: str, value: object, where: str, file: Path | None = None) -> Any:
    source = None if file is None else str(file)
    if key not in KEYS:
        raise SettingsError(where, key, "one of " + ", ".join(KEYS), value, file=source)
    try:
        return KEYS[key].check(value)
    except ValueError:
        got = safe_url(value) if isinstance(value, str) else value
        raise SettingsError(where, key, KEYS[key].expected, got, file=source) from None


def _flat(table: dict[str, Any]) -> dict[str, Any]:
    """A settings table with its `[approvals]` sub-table as `approvals_<key>` keys."""
    flat = {k: v for k, v in table.items() if not (k == "approvals" and isinstance(v, dict))}
    sub = table.get("approvals")
    if isinstance(sub, dict):
        flat.update({f"approvals_{k}": v for k, v in sub.items()})
    return flat


def settings_file(workspace: str | os.PathLike[str]) -> tuple[Path, dict[str, Any]] | None:
    """The workspace's settings file and its flower table: `.flower.toml`, else pyproject's `[tool.flower]`; None if neither."""
    ws = Path(workspace)
    for path in (ws / FILE, ws / PYPROJECT):
        if not path.is_file():
            continue
        import tomllib  # here, not at import: the light commands never need it (issue 34), unless there is a file

        try:
            data = tomllib.loads(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
            raise SettingsError(str(path), "(the file)", "readable TOML", str(exc), file=str(path)) from None
        if path.name == FILE:
            return path, data
        table = data.get("tool", {}).get("flower") if isinstance(data.get("tool"), dict) else None
        if table is None:
            continue
        if not isinstance(table, dict):
            raise SettingsError(str(path), "tool.flower", "a table: [tool.flower]", table, file=str(path))
        return path, table
    return None


def _untrusted(workspace: str | os.PathLike[str], where: str, file: Path, values: dict[str, Any]) -> None:
    """Refuse what an untrusted folder's file may not set (D10): a store or a mode, a wider allow, a run_dir outside."""
    folder = Path(os.path.realpath(workspace))
    for key, why in UNTRUSTED_KEYS.items():
        if key in values:
            raise UntrustedSetting(where, key, say(why), folder, file)
    if "allow" in values and not narrows(values["allow"], DEFAULT_ALLOW):
        raise UntrustedSetting(where, "allow", say("untrusted_allow", allowed=", ".join(DEFAULT_ALLOW)), folder, file)
    if "run_dir" in values:
        target = Path(os.path.realpath(values["run_dir"]))  # symlinks resolved: a link out of the folder counts
        if target != folder and folder not in target.parents:
            raise UntrustedSetting(where, "run_dir", say("untrusted_run_dir", path=str(target)), folder, file)


def load(workspace: str | os.PathLike[str], overrides: Mapping[str, object] | None = None, *,
         env: Mapping[str, str] | None = None, labels: Mapping[str, str] | None = None, trusted: bool = True) -> Settings:
    """The settings of `workspace`: defaults < its file < `env` (default os.environ) < `overrides` (flags or editor options).

    `overrides` holds only what was given (None values are skipped); `labels` names each one's source (its flag or
    option, for `sources` and error lines). Not `trusted` (D10): the file may not set a store or a run_dir outside the
    workspace. Raises SettingsError.
    """
    env = os.environ if env is None else env
    values: dict[str, Any] = {}
    sources = {key: "default" for key in KEYS}
    found = settings_file(workspace)
    if found is not None:
        path, table = found
        where = str(path) if path.name == FILE else f"{path} [tool.flower]"
        for key, value in _flat(table).items():
            values[key] = _checked(key, value, where, path)
            sources[key] = str(path)
        if "run_dir" in values:
            values["run_dir"] = os.path.abspath(Path(workspace) / values["run_dir"])  # the file's dir, not the cwd
        if not trusted:
            _untrusted(workspace, where, path, values)
    for key, name in ENV.items():
        raw = env.get(name)
        if raw is not None and raw.strip():
            values[key] = _checked(key, _from_env(raw, KEYS[key].check), f"${name}")
            sources[key] = f"${name}"
    for key, value in (overrides or {}).items():
        if value is not None:
            label = (labels or {}).get(key, key)
            values[key] = _checked(key, value, label)
            sources[key] = label
    return Settings(**values, sources=sources)
