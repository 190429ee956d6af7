"""`make bench`: baton's rates and latencies on this machine, next to the bare baseline.

Prints figures; asserts nothing. Uses a RabbitMQ vhost of its own on the local broker and
SQLite files in a temporary directory. Sizes: BATON_BENCH_TASKS (default 2000).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench.api import submissions
from bench.baseline import run_baseline
from bench.engine import start_cluster, latency, throughput
from tests.support.services import rabbitmq_vhost

TARGETS = {"transitions_per_second": 2000, "baseline_share": 0.40, "idle_p50_ms": 10, "submissions_per_second": 1000}


def main() -> None:
    tasks = int(os.environ.get("BATON_BENCH_TASKS", "2000"))
    rows: list[tuple[str, str, str]] = []
    with rabbitmq_vhost("baton-bench") as url, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = run_baseline(url, str(work / "baseline.db"), tasks, 3)
        rows.append(("baseline: consume, SQLite read-modify-write, confirmed publish, ack", f"{base['hops_per_second']:.0f} hops/s", ""))
        for replicas in (1, 2):
            cluster = start_cluster(work / f"r{replicas}", url, replicas)
            try:
                throughput(cluster, min(200, tasks))  # warm-up: imports, caches, queues
                result = throughput(cluster, tasks)
                share = result["transitions_per_second"] / base["hops_per_second"]
                rows.append((f"baton, {replicas} process(es) per module: step transitions",
                             f"{result['transitions_per_second']:.0f} /s", f"{share:.0%} of baseline"))
                rows.append((f"baton, {replicas} process(es) per module: three-step tasks",
                             f"{result['tasks_per_second']:.0f} /s", ""))
                if replicas == 1:
                    idle = latency(cluster, samples=100)
                    rows.append(("latency, idle (submission to final status, 3 steps)",
                                 f"p50 {idle['p50_ms']:.1f} ms", f"p99 {idle['p99_ms']:.1f} ms"))
                    rate = max(10.0, result["tasks_per_second"] * 0.5)
                    loaded = latency(cluster, samples=100, background_rate=rate)
                    rows.append((f"latency, under load ({rate:.0f} tasks/s in the background)",
                                 f"p50 {loaded['p50_ms']:.1f} ms", f"p99 {loaded['p99_ms']:.1f} ms"))
                flows_path = cluster.flows_path
            finally:
                cluster.stop_all()
            time.sleep(1)
        api = submissions(work, url, flows_path)
        rows.append((f"OSS submissions through the REST API ({api['clients']} clients, one process)",
                     f"{api['submissions_per_second']:.0f} /s", ""))
    print()
    print(f"baton benchmark: {os.cpu_count()} cores, RabbitMQ and SQLite on this machine, no-op commands")
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:>16}  {note}")
    print("  targets: " + ", ".join(f"{k} {v}" for k, v in TARGETS.items()))


if __name__ == "__main__":
    main()
