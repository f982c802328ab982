"""Wake latency: Runtime.run(resume=…) on sessions.db, and on PostgreSQL, vs the SDK's InMemorySessionStore, same run (D7).

Usage: python benchmarks/wake.py [--entries N] [--repeat R] [--no-postgres]

Times a resume of a 20k-entry CLI-shaped session (benchmarks/store.py's transcript, whole
turns, with larger tool results: ~60 MB) from the call until the first request reaches the
scripted model (flower.testing, on 127.0.0.1): once through `Runtime.run` with the Runtime's
own store, PruningSessionStore(SqliteSessionStore) on runs/sessions.db, and once with the
very same SDK options but `session_store=InMemorySessionStore()` holding the same entries
(this Runtime takes no other store, so the baseline drives ClaudeSDKClient directly).
Both include what the SDK and the CLI do with the transcript; only the store differs.
Target: sqlite / in-memory <= 1.1. The same resume through `--store postgresql://…` (PostgresSessionStore on a server
started from the [test] extras' wheel, Unix socket, tests/pg.py) is reported beside it (issue #14), with no target.
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from aiohttp import web
from claude_agent_sdk import ClaudeSDKClient, InMemorySessionStore

from flower import AgentSpec, Runtime
from flower.runtime import Sessions
from flower.testing import ScriptedModel, text
from store import SESSION, PgServer, Transcript, build  # benchmarks/store.py: the realistic transcript (and tests/pg.py)


class TimedModel(ScriptedModel):
    """The scripted model, noting when each /v1/messages request reaches it (before its body is read)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []

    async def _messages(self, http: web.Request) -> web.StreamResponse:
        self.arrivals.append(time.perf_counter())
        return await super()._messages(http)


def session(n: int, cwd: str, grow: float) -> list[dict[str, Any]]:
    """At least ``n`` entries of whole turns, so the transcript ends where the CLI would stop.
    ``grow`` multiplies the length of the larger tool results (towards ~60 MB)."""
    corpus = "\n".join(e["message"]["content"][0].get("content", "") for e in build(2000)
                       if e.get("type") == "user" and isinstance(e["message"]["content"], list))
    t = Transcript(random.Random(11), corpus * 4)
    text_of = t.text
    t.text = lambda lo, hi: text_of(int(lo * grow), int(hi * grow)) if lo >= 2_000 else text_of(lo, hi)  # type: ignore[method-assign]
    while len(t.entries) < n:
        t.turn()
    raw = json.dumps(t.entries)  # the builder's cwd and session id, made this workspace's
    entries: list[dict[str, Any]] = json.loads(raw.replace("/home/dev/project", cwd).replace(SESSION, SID))
    return entries


SID = "5b0f3c9e-2d4a-4c61-9b7e-0a1d2c3e4f50"


async def wake_runtime(rt: Runtime, model: TimedModel, agent: AgentSpec) -> float:
    model.push(text("awake"))
    before = len(model.arrivals)
    t0 = time.perf_counter()
    result = await rt.run(agent, "carry on", resume=SID)
    assert result.ok, result.error
    assert len(model.arrivals) > before, "no request reached the model"
    return model.arrivals[before] - t0


async def wake_in_memory(rt: Runtime, model: TimedModel, agent: AgentSpec, key: dict[str, str],
                         entries: list[dict[str, Any]]) -> float:
    store = InMemorySessionStore()
    await store.append(key, entries)  # type: ignore[arg-type]
    model.push(text("awake"))
    before = len(model.arrivals)
    options = dataclasses.replace(rt.options(agent, SID, lambda line: None), session_store=store)
    t0 = time.perf_counter()
    async with ClaudeSDKClient(options) as client:
        await client.query("carry on")
        async for _ in client.receive_response():
            pass
    assert len(model.arrivals) > before, "no request reached the model"
    return model.arrivals[before] - t0


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--entries", type=int, default=20_000)
    ap.add_argument("--grow", type=float, default=2.5, help="length factor of the larger tool results")
    ap.add_argument("--repeat", type=int, default=5, help="wakes of each kind, taking turns (the best is kept)")
    ap.add_argument("--no-postgres", dest="postgres", action="store_false", help="skip the resume through PostgreSQL")
    args = ap.parse_args()

    with tempfile.TemporaryDirectory() as tmp:
        workspace, run_dir, config = Path(tmp) / "ws", Path(tmp) / "runs", Path(tmp) / "claude-config"
        workspace.mkdir()
        config.mkdir()
        entries = session(args.entries, str(workspace), args.grow)
        mb = sum(len(json.dumps(e, separators=(",", ":"))) for e in entries) / 1e6
        print(f"session: {len(entries)} entries, {mb:.1f} MB JSON")
        model = TimedModel()
        await model.start()
        try:
            env = {**model.env(config), "CLAUDE_CODE_MAX_RETRIES": "0"}
            rt = Runtime(workspace, run_dir, env=env)
            key = {"project_key": rt.project_key, "session_id": SID}
            await rt.raw_store.append(key, entries)  # type: ignore[arg-type]
            agent = AgentSpec("worker")
            best = {"sqlite": float("inf"), "in-memory": float("inf"), "postgres": float("inf")}
            pg = PgServer() if args.postgres else None
            shared: Runtime | None = None
            try:
                if pg is not None:
                    pg.init().start()
                    url = pg.url(pg.new_database())
                    sessions = Sessions.open(Path(tmp) / "runs-pg", store=url, workspace=workspace)
                    shared = Runtime(workspace, Path(tmp) / "runs-pg", sessions=sessions, env=env)
                    await shared.raw_store.append(key, entries)  # type: ignore[arg-type]
                # One wake first, unmeasured: the first CLI start of the run pays for cold caches.
                await wake_in_memory(rt, model, agent, key, entries)
                for _ in range(args.repeat):
                    best["sqlite"] = min(best["sqlite"], await wake_runtime(rt, model, agent))
                    best["in-memory"] = min(best["in-memory"], await wake_in_memory(rt, model, agent, key, entries))
                    if shared is not None:
                        best["postgres"] = min(best["postgres"], await wake_runtime(shared, model, agent))
            finally:
                await rt.close()
                if shared is not None:
                    await shared.sessions.close()
                if pg is not None:
                    pg.remove()
            refused = [r.error for r in model.conversation if r.status != 200]
            if refused:
                print(f"ERROR: the model refused a resumed transcript: {refused[0]}")
                return 1
            first = model.conversation[0]
            sent = sum(len(json.dumps(m)) for m in first.messages) / 1e6
            print(f"first request: {len(first.messages)} messages, {sent:.1f} MB")
        finally:
            await model.stop()
    ratio = best["sqlite"] / best["in-memory"]
    print(f"  wake to first request: Runtime (PruningSessionStore(SqliteSessionStore)) {best['sqlite']:.2f} s"
          f"   InMemorySessionStore {best['in-memory']:.2f} s   sqlite/in-memory {ratio:.2f}x")
    if args.postgres:
        print(f"  through PostgreSQL (Unix socket): {best['postgres']:.2f} s   postgres/in-memory "
              f"{best['postgres'] / best['in-memory']:.2f}x   postgres/sqlite {best['postgres'] / best['sqlite']:.2f}x")
    print(f"target: sqlite/in-memory <= 1.1 {'met' if ratio <= 1.1 else 'NOT met'}")
    return 0


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
