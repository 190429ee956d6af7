"""A for_each over item records (docs/design/item-records.md) at fleet scale: one task whose step
runs an async no-op over 1,000 items, then one over 10,000, on a real module process, the real
RabbitMQ and a SQLite store, with the sweeper running. Items per second from submission to the end,
and the rate at 10,000 as a share of the rate at 1,000 (a cost per item that does not grow with the
step keeps it near 100%). Prints figures, asserts nothing. `python -m bench.fleet` alone, or part
of `make bench`; BATON_BENCH_FLEET_SIZES (default "1000,10000") and BATON_BENCH_FLEET_PARALLEL
(max_parallel, default 64) size it.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from common.engine.changes import use_records
from common.engine.views import keeps_records
from common.engine.states import FINAL_STATUSES, TaskStatus
from tests.support.cluster import Cluster
from tests.support.vhosts import rabbitmq_vhost

SIZES = tuple(int(size) for size in os.environ.get("BATON_BENCH_FLEET_SIZES", "1000,10000").split(","))
PARALLEL = int(os.environ.get("BATON_BENCH_FLEET_PARALLEL", "64"))


def flows(parallel: int) -> str:
    return f"""
version: 1
defaults: {{timeout: 60, retry: 1}}
task_types:
  fleet:
    parameters:
      items: {{type: array, required: true}}
    steps:
      - name: each
        for_each: items
        max_parallel: {parallel}
        normal:   {{module: asyncbench, command: noop}}
        rollback: {{module: asyncbench, command: noop}}
"""


def run_fleet(cluster: Cluster, items: int) -> float:
    started = time.perf_counter()
    task_id = cluster.submit("fleet", items=list(range(items))).TaskId
    while (task := cluster.store.get(task_id)).TaskStatus not in FINAL_STATUSES:
        time.sleep(0.05)
    seconds = time.perf_counter() - started
    assert task.TaskStatus is TaskStatus.SUCCESS, task.TaskMessage
    assert keeps_records(task.Steps[0]), "the step kept its items inline"
    return seconds


def fleet_figures(workdir: Path, amqp_url: str, sizes: tuple[int, ...] = SIZES, parallel: int = PARALLEL) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    # The submission's list of 10,000 items plus its keys passes the default input limit.
    os.environ["BATON_INPUT_MAX_ITEMS"] = str(2 * max(sizes))
    # The service's default lease, not the test cluster's 3 s: on a loaded machine a commit
    # queued behind 64 others may take longer than that, and a lapsed lease is a failed attempt.
    env = {"BATON_FAULT_INJECTION": "0", "BATON_LEASE_SECONDS": "30", "BATON_REDELIVER_AFTER_SECONDS": "60",
           "BATON_ITEM_RECORDS": "1"}
    use_records(True)  # this process (the service) opens the root step
    cluster = Cluster(workdir, amqp_url, flows(parallel), extra_env=env)
    try:
        cluster.start_module("asyncbench", registry="bench.kind_commands:asyncbench")
        cluster.start_sweeper()
        run_fleet(cluster, 50)  # warm-up
        rates = {size: size / run_fleet(cluster, size) for size in sizes}
        return {"parallel": parallel, "rates": rates}
    finally:
        cluster.stop_all()


def rows(result: dict) -> list[tuple[str, str, str]]:
    rates = result["rates"]
    out = [(f"for_each over item records, {size:,} async no-op items (max_parallel {result['parallel']})",
            f"{rate:.0f} items/s", "") for size, rate in rates.items()]
    if len(rates) >= 2:
        small, large = min(rates), max(rates)
        out.append((f"rate at {large:,} items as a share of the rate at {small:,}",
                    f"{100 * rates[large] / rates[small]:.0f}%", ""))
    return out


def main() -> None:
    with rabbitmq_vhost("baton-bench-fleet") as url, tempfile.TemporaryDirectory() as tmp:
        result = fleet_figures(Path(tmp), url)
    for name, value, _ in rows(result):
        print(f"  {name}: {value}")


if __name__ == "__main__":
    main()
