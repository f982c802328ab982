"""Fuzz the editor server: N seeded hostile frames against `python -m flower.lsp` on stdio (issue 13).

Usage: python benchmarks/fuzz_lsp.py [--frames N] [--seed S] [--every K] [--flood F]

Frames: random bytes, bad or missing Content-Length, a length longer than the body, truncated
frames, invalid UTF-8, deeply nested JSON, a 10 MB string (to an unknown method or beside a
wrong-typed field of any request, about 1 frame in 100), batch arrays, JSON that is no
message, requests without id, unknown methods, every flower method with every field of the
wrong type (and odd values of the right type), standard LSP methods with junk params, floods
of status requests, cancels of unknown ids. The first frames cover every kind once; the last F
(default 50) are a flood of 10 MB strings.

Every K frames (default 100) a checkpoint: if a frame lied about its length, `\\r\\n` padding
lets the server finish the body it waits for; then `flower/status` must be answered within 1 s
(else a hang); every request sent while the stream was in sync must have got its answer with the
expected JSON-RPC code, and every body that is not UTF-8 JSON a ParseError; VmRSS is read from
/proc. At the end: `shutdown`, a request after it (InvalidRequest), `exit` (code 0).

Prints the figures and status latency at checkpoints against the idle server measured first in
the same run (D7), and the server's VmRSS before the first hostile frame (initialized, idle
baseline done) and after the last checkpoint, with the verdict against +50 MB (issue 35).
Targets for --frames 10000: 0 crashes, 0 hangs, 0 unanswered, RSS after <= before + 50 MB.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import random
import re
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, BinaryIO

import attrs
from pygls.uris import from_fs_path

from flower.lsp import protocol as p

PARSE_ERROR, INVALID_REQUEST, METHOD_NOT_FOUND, INVALID_PARAMS, INTERNAL_ERROR = -32700, -32600, -32601, -32602, -32603
OK = 0
"""Expected: a result, not an error."""
ANY = None
"""Expected: an answer, result or error."""
ANSWER_WITHIN = 1.0
"""Seconds the server has to answer the checkpoint's `flower/status` (issue 13)."""
PENDING_WITHIN = 10.0
"""Seconds the answers of in-sync requests may trail the checkpoint's status (async handlers answer later)."""
BIG = 10 * 2**20
RSS_GROWTH = 50 * 1024
"""Most the server's VmRSS may grow over a run, in kB (issue 35): 10 MB frames come and go, nothing may pile up."""
REQUESTS: dict[str, type] = {p.WAKE: p.WakeParams, p.SAY: p.SayParams, p.NEW: p.NewParams,
                             p.STATUS: p.StatusParams, p.HISTORY: p.HistoryParams}
"""Every flower request and its params class: each field gets wrong types."""
WRONG: dict[type, list[Any]] = {str: [0, -1, 1.5, True, False, [], {}, ["file:///x"], {"uri": "file:///x"}],
         int: ["1", "x", 1.5, True, [], {}, [1]], dict: [0, -1, 1.5, True, "PATH=/bin", [], ["PATH"], {"PATH": 5}],
         bool: ["true", "x", 1.5, [], {}]}
"""JSON values of another type than the field's."""
ODD: dict[type, list[Any]] = {str: ["", " ", "\u0000", "file://", "file:///nonexistent/folder", "x" * 5000, "\udc80"],
       int: [0, -1, -(2**63), 2**63, 10**30], bool: [True, False]}
"""Values of the right type at the edges: any answer will do, a crash or silence will not."""


def camel(name: str) -> str:
    return re.sub(r"_(\w)", lambda m: m.group(1).upper(), name)


@dataclass
class Frame:
    """Bytes to send and what the server owes for them."""

    data: bytes
    kind: str = ""
    expect: dict[int, int | None] = field(default_factory=dict)
    """Request id → expected error code (OK: a result; ANY: any answer)."""
    parse_errors: int = 0
    """ParseErrors (null id) the frame must get."""
    null_invalid: int = 0
    """InvalidRequests with a null id the frame must get."""
    lie: int = 0
    """Bytes of body promised and not sent: the server waits for them, the stream is out of sync."""


