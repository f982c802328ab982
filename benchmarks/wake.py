"""Wake latency: Runtime.run(resume=…) on sessions.db, and on PostgreSQL, vs the SDK's InMemorySessionStore; and the whole
`flower` process vs the CLI's own `claude -p --resume`; same run (D7).

Usage: python benchmarks/wake.py [--case runtime|whole|both] [--entries N] [--repeat R] [--no-postgres] [--cold]

Case `whole` (the wake as a person feels it, measured from outside): see `whole_process`.

Case `runtime`:

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
import os
import random
import shutil
import signal
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import claude_agent_sdk
import orjson
from aiohttp import web
from claude_agent_sdk import ClaudeSDKClient, InMemorySessionStore, project_key_for_directory

import flower
from flower import AgentSpec, Runtime
from flower.core.lock import WAKE_FILE
from flower.runtime import Sessions
from flower.stores.sqlite import SqliteSessionStore
from flower.testing import ScriptedModel, text
from flower.workflow.flower import WORK
from store import SESSION, PgServer, Transcript, build  # benchmarks/store.py: the realistic transcript (and tests/pg.py)

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
from flowerscript import first_run  # noqa: E402 - tests/flowerscript.py: a whole first run of the flower path


class TimedModel(ScriptedModel):
    """The scripted model, noting when each /v1/messages request reaches it (before its body is read), and the resident
    memory of the process `watch` names at that moment (KB, from /proc)."""

    def __init__(self) -> None:
        super().__init__()
        self.arrivals: list[float] = []
        self.rss: list[tuple[int, int] | None] = []
        self.watch: int | None = None

    async def _messages(self, http: web.Request) -> web.StreamResponse:
        self.arrivals.append(time.perf_counter())
        self.rss.append(rss_kb(self.watch) if self.watch is not None else None)
        return await super()._messages(http)


def rss_kb(pid: int) -> tuple[int, int] | None:
    """VmRSS and VmHWM (the peak so far) of a process in KB, None once it is gone."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return None
    fields = {line.split(":")[0]: int(line.split()[1]) for line in status.splitlines() if line.startswith(("VmRSS:", "VmHWM:"))}
    return (fields["VmRSS"], fields["VmHWM"]) if len(fields) == 2 else None


def transcript(grow: float, seed: int = 11) -> Transcript:
    """The builder of benchmarks/store.py, its larger tool results ``grow`` times longer (towards ~60 MB)."""
    corpus = "\n".join(e["message"]["content"][0].get("content", "") for e in build(2000)
                       if e.get("type") == "user" and isinstance(e["message"]["content"], list))
    t = Transcript(random.Random(seed), corpus * 4)
    text_of = t.text
    t.text = lambda lo, hi: text_of(int(lo * grow), int(hi * grow)) if lo >= 2_000 else text_of(lo, hi)  # type: ignore[method-assign]
    return t


def session(n: int, cwd: str, grow: float) -> list[dict[str, Any]]:
    """At least ``n`` entries of whole turns, so the transcript ends where the CLI would stop."""
    t = transcript(grow)
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


async def runtime_case(args: argparse.Namespace) -> int:
    """Runtime.run(resume=…) on sessions.db (and PostgreSQL) vs the same SDK options on an InMemorySessionStore."""
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


# -- the whole wake, from outside ----------------------------------------------------------------

FLOWER = Path(sys.executable).parent / "flower"
CLAUDE = Path(claude_agent_sdk.__file__).parent / "_bundled" / "claude"
KILLED = 50
"""Entries the CLI's own file holds and the store lacks after a kill."""


@dataclasses.dataclass
class Sample:
    seconds: float
    rss_mb: float | None
    peak_mb: float | None
    messages: int


def cli_env(model: ScriptedModel, config: Path, home: Path, tmpdir: Path) -> dict[str, str]:
    """This process's env without credentials, locale or flower settings, pointed at the scripted model."""
    base = {k: v for k, v in os.environ.items()
            if k not in ("LC_ALL", "LC_MESSAGES") and not k.startswith(("ANTHROPIC_", "CLAUDE_", "FLOWER_"))}
    return {**base, **model.env(config), "CLAUDE_CODE_MAX_RETRIES": "0", "HOME": str(home), "LANG": "C.UTF-8",
            "TMPDIR": str(tmpdir)}


