"""Step transitions on classic against quorum queues, in the same run (BATON_QUEUE_TYPE).

The same cluster as bench/engine.py (one process per module, SQLite), once per queue type, on
the same RabbitMQ node, so the difference is the queue type's: a quorum queue writes each message
to its Raft log and fsyncs it before the confirm, where a classic queue's persistent message is
confirmed once written to its message store. One node means no replication here; on a cluster
each confirm also waits for a majority of the nodes.
"""

from __future__ import annotations

import time
from pathlib import Path

from bench.engine import FLOWS, MODULES, throughput
from tests.support.cluster import Cluster

QUEUE_TYPES = ("classic", "quorum")


def queue_type_rows(workdir: Path, amqp_url: str, tasks: int, rounds: int = 2) -> list[tuple[str, str, str]]:
    """Each type `rounds` times, alternating (classic, quorum, classic, ...), so that a change in
    the machine's load during the run weighs on both; the best run of each is printed."""
    runs: dict[str, list[float]] = {queue_type: [] for queue_type in QUEUE_TYPES}
    cpu: dict[str, dict[str, float]] = {}
    for round_ in range(rounds):
        for queue_type in QUEUE_TYPES:
            rate, spent = _one_run(workdir / f"{queue_type}-{round_}", amqp_url, queue_type, tasks)
            runs[queue_type].append(rate)
            if rate >= max(runs[queue_type]):
                cpu[queue_type] = spent
    rates = {queue_type: max(found) for queue_type, found in runs.items()}
    rows = []
    for queue_type in QUEUE_TYPES:
        each = ", ".join(f"{rate:.0f}" for rate in runs[queue_type])
        note = f"best of {rounds} ({each}); {tasks} tasks, 1 process per module, one RabbitMQ node"
        if queue_type != QUEUE_TYPES[0]:
            note = f"{rates[queue_type] / rates[QUEUE_TYPES[0]]:.0%} of classic; " + note
        rows.append((f"baton on {queue_type} queues: step transitions", f"{rates[queue_type]:.0f} /s", note))
        modules = sum(ms for role, ms in cpu[queue_type].items() if role != "RabbitMQ")
        broker = cpu[queue_type].get("RabbitMQ")
        rows.append((f"baton on {queue_type} queues: CPU per transition, modules / RabbitMQ",
                     f"{modules:.2f} ms", f"RabbitMQ {broker:.2f} ms" if broker is not None else ""))
    return rows


def _one_run(workdir: Path, amqp_url: str, queue_type: str, tasks: int) -> tuple[float, dict[str, float]]:
    workdir.mkdir(parents=True, exist_ok=True)
    cluster = Cluster(workdir, amqp_url, FLOWS, extra_env={"BATON_FAULT_INJECTION": "0", "BATON_QUEUE_TYPE": queue_type})
    try:
        for module in MODULES:
            cluster.start_module(module, name=f"{module}-{queue_type}")
        throughput(cluster, min(200, tasks))  # warm-up: imports, caches, queues
        result = throughput(cluster, tasks)
    finally:
        cluster.stop_all()
    time.sleep(1)
    return result["transitions_per_second"], result["cpu_ms_per_transition"]


if __name__ == "__main__":  # the two rows alone: python -m bench.queues
    import os
    import tempfile

    from common.logging import configure_logging
    from tests.support.vhosts import rabbitmq_vhost

    configure_logging(level="warning")
    with rabbitmq_vhost("baton-bench-queues") as url, tempfile.TemporaryDirectory() as tmp:
        found = queue_type_rows(Path(tmp), url, int(os.environ.get("BATON_BENCH_QUEUE_TASKS", "1000")))
    for name, value, note in found:
        print(f"  {name:<60}  {value:>12}  {note}")
