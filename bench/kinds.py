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
import signal
import statistics
import tempfile
import threading
import time
from pathlib import Path

from bench.engine import wait_all
from bench.procstat import tree, usage
from tests.support.cluster import Cluster

STEPS = 3
FLOWS = """
version: 1
defaults: {timeout: 600, retry: 0}
task_types:
  await_io:
    parameters:
      seconds: {type: number}
    steps:
      - name: wait
        normal: {module: asyncbench, command: wait}
""" + "".join(
    f"""  {kind}_noop:
    steps:
""" + "".join(f"""      - name: s{n}
        normal: {{module: {kind}bench, command: noop}}
""" for n in range(STEPS)) for kind in ("async", "process"))
REGISTRIES = {"asyncbench": "bench.kind_commands:asyncbench", "processbench": "bench.kind_commands:processbench"}


def kinds_figures(workdir: Path, amqp_url: str, in_flight: int, seconds: float, tasks: int, rounds: int = 3) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    # A lease long enough that renewing a thousand of them is not the bench's work; JSON at info.
    env = {"BATON_FAULT_INJECTION": "0", "BATON_LEASE_SECONDS": "30"}
    cluster = Cluster(workdir, amqp_url, FLOWS, extra_env=env)
    try:
        for module, registry in REGISTRIES.items():
            cluster.start_module(module, registry=registry)
        figures = {"in_flight": in_flight, "seconds": seconds, "tasks": tasks, "rounds": rounds}
        figures.update(_in_flight(cluster, in_flight, seconds))
        for kind in ("async", "process"):
            _transitions(cluster, kind, min(50, tasks))  # warm-up: imports, caches, children
        # Rounds alternate the order of the kinds, so that a drift of the machine's load during
        # the run weighs on both alike; each figure is the median of its rounds.
        measured: dict[str, list[tuple[float, float]]] = {"async": [], "process": []}
        for round_ in range(rounds):
            for kind in ("async", "process") if round_ % 2 == 0 else ("process", "async"):
                measured[kind].append(_transitions(cluster, kind, tasks))
        for kind, runs in measured.items():
            rates, cpus = [rate for rate, _ in runs], [cpu for _, cpu in runs]
            figures[f"{kind}_transitions_per_second"] = statistics.median(rates)
            figures[f"{kind}_rate_range"] = (min(rates), max(rates))
            figures[f"{kind}_cpu_per_transition"] = statistics.median(cpus)
            figures[f"{kind}_rss_bytes"] = _tree_rss(cluster.procs[f"{kind}bench"].popen.pid)[0]
        return figures
    finally:
        cluster.stop_all()


def _in_flight(cluster: Cluster, count: int, seconds: float) -> dict:
    pid = cluster.procs["asyncbench"].popen.pid
    peak = {"rss": 0, "processes": 0}
    stop = threading.Event()

    def watch() -> None:
        while not stop.wait(0.1):
            rss, processes = _tree_rss(pid)
            peak["rss"], peak["processes"] = max(peak["rss"], rss), max(peak["processes"], processes)

    idle_rss = _tree_rss(pid)[0]
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
    """Queue `tasks` tasks with the module stopped, start it, time it until the last ended: the
    transitions per second, and the CPU seconds per transition of the module and its children.
    On two cores the module shares the CPU with RabbitMQ and the other processes, so the rate
    moves with whatever else runs; the CPU per transition is the module's own cost."""
    module = f"{kind}bench"
    cluster.kill(module, signal.SIGTERM)
    ids = [cluster.submit(f"{kind}_noop").TaskId for _ in range(tasks)]
    cluster.restart(module)  # returns once it consumes
    pid = cluster.procs[module].popen.pid
    cpu_before, started = _tree_cpu(pid), time.perf_counter()
    wait_all(cluster, ids, timeout=600)
    seconds, cpu = time.perf_counter() - started, _tree_cpu(pid) - cpu_before
    return tasks * STEPS / seconds, cpu / (tasks * STEPS)


def _tree_cpu(pid: int) -> float:
    """CPU seconds (user and system) of a process and its living descendants."""
    return sum(u.cpu_seconds for p in tree(pid) if (u := usage(p)) is not None)


def _tree_rss(pid: int) -> tuple[int, int]:
    """The RSS of a process and all its descendants, and how many processes that is."""
    sizes = [u.rss_bytes for p in tree(pid) if (u := usage(p)) is not None]
    return sum(sizes), len(sizes)


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
         f"async: {f['async_cpu_per_transition'] / f['process_cpu_per_transition']:.0%} of this"),
    ]


def _range(rates: tuple[float, float]) -> str:
    return f"{rates[0]:.0f} to {rates[1]:.0f} /s"


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