async def until_first_request(argv: list[str], cwd: Path, env: dict[str, str], model: TimedModel, log: Path,
                              timeout: float = 180.0, stop: signal.Signals = signal.SIGKILL, engine: int | None = None) -> Sample:
    """Launch `argv`, wait (bounded) for its first model request, then kill its process group (`stop`: SIGINT lets a
    profiler write its file; the group is killed after a bounded wait all the same). `engine`: the pid of the engine
    that makes the request (`flower --detach` returns once it has handed the wake over; the engine's RSS is noted)."""
    before, arrived = len(model.conversation), len(model.arrivals)
    with log.open("wb") as err:
        t0 = time.perf_counter()
        proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=asyncio.subprocess.DEVNULL, stderr=err, start_new_session=True)
        model.watch = proc.pid if engine is None else engine
        request = asyncio.ensure_future(model.wait_for_requests(before + 1, timeout))
        exited = asyncio.ensure_future(proc.wait() if engine is None else failed(proc))
        try:
            await asyncio.wait({request, exited}, return_when=asyncio.FIRST_COMPLETED, timeout=timeout + 5)
        finally:
            model.watch = None
            for task in (request, exited):
                task.cancel()
            if stop != signal.SIGKILL:
                proc.send_signal(stop)
                try:
                    await asyncio.wait_for(proc.wait(), 30)
                except TimeoutError:
                    pass
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            await asyncio.wait_for(proc.wait(), 30)
    if len(model.conversation) <= before:
        tail = log.read_text(errors="replace")[-2000:]
        raise RuntimeError(f"{argv[0]} sent no model request (exit {proc.returncode}):\n{tail}")
    first = model.conversation[before]
    if first.status not in (None, 200) and first.error:
        raise RuntimeError(f"the model refused the resumed transcript: {first.error}")
    rss = model.rss[arrived]
    return Sample(model.arrivals[arrived] - t0, rss[0] / 1024 if rss else None, rss[1] / 1024 if rss else None,
                  len(first.messages))


async def failed(proc: asyncio.subprocess.Process) -> None:
    """Returns only if `proc` exits with an error (a `flower --detach` that handed its wake over exits 0 and waits on)."""
    if await proc.wait() == 0:
        await asyncio.Event().wait()


async def run_to_end(argv: list[str], cwd: Path, env: dict[str, str], log: Path, timeout: float = 300.0) -> None:
    """Run `argv` to its end (bounded); its output goes to `log`."""
    with log.open("wb") as out:
        proc = await asyncio.create_subprocess_exec(*argv, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
                                                    stdout=out, stderr=out, start_new_session=True)
        try:
            code = await asyncio.wait_for(proc.wait(), timeout)
        except TimeoutError:
            os.killpg(proc.pid, signal.SIGKILL)
            await proc.wait()
            raise
    if code != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {code}:\n{log.read_text(errors='replace')[-2000:]}")


def chained(entries: Sequence[Mapping[str, Any]]) -> str | None:
    """The uuid of the last entry of the parentUuid chain (the one the next entry hangs off)."""
    return next((e["uuid"] for e in reversed(entries) if "parentUuid" in e and isinstance(e.get("uuid"), str)), None)


def more(t: Transcript, count: int, sid: str, cwd: Path) -> tuple[list[bytes], list[dict[str, Any]]]:
    """The builder's next entries, made this session's and this workspace's: the file's lines (every entry) and the
    stored entries (the mirrored ones), until `count` are mirrored (a kill can cut a turn anywhere)."""
    from flower.stores.reconcile import is_local_only

    lines: list[bytes] = []
    stored: list[dict[str, Any]] = []
    start = len(t.entries)
    while len(stored) < count:
        if start == len(t.entries):
            t.turn()
        entry = t.entries[start]
        start += 1
        line = orjson.dumps(entry).replace(SESSION.encode(), sid.encode()).replace(b"/home/dev/project", str(cwd).encode())
        lines.append(line)
        if not is_local_only(entry):
            stored.append(orjson.loads(line))
    del t.entries[start:]  # what was built past the cut is not part of this session
    return lines, stored


