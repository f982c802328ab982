"""Light commands start lightly: `flower status`, `ps`, `stop`, `trust`, `changes`, `gc`, `--help` beside `claude --version`.

Usage: python benchmarks/light.py [--rounds R]

Each command runs as its own process in an empty folder (trusted once before timing: every `trust` then records the same answer), with
FLOWER_ENGINE at a socket where nothing listens; the baseline is the SDK's bundled CLI's `--version` (the cheapest
thing a run starts). The commands and the baseline are interleaved round by round, so a busy moment of the machine
falls on all of them alike; the figures are medians, printed as ratios to the baseline's median in the same run (D7).
`python -c pass` is timed beside them: the interpreter's start, the floor under any Python command.
A second run of every command under `-X importtime` counts what it imports of the SDK, pygls and lsprotocol.

Target (issue 34): each command at most 1.0x the CLI's `--version`, and none of the three imported.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HEAVY = ("claude_agent_sdk", "pygls", "lsprotocol")
COMMANDS = (["status"], ["ps"], ["stop"], ["trust"], ["changes"], ["gc"], ["--help"])


def bundled_cli() -> str:
    """The CLI the SDK's wheel bundles (found without importing the SDK here: its import is not what is timed)."""
    out = subprocess.run([sys.executable, "-c", "import claude_agent_sdk, pathlib; "
                          "print(pathlib.Path(claude_agent_sdk.__file__).parent / '_bundled' / 'claude')"],
                         capture_output=True, text=True, timeout=60, check=True)
    return out.stdout.strip()


def timed(argv: list[str], cwd: Path, env: dict[str, str]) -> float:
    """Wall-clock seconds of one process, start to exit."""
    start = time.perf_counter()
    subprocess.run(argv, cwd=cwd, env=env, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                   stderr=subprocess.DEVNULL, timeout=120)
    return time.perf_counter() - start


def heavy_imports(argv: list[str], cwd: Path, env: dict[str, str]) -> dict[str, int]:
    """How many modules of each of HEAVY the command imports (by `-X importtime`)."""
    done = subprocess.run([sys.executable, "-X", "importtime", *argv[1:]], cwd=cwd, env=env, stdin=subprocess.DEVNULL,
                          capture_output=True, text=True, timeout=120)
    names = [line.rsplit("|", 1)[1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    return {h: sum(1 for n in names if n == h or n.startswith(h + ".")) for h in HEAVY}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=15)
    args = parser.parse_args()
    root = Path(tempfile.mkdtemp(prefix="flower-light-"))
    folder = root / "ws"
    folder.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ANTHROPIC_", "CLAUDE_"))}
    env.update(FLOWER_ENGINE=str(root / "none" / "engine.sock"), XDG_STATE_HOME=str(root / "state"),
               HOME=str(root / "home"), DISABLE_AUTOUPDATER="1")
    flower = [sys.executable, "-m", "flower.cli"]
    subprocess.run([*flower, "trust"], cwd=folder, env=env, stdin=subprocess.DEVNULL, capture_output=True, timeout=120)
    baseline = [bundled_cli(), "--version"]
    # The interpreter's own start (`python -c pass`) beside it: the floor any Python command stands on.
    runs = {"claude --version": baseline, "python -c pass": [sys.executable, "-c", "pass"], **{f"flower {' '.join(c)}": [*flower, *c] for c in COMMANDS}}
    times: dict[str, list[float]] = {name: [] for name in runs}
    for argv in runs.values():  # once each, untimed: the file cache warm for every one alike
        timed(argv, folder, env)
    for _ in range(args.rounds):
        for name, argv in runs.items():
            times[name].append(timed(argv, folder, env))
    base = statistics.median(times["claude --version"])
    print(f"{args.rounds} interleaved rounds, medians; baseline claude --version {base * 1000:.0f} ms")
    print(f"{'command':<22} {'median ms':>9} {'ratio':>6}  " + "  ".join(f"{h:>16}" for h in HEAVY))
    worst = 0.0
    for name, argv in runs.items():
        median = statistics.median(times[name])
        counts = heavy_imports(argv, folder, env) if name.startswith("flower") else {}
        ratio = median / base
        if counts:
            worst = max(worst, ratio)
        print(f"{name:<22} {median * 1000:>9.0f} {ratio:>5.2f}x  "
              + "  ".join(f"{counts.get(h, '-'):>16}" for h in HEAVY))
    print(f"worst ratio {worst:.2f}x (target: at most 1.00x, and no module of {', '.join(HEAVY)} imported)")


if __name__ == "__main__":
    main()
