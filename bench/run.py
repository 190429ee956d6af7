"""`make bench`: baton's rates and latencies on this machine, next to the bare baseline.

Prints figures; asserts nothing. Uses a RabbitMQ vhost of its own on the local broker and
SQLite files in a temporary directory; then the same tasks on the Mongo store, on a SecantusDB
server started for the run (bench/mongo.py). Sizes: BATON_BENCH_TASKS (default 2000),
BATON_BENCH_MONGO_TASKS (default 500; 0 skips the Mongo run), BATON_BENCH_RSS_STEPS (default
100000: the long run that watches a module's memory; 0 skips it) and BATON_BENCH_MONGO_RSS_STEPS
(default 6000, the same on Mongo). A reduced run for the test suite also shortens the rest:
BATON_BENCH_LATENCY_SAMPLES (100), BATON_BENCH_FAN_OUT_ITEMS (100), BATON_BENCH_REST_SECONDS (5) and
BATON_BENCH_DOCUMENT_TASKS (600), BATON_BENCH_CLI_RUNS (10: runs of each timed CLI command). BATON_BENCH_SECRET_VALUES (5000) sizes the masking row, BATON_BENCH_RATE_TAKES (2000) the rate row, BATON_BENCH_CALLBACK_TASKS (500) the callback row; the
kinds of command's sizes are in bench/kinds.py.
BATON_BENCH_QUEUE_TASKS (default 1000; 0 skips it): the same tasks on classic and on quorum
queues (bench/queues.py). BATON_BENCH_PRIORITY_TASKS (default 120; 0 skips it): the claim rank of
tasks of priority 4 to 1 behind that many of priority 0, on both (bench/priority_order.py).
BATON_BENCH_TRACING_TASKS (default 1000; 0 skips it): the same tasks with tracing off and on,
exporting to a local OTLP receiver (bench/tracing.py), in BATON_BENCH_TRACING_ROUNDS alternating
rounds (default 4), then in BATON_BENCH_TRACING_PAIRED_ROUNDS rounds (default 3; 0 skips them) of
both at once (bench/tracing_paired.py).
BATON_BENCH_ITEM_TRANSITIONS (default 100; 0 skips it): an item record's transition on steps of
1,000 and 10,000 records (bench/items.py).
BATON_BENCH_FLEET_SIZES (default "1000,10000"; "0" skips it): one for_each over item records of
each size, end to end, items per second and the ratio (bench/fleet.py).
BATON_BENCH_SOURCE_SIZES (default "1000,100000"; "0" skips it): one for_each over items from a
source of each size, 0.3 % failing under a 1 % budget: items per second, the module's RSS, the task
view and an items page (bench/source_fleet.py); BATON_BENCH_SOURCE_WAVE_SIZES (default "1000,100000"): the
same in waves [100, "10%", rest], beside the run without waves of its size.
BATON_BENCH_VIEW_ITEMS (default 10000) and BATON_BENCH_VIEW_SAMPLES (50): the task view of a
for_each over that many items in records, next to one of 10 items (bench/task_view.py).
BATON_BENCH_SCOPE_TASKS (default 20000) and BATON_BENCH_SCOPE_SAMPLES (20): a page of tasks and
its counts for an unscoped token, a label filter and tokens limited to namespaces (bench/scoped_listing.py).
BATON_BENCH_REST_BEFORE (unset): a git revision whose OSS is measured beside this checkout's (bench/api.py).
BATON_BENCH_CELERY_TASKS (default 1000; 0 skips it), BATON_BENCH_CELERY_SAMPLES (100) and
BATON_BENCH_CELERY_ROUNDS (2): the same no-op flow on baton and on Celery side by side (bench/celery_side.py).
"""

from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

