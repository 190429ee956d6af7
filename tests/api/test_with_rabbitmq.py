"""Priority and delayed start through the API, end to end: the API app in this process, a real
module process consuming from the real RabbitMQ, the SQLite store between them."""

from __future__ import annotations

import time
from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient

from common.flows import load_flows
from common.engine.states import TaskStatus
from oss.api import create_app
from oss.settings import load_oss_settings
from tests.api.support import OPERATOR, TOKENS, auth
from tests.support.cluster import Cluster, wait_until

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]

FLOWS = """
version: 1
defaults: {timeout: 300, retry: 0}
task_types:
  quick:
    steps:
      - name: only
        normal: {module: resource, command: noop}
"""


@pytest.fixture(scope="module")
def cluster(rabbitmq_url, tmp_path_factory) -> Iterator[Cluster]:
    cluster = Cluster(tmp_path_factory.mktemp("api-cluster"), rabbitmq_url, FLOWS)
    try:
        yield cluster
    finally:
        cluster.stop_all()


@pytest.fixture(scope="module")
def client(cluster: Cluster) -> Iterator[TestClient]:
    settings = load_oss_settings(
        broker_url=cluster.broker_url, store_url=cluster.store_url, flows_path=str(cluster.flows_path),
        api_tokens=TOKENS, oss_sweeper=False,
    )  # fmt: skip
    app = create_app(settings, store=cluster.store, broker=cluster.broker, flows=load_flows(cluster.flows_path))
    with TestClient(app) as client:
        yield client


def submit(client: TestClient, **body) -> str:
    response = client.post("/api/v1/tasks", json={"task_type": "quick", **body}, headers=auth(OPERATOR))
    assert response.status_code == 201, response.text
    return response.json()["task_id"]


def claimed_at(cluster: Cluster, task_id: str) -> float | None:
    task = cluster.store.get(task_id)
    return next((e.Time for e in task.History if e.Event == "claimed"), None)


def test_priority_is_honoured_when_the_module_has_a_backlog(cluster, client):
    low = [submit(client, priority=0) for _ in range(8)]
    high = submit(client, priority=4)
    # Nothing consumes yet: all nine wait in the module's queue.
    wait_until(lambda: cluster.broker.queue_depth("resource") == 9, 10, "nine messages queued")
    cluster.start_module("resource", BATON_CONCURRENCY="1", BATON_PREFETCH="1")
    for task_id in [*low, high]:
        assert cluster.wait_final(task_id, 30).TaskStatus is TaskStatus.SUCCESS
    order = sorted([*low, high], key=lambda task_id: claimed_at(cluster, task_id))
    assert order.index(high) == 0, f"the priority-4 task ran {order.index(high) + 1}th of 9"
    # The backlog itself ran oldest first.
    assert [t for t in order if t != high] == low


def test_delayed_start_waits_for_its_time(cluster, client):
    if "resource" not in cluster.procs or cluster.procs["resource"].popen.poll() is not None:
        cluster.start_module("resource", BATON_CONCURRENCY="1")
    start_at = time.time() + 2.5
    delayed = submit(client, start_at=start_at)
    at_once = submit(client)  # the module is idle and quick: a task without start_at runs now
    assert cluster.wait_final(at_once, 15).TaskStatus is TaskStatus.SUCCESS
    while time.time() < start_at - 0.2:  # nothing runs it before its time...
        assert claimed_at(cluster, delayed) is None
        time.sleep(0.1)
    task = cluster.wait_final(delayed, 20)
    assert task.TaskStatus is TaskStatus.SUCCESS
    assert claimed_at(cluster, delayed) >= start_at
    # Published when it was due by the publisher's timer: nothing else here publishes (no sweeper
    # runs, the OSS's own is off), so the task's end shows it fired (how soon after start_at is
    # the machine's load, not the timer's doing).
