"""A full disk and a read-only run_dir: a clear error naming the path, the session kept, nothing half-written,
and the next wake once the disk is usable again resumes the same session (issue 13; S10-S12, D2).

The disk is made full for the `flower` process (and the agent CLI it starts), without privileges: RLIMIT_FSIZE
with SIGXFSZ ignored, so a write past the limit fails with EFBIG as one past the end of a full disk fails with
ENOSPC (SQLite reports the one as SQLITE_IOERR, the other as SQLITE_FULL: both are a full disk to the store). Read-only is chmod; the suite may run as root, whom permission bits do not
stop, so a root child also drops CAP_DAC_OVERRIDE from its capability bounding set before it execs
(root keeps every other power; a non-root child needs nothing).
"""

from __future__ import annotations

import asyncio
import ctypes
import json
import os
import resource
import signal
import sqlite3
import sys
from collections.abc import Callable
from pathlib import Path

from test_cli import flower, lineage, seed_frozen

from flower.core.records import FileRecords
from flower.workflow.flower import WORK_PROMPT
from flowerscript import judge, work

FULL_AT = 256 * 1024
"""Bytes: below what sessions.db's WAL takes during a wake (it fills up, a checkpoint cannot land), above the CLI's
transcripts. Since #26 the file itself is smaller than the CLI's transcripts (its bodies are compressed)."""
PR_CAPBSET_DROP, CAP_DAC_OVERRIDE = 24, 1


def disk_full_at(limit: int) -> Callable[[], None]:
    """In the child: no file can grow past `limit` bytes; a write past it fails (EFBIG) instead of killing it."""
    def limit_files() -> None:
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # an ignored disposition survives exec (the CLI too)
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    return limit_files


def permissions_bind() -> None:
    """In the child: file permission bits apply to it even as root (CAP_DAC_OVERRIDE is gone after exec)."""
    if os.geteuid() == 0 and ctypes.CDLL(None, use_errno=True).prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE, 0, 0, 0) != 0:
        raise OSError(ctypes.get_errno(), "prctl(PR_CAPBSET_DROP, CAP_DAC_OVERRIDE)")


async def first_wake(model, env, workspace: Path, run_dir: Path) -> str:
    """A finished wake (goals frozen); returns its work session."""
    seed_frozen(workspace)
    model.push(*work(workspace), *judge())
    done = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert done.code == 0, done.err
    return lineage(run_dir)["steps"]["干活"]


def assert_kept(run_dir: Path, sid: str) -> None:
    """The session is kept: the lineage still names it, sessions.db is whole, no file is half-written."""
    assert lineage(run_dir)["steps"]["干活"] == sid
    assert FileRecords(run_dir).manifest_rows()  # readable, rows kept (one a line since issue 35)
    with sqlite3.connect(run_dir / "sessions.db") as db:
        assert db.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    assert list(run_dir.glob(".*.tmp")) == [] and list(run_dir.glob("*.corrupt-*")) == []


async def resumes(model, env, workspace: Path, run_dir: Path, sid: str) -> None:
    """The next wake continues the same work session, with the first wake's conversation in its request."""
    before = len(model.conversation)
    model.push(*work(workspace), *judge())
    again = await flower("-r", str(run_dir), env=env, cwd=workspace)
    assert again.code == 0, again.err
    woken = model.conversation[before]
    assert woken.session_id == sid and WORK_PROMPT in woken.text
    assert lineage(run_dir)["steps"]["干活"] == sid