@dataclass
class Report:
    """What a fuzz run measured."""

    frames: int = 0
    kinds: Counter[str] = field(default_factory=Counter)
    checks: int = 0
    resyncs: int = 0
    """Status requests sent after padding that put the stream right after a lying frame."""
    crashes: int = 0
    hangs: int = 0
    unanswered: list[str] = field(default_factory=list)
    wrong: list[str] = field(default_factory=list)
    """Answers with another code than expected."""
    internal_errors: list[str] = field(default_factory=list)
    """-32603 answers (a bug, though the server stays up)."""
    parse_errors: tuple[int, int] = (0, 0)
    """ParseErrors (null id): (expected at least, received)."""
    invalid_requests: tuple[int, int] = (0, 0)
    """InvalidRequests with a null id (batches, JSON that is no message): (expected at least, received)."""
    after_shutdown: int | None = None
    """The code a request after shutdown got."""
    exit_code: int | None = None
    rss_kb: list[int] = field(default_factory=list)
    """VmRSS at each checkpoint."""
    rss_before_kb: int = 0
    """VmRSS before the first hostile frame: initialized, the idle baseline measured."""
    idle_ms: list[float] = field(default_factory=list)
    status_ms: list[float] = field(default_factory=list)
    seconds: float = 0.0
    stderr_tail: str = ""

    @property
    def ok(self) -> bool:
        return (not self.crashes and not self.hangs and not self.unanswered and not self.wrong
                and self.parse_errors[1] >= self.parse_errors[0] and self.invalid_requests[1] >= self.invalid_requests[0]
                and self.after_shutdown == INVALID_REQUEST and self.exit_code == 0
                and bool(self.rss_kb) and self.rss_growth_kb <= RSS_GROWTH)

    @property
    def rss_growth_kb(self) -> int:
        """VmRSS after the last checkpoint minus before the first hostile frame (issue 35's measure)."""
        return (self.rss_kb[-1] - self.rss_before_kb) if self.rss_kb else 0

    def lines(self) -> list[str]:
        rss = self.rss_kb or [0]
        idle, status = statistics.median(self.idle_ms or [0]), statistics.median(self.status_ms or [0])
        return [
            f"frames={self.frames} checks={self.checks} resyncs={self.resyncs} crashes={self.crashes} hangs={self.hangs} "
            f"unanswered={len(self.unanswered)} wrong_code={len(self.wrong)} internal_errors={len(self.internal_errors)}",
            f"parse_errors expected>={self.parse_errors[0]} got={self.parse_errors[1]}  null-id invalid_requests "
            f"expected>={self.invalid_requests[0]} got={self.invalid_requests[1]}  "
            f"after_shutdown={self.after_shutdown}  exit_code={self.exit_code}  seconds={self.seconds:.1f}",
            f"rss before={self.rss_before_kb / 1024:.1f} MB after={rss[-1] / 1024:.1f} MB "
            f"growth={self.rss_growth_kb / 1024:+.1f} MB (target <= +{RSS_GROWTH / 1024:.0f} MB: "
            f"{'ok' if self.rss_kb and self.rss_growth_kb <= RSS_GROWTH else 'OVER'}); peak={max(rss) / 1024:.1f} MB",
            f"status at checkpoints p50={status:.1f} ms max={max(self.status_ms or [0]):.1f} ms; idle p50={idle:.1f} ms; "
            f"ratio={status / idle if idle else 0:.1f}x",
            "kinds: " + " ".join(f"{k}={n}" for k, n in sorted(self.kinds.items())),
            *(f"  unanswered {u}" for u in self.unanswered[:10]),
            *(f"  wrong {w}" for w in self.wrong[:10]),
            *(f"  internal error {e}" for e in self.internal_errors[:10]),
        ]


def frame(body: bytes | str) -> bytes:
    data = body.encode() if isinstance(body, str) else body
    return b"Content-Length: %d\r\n\r\n" % len(data) + data


