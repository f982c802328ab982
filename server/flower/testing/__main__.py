"""`python -m flower.testing`: run the scripted model server until stopped (Ctrl-C or SIGTERM)."""

from __future__ import annotations

import argparse
import asyncio
import signal

from . import ScriptedModel, load_script, text


async def serve(args: argparse.Namespace) -> None:
    """Serve the script, print one line per request, stop on SIGINT/SIGTERM."""
    script = load_script(args.script) if args.script else []
    script += [text(t) for t in args.say]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, stop.set)
    async with ScriptedModel(script, port=args.port) as model:
        print(f"scripted model listening on {model.url} ({model.pending} replies scripted)", flush=True)
        print(f"point the CLI at it: ANTHROPIC_BASE_URL={model.url} ANTHROPIC_API_KEY=anything", flush=True)
        seen = 0
        while not stop.is_set():
            try:
                await asyncio.wait_for(stop.wait(), 0.2)
            except TimeoutError:
                pass
            for request in model.requests[seen:]:
                note = f" -> {request.status} {request.error}" if request.error else ""
                who = " (subagent)" if request.subagent else ""
                print(f"{request.path} {len(request.messages)} messages{who}{note}", flush=True)
            seen = len(model.requests)


def main() -> None:
    """Parse arguments and serve."""
    parser = argparse.ArgumentParser(prog="python -m flower.testing", description=__doc__)
    parser.add_argument("--port", type=int, default=0, help="port on 127.0.0.1 (default: any free port)")
    parser.add_argument("--script", help="JSON file: a list of replies (flower.testing.Reply fields)")
    parser.add_argument("--say", action="append", default=[], help="a text reply (repeatable), after the script")
    asyncio.run(serve(parser.parse_args()))


if __name__ == "__main__":
    main()