@dataclasses.dataclass
class Prepared:
    """One workspace with its grown work session, and how to put it back as a clean wake left it."""

    ws: Path
    config: Path
    sid: str
    jsonl: Path
    killed: set[str]
    """The uuids of the entries the CLI's own file holds after the kill and the store lacks."""
    snapshot: Path

    def restore(self, kill: bool) -> None:
        """runs/ and the CLI's config dir as the kill left them, or as the clean wake after it left them."""
        state = self.snapshot / ("killed" if kill else "clean")
        for live, kept in ((self.ws / "runs", state / "runs"), (self.config, state / "config")):
            shutil.rmtree(live)
            shutil.copytree(kept, live)


async def prepare(root: Path, model: TimedModel, args: argparse.Namespace, pythonpath: str | None) -> Prepared:
    """A real first run of the flower path, its work session grown with the builder's shapes, one clean wake to its end.

    `pythonpath`: run another checkout's flower (its `server/` dir), for a before/after in the same run.
    """
    ws, config, home, logs = root / "ws", root / "claude-config", root / "home", root / "logs"
    for d in (ws, config, home, logs):
        d.mkdir(parents=True)
    run_dir = ws / "runs"
    env = flower_env(model, config, home, root, pythonpath)
    model.push(*first_run(ws))
    await run_to_end([str(FLOWER), "build a calculator"], ws, env, logs / "first.log")
    sid = json.loads((run_dir / "lineage.json").read_bytes())["steps"][WORK]
    key = {"project_key": project_key_for_directory(ws), "session_id": sid}
    jsonl = config / "projects" / key["project_key"] / f"{sid}.jsonl"
    t = transcript(args.whole_grow)
    async with SqliteSessionStore(run_dir / "sessions.db") as store:
        real = await store.load(key) or []  # type: ignore[arg-type]
        t.parent = chained(real)
        lines, grown = more(t, args.whole_entries - len(real), sid, ws)
        mirrored = grown[:-KILLED]  # the kill cut the mirror: the CLI wrote its last entries to its own file only
        for i in range(0, len(mirrored), 1000):
            await store.append(key, mirrored[i:i + 1000])  # type: ignore[arg-type]
    with jsonl.open("ab") as f:
        f.write(b"".join(line + b"\n" for line in lines))
    # What a kill of that long run leaves (issue 35): the file grown by the whole run since the wake that started it
    # last swept it, the store trailing it, and the run's wake.json (its pid is gone).
    (run_dir / WAKE_FILE).write_text(json.dumps({"pid": dead_pid(), "started_at": time.time() - 3600}))
    killed = {u for e in grown[-KILLED:] if isinstance(u := e.get("uuid"), str)}
    snapshot = root / "snapshot"
    shutil.copytree(run_dir, snapshot / "killed" / "runs")
    shutil.copytree(config, snapshot / "killed" / "config")
    print(f"{root.name}: work session {len(real) + len(grown)} entries ({KILLED} of them in the CLI's file only), the CLI's "
          f"own file {jsonl.stat().st_size / 1e6:.1f} MB")
    del lines, grown, real, mirrored

    # One clean wake to its end: runs/ (lineage, manifest, the sweep's memory) as a clean wake leaves them.
    model.push(text("carried on"), text("Checked every goal.\nVERDICT: PASS"))
    before = len(model.conversation)
    await run_to_end([str(FLOWER)], ws, env, logs / "setup-wake.log")
    print(f"{root.name}: a whole wake resumed it, {len(model.conversation[before].messages)} messages in its first request")
    shutil.copytree(run_dir, snapshot / "clean" / "runs")
    shutil.copytree(config, snapshot / "clean" / "config")
    return Prepared(ws, config, sid, jsonl, killed, snapshot)


