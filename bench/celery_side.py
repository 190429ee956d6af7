"""baton beside Celery, in one run on the same RabbitMQ (a vhost of the run's own, deleted after).

The same three-step no-op flow four ways: baton with async commands and with process commands
(one module process each, the flows of bench/kind_rounds.py, SQLite), Celery with its default settings
and with its no-loss settings (bench/celery_app.py: late acks, a task whose worker died rejected
back to its queue, publisher confirms), one worker with its default prefork pool. Each way, per
round:
- `tasks` tasks queued while nothing consumes (baton: the module stopped; Celery: the worker's
  consumer cancelled), then consumed: transitions per second from the consumer's start to the last
  task's end, and the CPU per three-step task of the module or worker with its children, and of
  RabbitMQ (from /proc; the broker is shared with whatever else runs on the machine);
- `samples` tasks one at a time: submission to end, p50 and p95. baton's end is read from its
  store (polled every 0.5 ms); Celery's from a message its third task sends.
Rounds alternate the order of the four ways; each figure is the median of its rounds.

`python -m bench.celery_side` prints only these rows; `make bench` prints them with the rest.
Sizes: BATON_BENCH_CELERY_TASKS (1000; 0 skips it), BATON_BENCH_CELERY_SAMPLES (100),
BATON_BENCH_CELERY_ROUNDS (2). Prints figures, asserts nothing.
"""

from __future__ import annotations

import os
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pika

from bench.kind_rounds import STEPS, alternating, drain, kind_modules, process_cpu, tree_cpu, warm_up
from bench.procstat import listening_pid
from common.engine.states import FINAL_STATUSES
from tests.support.cluster import REPO, Cluster, wait_until

WAYS = ("baton, async commands", "baton, process commands", "Celery, default settings", "Celery, no-loss settings")


def side_by_side(workdir: Path, amqp_url: str, tasks: int, samples: int, rounds: int) -> dict[str, dict]:
    """Per way: transitions/s, CPU ms per task (worker side, RabbitMQ), latency p50/p95 in ms."""
    rabbit = listening_pid(pika.URLParameters(amqp_url).port)
    measured: dict[str, list[dict]] = {way: [] for way in WAYS}
    with kind_modules(workdir, amqp_url) as cluster:
        warm_up(cluster, min(50, tasks))
        for way in alternating(WAYS, rounds):
            if way.startswith("baton"):
                kind = "async" if "async" in way else "process"
                measured[way].append(_baton_round(cluster, kind, tasks, samples, rabbit))
            else:
                measured[way].append(_celery_round(workdir, amqp_url, "no-loss" in way, tasks, samples, rabbit))
    return {way: {key: statistics.median(r[key] for r in runs) for key in runs[0]} for way, runs in measured.items()}


def _baton_round(cluster: Cluster, kind: str, tasks: int, samples: int, rabbit: int | None) -> dict:
    figures = _rates(tasks, *drain(cluster, kind, tasks, rabbit))
    seconds = []
    for _ in range(samples):
        begun = time.perf_counter()
        task_id = cluster.submit(f"{kind}_noop").TaskId
        while cluster.store.get(task_id).TaskStatus not in FINAL_STATUSES:
            time.sleep(0.0005)
        seconds.append(time.perf_counter() - begun)
    return {**figures, **_percentiles(seconds)}


