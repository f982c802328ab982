"""What the agents changed in the workspace, wake by wake, with the content each file had before (issue #25).

Layout under the run dir:

    changes/objects/<sha256>     a file's bytes before a wake first changed it (content-addressed: an
                                 unchanged file, or the same content twice, is stored once)
    changes/wake-<N>.json        {"wake": N, "files": {"<workspace-relative path>": {"before": sha | null,
                                 "existed": bool, "tool": "Write", "at": unix time, "agent"?: subagent}}}

A file's record is made the first time an agent is about to write it in a wake (a PreToolUse hook
calls `before_write`), so the before-image is the file as the wake found it, not as the last tool
left it. Bash can change any file, so around a Bash call the workspace's files are stamped
(size, mtime_ns, inode) before and after (`before_tool` / `after_tool` of Bash): a file whose stamp moved, a
new one, or one gone is recorded, its before-image being the content read at the last stamp.

Where the Bash detection stops (said so in protocol.md and the README): it sees the files of a
bounded walk of the workspace (at most MAX_FILES, skipping dot-directories such as .git and .venv,
node_modules, __pycache__ and the run dir); a file larger than MAX_STAMPED_IMAGE (or past
MAX_STAMPED_TOTAL of content held in memory for the wake) is recorded as changed but has no
before-image (revert refuses it); changes a background process makes after the Bash call
returned are not seen; an edit that keeps size and mtime_ns is invisible. Writes outside the
workspace are not recorded at all.
"""

from __future__ import annotations

import collections
import difflib
import json
import logging
import os
import re
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from .durable import write_atomic
from .errors import FlowerError

log = logging.getLogger(__name__)

DIR = "changes"
WRITE_TOOLS = frozenset({"Write", "Edit", "MultiEdit", "NotebookEdit"})
"""Tools that write the file named by their `file_path` (or `notebook_path`)."""
MAX_FILES = 5000
"""Files stamped around a Bash call at most (a bounded walk, so a huge tree never stalls a tool call)."""
MAX_IMAGE = 8 * 1024 * 1024
"""Largest file a write tool's before-image keeps, in bytes."""
MAX_STAMPED_IMAGE = 1024 * 1024
"""Largest file Bash stamping keeps the content of (it reads every stamped file once per wake, so less)."""
MAX_STAMPED_TOTAL = 64 * 1024 * 1024
"""Bytes of stamped files' content held in memory at most during a wake; past it, files are stamped without content."""
SKIP_DIRS = frozenset({"node_modules", "__pycache__"})
"""Directories the Bash walk never enters (besides every dot-directory and the run dir)."""
_WAKE_FILE = re.compile(r"^wake-(\d+)\.json$")

Stamp = tuple[int, int, int]
"""(size, mtime_ns, inode) of a file."""
Kind = Literal["created", "edited", "deleted"]


@dataclass(frozen=True)
class FileChange:
    """One file a wake changed, compared with the workspace now."""

    path: str
    """Workspace-relative, with `/` separators."""
    change: Kind
    added: int | None
    """Lines added since the before-image (None: binary, or no before-image)."""
    removed: int | None
    before: str | None
    """The before-image's id (its sha256), or None when the file did not exist or was too large to keep."""
    tool: str
    """The tool that first changed it in the wake (`Write`, `Edit`, `Bash`, …)."""
    agent: str | None = None
    """The subagent whose tool call that was (its description and type); None: the main agent (issue 32)."""


@dataclass(frozen=True)
class WakeChanges:
    """Every file one wake changed that still differs from its before-image."""

    wake: int
    files: list[FileChange]


