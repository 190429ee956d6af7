"""Fan-out figures: one task whose for_each step runs a no-op over N items, next to one
task running the same N no-op steps as a line. Seconds from submission to the end, one module
process per module. `python -m bench.fanout` alone, or as part of `make bench`.
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from common.engine.states import FINAL_STATUSES, TaskStatus
from tests.support.cluster import Cluster
from tests.support.vhosts import rabbitmq_vhost


def flows(items: int) -> str:
    line = "\n".join(
        f"      - name: s{i}\n        normal:   {{module: mysql, command: noop}}\n"
        f"        rollback: {{module: mysql, command: noop_rollback}}"
        for i in range(items)
    )
    return f"""
version: 1
defaults: {{timeout: 30, retry: 0}}
task_types:
  fan_out:
    parameters:
      items: {{type: array, required: true}}
    steps:
      - name: each
        for_each: items
        normal:   {{module: mysql, command: noop}}
        rollback: {{module: mysql, command: noop_rollback}}
  line:
    steps:
{line}
"""


def run_one(cluster: Cluster, task_type: str, **parameters) -> float:
    started = time.perf_counter()
    task_id = cluster.submit(task_type, **parameters).TaskId
    while (task := cluster.store.get(task_id)).TaskStatus not in FINAL_STATUSES:
        time.sleep(0.005)
    assert task.TaskStatus is TaskStatus.SUCCESS, task.TaskMessage
    return time.perf_counter() - started


def fan_out_figures(workdir: Path, amqp_url: str, items: int = 100, concurrency: int = 8) -> dict:
    workdir.mkdir(parents=True, exist_ok=True)
    env = {"BATON_FAULT_INJECTION": "0", "BATON_CONCURRENCY": str(concurrency)}
    cluster = Cluster(workdir, amqp_url, flows(items), extra_env=env)
    try:
        cluster.start_module("mysql")
        run_one(cluster, "fan_out", items=list(range(5)))  # warm-up
        return {
            "items": items,
            "concurrency": concurrency,
            "for_each_seconds": run_one(cluster, "fan_out", items=list(range(items))),
            "line_seconds": run_one(cluster, "line"),
            "document_kb": len(cluster.store.list_tasks(limit=1)[0].to_json()) / 1024,
        }
    finally:
        cluster.stop_all()


def main() -> None:
    items = int(os.environ.get("BATON_BENCH_ITEMS", "100"))
    with rabbitmq_vhost("baton-bench-fanout") as url, tempfile.TemporaryDirectory() as tmp:
        result = fan_out_figures(Path(tmp), url, items)
    print(f"fan-out, {result['items']} no-op items, mysql module with {result['concurrency']} command processes:")
    print(f"  for_each over {items} items: {result['for_each_seconds']:.2f} s from submission to the end")
    print(f"  the same {items} steps as a line: {result['line_seconds']:.2f} s")
    print(f"  (final task document: {result['document_kb']:.0f} KB)")


if __name__ == "__main__":
    main()