def evict(roots: Sequence[Path]) -> int:
    """Drop every file under `roots` from the page cache, written back first (posix_fadvise DONTNEED); how many files.

    `--cold` (issue 35: what is warm in the page cache): a wake after hours away finds neither the interpreter, the
    packages, the CLI's binary nor the session in memory. No root needed, unlike drop_caches, and the CLI's own resume
    is evicted alike.
    """
    count = 0
    for root in roots:
        for path in [root] if root.is_file() else (p for p in root.rglob("*") if p.is_file() and not p.is_symlink()):
            try:
                fd = os.open(path, os.O_RDONLY)
            except OSError:
                continue
            try:
                os.fdatasync(fd)  # dirty pages (restore's copies) are not dropped until written
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                count += 1
            finally:
                os.close(fd)
    return count


def cold_roots(prepared: Prepared) -> list[Path]:
    """What a wake of `prepared`, or the CLI's own resume of it, reads from disk: Python, the packages, flower, the CLI."""
    paths = sysconfig.get_paths()
    return [Path(os.path.realpath(sys.executable)), Path(paths["stdlib"]), Path(paths["platstdlib"]),
            Path(paths["purelib"]), Path(flower.__file__).parent, Path(os.path.realpath(CLAUDE)), prepared.ws, prepared.config]


def dead_pid() -> int:
    """The pid of a process that has ended (a killed flower's, as its wake.json names it)."""
    proc = subprocess.Popen([sys.executable, "-c", ""])
    proc.wait()
    return proc.pid


def flower_env(model: TimedModel, config: Path, home: Path, tmpdir: Path, pythonpath: str | None) -> dict[str, str]:
    """`cli_env`, with another checkout's flower first on the path when given (else this process's PYTHONPATH, if any:
    `PYTHONPATH=<a copy>/server` keeps the code measured fixed while the worktree changes)."""
    env = cli_env(model, config, home, tmpdir)
    if pythonpath:
        env["PYTHONPATH"] = pythonpath
    return env


async def stored_uuids(prepared: Prepared) -> set[str]:
    """The uuids the work session holds in the store now."""
    key = {"project_key": project_key_for_directory(prepared.ws), "session_id": prepared.sid}
    async with SqliteSessionStore(prepared.ws / "runs" / "sessions.db") as store:
        return {u for e in await store.load(key) or [] if isinstance(u := e.get("uuid"), str)}  # type: ignore[arg-type]


def wall(code: str, env: dict[str, str], repeat: int = 5) -> float:
    """Median seconds of a fresh interpreter running `code`."""
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


async def breakdown(prepared: Prepared, env: dict[str, str]) -> None:
    """Where a clean wake's time goes before its CLI starts, each part measured alone in this process (medians of 5)."""
    from claude_agent_sdk._internal.session_resume import _write_jsonl  # the SDK's own materialisation write

    from flower.core.context import context_of
    from flower.stores.prune import PruningSessionStore, write_jsonl

    prepared.restore(False)
    start = wall("pass", env)
    parts = {
        "Python start": start,
        "import flower.cli": wall("import flower.cli", env) - start,
        "import claude_agent_sdk (mcp, pydantic)": wall("import claude_agent_sdk", env) - start,
        "imports of a wake (service, runtime, SDK)": wall("import flower.cli.commands, flower.service, flower.runtime", env) - start,
    }
    key = {"project_key": project_key_for_directory(prepared.ws), "session_id": prepared.sid}
    times: dict[str, list[float]] = {}

    def timed(name: str, t0: float) -> float:
        now = time.perf_counter()
        times.setdefault(name, []).append(now - t0)
        return now

    async with SqliteSessionStore(prepared.ws / "runs" / "sessions.db") as store:
        view = PruningSessionStore(store)
        for _ in range(5):
            t0 = time.perf_counter()
            await store.last_context(key["project_key"], key["session_id"])
            t0 = timed("context, read from the end (now)", t0)
            context_of(await store.load(key))  # type: ignore[arg-type]
            t0 = timed("context, by loading the session (before)", t0)
            entries = await store.load(key)  # type: ignore[arg-type]
            t0 = timed("the resume's load (orjson, 20k entries)", t0)
            result = view.prune(entries or [])
            t0 = timed("pruning it", t0)
            with tempfile.TemporaryDirectory() as out:
                _write_jsonl(Path(out) / "s.jsonl", result.entries)
                t0 = timed("the SDK writing it out (stdlib json.dumps per entry, before)", t0)
                write_jsonl(Path(out) / "s.jsonl", result.entries)
                timed("flower writing it out (orjson per entry, now)", t0)
            del entries, result
    parts.update({name: statistics.median(ts) for name, ts in times.items()})
    print("where a wake's time goes, each part alone (medians of 5):")
    for name, secs in parts.items():
        print(f"  {name:<55} {secs:5.3f} s")


