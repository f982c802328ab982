"""A tool question left open far past every timeout of the SDK and the CLI, with the real CLI (issue 24).

Usage: python benchmarks/approvals.py [--hold SECONDS] [--answer deny|allow]

The scripted model asks for a shell command outside the agent's allowed tools; flower's can_use_tool puts it
to a "person" who answers only after `--hold` seconds (default 600: ten minutes; the SDK's tracker has a
report of a callback aborted after about 60 s, after which the tool ran anyway). Reported: whether the
tool ran while the question was open, whether any request went to the model meanwhile, whether the run
ended or aborted, and what the model received once the person answered.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

from flower.core.approvals import Approval, Approvals, Decision
from flower.runtime import AgentSpec, Runtime
from flower.testing import ScriptedModel, text, tool


async def main(hold: float, choice: str) -> int:
    with tempfile.TemporaryDirectory(prefix="flower-approvals-") as tmp:
        root = Path(tmp)
        ws, config, home = root / "ws", root / "config", root / "home"
        for d in (ws, config, home):
            d.mkdir()
        marker = ws / "ran.txt"
        async with ScriptedModel() as model:
            env = {**model.env(config), "CLAUDE_CODE_MAX_RETRIES": "0", "HOME": str(home)}
            model.push(tool("Bash", {"command": f'sh -c "touch {marker}"'}), text("the run went on"))
            approvals = Approvals()
            seen: dict[str, object] = {}

            async def person(approval: Approval) -> Decision:
                asked_at = time.monotonic()
                requests = len(model.requests)
                await asyncio.sleep(hold)
                seen.update(held=time.monotonic() - asked_at, ran_while_open=marker.exists(),
                            requests_while_open=len(model.requests) - requests)
                return Decision(choice, "not now" if choice == "deny" else None)  # type: ignore[arg-type]

            approvals.askers.append(person)
            rt = Runtime(ws, root / "runs", env=env, approvals=approvals)
            agent = AgentSpec("worker", allowed_tools=["Read"], permission_mode="acceptEdits")
            started = time.monotonic()
            result = await rt.run(agent, "touch the marker", step="work")
            await rt.close()
            results = [b for r in model.requests for b in r.tool_results()]
            report = {
                "hold_s": round(float(seen.get("held", 0.0)), 1),  # type: ignore[arg-type]
                "answer": choice,
                "tool_ran_while_open": seen.get("ran_while_open"),
                "model_requests_while_open": seen.get("requests_while_open"),
                "run_ok": result.ok, "run_error": result.error, "attempts": result.attempts,
                "tool_ran_in_the_end": marker.exists(),
                "model_received": (json.dumps(results[0].get("content"))[:160] if results else None),
                "wall_s": round(time.monotonic() - started, 1),
            }
    print(json.dumps(report, indent=2))
    wanted = (report["tool_ran_while_open"] is False and report["model_requests_while_open"] == 0 and report["run_ok"]
              and report["attempts"] == 1 and report["tool_ran_in_the_end"] == (choice == "allow"))
    print("PASS: the question waited, nothing ran meanwhile, the answer decided" if wanted else "FAIL", file=sys.stderr)
    return 0 if wanted else 1


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--hold", type=float, default=600.0, help="seconds the person takes to answer (default 600)")
    parser.add_argument("--answer", choices=("deny", "allow"), default="deny")
    args = parser.parse_args()
    sys.exit(asyncio.run(main(args.hold, args.answer)))