from bench.api import rest_note, rest_rows
from bench.baseline import run_baseline
from bench.cli_start import rows as cli_start_rows
from bench.document import document_cpu, mark_sent_cpu
from bench.engine import FLOWS, STEPS, latency, module_rss, start_cluster, throughput
from bench.mongo import mongo_throughput
from bench.fanout import fan_out_figures
from bench.kinds import kinds_rows
from bench.masking import masking_seconds
from bench.rates import rows as rate_rows
from bench.callbacks import rows as callback_rows
from bench.celery_side import celery_rows
from bench.items import item_rows
from bench.priority_order import priority_rows
from bench.queues import queue_type_rows
from bench.tracing import tracing_rows
from bench.fleet import SIZES as FLEET_SIZES, fleet_figures, rows as fleet_rows
from bench.source_fleet import SIZES as SOURCE_SIZES, rows as source_rows, source_figures
from bench.scoped_listing import scoped_rows
from bench.task_view import view_rows
from common.logging import configure_logging
from tests.support.vhosts import rabbitmq_vhost

SIZES = {
    "latency_samples": int(os.environ.get("BATON_BENCH_LATENCY_SAMPLES", "100")),
    "fan_out_items": int(os.environ.get("BATON_BENCH_FAN_OUT_ITEMS", "100")),
    "rest_seconds": float(os.environ.get("BATON_BENCH_REST_SECONDS", "5")),
}

# The performance targets, printed under the figures so a reader sees how far each one is.
TARGETS = (
    "module CPU per transition <= 0.5 ms (SQLite, 1 process per module)",
    ">= 1,500 transitions/s and >= 100% of the baseline (1 process per module)",
    "2 processes per module faster than 1",
    "latency p50 <= 5 ms idle, p99 <= 50 ms under half the capacity",
    ">= 1,000 REST submissions/s from one OSS process",
    "module RSS flat over 100,000 steps",
    "Mongo: <= 1 read and 2 writes per transition (the modules' own)",
    "for_each of 10,000 no-op items >= 200 items/s, and >= 80% of the rate at 1,000",
    "the task view of a 10,000-item task <= 200 ms",
    "100,000 items from a source, 0.3% failing under a 1% budget: ends successful with exactly those failed, "
    ">= 200 items/s, module RSS +<= 50 MiB from 1,000 items, task view and an items page < 200 ms",
    "tracing on within 5% of off (transitions/s, both at once); off: no measurable cost",
)


