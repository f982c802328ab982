"""A used workspace whose work session holds N CLI-shaped entries in sessions.db (for e2e/bench.mjs).

`python bigsession.py WORKSPACE N`: the entries are benchmarks/store.py's realistic transcript
(prompts, tool_use/tool_result pairs, attachments), stored under the workspace's project key;
runs/lineage.json names the session as the work step's, and 需求.md / 目标.md exist, so the
extension treats the folder as one with a task and shows its history without any wake.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from claude_agent_sdk import project_key_for_directory

from flower.core.lineage import Lineage
from flower.stores.sqlite import SqliteSessionStore

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from store import SESSION, build  # type: ignore[import-not-found]  # noqa: E402  (benchmarks/ is not a package)

REQUIREMENTS = (
    "# 需求\n\n## 目标 Goal\nA calculator CLI.\n\n## 范围 Scope\nAdd and subtract.\n\n"
    "## 约束 Constraints\nPython only.\n\n## 验收 Acceptance\n`calc 1 + 2` prints 3.\n"
)


async def main(workspace: Path, n: int) -> None:
    """Write the session, the lineage and the two task files."""
    workspace = workspace.resolve()
    run_dir = workspace / "runs"
    run_dir.mkdir(parents=True, exist_ok=True)
    entries = build(n)
    for entry in entries:
        if "cwd" in entry:
            entry["cwd"] = str(workspace)
    store = SqliteSessionStore(run_dir / "sessions.db")
    key = {"project_key": project_key_for_directory(workspace), "session_id": SESSION}
    try:
        for start in range(0, len(entries), 1000):
            await store.append(key, entries[start:start + 1000])  # type: ignore[arg-type]
    finally:
        await store.close()
    lineage = Lineage(run_dir, workspace, woke=1, steps={"干活": SESSION})
    lineage.save()
    (workspace / "需求.md").write_text(REQUIREMENTS, encoding="utf-8")
    (workspace / "目标.md").write_text("# 目标\n\n- [x] calc.py adds\n- [ ] calc.py subtracts\n", encoding="utf-8")
    print(f"{len(entries)} entries in {run_dir / 'sessions.db'} (session {SESSION})", flush=True)


if __name__ == "__main__":
    if len(sys.argv) != 3:
        raise SystemExit(__doc__)
    asyncio.run(main(Path(sys.argv[1]), int(sys.argv[2])))
