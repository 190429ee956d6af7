"""baton end to end: module processes on RabbitMQ and SQLite, no-op commands."""

from __future__ import annotations

import statistics
import threading
import time
from pathlib import Path

from bench.procstat import CpuMeter, descendants, listening_pid, usage
from common.engine.states import FINAL_STATUSES
from tests.support.cluster import Cluster

# Three no-op steps, one per module, each with a rollback: the shape of create_mysql_instance.
FLOWS = """
version: 1
task_types:
  bench:
    steps:
      - name: a
        normal:   {module: resource, command: noop, timeout: 30, retry: 0}
        rollback: {module: resource, command: noop_rollback, timeout: 30, retry: 0}
      - name: b
        normal:   {module: mysql, command: noop, timeout: 30, retry: 0}
        rollback: {module: mysql, command: noop_rollback, timeout: 30, retry: 0}
      - name: c
        normal:   {module: monitor, command: noop, timeout: 30, retry: 0}
        rollback: {module: monitor, command: noop_rollback, timeout: 30, retry: 0}
"""
MODULES = ("resource", "mysql", "monitor")
STEPS = 3


def start_cluster(workdir: Path, amqp_url: str, replicas: int) -> Cluster:
    workdir.mkdir(parents=True, exist_ok=True)
    # Logging at info, JSON, as in production: one line per step is part of the cost.
    cluster = Cluster(workdir, amqp_url, FLOWS, extra_env={"BATON_FAULT_INJECTION": "0"})
    for module in MODULES:
        for index in range(replicas):
            cluster.start_module(module, name=f"{module}-{index}")
    return cluster


def throughput(cluster: Cluster, tasks: int, broker_port: int = 5672) -> dict:
    """Submit `tasks` at once, wait for all to end; step transitions per second over the run,
    and the CPU milliseconds each process role spent per transition meanwhile."""
    meter = CpuMeter(cpu_roles(cluster, broker_port))
    meter.start()
    started = time.perf_counter()
    ids = [cluster.submit("bench").TaskId for _ in range(tasks)]
    submitted = time.perf_counter() - started
    wait_all(cluster, ids, timeout=600)
    elapsed = time.perf_counter() - started
    spent = meter.stop()
    transitions = tasks * STEPS
    return {
        "tasks": tasks,
        "seconds": elapsed,
        "transitions_per_second": transitions / elapsed,
        "tasks_per_second": tasks / elapsed,
        "submit_seconds": submitted,
        "cpu_ms_per_transition": {role: 1000 * cpu / transitions for role, cpu in spent.items()},
    }


def module_rss(cluster: Cluster, tasks_per_round: int, rounds: int) -> list[tuple[int, int]]:
    """(steps done so far, largest module RSS in bytes) after each round of tasks: flat or not."""
    points = []
    done = 0
    for _ in range(rounds):
        ids = [cluster.submit("bench").TaskId for _ in range(tasks_per_round)]
        wait_all(cluster, ids, timeout=600)
        done += tasks_per_round * STEPS
        sizes = [u.rss_bytes for pid in _module_pids(cluster) if (u := usage(pid)) is not None]
        points.append((done, max(sizes)))
    return points


def _module_pids(cluster: Cluster) -> list[int]:
    return [p.popen.pid for p in cluster.procs.values() if p.popen is not None and p.popen.poll() is None]


def cpu_roles(cluster: Cluster, broker_port: int) -> dict:
    """Module processes, their command children, and the broker (whoever listens on its port).

    The submitting process (this one) is OSS's share: measured by the REST benchmark instead.
    """
    rabbit = listening_pid(broker_port)
    return {
        "module process": lambda: _module_pids(cluster),
        "command children": lambda: descendants(_module_pids(cluster)),
        "RabbitMQ": lambda: [rabbit] if rabbit else [],
    }


def latency(cluster: Cluster, samples: int, background_rate: float = 0.0, poll: float = 0.0005) -> dict:
    """Submission to final status of one task at a time, optionally under a background load.

    The probe reads the task every `poll` seconds: free on SQLite, but each read is load of its
    own on a slow store server (the Mongo run polls less often)."""
    stop = threading.Event()
    load = threading.Thread(target=_background, args=(cluster, background_rate, stop), daemon=True)
    if background_rate:
        load.start()
        time.sleep(1.0)  # let the load reach a steady state
    seconds = []
    try:
        for _ in range(samples):
            started = time.perf_counter()
            task_id = cluster.submit("bench").TaskId
            while cluster.store.get(task_id).TaskStatus not in FINAL_STATUSES:
                time.sleep(poll)
            seconds.append(time.perf_counter() - started)
    finally:
        stop.set()
        if background_rate:
            load.join()
    ordered = sorted(seconds)
    return {
        "samples": samples,
        "p50_ms": 1000 * statistics.median(ordered),
        "p99_ms": 1000 * ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))],
        "background_tasks_per_second": background_rate,
    }


def _background(cluster: Cluster, rate: float, stop: threading.Event) -> None:
    from oss.services.tasks import TaskService  # its own publisher: the probe's is not shared

    service = TaskService(cluster.store, cluster.broker, cluster.service._flows, cluster.service._settings)
    interval = 1.0 / rate
    next_at = time.perf_counter()
    while not stop.is_set():
        service.submit("bench", {})
        next_at += interval
        time.sleep(max(0.0, next_at - time.perf_counter()))
    service.close()


def wait_all(cluster: Cluster, ids: list[str], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    pending = list(ids)
    while pending:
        if time.monotonic() > deadline:
            raise TimeoutError(f"{len(pending)} tasks not final after {timeout}s")
        # Checking the oldest unfinished one first keeps this poll cheap: a read per wake-up.
        if cluster.store.get(pending[0]).TaskStatus in FINAL_STATUSES:
            pending.pop(0)
        else:
            time.sleep(0.05)