def _celery_round(workdir: Path, amqp_url: str, no_loss: bool, tasks: int, samples: int, rabbit: int | None) -> dict:
    os.environ["BENCH_CELERY_BROKER"] = amqp_url  # read by bench.celery_app when imported here
    from celery import chain

    from bench import celery_app
    from bench.celery_app import DONE, QUEUE, app, last, noop

    app.conf.broker_url = amqp_url
    env = {**os.environ, "PYTHONPATH": str(REPO), "BENCH_CELERY_BROKER": amqp_url,
           "BENCH_CELERY_NO_LOSS": "1" if no_loss else "0"}
    log = (workdir / f"celery-{'no-loss' if no_loss else 'default'}.log").open("a")
    name = f"bench-{uuid.uuid4().hex[:6]}@{socket.gethostname()}"
    worker = subprocess.Popen([sys.executable, "-m", "celery", "-A", celery_app.__name__, "worker", "-Q", QUEUE,
                               "--loglevel", "WARNING", "-n", name],
                              cwd=REPO, env=env, stdout=log, stderr=subprocess.STDOUT)  # fmt: skip
    connection = pika.BlockingConnection(pika.URLParameters(amqp_url))
    channel = connection.channel()
    channel.queue_declare(DONE)
    channel.queue_purge(DONE)
    try:
        wait_until(lambda: bool(app.control.ping(destination=[name], timeout=1.0)), 120, "the Celery worker answers")
        # Each control call returns once this worker answered (without `limit`, after its timeout).
        only = {"destination": [name], "reply": True, "limit": 1, "timeout": 60.0}

        def submit(count: int) -> list[str]:
            ids = [uuid.uuid4().hex for _ in range(count)]
            for chain_id in ids:
                chain(noop.si(), noop.si(), last.si(chain_id)).apply_async()
            return ids

        ended = _ends(channel)
        app.control.cancel_consumer(QUEUE, **only)
        submit(min(50, tasks))  # warm-up: the pool's children import the tasks
        app.control.add_consumer(QUEUE, **only)
        ended(min(50, tasks))
        app.control.cancel_consumer(QUEUE, **only)
        submit(tasks)
        cpu, broker = tree_cpu(worker.pid), process_cpu(rabbit)
        started = time.perf_counter()
        app.control.add_consumer(QUEUE, **only)
        ended(tasks)
        figures = _rates(tasks, time.perf_counter() - started, tree_cpu(worker.pid) - cpu, process_cpu(rabbit) - broker)
        seconds = []
        for _ in range(samples):
            begun = time.perf_counter()
            submit(1)
            ended(1)
            seconds.append(time.perf_counter() - begun)
        return {**figures, **_percentiles(seconds)}
    finally:
        connection.close()
        worker.send_signal(signal.SIGTERM)  # a warm shutdown: the pool's children go with it
        try:
            worker.wait(timeout=60)
        except subprocess.TimeoutExpired:
            worker.kill()
            worker.wait()
        log.close()


def _ends(channel):  # type: ignore[no-untyped-def]
    """A function that waits for `count` more chains to end (their third task's messages)."""
    from bench.celery_app import DONE

    def ended(count: int) -> None:
        got = 0
        for method, _props, _body in channel.consume(DONE, auto_ack=True, inactivity_timeout=600):
            if method is None:
                raise TimeoutError(f"{count - got} Celery chains not ended after 600 s")
            got += 1
            if got == count:
                break
        channel.cancel()

    return ended


def _rates(tasks: int, seconds: float, worker_cpu: float, broker_cpu: float) -> dict:
    return {"transitions_per_second": tasks * STEPS / seconds, "worker_cpu_ms": 1000 * worker_cpu / tasks,
            "broker_cpu_ms": 1000 * broker_cpu / tasks}  # fmt: skip


def _percentiles(seconds: list[float]) -> dict:
    if not seconds:
        return {"p50_ms": float("nan"), "p95_ms": float("nan")}
    ordered = sorted(seconds)
    return {"p50_ms": 1000 * statistics.median(ordered),
            "p95_ms": 1000 * ordered[min(len(ordered) - 1, int(0.95 * len(ordered)))]}  # fmt: skip


def celery_rows(workdir: Path, amqp_url: str) -> list[tuple[str, str, str]]:
    tasks = int(os.environ.get("BATON_BENCH_CELERY_TASKS", "1000"))
    if tasks <= 0:
        return []
    samples = int(os.environ.get("BATON_BENCH_CELERY_SAMPLES", "100"))
    rounds = int(os.environ.get("BATON_BENCH_CELERY_ROUNDS", "2"))
    figures = side_by_side(workdir, amqp_url, tasks, samples, rounds)
    defaults = figures["Celery, default settings"]["transitions_per_second"]
    rows = []
    for way, f in figures.items():
        rows.append((f"beside Celery, {way}: no-op step transitions", f"{f['transitions_per_second']:.0f} /s",
                     f"{f['transitions_per_second'] / defaults:.0%} of Celery's defaults; median of {rounds} rounds "
                     f"of {tasks} three-step tasks"))
        rows.append((f"beside Celery, {way}: CPU per three-step task", f"{f['worker_cpu_ms'] + f['broker_cpu_ms']:.1f} ms",
                     f"{f['worker_cpu_ms']:.1f} ms the module or worker with its children, "
                     f"{f['broker_cpu_ms']:.1f} ms RabbitMQ"))
        rows.append((f"beside Celery, {way}: latency, one task at a time", f"p50 {f['p50_ms']:.1f} ms",
                     f"p95 {f['p95_ms']:.1f} ms; submission to end, {samples} tasks"))
    return rows


def main() -> None:
    from common.logging import configure_logging
    from tests.support.vhosts import rabbitmq_vhost

    configure_logging(level="warning")
    with rabbitmq_vhost("baton-bench-celery") as url, tempfile.TemporaryDirectory() as tmp:
        rows = celery_rows(Path(tmp), url)
    print(f"\nbaton beside Celery: {os.cpu_count()} cores, RabbitMQ on this machine, no-op steps")
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"  {name:<{width}}  {value:>10}  {note}")


if __name__ == "__main__":
    main()
