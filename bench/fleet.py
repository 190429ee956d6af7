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
from pathlib import Path

from bench.records_cluster import print_alone, records_cluster, run_to_end
from common.engine.states import TaskStatus
from common.engine.views import keeps_records
from tests.support.cluster import Cluster

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
    task, seconds = run_to_end(cluster, "fleet", items=list(range(items)))
    assert task.TaskStatus is TaskStatus.SUCCESS, task.TaskMessage
    assert keeps_records(task.Steps[0]), "the step kept its items inline"
    return seconds


def fleet_figures(workdir: Path, amqp_url: str, sizes: tuple[int, ...] = SIZES, parallel: int = PARALLEL) -> dict:
    # The submission's list of 10,000 items plus its keys passes the default input limit.
    os.environ["BATON_INPUT_MAX_ITEMS"] = str(2 * max(sizes))
    with records_cluster(workdir, amqp_url, flows(parallel), "asyncbench", "bench.kind_commands:asyncbench") as (cluster, _):
        run_fleet(cluster, 50)  # warm-up
        rates = {size: size / run_fleet(cluster, size) for size in sizes}
    return {"parallel": parallel, "rates": rates}


def rows(result: dict) -> list[tuple[str, str, str]]:
    rates = result["rates"]
    out = [(f"for_each over item records, {size:,} async no-op items (max_parallel {result['parallel']})",
            f"{rate:.0f} items/s", "") for size, rate in rates.items()]
    if len(rates) >= 2:
        small, large = min(rates), max(rates)
        out.append((f"rate at {large:,} items as a share of the rate at {small:,}",
                    f"{100 * rates[large] / rates[small]:.0f}%", ""))
    return out


if __name__ == "__main__":
    print_alone("baton-bench-fleet", fleet_figures, rows)
