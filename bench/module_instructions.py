"""A module process's instructions per transition, thread by thread, in a real cluster.

One module (mysql, of bench/engine.py's three) runs under valgrind's callgrind with a thread
apart per file; after a warm-up its counters are zeroed and turned on for a window of tasks
(one transition of that module each) and dumped at its end. Each thread's count is put under
its Python name (numbers dropped: `baton-store_0` and `baton-store_1` are one row), found from
the thread's kernel id: valgrind's scheduler lists each of its thread numbers with the kernel's,
and a small thread of the wrapper below lists each Python thread's name with the kernel's.

Instruction counts do not move with the machine's load, so two checkouts can be set side by
side in one run (`--checkout` once per checkout, runs alternated): the other modules, RabbitMQ
and the submitter are the same for both. Needs valgrind; minutes per run (the module runs some
fifty times slower):
    python -m bench.module_instructions [--tasks 100] [--rounds 1] [--checkout PATH ...]
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from bench.engine import FLOWS, MODULES, wait_all
from tests.support.cluster import Cluster

TARGET = "mysql"
REPO = Path(__file__).resolve().parents[1]

# Run in the measured process before the module: a thread that, each time a line is written to
# the FIFO it is given, writes every live thread's kernel id and name to the file it is given.
# It blocks on the FIFO between asks, so it costs the window nothing but those answers.
WRAPPER = """
import json, os, runpy, sys, threading
fifo, names, module = sys.argv[1:4]
def answer():
    while True:
        with open(fifo) as asks:
            for _ in asks:
                found = {str(t.native_id): t.name for t in threading.enumerate()}
                with open(names + ".part", "w") as out:
                    json.dump(found, out)
                os.replace(names + ".part", names)
threading.Thread(target=answer, name="bench-thread-names", daemon=True).start()
sys.argv = [module]
runpy.run_module(module, run_name="__main__", alter_sys=True)
"""


def one_run(workdir: Path, amqp_url: str, checkout: Path, tasks: int) -> dict[str, float]:
    """Instructions per transition of the target module run from `checkout`, by thread name."""
    workdir.mkdir(parents=True, exist_ok=True)
    # A long lease: a step under callgrind takes far longer than on a bare run.
    env = {"BATON_FAULT_INJECTION": "0", "BATON_LEASE_SECONDS": "120", "BATON_REDELIVER_AFTER_SECONDS": "600"}
    cluster = Cluster(workdir, amqp_url, FLOWS, extra_env=env)
    out, fifo, names = workdir / "callgrind.out", workdir / "asks", workdir / "names.json"
    os.mkfifo(fifo)
    try:
        for module in MODULES:
            if module != TARGET:
                cluster.start_module(module)
                continue
            command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--separate-threads=yes",
                       f"--callgrind-out-file={out}", sys.executable, "-c", WRAPPER, str(fifo), str(names),
                       f"modules.{module}"]  # fmt: skip
            cluster.start_process(TARGET, command, {}, ready="module started", cwd=checkout)
        _run(cluster, 20)  # warm-up: imports, caches, queues
        pid = cluster.procs[TARGET].popen.pid
        _callgrind(pid, "-i", "on")
        _callgrind(pid, "-z")
        _run(cluster, tasks)
        _callgrind(pid, "-d")
        _callgrind(pid, "-i", "off")
        by_valgrind_id = _thread_names(pid, fifo, names)
    finally:
        cluster.stop_all()
    rows: dict[str, float] = defaultdict(float)
    for path in glob.glob(f"{out}.1-*"):
        thread = int(path.rsplit("-", 1)[1])
        name = re.sub(r"[-_]?\d+$", "", by_valgrind_id.get(thread, "?"))
        rows[name] += _total(path) / tasks
    return dict(rows)


def _run(cluster: Cluster, tasks: int) -> None:
    wait_all(cluster, [cluster.submit("bench").TaskId for _ in range(tasks)], timeout=3600)


def _callgrind(pid: int, *args: str) -> None:
    subprocess.run(["callgrind_control", *args, str(pid)], check=True, capture_output=True)


def _thread_names(pid: int, fifo: Path, names: Path) -> dict[int, str]:
    """valgrind's thread number -> the Python thread's name (the main thread's is MainThread)."""
    names.unlink(missing_ok=True)
    with fifo.open("w") as asks:
        asks.write("names\n")
    deadline = time.monotonic() + 60
    while not names.exists():
        if time.monotonic() > deadline:
            raise RuntimeError("the measured module did not list its threads")
        time.sleep(0.2)
    by_kernel_id = json.loads(names.read_text())
    asked = ["vgdb", f"--pid={pid}", "v.info", "scheduler"]
    scheduler = subprocess.run(asked, capture_output=True, text=True).stdout
    found = {}
    for thread, lwp in re.findall(r"^Thread (\d+): status = .*\(lwpid (\d+)\)", scheduler, re.MULTILINE):
        found[int(thread)] = by_kernel_id.get(lwp, f"lwp-{lwp}")
    return found


def _total(path: str) -> int:
    match = re.search(r"^summary: (\d+)", Path(path).read_text(), re.MULTILINE)
    return int(match.group(1)) if match else 0


def main() -> None:
    from common.logging import configure_logging
    from tests.support.vhosts import rabbitmq_vhost

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--checkout", action="append", type=Path,
                        help="a checkout to measure (default: this one)")
    args = parser.parse_args()
    if shutil.which("valgrind") is None or shutil.which("callgrind_control") is None:
        sys.exit("needs valgrind (callgrind and callgrind_control)")
    checkouts = [path.resolve() for path in args.checkout or [REPO]]
    configure_logging(level="warning")
    results: dict[Path, list[dict[str, float]]] = defaultdict(list)
    started = time.monotonic()
    with tempfile.TemporaryDirectory() as tmp:
        for round_ in range(args.rounds):
            for n, checkout in enumerate(checkouts):
                with rabbitmq_vhost(f"baton-bench-module-instr-{n}") as url:
                    found = one_run(Path(tmp) / f"{round_}-{n}", url, checkout, args.tasks)
                results[checkout].append(found)
                print(f"  round {round_ + 1} {checkout}: {sum(found.values()) / 1e6:.2f} M", flush=True)
    names = sorted({name for runs in results.values() for run in runs for name in run})
    print(f"\n  instructions per transition of the {TARGET} module, by thread ({args.tasks} tasks a run; "
          f"mean of {args.rounds} run(s))")
    print(f"  {'thread':<32}" + "".join(f"{checkout.name:>16}" for checkout in checkouts))
    for name in [*names, "total"]:
        cells = []
        for checkout in checkouts:
            runs = results[checkout]
            values = [sum(run.values()) if name == "total" else run.get(name, 0.0) for run in runs]
            cells.append(f"{sum(values) / len(values) / 1e3:>14.0f} k")
        print(f"  {name:<32}" + "".join(cells))
    print(f"  ({time.monotonic() - started:.0f} s)")


if __name__ == "__main__":
    main()
