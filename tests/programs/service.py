"""Run one FlowerService wake in its own process: `service.py '{"workspace", "text"?, "locale"?}'`; prints the result."""

import asyncio
import json
import sys

from flower import FlowerService
from flower.service import Config
from flower.status import to_json


async def main(args: dict) -> None:
    service = FlowerService(args["workspace"], config=Config(locale=args.get("locale", "en")))
    banners = []
    service.subscribe(lambda e: banners.append(e.text) if e.kind == "banner" else None)
    result = await service.wake(args.get("text"))
    print(json.dumps({**to_json(result), "banners": banners, "debug": __debug__}, ensure_ascii=False))


asyncio.run(main(json.loads(sys.argv[1])))
