"""The kinds of command (docs/design/runtime.md), measured in one run:

- many async commands in flight in ONE module process, each awaiting `seconds`: from the last
  submission to the last one ended, and the module's peak RSS with any children (/proc);
- no-op step transitions per second, the same three-step flow once on a module of async
  commands and once on a module of process commands (its command children), side by side. The
  tasks are queued while the module is stopped, and the clock runs from its start to the last
  task's end: the figure is the module's own rate. Submitted while it runs, the one submitting
  thread of this process (a task every 10-20 ms on this machine) would set the pace of both kinds.

`python -m bench.kinds` prints only these rows; `make bench` prints them with the rest. Sizes:
BATON_BENCH_KINDS_IN_FLIGHT (1000), BATON_BENCH_KINDS_SECONDS (5), BATON_BENCH_KINDS_TASKS (500),
BATON_BENCH_KINDS_ROUNDS (3: the no-op rates are the median of rounds that alternate the kinds).
"""

from __future__ import annotations

import os
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench.engine import wait_all
from bench.kind_rounds import KINDS, STEPS, alternating, drain, kind_modules, tree_rss, warm_up
from tests.support.cluster import Cluster


def kinds_figures(workdir: Path, amqp_url: str, in_flight: int, seconds: float, tasks: int, rounds: int = 3) -> dict:
    with kind_modules(workdir, amqp_url) as cluster:
        figures = {"in_flight": in_flight, "seconds": seconds, "tasks": tasks, "rounds": rounds}
        figures.update(_in_flight(cluster, in_flight, seconds))
        warm_up(cluster, min(50, tasks))
        measured: dict[str, list[tuple[float, float]]] = {kind: [] for kind in KINDS}
        for kind in alternating(KINDS, rounds):
            measured[kind].append(_transitions(cluster, kind, tasks))
        for kind, runs in measured.items():
            rates, cpus = [rate for rate, _ in runs], [cpu for _, cpu in runs]
            figures[f"{kind}_transitions_per_second"] = statistics.median(rates)
            figures[f"{kind}_rate_range"] = (min(rates), max(rates))
            figures[f"{kind}_cpu_per_transition"] = statistics.median(cpus)
            figures[f"{kind}_rss_bytes"] = tree_rss(cluster.procs[f"{kind}bench"].popen.pid)[0]
        return figures


def _in_flight(cluster: Cluster, count: int, seconds: float) -> dict:
    pid = cluster.procs["asyncbench"].popen.pid
    peak = {"rss": 0, "processes": 0}
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.1):
            rss, processes = tree_rss(pid)
            peak["rss"], peak["processes"] = max(peak["rss"], rss), max(peak["processes"], processes)

    idle_rss = tree_rss(pid)[0]
    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    ids = [cluster.submit("await_io", seconds=seconds).TaskId for _ in range(count)]
    last_submitted = time.perf_counter()
    wait_all(cluster, ids, timeout=600)
    ended = time.perf_counter() - last_submitted
    stop.set()
    watcher.join()
    return {"in_flight_seconds": ended, "peak_rss_bytes": peak["rss"], "peak_processes": peak["processes"],
            "idle_rss_bytes": idle_rss}


def _transitions(cluster: Cluster, kind: str, tasks: int) -> tuple[float, float]:
    """The transitions per second of `tasks` queued tasks, and the CPU seconds per transition of
    the module and its children. On two cores the module shares the CPU with RabbitMQ and the
    other processes, so the rate moves with whatever else runs; the CPU per transition is the
    module's own cost."""
    drained = drain(cluster, kind, tasks)
    return tasks * STEPS / drained.seconds, drained.module_cpu / (tasks * STEPS)


def kinds_rows(workdir: Path, amqp_url: str) -> list[tuple[str, str, str]]:
    in_flight = int(os.environ.get("BATON_BENCH_KINDS_IN_FLIGHT", "1000"))
    seconds = float(os.environ.get("BATON_BENCH_KINDS_SECONDS", "5"))
    tasks = int(os.environ.get("BATON_BENCH_KINDS_TASKS", "500"))
    rounds = int(os.environ.get("BATON_BENCH_KINDS_ROUNDS", "3"))
    f = kinds_figures(workdir, amqp_url, in_flight, seconds, tasks, rounds)
    mib = 2**20
    async_rate, process_rate = f["async_transitions_per_second"], f["process_transitions_per_second"]
    return [
        (f"{in_flight} async commands in flight in one module process, each awaiting {seconds:g} s",
         f"{f['in_flight_seconds']:.1f} s", "from the last submission to the last one ended"),
        ("  that module's peak RSS, its children included",
         f"{f['peak_rss_bytes'] / mib:.0f} MiB",
         f"{f['peak_processes']} process(es); {f['idle_rss_bytes'] / mib:.0f} MiB idle"),
        ("no-op step transitions, async commands", f"{async_rate:.0f} /s",
         f"median of {rounds} rounds of {tasks} three-step tasks, {_range(f['async_rate_range'])}; "
         f"module RSS {f['async_rss_bytes'] / mib:.0f} MiB"),
        ("no-op step transitions, process commands (the same flow)", f"{process_rate:.0f} /s",
         f"async: {async_rate / process_rate:.0%} of this; {_range(f['process_rate_range'])}; "
         f"module and children RSS {f['process_rss_bytes'] / mib:.0f} MiB"),
        ("  module CPU per transition, async commands", f"{f['async_cpu_per_transition'] * 1000:.2f} ms", ""),
        ("  module CPU per transition, process commands (children included)",
         f"{f['process_cpu_per_transition'] * 1000:.2f} ms",
         _share("async", f["async_cpu_per_transition"], f["process_cpu_per_transition"])),
    ]


def _range(rates: tuple[float, float]) -> str:
    return f"{rates[0]:.0f} to {rates[1]:.0f} /s"


def _share(name: str, part: float, whole: float) -> str:
    # A window too short for the clock's ticks (a reduced run) can measure no CPU at all.
    return f"{name}: {part / whole:.0%} of this" if whole > 0 else f"{name}: no CPU measured for this"


def main() -> None:
    from common.logging import configure_logging
    from tests.support.vhosts import rabbitmq_vhost

    configure_logging(level="warning")
    with rabbitmq_vhost("baton-bench-kinds") as url, tempfile.TemporaryDirectory() as tmp:
        rows = kinds_rows(Path(tmp), url)
    print(f"\nbaton kinds of command: {os.cpu_count()} cores, RabbitMQ and SQLite on this machine")
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:>10}  {note}")


if __name__ == "__main__":
    main()

