"""A `for_each` whose items come from a source a page at a time (docs/design/item-sources.md), at
fleet scale: one task over 1,000 hosts, then one over 100,000, that a module's command returns 500
at a time, on a real module process, the real RabbitMQ and a SQLite store, with the sweeper and
an OSS process running. 0.3 % of the hosts (every item whose index ends in 000, 333 or 666 per
thousand) fail for good under a budget of 1 %: the task must end successful with exactly those
items failed and rolled back (checked, and said in the row when not). Printed per size: items per
second from submission to the end, the module process's RSS after the run (its growth from the
small run to the large one), and the task view and a page of its failed items over HTTP.
The same rollout in waves `[100, "10%", rest]` (docs/design/waves.md, "Waves over a source") runs
beside it at the sizes BATON_BENCH_SOURCE_WAVE_SIZES names (default "1000,100000"; "0" skips it), its
rate printed beside the run without waves of the same size in the same process.
Prints figures, asserts nothing: `python -m bench.source_fleet` alone, or part of `make bench`;
BATON_BENCH_SOURCE_SIZES (default "1000,100000"; "0" skips it) and BATON_BENCH_SOURCE_PARALLEL
(max_parallel, default 64) size it.
"""

from __future__ import annotations

import os
from pathlib import Path

import httpx

from bench.api import oss_ready
from bench.procstat import usage
from bench.records_cluster import median_ms, print_alone, records_cluster, run_to_end
from common.engine.states import StepState, TaskStatus
from common.store.items.open import open_item_store_for
from tests.support.cluster import Cluster, wait_until
from tests.support.ports import free_port

SIZES = tuple(int(size) for size in os.environ.get("BATON_BENCH_SOURCE_SIZES", "1000,100000").split(","))
WAVE_SIZES = tuple(int(size) for size in os.environ.get("BATON_BENCH_SOURCE_WAVE_SIZES", "1000,100000").split(",")
                   if int(size) > 0)
PARALLEL = int(os.environ.get("BATON_BENCH_SOURCE_PARALLEL", "64"))
TOKEN = "bench-source-token-0123456789"
SAMPLES = 20


def flows(parallel: int) -> str:
    return f"""
version: 1
defaults: {{timeout: 60, retry: 0}}
task_types:
  source_fleet:
    parameters:
      host_count: {{type: integer, required: true}}
    steps:
      - name: patch
        for_each:
          source: {{module: sourcebench, command: hosts, page_size: 500}}
        max_parallel: {parallel}
        tolerate: {{percent: 1}}
        normal:   {{module: sourcebench, command: patch}}
        rollback: {{module: sourcebench, command: unpatch}}
  source_fleet_waves:
    parameters:
      host_count: {{type: integer, required: true}}
    steps:
      - name: patch
        for_each:
          source: {{module: sourcebench, command: hosts, page_size: 500}}
        max_parallel: {parallel}
        tolerate: {{percent: 1}}
        waves: [100, "10%", rest]
        normal:   {{module: sourcebench, command: patch}}
        rollback: {{module: sourcebench, command: unpatch}}
"""


def failing(size: int) -> list[int]:
    """The items the bench's `patch` fails for good: 0.3 %."""
    return [i for i in range(size) if i % 1000 in (0, 333, 666)]


