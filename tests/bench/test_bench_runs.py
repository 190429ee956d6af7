"""`make bench`, reduced: every figure the full run prints is still measured and printed.

The full run takes about half an hour and asserts nothing; this one runs the same code with a few
tasks of each kind, so a change that breaks a measurement (a renamed setting, a role whose
processes are no longer found, the Mongo run) fails here instead of in the next `make bench`.
It checks that each row is printed with a figure, never what the figure is.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys

import pytest

from tests.support.cluster import REPO

# The run's own bound is the subprocess's (600 s, for a loaded machine): the suite's default
# per-test timeout (300 s) must not cut it short first.
pytestmark = [pytest.mark.soak, pytest.mark.rabbitmq, pytest.mark.slow, pytest.mark.timeout(660)]

REDUCED = {
    "BATON_BENCH_TASKS": "30",
    "BATON_BENCH_MONGO_TASKS": "20",
    "BATON_BENCH_RSS_STEPS": "300",
    "BATON_BENCH_MONGO_RSS_STEPS": "150",
    "BATON_BENCH_LATENCY_SAMPLES": "6",
    "BATON_BENCH_FAN_OUT_ITEMS": "10",
    "BATON_BENCH_REST_SECONDS": "1",
    "BATON_BENCH_DOCUMENT_TASKS": "20",
    "BATON_BENCH_KINDS_IN_FLIGHT": "30",
    "BATON_BENCH_KINDS_SECONDS": "1",
    "BATON_BENCH_KINDS_TASKS": "10",
    "BATON_BENCH_KINDS_ROUNDS": "2",
    "BATON_BENCH_SECRET_VALUES": "200",
    "BATON_BENCH_RATE_TAKES": "100",
    "BATON_BENCH_CALLBACK_TASKS": "20",
    "BATON_BENCH_ITEM_TRANSITIONS": "5",
    "BATON_BENCH_ITEM_STEPS": "50,200",
    "BATON_BENCH_FLEET_SIZES": "20,40",
    "BATON_BENCH_SOURCE_SIZES": "200,400",  # a 1 % budget holds its failing item 0
    "BATON_BENCH_SOURCE_WAVE_SIZES": "400",  # beside the run of 400 without waves, not one of its own
    "BATON_BENCH_CLI_RUNS": "2",
    "BATON_BENCH_VIEW_ITEMS": "300",
    "BATON_BENCH_VIEW_SAMPLES": "3",
    "BATON_BENCH_SCOPE_TASKS": "200",
    "BATON_BENCH_SCOPE_SAMPLES": "3",
    "BATON_BENCH_QUEUE_TASKS": "20",
    "BATON_BENCH_PRIORITY_TASKS": "10",
    "BATON_BENCH_TRACING_TASKS": "20",
    "BATON_BENCH_TRACING_ROUNDS": "2",
    "BATON_BENCH_TRACING_PAIRED_ROUNDS": "2",
    "BATON_BENCH_CELERY_TASKS": "10",
    "BATON_BENCH_CELERY_SAMPLES": "3",
    "BATON_BENCH_CELERY_ROUNDS": "2",
}

# The rows `make bench` must print, one pattern per row (a number, then the row's unit).
ROWS = (
    r"baseline: .* \d+ hops/s +CPU \d+\.\d\d ms per hop",
    r"baton, 1 process\(es\) per module: step transitions +\d+ /s +\d+% of baseline",
    r"baton, 2 process\(es\) per module: step transitions +\d+ /s",
    r"baton, 1 process\(es\) per module: three-step tasks +\d+ /s",
    r"baton, 1 process\(es\) per module: CPU per transition, module process +[\d.]+ ms",
    r"baton, 1 process\(es\) per module: CPU per transition, command children +[\d.]+ ms",
    r"baton, 1 process\(es\) per module: CPU per transition, RabbitMQ +[\d.]+ ms",
    r"of which a module's store work, alone .* [\d.]+ ms",
    r"a deferred mark-sent on SQLite, its entry unclaimed: CPU in place +\d+ us +as a read-change-write: \d+ us",
    r"latency, idle .* p50 [\d.]+ ms +p99 [\d.]+ ms",
    r"latency, under load .* p50 [\d.]+ ms +p99 [\d.]+ ms",
    r"largest module RSS over [\d,]+ steps .* (\d+ -> ){9}\d+",
    r"baton, tracing off: step transitions +\d+ /s +median of 2 alternating rounds",
    r"baton, tracing on \(OTLP/HTTP to a local receiver\): step transitions +\d+ /s +\d+% of off "
    r"\(median of the rounds' ratios: \d+%, \d+%\); [1-9]\d* export requests",
    r"baton, tracing off: module CPU per transition +[\d.]+ ms",
    r"baton, tracing on \(OTLP/HTTP to a local receiver\): module CPU per transition +[\d.]+ ms +[+-]\d+% on off "
    r"\(median of the rounds': [+-]\d+%, [+-]\d+%\)",
    r"baton, tracing on beside off at once: module CPU per transition +[+-]\d+% on off +both clusters at once",
    r"baton, tracing on beside off at once: step transitions +\d+% of off +both clusters at once",
    r"split per transition, off → on: module: span exporter +[\d.]+ → [\d.]+ ms",
    r"the machine's speed, off → on: .* [\d.]+ → [\d.]+ ms",
    r"tracing off: a step's calls into the tracing hooks +\d+ ns",
    r"tracing on: a step's spans, the hooks +[\d.]+ µs",
    r"tracing on: a step's spans, OTLP encoding +[\d.]+ µs +per step; the SDK's encoder for the same spans: [\d.]+ µs",
    r"baton on classic queues: step transitions +\d+ /s +best of",
    r"baton on quorum queues: step transitions +\d+ /s +\d+% of classic",
    r"baton on classic queues: CPU per transition, modules / RabbitMQ +[\d.]+ ms",
    r"baton on quorum queues: CPU per transition, modules / RabbitMQ +[\d.]+ ms",
    *(rf"claim rank behind 10 priority-0 tasks, {what}, {queue_type} queues +p4 \d+, p3 \d+, p2 \d+, p1 \d+ +of 14"
      for queue_type in ("classic", "quorum") for what in ("first steps", "steps in flight")),
    r"baton on Mongo \(SecantusDB\), 1 process per module: step transitions +\d+ /s",
    r"baton on Mongo: server round trips per transition +[\d.]+ reads, [\d.]+ writes",
    r"baton on Mongo: CPU per transition, SecantusDB server +[\d.]+ ms",
    r"baton on Mongo: latency, idle +p50 [\d.]+ ms",
    r"baton on Mongo: latency, under load .* p50 [\d.]+ ms",
    r"baton on Mongo: OSS submissions through the REST API +\d+ /s",
    r"baton on Mongo: largest module RSS over [\d,]+ steps .* (\d+ -> ){9}\d+",
    r"baton on Mongo, 2 processes per module: step transitions +\d+ /s +\d+% of 1 process",
    r"baton on Mongo, 2 processes per module: CPU per transition, module process +[\d.]+ ms",
    r"for_each over 10 no-op items .* [\d.]+ s",
    r"an item record's transition on SQLite .* [\d.]+ -> [\d.]+ ms +steps of 50 -> 200 records",
    r"an item record's transition on SecantusDB .* [\d.]+ -> [\d.]+ ms",
    r"for_each over item records, 20 async no-op items \(max_parallel \d+\) +\d+ items/s",
    r"for_each over item records, 40 async no-op items \(max_parallel \d+\) +\d+ items/s",
    *(rf"for_each over a source, {size} items, 0.3% failing under a 1% budget \(max_parallel \d+\) +\d+ items/s +ended "
      r"successful, exactly those items failed and rolled back" for size in (200, 400)),
    *(rf"its task view / a page of 100 items / a page of its failed items, {size} items +[\d.]+ / [\d.]+ / [\d.]+ ms"
      for size in (200, 400)),
    r"module RSS growth from 200 to 400 items from a source +[+-][\d.]+ MiB",
    r'the same 400 items in waves \[100, "10%", rest\] +\d+ items/s \(without waves: \d+\) +ended successful, '
    r"exactly those items failed, every wave ran",
    r"rate at 40 items as a share of the rate at 20 +\d+%",
    r"30 async commands in flight in one module process, each awaiting 1 s +[\d.]+ s",
    r"that module's peak RSS, its children included +\d+ MiB +1 process\(es\)",
    r"no-op step transitions, async commands +\d+ /s",
    r"no-op step transitions, process commands \(the same flow\) +\d+ /s +async: \d+% of this",
    r"module CPU per transition, async commands +[\d.]+ ms",
    r"module CPU per transition, process commands \(children included\) +[\d.]+ ms +async: \d+% of this",
    r"task view \(GET /tasks/ID\) of a for_each over 300 items in records +p50 [\d.]+ ms +p95 [\d.]+ ms; 10 items: p50 [\d.]+ ms; "
    r"the step settled: p50 [\d.]+ ms",
    r"a page of 100 of its items .* p50 [\d.]+ ms",
    r"OSS submissions through the REST API \(\d+ clients, one process\) +\d+ /s",
    *(rf"beside Celery, {way}: {what}" for way in ("baton, async commands", "baton, process commands",
                                                  "Celery, default settings", "Celery, no-loss settings")
      for what in (r"no-op step transitions +\d+ /s +\d+% of Celery's defaults",
                   r"CPU per three-step task +[\d.]+ ms +[\d.]+ ms the module or worker with its children, [\d.]+ ms RabbitMQ",
                   r"latency, one task at a time +p50 [\d.]+ ms +p95 [\d.]+ ms")),
    r"showing a task with 200 secret values .* \d+ ms +the same task with a plain key: \d+ ms",
    r"a rate's start slot on SQLite \(limit 10\) +\d+\.\d+ ms +a lock's join and leave: \d+\.\d+ ms",
    r"a rate's start slot on SQLite, the window holding up to 100 +\d+\.\d+ ms +mean over the window's filling",
    r"a step ended by a callback on SQLite +\d+\.\d+ ms +the token's write \d+\.\d+ ms",
    r"a page of tasks and its counts, 200 tasks, unscoped token +[\d.]+ ms",
    r"a page of tasks and its counts, 200 tasks, unscoped, \?label=team=payments +[\d.]+ ms +[\d.]+x the unscoped",
    r"a page of tasks and its counts, 200 tasks, one namespace +[\d.]+ ms +[\d.]+x the unscoped",
    r"a page of tasks and its counts, 200 tasks, three namespaces +[\d.]+ ms +[\d.]+x the unscoped",
    r"CLI start to exit: baton --help +\d+ ms .* CPU \d+ ms",
    r"CLI start to exit: baton get ID \(SQLite\) +\d+ ms .* CPU \d+ ms",
    r"targets:",
)


def test_a_reduced_make_bench_prints_every_figure():
    env = {**os.environ, **REDUCED, "PYTHONPATH": str(REPO)}
    run = subprocess.run(
        [sys.executable, "-m", "bench.run"], cwd=REPO, env=env, capture_output=True, text=True, timeout=600
    )
    assert run.returncode == 0, run.stderr[-4000:]
    missing = [row for row in ROWS if not re.search(row, run.stdout)]
    assert not missing, f"rows not printed: {missing}\n{run.stdout}"