ENGINE_CASE = "warm engine (--detach)"


@dataclasses.dataclass
class Warm:
    """An engine started for the benchmark (its own socket), warm: it has run a wake of `prepared`'s folder before."""

    prepared: Prepared
    model: TimedModel
    env: dict[str, str]
    pid: int

    @classmethod
    async def start(cls, prepared: Prepared, model: TimedModel, root: Path) -> Warm:
        """`flower serve --background` on a socket of its own; the first (unmeasured) round warms it."""
        env = {**flower_env(model, prepared.config, prepared.ws.parent / "home", root, None),
               "FLOWER_ENGINE": str(root / "engine.sock"), "FLOWER_ENGINE_IDLE": "3600"}
        await run_to_end([str(FLOWER), "serve", "--background"], prepared.ws, env, root / "engine-start.log")
        made = cls(prepared, model, env, 0)
        made.pid = await made.idle()
        return made

    async def runs(self) -> dict[str, Any]:
        """`flower ps --json` in the folder (the engine's answer to flower/runs)."""
        proc = await asyncio.create_subprocess_exec(str(FLOWER), "ps", "--json", cwd=self.prepared.ws, env=self.env,
                                                    stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.DEVNULL)
        out, _ = await asyncio.wait_for(proc.communicate(), 60)
        return dict(json.loads(out))

    async def idle(self, timeout: float = 180.0) -> int:
        """Wait (bounded) until the engine runs no wake; its pid."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            runs = await self.runs()
            if runs.get("pid") and not any(r["running"] for r in runs["runs"]):
                return int(runs["pid"])
            await asyncio.sleep(0.2)
        raise RuntimeError(f"the engine still runs a wake after {timeout:.0f} s")

    async def wake(self, argv: list[str], log: Path) -> Sample:
        """Launch `argv` (`flower --detach`) until the engine's first model request; the wake then runs to its end, as
        the clean case's state was left (one work round, the judge's PASS)."""
        self.model.push(text("carried on"), text("Checked every goal.\nVERDICT: PASS"))
        before = len(self.model.conversation)
        sample = await until_first_request(argv, self.prepared.ws, self.env, self.model, log, engine=self.pid)
        await self.model.wait_for_requests(before + 2, 120)
        if await self.idle() != self.pid:
            raise RuntimeError("the engine was replaced during the benchmark: it was not warm")
        return sample

    async def stop(self) -> None:
        """Stop the engine by its pid (bounded), killing it if it does not end."""
        for sig in (signal.SIGTERM, signal.SIGKILL):
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                return
            for _ in range(100):
                if not Path(f"/proc/{self.pid}").exists():
                    return
                await asyncio.sleep(0.1)


async def whole_process(args: argparse.Namespace) -> int:
    """From launching `flower` (the console script, a subprocess) until the resumed work session's first request reaches
    the scripted model: a clean wake, a wake after a kill, and the CLI's own `claude -p --resume <id> continue` on the same
    session, `--runs` times each, interleaved; medians, flower/CLI ratios, and flower's RSS at that request.

    The session: a real first run of the flower path (clarify → goals → work → judge) against the scripted model, its work
    session grown with the builder's shapes to `--whole-entries` stored entries (the CLI's own file holding every line, as
    one long CLI run leaves it). "After a kill" is that long run killed (issue 35): the sweep last read the file when the
    run began, the store lacks the run's last `KILLED` entries (written to the CLI's file, never mirrored) and the run's
    wake.json is left behind. "Clean" is the state after one real wake from there ran to its end. `--compare DIR` runs
    another checkout's flower (DIR = its `server/`) on a workspace of its own, prepared alike, in the same rounds.
    Targets: clean ≤ 1.3× the CLI, after a kill ≤ 1.4×, flower's Python RSS at the first request ≤ 200 MB.
    """
    # As an installed flower starts: from bytecode (light.py says why; PYTHONDONTWRITEBYTECODE keeps an editable
    # checkout from writing any). The flower a wake runs is compiled alike, another checkout's (--compare) too.
    for server in filter(None, (Path(flower.__file__).parent, args.compare and Path(args.compare) / "flower")):
        subprocess.run([sys.executable, "-m", "compileall", "-q", str(server)], check=True, timeout=300)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        model = TimedModel()
        await model.start()
        engine: Warm | None = None
        try:
            variants = {"": await prepare(root / "this", model, args, None)}
            if args.compare:
                variants[" (compare)"] = await prepare(root / "compare", model, args, str(Path(args.compare).resolve()))
            main = variants[""]
            # The moonshot (issue 35): a wake through an engine that is already running and has served this folder
            # before (the SDK imported, the folder's records open). A workspace of its own: the engine holds its files.
            warm = await prepare(root / "engine", model, args, None) if args.engine else None
            cases: dict[str, tuple[Prepared, list[str], bool, str | None]] = {}
            for label, prepared in variants.items():
                path = str(Path(args.compare).resolve()) if label else None
                cases[f"clean{label}"] = (prepared, [str(FLOWER)], False, path)
                cases[f"after a kill{label}"] = (prepared, [str(FLOWER)], True, path)
            if warm is not None:
                cases[ENGINE_CASE] = (warm, [str(FLOWER), "--detach"], False, None)
            cases["claude -p --resume"] = (main, [str(CLAUDE), "-p", "--resume", main.sid, "continue"], False, None)
            logs = root / "logs"
            logs.mkdir()
            engine = await Warm.start(warm, model, root) if warm is not None else None
            samples: dict[str, list[Sample]] = {name: [] for name in cases}
            if args.profile is not None:  # each flower case once under cProfile, stopped by Ctrl-C at its first request
                for name in ("clean", "after a kill"):
                    prepared, argv, kill, path = cases[name]
                    prepared.restore(kill)
                    out = Path(args.profile).resolve() / f"{name.replace(' ', '-')}.prof"
                    env = flower_env(model, prepared.config, prepared.ws.parent / "home", root, path)
                    sample = await until_first_request([sys.executable, "-m", "cProfile", "-o", str(out), *argv],
                                                       prepared.ws, env, model, logs / "profile.log", stop=signal.SIGINT)
                    print(f"{name}: {sample.seconds:.2f} s under cProfile, written to {out}")
                return 0
            for n in range(args.runs + 1):  # the first round unmeasured: cold caches
                for name, (prepared, argv, kill, path) in cases.items():
                    if engine is not None and prepared is warm:
                        if args.cold:
                            evict(cold_roots(prepared))
                        sample = await engine.wake(argv, logs / f"engine-{n}.log")
                        if sample.messages < 100:
                            raise RuntimeError(f"{name}: the first request carried {sample.messages} messages, not the session")
                        if n:
                            samples[name].append(sample)
                        continue
                    prepared.restore(kill)
                    tmpdir = root / f"tmp-{n}-{len(samples[name])}"  # the SDK's claude-resume-* dirs: none left over
                    tmpdir.mkdir()
                    env = flower_env(model, prepared.config, prepared.ws.parent / "home", tmpdir, path)
                    if args.cold:
                        evict(cold_roots(prepared))
                    sample = await until_first_request(argv, prepared.ws, env, model, logs / f"{name.replace(' ', '-')}-{n}.log")
                    shutil.rmtree(tmpdir, ignore_errors=True)
                    if sample.messages < 100:
                        raise RuntimeError(f"{name}: the first request carried {sample.messages} messages, not the session")
                    if kill and n == 0 and not prepared.killed <= await stored_uuids(prepared):
                        raise RuntimeError(f"{name}: the wake did not import what only the CLI's file held")
                    if n:
                        samples[name].append(sample)
            await breakdown(main, flower_env(model, main.config, main.ws.parent / "home", root, None))
        finally:
            if engine is not None:
                await engine.stop()
            await model.stop()

    cli = statistics.median(s.seconds for s in samples["claude -p --resume"])
    print(f"whole wake, launch to the resumed session's first request, medians of {args.runs} interleaved runs"
          f"{', each from a cold page cache' if args.cold else ''}:")
    met = True
    for name in cases:
        if name == "claude -p --resume":
            continue
        if name == ENGINE_CASE:
            secs = statistics.median(s.seconds for s in samples[name])
            rss = statistics.median(s.rss_mb or 0 for s in samples[name])
            print(f"  flower, {name:<23} {secs:5.2f} s  flower/CLI {secs / cli:4.2f}x (moonshot <= 1.0x)"
                  f"   the engine's RSS at that request {rss:4.0f} MB (it holds the folder between wakes)")
            print(f"    its runs: {' '.join(f'{s.seconds:.2f}' for s in samples[name])}")
            continue
        target = 1.3 if name.startswith("clean") else 1.4
        secs = statistics.median(s.seconds for s in samples[name])
        rss = statistics.median(s.rss_mb or 0 for s in samples[name])
        peak = statistics.median(s.peak_mb or 0 for s in samples[name])
        if name in ("clean", "after a kill"):
            met = met and secs / cli <= target and rss <= 200
        print(f"  flower, {name:<23} {secs:5.2f} s  flower/CLI {secs / cli:4.2f}x (target <= {target}x)"
              f"   flower's Python RSS at that request {rss:4.0f} MB (target <= 200), its peak before {peak:4.0f} MB")
        print(f"    its runs: {' '.join(f'{s.seconds:.2f}' for s in samples[name])}")
    print(f"  claude -p --resume              {cli:5.2f} s")
    print(f"    its runs: {' '.join(f'{s.seconds:.2f}' for s in samples['claude -p --resume'])}")
    print(f"targets {'met' if met else 'NOT met'}")
    return 0


async def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--case", choices=("runtime", "whole", "both"), default="both")
    ap.add_argument("--entries", type=int, default=20_000, help="runtime case: the session's entries")
    ap.add_argument("--whole-entries", type=int, default=20_010, help="whole case: the work session's stored entries")
    ap.add_argument("--grow", type=float, default=2.5, help="length factor of the larger tool results")
    ap.add_argument("--whole-grow", type=float, default=1.45, help="whole case: the length factor (the file ~62 MB)")
    ap.add_argument("--repeat", type=int, default=5, help="runtime case: wakes of each kind, taking turns (the best is kept)")
    ap.add_argument("--runs", type=int, default=7, help="whole case: runs of each kind, interleaved (medians)")
    ap.add_argument("--compare", metavar="SERVER_DIR", help="whole case: also run another checkout's flower (its server/ dir)")
    ap.add_argument("--profile", metavar="DIR", help="whole case: profile each flower case once into DIR, measure nothing")
    ap.add_argument("--cold", action="store_true", help="whole case: every run starts with nothing it reads in the page cache")
    ap.add_argument("--no-engine", dest="engine", action="store_false", help="whole case: skip the wake through a warm engine")
    ap.add_argument("--no-postgres", dest="postgres", action="store_false", help="skip the resume through PostgreSQL")
    args = ap.parse_args()
    code = await runtime_case(args) if args.case in ("runtime", "both") else 0
    if args.case in ("whole", "both"):
        code = await whole_process(args) or code
    return code


if __name__ == "__main__":
    sys.exit(asyncio.run(main()))
