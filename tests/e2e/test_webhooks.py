"""Notifications end to end: a real module process and sweeper on RabbitMQ, a real HTTP receiver
that goes away for a few seconds mid-run (longer than the retry backoff's cap, so deliveries are
retried more than once). Every status change of 50 tasks arrives at least once, signed."""

from __future__ import annotations

import time

import pytest

from common.engine.states import TaskStatus
from tests.support.cluster import Cluster, wait_until
from tests.support.test_store import cluster_mongo_url
from tests.support.webhook_receiver import WebhookReceiver

pytestmark = [pytest.mark.rabbitmq, pytest.mark.slow]
SECRET = "e2e-webhook-signing-secret"
# Steps under a timeout only a broken run reaches: a step a loaded machine ran late must not
# time out and roll back a task whose webhooks the test expects to say it succeeded.
FLOWS = """
version: 1
defaults: {timeout: 300, retry: 0}
task_types:
  notified:
    notify: {url: "%s"}
    steps:
      - name: check_resource
        normal:   {module: resource, command: check_resource}
        rollback: {module: resource, command: restore_resource}
      - name: deduct_resource
        normal:   {module: resource, command: deduct_resource}
        rollback: {module: resource, command: restore_resource}
"""
SUCCEEDED = ["created", "started", "succeeded"]
ROLLED_BACK = ["created", "started", "rolling_back", "rolled_back"]
BACKOFF_MAX_SECONDS = 2
OUTAGE_SECONDS = 2.5 * BACKOFF_MAX_SECONDS  # long enough for deliveries to be refused and retried more than once


@pytest.fixture
def notified(rabbitmq_url, tmp_path, request):
    receiver = WebhookReceiver(SECRET)
    receiver.start()
    cluster = Cluster(tmp_path, rabbitmq_url, FLOWS % receiver.url, mongo_url=cluster_mongo_url(request),
                      extra_env={"BATON_WEBHOOK_SECRET": SECRET,
                                 "BATON_WEBHOOK_BACKOFF_MAX_SECONDS": str(BACKOFF_MAX_SECONDS)})
    try:
        with cluster.starting():  # side by side
            cluster.start_module("resource", registry="tests.support.standin_commands:resource")
            cluster.start_sweeper()
        yield cluster, receiver
    finally:
        cluster.stop_all()
        receiver.stop()


def submit(cluster, number):
    failing = number % 5 == 0  # every fifth task fails at its second step and rolls back
    faults = [{"command": "deduct_resource", "action": "fail"}] if failing else []
    return cluster.submit("notified", _baton_faults=faults).TaskId, ROLLED_BACK if failing else SUCCEEDED


def refused_twice(cluster) -> bool:
    return any(e.get("event") == "webhook not delivered; retrying later" and e.get("failures", 0) >= 2
               for e in cluster.log_events("sweeper"))


def test_every_status_change_of_50_tasks_arrives_signed_through_a_receiver_outage(notified):
    cluster, receiver = notified
    expected = dict(submit(cluster, n) for n in range(25))
    wait_until(lambda: len(receiver.received()) >= 30, 60, "the first notifications")
    receiver.stop()  # the port closes: every POST is refused for the outage
    down_at = time.monotonic()
    expected.update(submit(cluster, n) for n in range(25, 50))
    # The outage ends once the sweeper has seen it twice on one receiver (a delivery refused, then
    # its retry refused), not after a fixed time: on a loaded machine the sweeper may not have
    # tried a delivery at all within OUTAGE_SECONDS.
    wait_until(lambda: refused_twice(cluster), OUTAGE_SECONDS, "a delivery and its retry refused")
    time.sleep(max(0.0, OUTAGE_SECONDS - (time.monotonic() - down_at)))
    received_while_down = len(receiver.received())
    receiver.start()

    for task_id in expected:  # final with an empty outbox: every webhook entry was delivered
        task = cluster.wait_final(task_id, timeout=90)
        assert task.TaskStatus in (TaskStatus.SUCCESS, TaskStatus.ROLLED_BACK)
    deliveries = receiver.received()
    assert all(d.signature_ok for d in deliveries), "every POST carries a valid X-Baton-Signature"
    got: dict[str, set[str]] = {}
    for delivery in deliveries:
        got.setdefault(delivery.body["TaskId"], set()).add(delivery.body["Event"])
    for task_id, events in expected.items():
        assert got.get(task_id) == set(events), (task_id, got.get(task_id))
    assert len(deliveries) > received_while_down  # some arrived only after the outage
    failures = [e for e in cluster.log_events("sweeper") if e.get("event") == "webhook not delivered; retrying later"]
    assert failures, "the outage was seen (and retried) by the sweeper"
