"""scripted model: the tests that run separate processes (moved from tests/unit/test_scripted_model.py)."""

from __future__ import annotations

import asyncio
import json
import sys

import aiohttp

from flower.testing import (
    text,
)


async def test_command_line_server_serves_a_script(tmp_path):
    script = tmp_path / "script.json"
    script.write_text(json.dumps([text("from a file").to_json()]))
    proc = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "flower.testing", "--script", str(script), "--say", "second",
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
    )
    try:
        line = (await asyncio.wait_for(proc.stdout.readline(), 20)).decode()
        assert "2 replies scripted" in line
        url = line.split(" on ")[1].split(" ")[0]
        async with aiohttp.ClientSession() as http:
            async with http.post(f"{url}/v1/messages", json={"model": "claude-test", "max_tokens": 100, "messages": [{"role": "user", "content": "hi"}]}) as resp:
                assert "from a file" in await resp.text()
    finally:
        proc.terminate()
        await asyncio.wait_for(proc.wait(), 10)
