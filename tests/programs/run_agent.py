"""Run one agent turn in its own process: `run_agent.py '{"workspace", "run_dir", "prompt", "resume"?, "tools"?}'`."""

import asyncio
import json
import sys

from flower import AgentSpec, Runtime


async def main(args: dict) -> None:
    async with Runtime(args["workspace"], args["run_dir"]) as rt:
        agent = AgentSpec("worker", args.get("instructions", ""), allowed_tools=args.get("tools", []))
        result = await rt.run(agent, args["prompt"], resume=args.get("resume"))
        print(json.dumps(result.row("test")))


asyncio.run(main(json.loads(sys.argv[1])))
