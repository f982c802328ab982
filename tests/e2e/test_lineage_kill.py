"""lineage: the tests that run separate processes (moved from tests/unit/test_lineage.py)."""

from __future__ import annotations

import json
import subprocess
import sys
import time

from flower.core.lineage import Lineage

SAVER = r"""
import sys
from flower.core.lineage import Lineage
lin = Lineage.load(sys.argv[1], sys.argv[2])
i = 0
print("ready", flush=True)
while True:
    i += 1
    lin.record(f"step-{i % 7}", f"session-{i}-" + "x" * (i % 300))
    if i % 5 == 0:
        lin.wake()
"""


def test_kill_9_during_a_storm_of_saves_never_leaves_a_half_file(tmp_path):
    ws = tmp_path / "proj"
    ws.mkdir()
    run_dir = ws / "runs"
    for attempt in range(12):
        proc = subprocess.Popen([sys.executable, "-c", SAVER, str(run_dir), str(ws)],
                                stdout=subprocess.PIPE, text=True)
        try:
            assert proc.stdout.readline().strip() == "ready"
            deadline = time.monotonic() + 10
            while not (run_dir / "lineage.json").exists():
                assert time.monotonic() < deadline, "saver never wrote"
                time.sleep(0.001)
            time.sleep(0.005 + 0.007 * attempt)
        finally:
            proc.kill()
            proc.wait(timeout=10)
            proc.stdout.close()
        data = json.loads((run_dir / "lineage.json").read_text(encoding="utf-8"))  # raises if half-written
        assert data["workspace"] == str(ws) and data["steps"]
        lin = Lineage.load(run_dir, ws)
        assert lin.steps == data["steps"]
    assert list(run_dir.glob("*.corrupt-*")) == []