class Fuzz:
    """The seeded frame generator: one method per kind of frame."""

    def __init__(self, seed: int, folder: str) -> None:
        self.rng = random.Random(seed)
        self.folder = folder
        self.next_id = 1000
        self.kinds: dict[str, tuple[float, Callable[[], Frame]]] = {
            "random_bytes": (8, self.random_bytes), "bad_length": (8, self.bad_length), "no_length": (6, self.no_length),
            "long_length": (5, self.long_length), "truncated": (6, self.truncated), "invalid_utf8": (5, self.invalid_utf8),
            "deep_json": (3, self.deep_json), "big_string": (1, self.big_string), "batch": (4, self.batch),
            "not_a_message": (5, self.not_a_message), "without_id": (6, self.without_id),
            "unknown_method": (6, self.unknown_method), "wrong_type": (16, self.wrong_type), "odd_value": (6, self.odd_value),
            "lsp_junk": (4, self.lsp_junk), "status_flood": (2, self.status_flood), "cancel_unknown": (5, self.cancel_unknown),
        }
        self.first = list(self.kinds)
        self.rng.shuffle(self.first)

    def __call__(self, kind: str | None = None) -> Frame:
        """The next frame (of `kind` if given): every kind once first, then at random by weight."""
        if kind is None:
            kind = self.first.pop() if self.first else self.rng.choices(list(self.kinds), [w for w, _ in self.kinds.values()])[0]
        result = self.kinds[kind][1]()
        result.kind = kind
        return result

    def id(self) -> int:
        self.next_id += 1
        return self.next_id

    def request(self, method: str, params: Any, msg_id: int | None = None) -> str:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if msg_id is not None:
            message["id"] = msg_id
        return json.dumps(message)

    def status(self) -> tuple[int, str]:
        msg_id = self.id()
        return msg_id, self.request(p.STATUS, self.rng.choice([{"folder": self.folder}, {}, None]), msg_id)

    def valid(self, cls: type) -> dict[str, Any]:
        """Params of `cls` that structure (a run that does not start anything: no credentials in the server's env)."""
        values = {"folder": self.folder, "text": "fuzz", "sessionId": "none", "before": 1, "limit": 10, "env": {}, "fresh": False}
        return {camel(a.name): values[camel(a.name)] for a in attrs.fields(cls)}

    # -- the kinds -----------------------------------------------------------------------------
    def random_bytes(self) -> Frame:
        return Frame(self.rng.randbytes(self.rng.randint(1, 4096)))

    def bad_length(self) -> Frame:
        value = self.rng.choice([b"abc", b"-5", b"-1", b"", b" ", b"1e3", b"0x20", b"12abc", b"\xff\xfe",
                                 b"99999999999", b"99999999999999999999999", b"1" * 5000, b"0"])
        msg_id, body = self.status()
        data = b"Content-Length: " + value + b"\r\n\r\n" + body.encode()
        # A zero length is a usable header: an empty body, not JSON. The skipped body's request gets no answer.
        return Frame(data, parse_errors=1 if value == b"0" else 0)

    def no_length(self) -> Frame:
        _, body = self.status()
        head = self.rng.choice([b"", b"\r\n", b"Content-Type: application/vscode-jsonrpc; charset=utf-8\r\n\r\n",
                                b"Content-Lenght: 40\r\n\r\n", b"X: 1\r\nY: 2\r\n\r\n"])
        return Frame(head + body.encode())

    def long_length(self) -> Frame:
        _, body = self.status()
        extra = self.rng.randint(1, 2048)
        return Frame(b"Content-Length: %d\r\n\r\n" % (len(body) + extra) + body.encode(), lie=len(body) + extra)

    def truncated(self) -> Frame:
        _, body = self.status()
        data = frame(body)
        return Frame(data[:self.rng.randint(1, len(data) - 1)], lie=len(body))

    def invalid_utf8(self) -> Frame:
        msg_id = self.id()
        bad = self.rng.choice([b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf8\x88\x80\x80\x80", b"\x80abc", b"\xc0\xaf"])
        body = b'{"jsonrpc": "2.0", "id": %d, "method": "flower/status", "params": {"folder": "x' % msg_id + bad + b'"}}'
        return Frame(frame(body), parse_errors=1)

    def deep_json(self) -> Frame:
        depth = self.rng.choice([50, 200, 5_000, 100_000, 500_000])
        open_, close = self.rng.choice([("[", "]"), ('{"a":', "}")])
        nested = open_ * depth + "1" + close * depth
        msg_id = self.id()
        body = f'{{"jsonrpc": "2.0", "id": {msg_id}, "method": "flower/status", "params": {{"folder": {nested}}}}}'
        if depth > 500:  # deeper than Python's json parser recurses: a ParseError
            return Frame(frame(body), parse_errors=1)
        return Frame(frame(body), expect={msg_id: INVALID_PARAMS})

    def big_string(self) -> Frame:
        """A 10 MB string: to an unknown method, or beside a wrong-typed field of any request (issue 35: the outside
        harness's 2,000 frames left +192 MB, held by the failed handler's traceback)."""
        msg_id = self.id()
        big = "x" * BIG
        if self.rng.random() < 0.25:
            return Frame(frame(self.request("flower/fuzzBig", {"text": big}, msg_id)), expect={msg_id: METHOD_NOT_FOUND})
        method = self.rng.choice(list(REQUESTS))
        params = self.valid(REQUESTS[method])
        name = self.rng.choice(list(params))
        params[name] = self.rng.choice(WRONG[type(params[name])])
        params["big"] = big
        return Frame(frame(self.request(method, params, msg_id)), expect={msg_id: INVALID_PARAMS})

    def batch(self) -> Frame:
        items = [json.loads(self.status()[1]) for _ in range(self.rng.randint(0, 3))]
        return Frame(frame(json.dumps(items)), null_invalid=1)

    def not_a_message(self) -> Frame:
        msg_id = self.id()
        body = self.rng.choice([42, "x", None, True, {}, {"jsonrpc": "1.0", "id": msg_id, "method": p.STATUS},
                                {"id": msg_id, "method": p.STATUS}, {"jsonrpc": 2, "id": msg_id, "method": p.STATUS}])
        if isinstance(body, dict) and "id" in body:
            return Frame(frame(json.dumps(body)), expect={msg_id: INVALID_REQUEST})
        return Frame(frame(json.dumps(body)), null_invalid=1)

    def without_id(self) -> Frame:
        method = self.rng.choice([*REQUESTS, "flower/nope", "", "$/nope"])
        params: Any = self.rng.choice([None, 1, "x", [], {"folder": 5}, {"folder": self.folder, "limit": "x"}])
        if method in REQUESTS and method != p.STATUS:
            params = {"folder": [params]}  # never a valid wake/say/new: nothing may start
        return Frame(frame(self.request(method, params)))

    def unknown_method(self) -> Frame:
        msg_id = self.id()
        method = self.rng.choice(["flower/nope", "flower/Status", "flower/status/", "$/nope",
                                  "", "ünïcødé/方法", "x" * 3000])
        return Frame(frame(self.request(method, {"folder": self.folder}, msg_id)), expect={msg_id: METHOD_NOT_FOUND})

    def wrong_type(self) -> Frame:
        msg_id = self.id()
        method = self.rng.choice(list(REQUESTS))
        cls = REQUESTS[method]
        fields = {camel(a.name): a for a in attrs.fields(cls)}
        params: Any = self.valid(cls)
        how = self.rng.random()
        required = [name for name, a in fields.items() if a.default is attrs.NOTHING]
        if how < 0.15 or not fields:  # params itself of a wrong type (null is fine where nothing is required)
            params = self.rng.choice([[], "x", 5, True, [params]] + ([None] if required else []))
        elif how < 0.3 and required:
            del params[self.rng.choice(required)]
        else:
            name = self.rng.choice(list(fields))
            params[name] = self.rng.choice(WRONG[type(params[name])] + ([None] if name in required else []))
        return Frame(frame(self.request(method, params, msg_id)), expect={msg_id: INVALID_PARAMS})

    def odd_value(self) -> Frame:
        msg_id = self.id()
        method = self.rng.choice([p.STATUS, p.HISTORY])  # read-only: wake/say/new with a usable value would start work
        params = self.valid(REQUESTS[method])
        name = self.rng.choice(list(params))
        params[name] = self.rng.choice(ODD[type(params[name])])
        return Frame(frame(self.request(method, params, msg_id)), expect={msg_id: ANY})

    def lsp_junk(self) -> Frame:
        junk: Any = self.rng.choice([None, 5, "x", [], {"capabilities": 5}, {"processId": "x"}, {"event": 1}, {"token": []}])
        method = self.rng.choice(["initialize", "textDocument/hover", "workspace/didChangeWorkspaceFolders",
                                  "window/workDoneProgress/cancel", "initialized", "$/setTrace",
                                  "workspace/didChangeConfiguration"])
        if method == "textDocument/hover":  # not served, but LSP types its params: InvalidParams or MethodNotFound
            msg_id = self.id()
            return Frame(frame(self.request(method, junk, msg_id)), expect={msg_id: ANY})
        if method == "initialize" and junk not in (None, {}):  # a request: it must be answered (with an error)
            msg_id = self.id()
            return Frame(frame(self.request(method, junk, msg_id)), expect={msg_id: ANY})
        if method == "initialize":
            junk = 5
        return Frame(frame(self.request(method, junk)))

    def status_flood(self) -> Frame:
        ids, bodies = zip(*(self.status() for _ in range(self.rng.randint(20, 200))), strict=True)
        return Frame(b"".join(frame(b) for b in bodies), expect=dict.fromkeys(ids, OK))

    def cancel_unknown(self) -> Frame:
        params = self.rng.choice([{"id": self.rng.randint(-(2**40), 2**40)}, {"id": "nope"}, {"id": [1]}, {}, None, 5,
                                  {"id": None}])
        return Frame(frame(self.request("$/cancelRequest", params)))


@dataclass
class Sent:
    """Bytes queued for the server's stdin, and when they were written."""

    data: bytes
    done: threading.Event = field(default_factory=threading.Event)
    at: float = 0.0


class Wire:
    """The server process on stdio: a writer thread feeds stdin, a reader thread files every answer by id."""

    def __init__(self, cmd: list[str], env: dict[str, str], cwd: Path, stderr: BinaryIO) -> None:
        self.proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=stderr, cwd=cwd, env=env,
                                     start_new_session=True)
        self.answers: dict[Any, dict[str, Any]] = {}
        self.null_errors: Counter[int] = Counter()
        self.changed = threading.Condition()
        self.arrived: dict[Any, float] = {}
        """Request id → perf_counter() when its answer was read."""
        self.outbox: queue.Queue[Sent | None] = queue.Queue()
        self.broken = False
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=self._write, daemon=True).start()

    def _read(self) -> None:
        stream = self.proc.stdout
        assert stream is not None
        while True:
            length = None
            while (line := stream.readline()) not in (b"\r\n", b""):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":")[1])
            if not line or length is None:
                break
            message = json.loads(stream.read(length))
            with self.changed:
                if "id" in message and ("result" in message or "error" in message):
                    if message["id"] is None:
                        self.null_errors[message["error"]["code"]] += 1
                    else:
                        self.answers[message["id"]] = message
                        self.arrived[message["id"]] = time.perf_counter()
                self.changed.notify_all()
        with self.changed:
            self.broken = True
            self.changed.notify_all()

    def _write(self) -> None:
        stream = self.proc.stdin
        assert stream is not None
        while (item := self.outbox.get()) is not None:
            try:
                stream.write(item.data)
                stream.flush()
            except (BrokenPipeError, ValueError, OSError):
                self.broken = True
            item.at = time.perf_counter()
            item.done.set()

    def send(self, data: bytes) -> Sent:
        """Queue bytes for stdin; `done` is set once they are written."""
        sent = Sent(data)
        self.outbox.put(sent)
        return sent

    def wait(self, ready: Callable[[], bool], timeout: float) -> bool:
        """Wait until ready() (under the lock), the output ends, or timeout."""
        with self.changed:
            return self.changed.wait_for(lambda: ready() or self.broken, timeout) and ready()

    def request(self, msg_id: int, method: str, params: Any, timeout: float) -> tuple[dict[str, Any] | None, float]:
        """Send a request; its answer (None if none within `timeout` of being written) and seconds from written to answered."""
        sent = self.send(frame(json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params})))
        if not sent.done.wait(60):  # the server stopped reading its input
            return None, 60.0
        self.wait(lambda: msg_id in self.answers, max(0.0, sent.at + timeout - time.perf_counter()))
        with self.changed:
            answer = self.answers.get(msg_id)
            return answer, (self.arrived[msg_id] - sent.at if answer is not None else timeout)

    def initialize(self, folder: str) -> bool:
        """The LSP handshake with one workspace folder; False if the server did not answer it."""
        params: dict[str, Any] = {"processId": os.getpid(), "rootUri": None, "capabilities": {}, "workspaceFolders": [{"uri": folder, "name": "ws"}]}
        answer, _ = self.request(1, "initialize", params, 60)
        self.send(frame(json.dumps({"jsonrpc": "2.0", "method": "initialized", "params": {}})))
        return answer is not None and "result" in answer

    def rss_kb(self) -> int:
        try:
            text = Path(f"/proc/{self.proc.pid}/status").read_text()
        except OSError:
            return 0
        found = re.search(r"VmRSS:\s+(\d+)", text)
        return int(found.group(1)) if found else 0

    def close(self) -> None:
        """Kill the server (its process group) if it still runs, and stop the writer thread."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.outbox.put(None)
        self.proc.wait(10)


def code(answer: dict[str, Any]) -> int:
    return int(answer["error"]["code"]) if "error" in answer else OK


def start(tmp: Path, stderr: BinaryIO) -> tuple[Wire, str]:
    """`python -m flower.lsp` in `tmp`, initialized with the folder `tmp/ws`; the wire and the folder's URI.

    The server's env has no credentials: whatever slips through as a valid wake stops at MissingCredentials
    and starts no agent.
    """
    workspace, config = tmp / "ws", tmp / "claude-config"
    workspace.mkdir(exist_ok=True)
    config.mkdir(exist_ok=True)
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_CODE_", "AWS_", "GOOGLE_"))}
    env["CLAUDE_CONFIG_DIR"] = str(config)
    folder = from_fs_path(str(workspace))
    assert folder is not None
    return Wire([sys.executable, "-m", "flower.lsp"], env, tmp, stderr), folder


def fuzz(frames: int, seed: int, every: int = 100, within: float = ANSWER_WITHIN, workdir: Path | None = None,
         progress: Callable[[str], None] | None = None, flood: int = 0) -> Report:
    """Start `python -m flower.lsp`, send `frames` seeded frames with a checkpoint every `every`, shut it down; the figures.

    The last `flood` frames are all 10 MB strings (`big_string`) back to back, as a hostile client floods: what a
    failed request leaves behind piles up there, where the mix's other frames no longer stir the garbage collector.
    A checkpoint's status answered later than `within` seconds counts as a hang (tests pass a liveness bound, not a timing).
    """
    tmp = workdir or Path(tempfile.mkdtemp(prefix="flower-fuzz-"))
    report = Report()
    started = time.perf_counter()
    with open(tmp / "server.stderr", "wb") as stderr:
        wire, folder = start(tmp, stderr)
        try:
            _run(wire, Fuzz(seed, folder), folder, frames, every, within, report, progress or (lambda _: None), flood)
        finally:
            wire.close()
            report.exit_code = report.exit_code if report.exit_code is not None else wire.proc.returncode
    report.seconds = time.perf_counter() - started
    report.stderr_tail = (tmp / "server.stderr").read_text(errors="replace")[-3000:]
    if workdir is None:
        shutil.rmtree(tmp, ignore_errors=True)
    return report


def _run(wire: Wire, fuzz: Fuzz, folder: str, frames: int, every: int, within: float, report: Report,
         progress: Callable[[str], None], flood: int = 0) -> None:
    if not wire.initialize(folder):
        report.crashes += 1
        return
    for i in range(20):  # the idle baseline (D7)
        answer, seconds = wire.request(10 + i, p.STATUS, {"folder": folder}, 10)
        report.idle_ms.append(seconds * 1000)
    report.rss_before_kb = wire.rss_kb()
    expect: dict[int, tuple[str, int | None]] = {}
    parse_errors = null_invalid = lie = 0
    resync_after = 0
    for n in range(1, frames + 1):
        item = fuzz("big_string" if n > frames - flood else None)
        report.frames, report.kinds[item.kind] = n, report.kinds[item.kind] + 1
        if not lie:  # sent in sync: the server owes what the frame asks
            expect.update({k: (item.kind, v) for k, v in item.expect.items()})
            parse_errors += item.parse_errors
            null_invalid += item.null_invalid
        if item.lie and not lie:
            resync_after = fuzz.rng.randint(1, 4)  # a lie swallows a few frames before the stream is put right
        lie = max(lie, item.lie)
        wire.send(item.data)
        if n % every == 0 or n == frames:
            if not _checkpoint(wire, fuzz, report, expect, lie, within):
                return
            expect, lie, resync_after = {}, 0, 0
            progress(f"{n} frames: rss={report.rss_kb[-1] / 1024:.1f} MB status={report.status_ms[-1]:.1f} ms")
        elif lie and (resync_after := resync_after - 1) == 0:
            if not _resync(wire, fuzz, report, lie):
                return
            lie = 0
    with wire.changed:
        report.parse_errors = (parse_errors, wire.null_errors[PARSE_ERROR])
        report.invalid_requests = (null_invalid, wire.null_errors[INVALID_REQUEST])
    answer, _ = wire.request(fuzz.id(), "shutdown", None, 60)
    if answer is None:
        report.hangs += 1
        return
    answer, _ = wire.request(fuzz.id(), p.STATUS, None, 10)
    report.after_shutdown = code(answer) if answer is not None else None
    wire.send(frame(json.dumps({"jsonrpc": "2.0", "method": "exit"})))
    try:
        report.exit_code = wire.proc.wait(20)
    except subprocess.TimeoutExpired:
        report.hangs += 1


def _resync(wire: Wire, fuzz: Fuzz, report: Report, lie: int) -> bool:
    """Put the stream right after frames that lied about their length: padding, then a status that must be answered.

    The server may still wait for up to `lie` bytes of a body: one line of `lie + 64` dashes feeds it and ends as
    a garbage line (never a blank one, which could start a body), so the next header is read as a header.
    """
    report.resyncs += 1
    wire.send(b"-" * (lie + 64) + b"\r\n")
    answer, _ = wire.request(fuzz.id(), p.STATUS, None, 30)
    if answer is None:
        report.hangs += 1
        report.crashes += wire.proc.poll() is not None
        return False
    return True


def _checkpoint(wire: Wire, fuzz: Fuzz, report: Report, expect: dict[int, tuple[str, int | None]], lie: int,
                within: float) -> bool:
    """Resync padding if needed, status within `within` seconds, every owed answer; False if the server is gone or deaf."""
    report.checks += 1
    if lie and not _resync(wire, fuzz, report, lie):
        return False
    answer, seconds = wire.request(fuzz.id(), p.STATUS, None, within)
    if answer is None:
        answer, _ = wire.request(fuzz.id(), p.STATUS, None, 30)  # slow or deaf?
        report.hangs += 1
        if answer is None:
            report.crashes += wire.proc.poll() is not None
            return False
    report.status_ms.append(seconds * 1000)
    wire.wait(lambda: all(k in wire.answers for k in expect), PENDING_WITHIN)
    for msg_id, (kind, want) in sorted(expect.items()):
        got = wire.answers.get(msg_id)
        if got is None:
            report.unanswered.append(f"{kind} id={msg_id}")
        elif want is not ANY and code(got) != want:
            report.wrong.append(f"{kind} id={msg_id}: want {want}, got {json.dumps(got)[:300]}")
        elif code(got) == INTERNAL_ERROR:
            report.internal_errors.append(f"{kind} id={msg_id}: {got['error']['message'][:200]}")
    report.rss_kb.append(wire.rss_kb())
    with wire.changed:  # every owed answer is checked: keep memory flat over long runs
        wire.answers.clear()
        wire.arrived.clear()
    if wire.proc.poll() is not None:
        report.crashes += 1
        return False
    return True


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=13)
    parser.add_argument("--every", type=int, default=100, help="frames between checkpoints (default 100)")
    parser.add_argument("--flood", type=int, default=50, help="the last N frames: 10 MB strings back to back (default 50)")
    args = parser.parse_args()
    print(f"fuzz_lsp: {args.frames} frames (the last {args.flood} a flood of 10 MB strings), seed {args.seed}, "
          f"load {os.getloadavg()[0]:.1f}", flush=True)
    report = fuzz(args.frames, args.seed, args.every, progress=lambda line: print(line, flush=True), flood=args.flood)
    print("\n".join(report.lines()))
    if not report.ok:
        print("FAILED; server stderr tail:\n" + report.stderr_tail)
    return 0 if report.ok else 1


if __name__ == "__main__":
    sys.exit(main())
