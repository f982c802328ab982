"""manifest: the tests that run separate processes (moved from tests/unit/test_manifest.py)."""

from __future__ import annotations

import re
import subprocess
import sys
import time

from flower.core.records import FileRecords

WRITER = r"""
import sys, time
from flower.core.manifest import Manifest, StepResult
run_dir, go, n = sys.argv[1], float(sys.argv[2]), int(sys.argv[3])
m = Manifest(run_dir)
print(m.run, flush=True)
while time.time() < go:
    time.sleep(0.0005)
for i in range(n):
    ok = m.add(StepResult(step=f"s{i}", ok=True, started_at=i, ended_at=i + 1))
    assert ok, "write failed"
"""


def test_eight_processes_appending_at_once_lose_no_row(tmp_path):
    run_dir = tmp_path / "runs"
    procs, n = 8, 20
    go = time.time() + 1.5  # every writer starts its burst at the same instant
    ps = [subprocess.Popen([sys.executable, "-c", WRITER, str(run_dir), str(go), str(n)],
                           stdout=subprocess.PIPE, text=True) for _ in range(procs)]
    marks = []
    try:
        for p in ps:
            marks.append(p.stdout.readline().strip())
            assert p.wait(timeout=60) == 0
    finally:
        for p in ps:
            if p.poll() is None:
                p.kill()
                p.wait(timeout=10)
            p.stdout.close()
    rows = FileRecords(run_dir).manifest_rows()  # one row a line since issue 35
    assert len(rows) == procs * n
    assert len(set(marks)) == procs and all(re.fullmatch(r"\d{8}-\d{6}-[0-9a-f]{6}", m) for m in marks)
    for mark in marks:
        mine = [r for r in rows if r["run"] == mark]
        assert [r["step"] for r in mine] == [f"s{i}" for i in range(n)]
        assert all(r["duration_s"] == 1.0 for r in mine)
    assert list(run_dir.glob("manifest.json.corrupt-*")) == []
    assert sorted(p.name for p in run_dir.iterdir()) == ["manifest.json", "manifest.json.lock"]
