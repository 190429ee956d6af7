"""baton on the Mongo store: the same cluster and tasks as bench/engine.py, on a SecantusDB server
(a real MongoDB wire-protocol server, tests.support.secantus) started for the run.

Besides the rate, what each step transition costs the database: the server's own operation
counters (serverStatus opcounters) per transition, and the server process's CPU per transition,
because the test server is itself a Python process and slow: its share says how much of the rate
is the server's and how much baton's.
"""

from __future__ import annotations

import signal
from pathlib import Path
from typing import Any

from bench.api import submissions
from bench.engine import MODULES, STEPS, cpu_roles, wait_all, latency, module_rss
from bench.procstat import CpuMeter
from common.store.mongo.client import open_client
from tests.support.cluster import Cluster
from tests.support.secantus import secantus_server

_READS = ("query", "getmore")
PROBE_POLL = 0.005  # seconds between the latency probe's reads of its task
_WRITES = ("insert", "update", "delete")


def mongo_throughput(
    workdir: Path, amqp_url: str, flows: str, tasks: int, rss_steps: int = 0, samples: int = 50, rest_seconds: float = 5.0
) -> dict[str, Any]:
    """The rate, round trips and CPU per role; the same with a second process per module; then,
    with one again, the latencies (idle, and under half the measured rate), the REST submissions
    and a module's RSS over `rss_steps` (0: not run), as on SQLite."""
    workdir.mkdir(parents=True, exist_ok=True)
    with secantus_server("baton-bench") as server:
        cluster = Cluster(workdir, amqp_url, flows, {"BATON_FAULT_INJECTION": "0"}, mongo_url=server.database_url("bench"))
        client = open_client(server.url)
        try:
            for module in MODULES:
                cluster.start_module(module, name=f"{module}-0")
            run_tasks(cluster, min(100, tasks))  # warm-up: imports, caches, queues
            roles = server_roles(cluster, server)
            one = measured(cluster, client, roles, tasks)
            # Two processes per module next, while the collection is the size it was for one: the
            # test server's CPU per transition grows with the collection (about a third more after
            # 600 more tasks, with the same operations per transition), which would otherwise
            # count against the second process.
            for module in MODULES:
                cluster.start_module(module, name=f"{module}-1")
            run_tasks(cluster, min(100, tasks))  # the new processes warm up too
            two = measured(cluster, client, roles, tasks)
            for module in MODULES:
                cluster.kill(f"{module}-1", signal.SIGTERM)
            # Every 5 ms, not every 0.5: the test server spends about a millisecond of CPU on each
            # read, so the faster probe was most of its load (idle p50 about 210 ms).
            idle = latency(cluster, samples=samples, poll=PROBE_POLL)
            loaded = latency(cluster, samples=samples, background_rate=max(5.0, 0.5 * one["tasks_per_second"]), poll=PROBE_POLL)
            rest = submissions(workdir, amqp_url, cluster.flows_path, rest_seconds, store_url=cluster.store_url)
            rss = _rss(cluster, rss_steps)
        finally:
            cluster.stop_all()
            client.close()
    return {
        **one,
        "idle": idle,
        "loaded": loaded,
        "rest": rest,
        "rss": rss,
        "two_per_module": two,
    }


def server_roles(cluster: Cluster, server: Any) -> dict:
    """The cluster's CPU roles (bench.engine.cpu_roles) and the SecantusDB server's process."""
    return {**cpu_roles(cluster, 5672), "SecantusDB server": lambda: [server.process.pid]}


def measured(cluster: Cluster, client: Any, roles: dict, tasks: int) -> dict[str, Any]:
    """`tasks` three-step tasks at once: the rate, the server's operations and each role's CPU,
    per transition."""
    meter = CpuMeter(roles)
    before = _counters(client)
    meter.start()
    seconds = run_tasks(cluster, tasks)
    spent = meter.stop()
    after = _counters(client)
    transitions = tasks * STEPS
    delta = {name: after[name] - before[name] for name in after}
    return {
        "transitions_per_second": transitions / seconds,
        "tasks_per_second": tasks / seconds,
        # Includes the submissions' writes (one insert a task) and the polling of this process.
        "reads_per_transition": sum(delta[n] for n in _READS) / transitions,
        "writes_per_transition": sum(delta[n] for n in _WRITES) / transitions,
        "commands_per_transition": delta["command"] / transitions,  # findAndModify, pings, ...
        "cpu_ms_per_transition": {role: 1000 * cpu / transitions for role, cpu in spent.items()},
    }


def _rss(cluster: Cluster, steps: int) -> list[tuple[int, int]]:
    """(steps so far, largest module RSS) after each tenth of `steps`; [] when not asked for."""
    if steps <= 0:
        return []
    return module_rss(cluster, max(1, steps // (10 * STEPS)), rounds=10)


def run_tasks(cluster: Cluster, tasks: int) -> float:
    """Submit `tasks` tasks at once and wait for their end: the seconds it took."""
    import time

    started = time.perf_counter()
    ids = [cluster.submit("bench").TaskId for _ in range(tasks)]
    wait_all(cluster, ids, timeout=900)
    return time.perf_counter() - started


def _counters(client: Any) -> dict[str, int]:
    return dict(client.admin.command("serverStatus")["opcounters"])
