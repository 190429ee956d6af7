"""How long a `baton` command takes from the shell prompt to its exit: `--help`, `get ID` and
`list` on a SQLite store (the whole process each time: interpreter, imports, settings, the store,
the answer; `get` and `list` of plain tasks read the file's JSON straight, oss/cli/quick_reads.py),
next to the bare interpreter (`python -c pass`) measured in the same run, so a reader sees what
baton adds whatever the machine and its load. Wall time, and the CPU time the process used: on a
loaded machine the wall time grows, the CPU time barely.

The runs take turns (pass, --help, get, list, pass, ...) so a change of load touches every row alike.
They run this checkout's code (PYTHONPATH), with compiled bytecode cached as an installed baton
has it (in a temporary PYTHONPYCACHEPREFIX, filled by one unmeasured run of each command), even
where the environment sets PYTHONDONTWRITEBYTECODE: compiling every module at every start would
be measured instead.

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
BASELINE = "python -c pass"


def _cpu() -> float:
    used = resource.getrusage(resource.RUSAGE_CHILDREN)
    return used.ru_utime + used.ru_stime


def _run(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    started, cpu_before = time.perf_counter(), _cpu()
    subprocess.run(argv, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return time.perf_counter() - started, _cpu() - cpu_before


def _timed(commands: dict[str, list[str]], env: dict[str, str], runs: int) -> dict[str, dict[str, float]]:
    for argv in commands.values():  # fills the bytecode cache
        _run(argv, env)
    seconds: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, argv in commands.items():
            wall, used = _run(argv, env)
            seconds[name].append(wall)
            cpu[name].append(used)
    return {
        name: {"median": statistics.median(seconds[name]), "min": min(seconds[name]),
               "max": max(seconds[name]), "cpu": statistics.median(cpu[name])}
        for name in commands
    }  # fmt: skip


def cli_start_times(runs: int = 10) -> dict[str, dict[str, float]]:
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update({
            "BATON_STORE_URL": f"sqlite:///{tmp}/cli.db", "BATON_BROKER_URL": "memory://",
            "BATON_FLOWS_PATH": str(REPO / "flows.yaml"), "PYTHONPYCACHEPREFIX": f"{tmp}/pycache",
            "PYTHONPATH": os.pathsep.join(p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p),
        })  # fmt: skip
        # The task's id is the one line's second word: "task <id> created".
        created = subprocess.run([BATON, "submit", "demo"], env=env, check=True, capture_output=True, text=True)
        task_id = created.stdout.split()[1]
        return _timed({
            BASELINE: [sys.executable, "-c", "pass"],
            "baton --help": [BATON, "--help"],
            "baton get ID (SQLite)": [BATON, "get", task_id],
            "baton list (SQLite)": [BATON, "list"],
        }, env, runs)  # fmt: skip


def rows(runs: int = 10) -> list[tuple[str, str, str]]:
    times = cli_start_times(runs)
    base = times[BASELINE]["median"]
    return [
        (f"CLI start to exit: {name}", f"{t['median'] * 1000:.0f} ms",
         f"median of {runs}; min {t['min'] * 1000:.0f} ms, max {t['max'] * 1000:.0f} ms; "
         f"CPU {t['cpu'] * 1000:.0f} ms" + ("" if name == BASELINE else
                                            f"; {(t['median'] - base) * 1000:.0f} ms over {BASELINE}"))
        for name, t in times.items()
    ]  # fmt: skip


if __name__ == "__main__":
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 10
    for name, value, note in rows(count):
        print(f"  {name:<40} {value:>8}  {note}")
