"""Run a Workflow in its own process and print ctx as JSON.

Args: {"workspace", "run_dir", "steps": [{"name", "prompt", "resume_prompt"?, "tools"?, "retries"?}], "continuous"?, "max_attempts"?}
"""

import asyncio
import json
import sys

from flower import AgentSpec, Runtime, Step, Workflow
from flower.core.errors import FlowerError
from flower.core.resilience import Resilience


async def main(args: dict) -> None:
    steps = [
        Step(s["name"], AgentSpec(s["name"], allowed_tools=s.get("tools", [])), s["prompt"],
             resume_prompt=s.get("resume_prompt"), retries=s.get("retries", 0))
        for s in args["steps"]
    ]
    resilience = Resilience(max_attempts=args.get("max_attempts", 6), base_delay=0.01)
    async with Runtime(args["workspace"], args["run_dir"], resilience=resilience) as rt:
        try:
            ctx = await Workflow(steps, continuous=args.get("continuous", True)).run(rt)
        except FlowerError as refused:
            ctx = {"refused": str(refused)}
    print(json.dumps(ctx))


asyncio.run(main(json.loads(sys.argv[1])))