def _rss_rows(cluster) -> list[tuple[str, str, str]]:
    steps = int(os.environ.get("BATON_BENCH_RSS_STEPS", "100000"))
    if steps <= 0:
        return []
    rounds = 10
    return _rss_row("largest module RSS", module_rss(cluster, max(1, steps // (rounds * STEPS)), rounds))


def _rss_row(label: str, points: list[tuple[int, int]]) -> list[tuple[str, str, str]]:
    """One row: the RSS after each tenth of a long run, and how much it grew."""
    if not points:
        return []
    first, last = points[0], points[-1]
    trend = " -> ".join(f"{rss / 2**20:.0f}" for _, rss in points)
    return [(f"{label} over {last[0]:,} steps (MiB, after each tenth)", trend,
             f"{(last[1] - first[1]) / 2**20:+.1f} MiB from the first tenth to the last")]


def _mongo_rows(work: Path, url: str) -> list[tuple[str, str, str]]:
    tasks = int(os.environ.get("BATON_BENCH_MONGO_TASKS", "500"))
    if tasks <= 0:
        return []
    # The test server runs tens of transitions a second: a shorter long run than SQLite's.
    rss_steps = int(os.environ.get("BATON_BENCH_MONGO_RSS_STEPS", "6000"))
    result = mongo_throughput(work / "mongo", url, FLOWS, tasks, rss_steps,
                              samples=max(1, SIZES["latency_samples"] // 2), rest_seconds=SIZES["rest_seconds"])
    rows = [
        ("baton on Mongo (SecantusDB), 1 process per module: step transitions",
         f"{result['transitions_per_second']:.0f} /s", f"{tasks} tasks"),
        ("baton on Mongo: server round trips per transition",
         f"{result['reads_per_transition']:.1f} reads, {result['writes_per_transition']:.1f} writes",
         f"+ {result['commands_per_transition']:.1f} other commands; includes each task's insert and the bench's polling"),
    ]
    for role, ms in result["cpu_ms_per_transition"].items():
        rows.append((f"baton on Mongo: CPU per transition, {role}", f"{ms:.2f} ms", ""))
    idle, loaded = result["idle"], result["loaded"]
    rows += [
        ("baton on Mongo: three-step tasks", f"{result['tasks_per_second']:.0f} /s", ""),
        ("baton on Mongo: latency, idle", f"p50 {idle['p50_ms']:.1f} ms", f"p99 {idle['p99_ms']:.1f} ms"),
        (f"baton on Mongo: latency, under load ({loaded['background_tasks_per_second']:.0f} tasks/s)",
         f"p50 {loaded['p50_ms']:.1f} ms", f"p99 {loaded['p99_ms']:.1f} ms"),
        ("baton on Mongo: OSS submissions through the REST API", f"{result['rest']['submissions_per_second']:.0f} /s",
         rest_note(result["rest"])),
    ]
    rows += _rss_row("baton on Mongo: largest module RSS", result["rss"])
    two = result["two_per_module"]
    one_rate = result["transitions_per_second"]
    rows.append(("baton on Mongo, 2 processes per module: step transitions",
                 f"{two['transitions_per_second']:.0f} /s",
                 f"{two['transitions_per_second'] / one_rate:.0%} of 1 process; {two['reads_per_transition']:.1f} reads, "
                 f"{two['writes_per_transition']:.1f} writes per transition"))
    for role, ms in two["cpu_ms_per_transition"].items():
        rows.append((f"baton on Mongo, 2 processes per module: CPU per transition, {role}", f"{ms:.2f} ms", ""))
    return rows


def _masking_row() -> tuple[str, str, str]:
    masked = masking_seconds(int(os.environ.get("BATON_BENCH_SECRET_VALUES", "5000")))
    return (f"showing a task with {masked['values']:,} secret values (API view, masked)",
            f"{masked['secret_seconds'] * 1000:.0f} ms",
            f"the same task with a plain key: {masked['plain_seconds'] * 1000:.0f} ms")


def main() -> None:
    configure_logging(level="warning")  # the figures, not a line per submitted task
    tasks = int(os.environ.get("BATON_BENCH_TASKS", "2000"))
    rows: list[tuple[str, str, str]] = []
    with rabbitmq_vhost("baton-bench") as url, tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        base = run_baseline(url, str(work / "baseline.db"), tasks, 3)
        rows.append(("baseline: consume, SQLite read-modify-write, confirmed publish, ack", f"{base['hops_per_second']:.0f} hops/s",
                     f"CPU {base['cpu_ms_per_hop']:.2f} ms per hop, the loop's one thread"))
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
                for role, ms in result["cpu_ms_per_transition"].items():
                    rows.append((f"baton, {replicas} process(es) per module: CPU per transition, {role}",
                                 f"{ms:.2f} ms", "all processes of the role together"))
                if replicas == 1:
                    alone = document_cpu(FLOWS, int(os.environ.get("BATON_BENCH_DOCUMENT_TASKS", "600")))
                    rows.append(("of which a module's store work, alone in one process (read, claim, commit)",
                                 f"{alone['cpu_ms_per_transition']:.2f} ms",
                                 f"document {alone['document_bytes']:,} bytes; the rest: threads, broker, log, child"))
                    rows.append(("  the same, a step after one in the same module (claimed without a read)",
                                 f"{alone['kept_cpu_ms_per_transition']:.2f} ms", "the same run, tasks taking turns"))
                    marks = mark_sent_cpu(FLOWS, int(os.environ.get("BATON_BENCH_DOCUMENT_TASKS", "600")))
                    rows.append(("a deferred mark-sent on SQLite, its entry unclaimed: CPU in place",
                                 f"{marks['in_place']:.0f} us", f"as a read-change-write: {marks['read_change_write']:.0f} us"))
                    idle = latency(cluster, samples=SIZES["latency_samples"])
                    rows.append(("latency, idle (submission to final status, 3 steps)",
                                 f"p50 {idle['p50_ms']:.1f} ms", f"p99 {idle['p99_ms']:.1f} ms"))
                    rate = max(10.0, result["tasks_per_second"] * 0.5)
                    loaded = latency(cluster, samples=SIZES["latency_samples"], background_rate=rate)
                    rows.append((f"latency, under load ({rate:.0f} tasks/s in the background)",
                                 f"p50 {loaded['p50_ms']:.1f} ms", f"p99 {loaded['p99_ms']:.1f} ms"))
                    rows.extend(_rss_rows(cluster))
                flows_path = cluster.flows_path
            finally:
                cluster.stop_all()
            time.sleep(1)
        tracing_tasks = int(os.environ.get("BATON_BENCH_TRACING_TASKS", "1000"))
        if tracing_tasks > 0:
            tracing_rounds = int(os.environ.get("BATON_BENCH_TRACING_ROUNDS", "4"))
            paired_rounds = int(os.environ.get("BATON_BENCH_TRACING_PAIRED_ROUNDS", "3"))
            rows.extend(tracing_rows(work / "tracing", url, tracing_tasks, tracing_rounds, paired_rounds))
        queue_tasks = int(os.environ.get("BATON_BENCH_QUEUE_TASKS", "1000"))
        if queue_tasks > 0:
            rows.extend(queue_type_rows(work / "queues", url, queue_tasks))
        priority_tasks = int(os.environ.get("BATON_BENCH_PRIORITY_TASKS", "120"))
        if priority_tasks > 0:
            rows.extend(priority_rows(work / "priority", url, priority_tasks))
        rows.extend(_mongo_rows(work, url))
        fan = fan_out_figures(work / "fan_out", url, items=SIZES["fan_out_items"])
        rows.append((f"one task, for_each over {fan['items']} no-op items (submission to end)",
                     f"{fan['for_each_seconds']:.2f} s", f"{fan['concurrency']} command processes"))
        rows.append((f"one task, the same {fan['items']} steps as a line", f"{fan['line_seconds']:.2f} s", ""))
        rows.extend(kinds_rows(work / "kinds", url))
        item_transitions = int(os.environ.get("BATON_BENCH_ITEM_TRANSITIONS", "100"))
        if item_transitions > 0:
            rows.extend(item_rows(item_transitions))
        if all(size > 0 for size in FLEET_SIZES):
            rows.extend(fleet_rows(fleet_figures(work / "fleet", url)))
        if all(size > 0 for size in SOURCE_SIZES):
            rows.extend(source_rows(source_figures(work / "source", url)))
        rows.extend(view_rows(work / "task_view"))
        rows.extend(scoped_rows(work))
        rows.extend(rest_rows(work, url, flows_path, SIZES["rest_seconds"]))
        celery_tasks = int(os.environ.get("BATON_BENCH_CELERY_TASKS", "1000"))
        if celery_tasks > 0:
            rows.extend(celery_rows(work / "celery", url))
    rows.append(_masking_row())
    rows.extend(rate_rows(int(os.environ.get("BATON_BENCH_RATE_TAKES", "2000"))))
    rows.extend(callback_rows(int(os.environ.get("BATON_BENCH_CALLBACK_TASKS", "500"))))
    rows.extend(cli_start_rows(int(os.environ.get("BATON_BENCH_CLI_RUNS", "10"))))
    print()
    print(f"baton benchmark: {os.cpu_count()} cores, RabbitMQ and SQLite on this machine, no-op commands")
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:>16}  {note}")
    print("  targets:")
    for target in TARGETS:
        print(f"    {target}")


if __name__ == "__main__":
    main()