async def test_a_full_disk_or_a_read_only_run_dir_is_named_the_session_kept_and_the_next_wake_resumes(
        model, env, workspace, run_dir):
    sid = await first_wake(model, env, workspace, run_dir)
    db = run_dir / "sessions.db"

    # sessions.db on a full disk. Nothing scripted: what the model says meanwhile is its default reply, so no
    # script is left over for the next wake.
    # The CLI's own transcripts have room: what the full disk refuses is the store's (the message below names it).
    transcripts = list((Path(env["CLAUDE_CONFIG_DIR"]) / "projects").glob("*/*.jsonl"))
    assert transcripts and all(t.stat().st_size < FULL_AT for t in transcripts)
    full = await flower("-r", str(run_dir), env=env, cwd=workspace, child=disk_full_at(FULL_AT))
    assert full.code == 1 and "Traceback" not in full.err, full.err
    said = full.err.strip().splitlines()
    # Two lines and nothing else (no log debris): what failed, with the path; what to do.
    assert len(said) == 2 and said[0].startswith("flower: ") and f"cannot write {db}" in said[0], said
    assert said[1].startswith("Free some space, then run flower again"), said
    assert_kept(run_dir, sid)

    # A read-only run_dir: refused before anything is written.
    files = {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()}
    run_dir.chmod(0o555)
    try:
        refused = await flower("-r", str(run_dir), env=env, cwd=workspace, child=permissions_bind)
    finally:
        run_dir.chmod(0o755)
    assert refused.code == 2 and f"cannot write the run dir {run_dir}" in refused.err and "Traceback" not in refused.err
    assert {p.name: p.read_bytes() for p in run_dir.iterdir() if p.is_file()} == files

    # A read-only sessions.db in a writable run_dir: SQLite opens it read-only, the first write is refused.
    db.chmod(0o444)
    try:
        read_only = await flower("-r", str(run_dir), env=env, cwd=workspace, child=permissions_bind)
    finally:
        db.chmod(0o644)
    assert read_only.code == 1 and "Traceback" not in read_only.err, read_only.err
    said = read_only.err.strip().splitlines()
    assert len(said) == 2 and said[0].startswith("flower: ") and f"cannot write {db}" in said[0], said
    assert said[1].startswith("Make them writable, then run flower again"), said
    assert_kept(run_dir, sid)

    await resumes(model, env, workspace, run_dir, sid)


RUN_DIR_FULL = r"""
import json, sys
from pathlib import Path
from flower.core.lineage import Lineage
from flower.core.manifest import Manifest, StepResult
run_dir, ws = Path(sys.argv[1]), sys.argv[2]
lineage = Lineage.load(run_dir, ws)
lineage.record("干活", "s" * 4096)  # a longer file than the disk has room for
manifest = Manifest(run_dir)
wrote = manifest.add(StepResult(step="干活", ok=True, text="x" * 4096))
print(json.dumps({"lineage": lineage.save(), "manifest": wrote}))
"""


async def test_lineage_and_manifest_on_a_full_disk_keep_the_old_file_whole_and_the_run_goes_on(tmp_path, workspace):
    """runs/ itself full: each continuity file stays the last whole one written, with no temp file left (S11, S12)."""
    run_dir = tmp_path / "runs"
    run_dir.mkdir()
    old_lineage = json.dumps({"workspace": str(workspace), "woke": 1, "steps": {"干活": "s1"}}).encode()
    old_manifest = json.dumps([{"run": "20260101-000000-abcdef", "step": "干活", "ok": True}]).encode()
    (run_dir / "lineage.json").write_bytes(old_lineage)
    (run_dir / "manifest.json").write_bytes(old_manifest)
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", RUN_DIR_FULL, str(run_dir), str(workspace), preexec_fn=disk_full_at(1024),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert json.loads(out) == {"lineage": False, "manifest": False}  # said, not raised
    assert "could not write" in err.decode() and "File too large" in err.decode()
    assert (run_dir / "lineage.json").read_bytes() == old_lineage
    assert (run_dir / "manifest.json").read_bytes() == old_manifest
    assert sorted(p.name for p in run_dir.iterdir()) == ["lineage.json", "manifest.json", "manifest.json.lock"]


APPEND_FULL = r"""
import json, sys
from flower.core.manifest import Manifest, StepResult
m = Manifest(sys.argv[1], run="20260101-000000-bbbbbb")
print(json.dumps({"manifest": m.add(StepResult(step="干活#round2", ok=True, text="x" * 4096))}))
"""


async def test_a_row_appended_on_a_full_disk_leaves_no_half_line_and_the_rows_before_it_whole(tmp_path):
    """Issue 35: a manifest write appends; the disk takes 100 bytes of its 4 KB line, then refuses: those are cut off again."""
    from flower.core.manifest import Manifest, StepResult

    run_dir = tmp_path / "runs"
    Manifest(run_dir, run="20260101-000000-aaaaaa").add(StepResult(step="干活", ok=True))
    before = (run_dir / "manifest.json").read_bytes()
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-c", APPEND_FULL, str(run_dir), preexec_fn=disk_full_at(len(before) + 100),
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
    out, err = await asyncio.wait_for(proc.communicate(), 60)
    assert proc.returncode == 0, err.decode()
    assert json.loads(out) == {"manifest": False}  # said, not raised
    assert "could not write" in err.decode() and "File too large" in err.decode()
    assert (run_dir / "manifest.json").read_bytes() == before
    assert [r["step"] for r in FileRecords(run_dir).manifest_rows()] == ["干活"]
