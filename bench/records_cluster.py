"""What the fleet-scale benchmarks of steps over item records (bench/fleet.py, bench/source_fleet.py)
share: a cluster of real processes on the real RabbitMQ and a SQLite store that keeps item records,
one task run to its end and timed, GETs timed over HTTP, and the rows printed when run alone."""

from __future__ import annotations

import contextlib
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

import httpx

from common.engine.changes import use_records
from common.engine.document import Task
from common.engine.states import FINAL_STATUSES
from tests.support.cluster import Cluster, Proc
from tests.support.vhosts import rabbitmq_vhost

# The service's default lease, not the test cluster's 3 s: on a loaded machine a commit queued
# behind 64 others may take longer than that, and a lapsed lease is a failed attempt.
ENV = {"BATON_FAULT_INJECTION": "0", "BATON_LEASE_SECONDS": "30", "BATON_REDELIVER_AFTER_SECONDS": "60",
       "BATON_ITEM_RECORDS": "1"}


@contextlib.contextmanager
def records_cluster(workdir: Path, amqp_url: str, flows: str, module: str, registry: str,
                    extra_env: Mapping[str, str] = {}) -> Iterator[tuple[Cluster, Proc]]:  # fmt: skip
    """The cluster, with the module serving `registry` and a sweeper started, and the module's process."""
    workdir.mkdir(parents=True, exist_ok=True)
    use_records(True)  # this process (the service) opens the root step
    cluster = Cluster(workdir, amqp_url, flows, extra_env={**ENV, **extra_env})
    try:
        proc = cluster.start_module(module, registry=registry)
        cluster.start_sweeper()
        yield cluster, proc
    finally:
        cluster.stop_all()


def run_to_end(cluster: Cluster, task_type: str, *, sent: bool = False, poll: float = 0.05,
               **parameters: object) -> tuple[Task, float]:  # fmt: skip
    """The task submitted and read until it ended (and, with `sent`, its outbox is empty too), and
    the seconds that took."""
    started = time.perf_counter()
    task_id = cluster.submit(task_type, **parameters).TaskId
    while (task := cluster.store.get(task_id)).TaskStatus not in FINAL_STATUSES or (sent and task.Outbox):
        time.sleep(poll)
    return task, time.perf_counter() - started


def timed_gets(client: httpx.Client, path: str, samples: int, warm_up: int) -> list[float]:
    """The wall ms of `samples` GETs of `path`, sorted, after `warm_up` more (imports, caches)."""
    for _ in range(warm_up):
        assert client.get(path).status_code == 200
    spent = []
    for _ in range(samples):
        started = time.perf_counter()
        response = client.get(path)
        spent.append((time.perf_counter() - started) * 1000)
        assert response.status_code == 200, response.text
    return sorted(spent)


def median_ms(client: httpx.Client, path: str, samples: int, warm_up: int) -> float:
    return statistics.median(timed_gets(client, path, samples, warm_up))


def print_alone(vhost: str, figures: Callable[[Path, str], dict], rows: Callable[[dict], list]) -> None:
    """A benchmark run on its own (`python -m bench.<name>`): its figures on a vhost of its own, printed."""
    with rabbitmq_vhost(vhost) as url, tempfile.TemporaryDirectory() as tmp:
        result = figures(Path(tmp), url)
    for name, value, note in rows(result):
        print(f"  {name}: {value}  {note}".rstrip())
