"""How long a `baton` command takes from the shell prompt to its exit: `--help`, and `get ID` on a
SQLite store (the whole process each time: interpreter, imports, settings, the store, the answer). Wall time,
and the CPU time the process used: on a loaded machine the wall time grows, the CPU time barely.

`python -m bench.cli_start [RUNS]` prints the figures alone (default 10 runs each); `make bench`
prints them among its rows. Asserts nothing: the figures depend on the machine and its load.
"""

from __future__ import annotations

import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BATON = str(Path(sys.executable).with_name("baton"))
REPO = Path(__file__).resolve().parents[1]


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _timed(argv: list[str], env: dict[str, str], runs: int) -> dict[str, float]:
    seconds, cpu = [], []
    for _ in range(runs):
        started, cpu_before = time.perf_counter(), _cpu()
        subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        seconds.append(time.perf_counter() - started)
        cpu.append(_cpu() - cpu_before)
    return {"median": statistics.median(seconds), "min": min(seconds), "max": max(seconds),
            "cpu": statistics.median(cpu)}  # fmt: skip


def cli_start_times(runs: int = 10) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "BATON_STORE_URL": f"sqlite:///{tmp}/cli.db", "BATON_BROKER_URL": "memory://",
               "BATON_FLOWS_PATH": str(REPO / "flows.yaml")}  # fmt: skip
        # The task's id is the one line's second word: "task <id> created".
        created = subprocess.run([BATON, "submit", "demo"], env=env, check=True, capture_output=True, text=True)
        task_id = created.stdout.split()[1]
        return {
            "baton --help": _timed([BATON, "--help"], env, runs),
            "baton get ID (SQLite)": _timed([BATON, "get", task_id], env, runs),
        }


def rows(runs: int = 10) -> list[tuple[str, str, str]]:
    return [
        (f"CLI start to exit: {name}", f"{t['median'] * 1000:.0f} ms",
         f"median of {runs}; min {t['min'] * 1000:.0f} ms, max {t['max'] * 1000:.0f} ms; "
         f"CPU {t['cpu'] * 1000:.0f} ms")
        for name, t in cli_start_times(runs).items()
    ]


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    for name, value, note in rows(count):
        print(f"  {name:<40} {value:>8}  {note}")