def run_source(cluster: Cluster, client: httpx.Client, module_pid: int, size: int,
               task_type: str = "source_fleet") -> dict:
    task, seconds = run_to_end(cluster, task_type, sent=True, poll=0.1, host_count=size)
    expected = failing(size)
    step = task.Steps[0]
    items = open_item_store_for(cluster.store)
    try:
        failed = [r.Item for r in items.page_items(task.TaskId, task.Generation, 0, limit=len(expected) + 1,
                                                   states=[StepState.ROLLED_BACK])]
    finally:
        items.close()
    exact = task.TaskStatus is TaskStatus.SUCCESS and step.FailedItems == len(expected) and failed == expected
    if step.Wave is not None:  # in waves: each wave ran, and ended where its size says
        exact = exact and len(step.Wave.Tallies) == len(step.Wave.Ends) - 1 and step.Wave.Ends[0] == min(100, size)
    rss = usage(module_pid)
    path = f"/api/v1/tasks/{task.TaskId}"
    return {
        "rate": size / seconds, "exact": exact, "status": task.TaskStatus.name, "failed": step.FailedItems,
        "rss": rss.rss_bytes if rss is not None else 0,
        "view_ms": median_ms(client, path, SAMPLES, warm_up=3),
        "page_ms": median_ms(client, f"{path}/steps/0/items?after={size // 2}&limit=100", SAMPLES, warm_up=3),
        "failed_ms": median_ms(client, f"{path}/steps/0/items?failed=true&limit=100", SAMPLES, warm_up=3),
    }


def source_figures(workdir: Path, amqp_url: str, sizes: tuple[int, ...] = SIZES, parallel: int = PARALLEL,
                   wave_sizes: tuple[int, ...] = WAVE_SIZES) -> dict:
    port = free_port()
    with records_cluster(workdir, amqp_url, flows(parallel), "sourcebench", "bench.source_commands:sourcebench",
                         {"BATON_API_TOKENS": f"bench:{TOKEN}:read"}) as (cluster, module):
        cluster.start_oss(port, BATON_OSS_SWEEPER="false")
        base = f"http://127.0.0.1:{port}"
        wait_until(lambda: oss_ready(base), 60, "OSS ready")
        with httpx.Client(base_url=base, headers={"Authorization": f"Bearer {TOKEN}"}, timeout=30) as client:
            run_source(cluster, client, module.popen.pid, 50)  # warm-up: imports, caches, queues
            runs = {size: run_source(cluster, client, module.popen.pid, size) for size in sizes}
            in_waves = {}
            for size in wave_sizes:  # beside a run without waves of the same size: the baseline
                if size not in runs:
                    runs[size] = run_source(cluster, client, module.popen.pid, size)
                in_waves[size] = run_source(cluster, client, module.popen.pid, size, "source_fleet_waves")
    return {"parallel": parallel, "runs": runs, "waves": in_waves}


def rows(result: dict) -> list[tuple[str, str, str]]:
    out = []
    for size, run in result["runs"].items():
        what = f"for_each over a source, {size:,} items, 0.3% failing under a 1% budget (max_parallel {result['parallel']})"
        verdict = "ended successful, exactly those items failed and rolled back" if run["exact"] else \
            f"NOT as expected: {run['status']}, {run['failed']} failed"
        out.append((what, f"{run['rate']:.0f} items/s", verdict))
        out.append((f"  its task view / a page of 100 items / a page of its failed items, {size:,} items",
                    f"{run['view_ms']:.1f} / {run['page_ms']:.1f} / {run['failed_ms']:.1f} ms", "median over HTTP"))
        out.append((f"  module RSS after the run of {size:,} items", f"{run['rss'] / 2**20:.0f} MiB", ""))
    for size, run in result.get("waves", {}).items():
        plain = result["runs"][size]
        verdict = "ended successful, exactly those items failed, every wave ran" if run["exact"] else \
            f"NOT as expected: {run['status']}, {run['failed']} failed"
        out.append((f'the same {size:,} items in waves [100, "10%", rest]',
                    f"{run['rate']:.0f} items/s (without waves: {plain['rate']:.0f})", verdict))
    runs = result["runs"]
    if len(runs) >= 2:
        small, large = min(runs), max(runs)
        out.append((f"module RSS growth from {small:,} to {large:,} items from a source",
                    f"{(runs[large]['rss'] - runs[small]['rss']) / 2**20:+.1f} MiB", ""))
    return out


if __name__ == "__main__":
    print_alone("baton-bench-source", source_figures, rows)