class ChangeLog:
    """The change records and before-images of one run dir; `wake` is set while a wake runs (None: record nothing)."""

    def __init__(self, run_dir: str | os.PathLike[str], workspace: str | os.PathLike[str]) -> None:
        self.run_dir = Path(os.path.abspath(run_dir))
        self.workspace = Path(os.path.abspath(workspace))
        self.dir = self.run_dir / DIR
        self.wake: int | None = None
        self._record: dict[str, Any] | None = None
        self._seen: dict[str, tuple[Stamp, bytes | None]] = {}
        """Bash: each stamped file's stamp and its content at that stamp, in memory (None: too large to hold).

        Kept in memory, not as images on disk: most stamped files never change, and only those that did are stored."""
        self._held = 0
        """Bytes of content in `_seen`."""
        self._pending: dict[str, dict[str, Stamp]] = {}
        """Bash: the stamps taken before each running call, by tool_use id."""
        self._agents: dict[str, str] = {}
        """Bash: the subagent of each running call made by one, by tool_use id."""
        self._lock = threading.RLock()
        """The hooks run in worker threads, possibly several tool calls at once."""

    # -- paths ---------------------------------------------------------------------------------
    def relative(self, path: str | os.PathLike[str]) -> str | None:
        """`path` relative to the workspace with `/` separators; None outside it or inside the run dir."""
        full = Path(os.path.abspath(self.workspace / path))
        if full == self.run_dir or self.run_dir in full.parents:
            return None
        try:
            rel = full.relative_to(self.workspace)
        except ValueError:
            return None
        return rel.as_posix() if rel.parts else None

    def object_path(self, image: str) -> Path:
        """Where a before-image's bytes are."""
        if not re.fullmatch(r"[0-9a-f]{64}", image):
            raise ValueError(f"not a before-image id: {image!r}")
        return self.dir / "objects" / image

    # -- recording (called by the runtime's hooks) ----------------------------------------------
    def begin(self, wake: int) -> None:
        """Start recording wake `wake` (continuing its record if this wake number already has one)."""
        with self._lock:
            self.wake, self._record = wake, None
            self._seen.clear()
            self._held = 0
            self._pending.clear()

    def end(self) -> None:
        """Stop recording; drop the images no wake refers to (a write a tool then did not make, a kill mid-wake)."""
        with self._lock:
            self.wake, self._record = None, None
            self._seen.clear()
            self._held = 0
            self._pending.clear()
            try:
                self.collect()
            except OSError as exc:
                log.warning("changes: could not drop unused before-images (%s)", exc)

    def before_tool(self, tool: str, data: dict[str, Any], tool_use_id: str | None, agent: str | None = None) -> None:
        """PreToolUse: keep what a write tool is about to overwrite, or stamp the workspace before Bash (`agent`: the
        subagent calling it, None for the main agent)."""
        with self._lock:
            if self.wake is None:
                return
            if tool in WRITE_TOOLS:
                target = data.get("file_path") or data.get("notebook_path")
                if isinstance(target, str) and target:
                    self.before_write(target, tool, agent)
            elif tool == "Bash" and tool_use_id:
                self._pending[tool_use_id] = self._stamp_and_keep()
                if agent:
                    self._agents[tool_use_id] = agent

    def after_tool(self, tool: str, tool_use_id: str | None) -> None:
        """PostToolUse (or its failure): after Bash, record the files whose stamps moved."""
        with self._lock:
            if self.wake is not None and tool == "Bash" and tool_use_id:
                self._after_bash(tool_use_id)

    def _after_bash(self, tool_use_id: str) -> None:
        before = self._pending.pop(tool_use_id, None)
        agent = self._agents.pop(tool_use_id, None)
        if before is None:
            return
        after = dict(self._walk())
        for rel in sorted(before.keys() | after.keys()):
            if before.get(rel) == after.get(rel):
                continue
            if rel in before:
                held = self._seen.get(rel, (None, None))[1]
                self._add(rel, self._keep(held) if held is not None else None, True, "Bash", agent)
            else:
                self._add(rel, None, False, "Bash", agent)
        self._hold(after)  # the next Bash call compares with these

    def before_write(self, target: str, tool: str, agent: str | None = None) -> None:
        """Record `target`'s content before the wake's first write to it; later writes in the wake cost nothing."""
        rel = self.relative(target)
        if rel is None or self.wake is None or rel in self._files():
            return
        full = self.workspace / rel
        try:
            size = full.stat().st_size
        except FileNotFoundError:
            self._add(rel, None, False, tool, agent)
            return
        except OSError as exc:
            log.warning("changes: cannot read %s before %s writes it (%s)", rel, tool, exc)
            return
        self._add(rel, self._keep_file(full, size), True, tool, agent)

    # -- reading ---------------------------------------------------------------------------------
    def wakes(self) -> list[WakeChanges]:
        """Every wake's changed files, oldest wake first; a file back to its before-image is left out."""
        out = []
        for wake in self._wake_numbers():
            record = self._load(wake)
            files = [c for rel, entry in sorted(record.get("files", {}).items()) if (c := self._compare(rel, entry))]
            out.append(WakeChanges(wake, files))
        return out

    def image(self, image: str) -> bytes:
        """A before-image's bytes (OSError when it is gone)."""
        return self.object_path(image).read_bytes()

    # -- reverting ---------------------------------------------------------------------------------
    def revert(self, path: str | None = None, wake: int | None = None) -> list[str]:
        """Put files back as they were before a wake: one file (of `wake`, else of the newest wake that changed it) or all of `wake`.

        A file the wake created is deleted. Returns the workspace-relative paths restored. Raises FlowerError
        (`revert_nothing`, `revert_no_image`) with what to do when there is nothing to restore.
        """
        with self._lock:
            return self._revert(path, wake)

    def _revert(self, path: str | None, wake: int | None) -> list[str]:
        targets: list[tuple[str, dict[str, Any]]] = []
        if path is not None:
            rel = self.relative(path)
            wakes = [wake] if wake is not None else list(reversed(self._wake_numbers()))
            for n in wakes:
                entry = self._load(n).get("files", {}).get(rel) if rel else None
                if entry is not None and self._compare(rel or "", entry) is not None:
                    targets.append((rel or "", entry))
                    break
            if not targets:
                raise FlowerError("revert_nothing", path=path, wake=wake) if wake is not None else FlowerError("revert_nothing_any", path=path)
        elif wake is not None:
            targets = [(rel, e) for rel, e in sorted(self._load(wake).get("files", {}).items()) if self._compare(rel, e)]
            if not targets:
                raise FlowerError("revert_nothing", path="*", wake=wake)
        for rel, entry in targets:
            if entry.get("existed") and not entry.get("before"):
                raise FlowerError("revert_no_image", path=rel)
        for rel, entry in targets:
            full = self.workspace / rel
            if entry.get("existed"):
                write_atomic(full, self.image(entry["before"]))
            else:
                try:
                    full.unlink()
                except FileNotFoundError:
                    pass
        return [rel for rel, _ in targets]

    def collect(self) -> None:
        """Remove the images no wake record names (a kill mid-wake leaves some; they are only a cache)."""
        objects = self.dir / "objects"
        if not objects.is_dir():
            return
        used = {e.get("before") for n in self._wake_numbers() for e in self._load(n).get("files", {}).values()}
        for blob in objects.iterdir():
            if blob.name not in used and not blob.name.startswith("."):
                blob.unlink(missing_ok=True)

    # -- internals ---------------------------------------------------------------------------------
    def _wake_numbers(self) -> list[int]:
        try:
            names = os.listdir(self.dir)
        except OSError:
            return []
        return sorted(int(m.group(1)) for n in names if (m := _WAKE_FILE.match(n)))

    def _load(self, wake: int) -> dict[str, Any]:
        path = self.dir / f"wake-{wake}.json"
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {"wake": wake, "files": {}}
        except (OSError, ValueError) as exc:  # unreadable: reported, never overwritten by a new record
            log.warning("changes: %s cannot be read (%s); its wake's changes are not listed", path, exc)
            return {"wake": wake, "files": {}, "unreadable": True}
        return data if isinstance(data, dict) and isinstance(data.get("files"), dict) else {"wake": wake, "files": {}}

    def _files(self) -> dict[str, Any]:
        if self._record is None:
            assert self.wake is not None
            self._record = self._load(self.wake)
        files: dict[str, Any] = self._record["files"]
        return files

    def _add(self, rel: str, image: str | None, existed: bool, tool: str, agent: str | None = None) -> None:
        files = self._files()
        if rel in files or self._record is None or self._record.get("unreadable"):
            return
        files[rel] = {"before": image, "existed": existed, "tool": tool, "at": round(time.time(), 3)}
        if agent:
            files[rel]["agent"] = agent
        try:
            write_atomic(self.dir / f"wake-{self.wake}.json", json.dumps(self._record, ensure_ascii=False).encode())
        except OSError as exc:  # recording is a bonus: a full disk never stops the agent's write
            log.warning("changes: could not record %s (%s)", rel, exc)

    def _keep_file(self, full: Path, size: int) -> str | None:
        """Store a file's bytes as an image (once per content); None when too large or unreadable."""
        if size > MAX_IMAGE:
            return None
        try:
            data = full.read_bytes()
        except OSError:
            return None
        return self._keep(data)

    def _keep(self, data: bytes) -> str | None:
        """Store bytes as an image (once per content); its id, or None when it cannot be written.

        No fsync: the image guards against the agent, not against a power cut, and the hook must stay cheap.
        """
        import hashlib  # here, not at import: the light commands never need it (issue 34)

        image = hashlib.sha256(data).hexdigest()
        blob = self.dir / "objects" / image
        if not blob.exists():
            tmp = blob.with_name(f".{image}.{os.getpid()}.{threading.get_ident()}.tmp")
            try:
                blob.parent.mkdir(parents=True, exist_ok=True)
                tmp.write_bytes(data)
                os.replace(tmp, blob)
            except OSError as exc:
                tmp.unlink(missing_ok=True)
                log.warning("changes: could not keep a before-image in %s (%s)", blob.parent, exc)
                return None
        return image

    def _stamp_and_keep(self) -> dict[str, Stamp]:
        """Stamp the workspace; hold the content of every file not held at this stamp yet."""
        stamps = dict(self._walk())
        self._hold(stamps)
        return stamps

    def _hold(self, stamps: dict[str, Stamp]) -> None:
        """Read (into memory) the files whose stamp is new, within MAX_STAMPED_IMAGE and MAX_STAMPED_TOTAL."""
        for rel in [r for r in self._seen if r not in stamps]:
            old = self._seen.pop(rel)[1]
            self._held -= len(old) if old is not None else 0
        for rel, stamp in stamps.items():
            seen = self._seen.get(rel)
            if seen is not None and seen[0] == stamp:
                continue
            self._held -= len(seen[1]) if seen is not None and seen[1] is not None else 0
            data = None
            if stamp[0] <= MAX_STAMPED_IMAGE and self._held + stamp[0] <= MAX_STAMPED_TOTAL:
                try:
                    with open(os.path.join(self.workspace, rel), "rb") as f:
                        data = f.read()
                except OSError:
                    data = None
            self._held += len(data) if data is not None else 0
            self._seen[rel] = (stamp, data)

    def _walk(self) -> Iterator[tuple[str, Stamp]]:
        """(relative path, stamp) of at most MAX_FILES workspace files, breadth-first, skipping what SKIP_DIRS names."""
        count, queue, skip = 0, collections.deque([""]), str(self.run_dir)
        root = str(self.workspace)
        while queue:
            rel_dir = queue.popleft()
            try:
                entries = sorted(os.scandir(os.path.join(root, rel_dir) if rel_dir else root), key=lambda e: e.name)
            except OSError:
                continue
            for entry in entries:
                rel = f"{rel_dir}/{entry.name}" if rel_dir else entry.name
                try:
                    if entry.is_dir(follow_symlinks=False):
                        if not (entry.name.startswith(".") or entry.name in SKIP_DIRS or entry.path == skip):
                            queue.append(rel)
                    elif entry.is_file(follow_symlinks=False):
                        st = entry.stat(follow_symlinks=False)
                        yield rel, (st.st_size, st.st_mtime_ns, st.st_ino)
                        count += 1
                        if count >= MAX_FILES:
                            return
                except OSError:
                    continue

    def _compare(self, rel: str, entry: dict[str, Any]) -> FileChange | None:
        """The file now against its before-image; None when it is back as it was."""
        full = self.workspace / rel
        try:
            now: bytes | None = full.read_bytes()
        except FileNotFoundError:
            now = None
        except OSError:
            now = b""
        existed, image = bool(entry.get("existed")), entry.get("before")
        before: bytes | None = None
        if existed and isinstance(image, str):
            try:
                before = self.image(image)
            except (OSError, ValueError):
                image = None
        if not existed and now is None:
            return None
        if before is not None and now == before:
            return None
        change: Kind = "created" if not existed else "deleted" if now is None else "edited"
        added, removed = (None, None) if existed and before is None else line_counts(before or b"", now or b"")
        agent = entry.get("agent")
        return FileChange(rel, change, added, removed, image if existed else None, str(entry.get("tool") or "?"),
                          agent if isinstance(agent, str) else None)


def line_counts(before: bytes, after: bytes) -> tuple[int | None, int | None]:
    """(lines added, lines removed) from `before` to `after`; (None, None) for binary content."""
    if b"\0" in before[:8192] or b"\0" in after[:8192]:
        return None, None
    a = before.decode("utf-8", "replace").splitlines()
    b = after.decode("utf-8", "replace").splitlines()
    if not a or not b:
        return len(b), len(a)
    added = removed = 0
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes():
        if op in ("replace", "delete"):
            removed += i2 - i1
        if op in ("replace", "insert"):
            added += j2 - j1
    return added, removed
