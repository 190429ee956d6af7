"""A webhook POST is bounded as a whole, and one slow receiver never delays another: real HTTP
servers on 127.0.0.1, one of them answering a byte a second (its headers, or its body)."""

from __future__ import annotations


import pytest
import structlog

from common.relay import http_deadline
from common.engine.document import NotifyTarget
from common.engine.core.notifications import WEBHOOK, add_notifications
from common.store.factory import open_store
from common.engine.core.entries import Timing, create_task
from common.relay.webhooks import WebhookConfig, WebhookDeliverer
from tests.support.builders import counter_ids, make_step
from tests.support.cluster import STATE_DEADLINE, wait_until
from tests.support.trickling_receiver import TRICKLE_BYTES, TricklingReceiver
from tests.support.webhook_receiver import WebhookReceiver

SECRET = "deadline-signing-key"


@pytest.mark.parametrize("mode", ["headers", "body"])
def test_a_trickling_answer_is_cut_off_at_the_timeout(mode):
    slow = TricklingReceiver(mode)
    try:
        with pytest.raises(TimeoutError):  # a per-read timeout never trips: a byte comes every second
            http_deadline.post(slow.url, b"{}", {"Content-Type": "application/json"}, timeout=2.0)
        [connection] = slow.connections
        assert connection.bytes_sent < TRICKLE_BYTES  # cut off, not waited out
        wait_until(connection.client_left.is_set, 30, "the receiver to see the connection closed")
    finally:
        slow.stop()


def test_a_receiver_that_answers_in_time_is_taken():
    receiver = WebhookReceiver(SECRET)
    receiver.start()
    try:
        assert http_deadline.post(receiver.url, b'{"Event":"created"}', {}, timeout=30.0) == 204
        receiver.refuse_next = 1
        assert http_deadline.post(receiver.url, b'{"Event":"created"}', {}, timeout=30.0) == 503
    finally:
        receiver.stop()


def notified_task(store, url, number):
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0),
                       ids=counter_ids(f"task{number}-"))
    task.Notify = [NotifyTarget(Url=url)]
    add_notifications(None, task)
    store.insert(task)
    return task


def webhook_entries(store, task_id):
    return [e for e in store.get(task_id).Outbox if e.Kind == WEBHOOK]


def test_a_slow_receiver_does_not_delay_a_healthy_one(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'baton.db'}")
    slow = TricklingReceiver("headers")
    healthy = WebhookReceiver(SECRET)
    healthy.start()
    # The slow POST stays open as long as its receiver trickles, however long a loaded machine
    # takes to deliver the healthy event: what is shown is that one does not wait for the other.
    deliverer = WebhookDeliverer(store, WebhookConfig(None, SECRET, timeout=TRICKLE_BYTES, backoff_max=300,
                                                      alarm_after=3600))  # fmt: skip
    slow_task, healthy_task = notified_task(store, slow.url, 1), notified_task(store, healthy.url, 2)
    try:
        [entry] = webhook_entries(store, slow_task.TaskId)
        deliverer.offer(slow_task.TaskId, entry)
        wait_until(lambda: slow.connections, STATE_DEADLINE, "the slow receiver's POST")
        [entry] = webhook_entries(store, healthy_task.TaskId)
        deliverer.offer(healthy_task.TaskId, entry)
        wait_until(lambda: not webhook_entries(store, healthy_task.TaskId), STATE_DEADLINE, "the healthy receiver's event")
        assert not slow.connections[0].client_left.is_set(), "taken while the slow POST was still open"
        [delivery] = healthy.received()
        assert delivery.signature_ok and delivery.body["TaskId"] == healthy_task.TaskId
    finally:
        slow.stop()  # first: it ends the slow POST at once
        deliverer.stop()
        healthy.stop()
        store.close()


def test_a_slow_receiver_is_cut_off_at_the_timeout_and_tried_again_later(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'baton.db'}")
    slow = TricklingReceiver("headers")
    deliverer = WebhookDeliverer(store, WebhookConfig(None, SECRET, timeout=2, backoff_max=300, alarm_after=3600))
    slow_task = notified_task(store, slow.url, 1)
    try:
        with structlog.testing.capture_logs() as logs:
            [entry] = webhook_entries(store, slow_task.TaskId)
            deliverer.offer(slow_task.TaskId, entry)
            # The POST ends at its timeout, long before the receiver would finish answering: the
            # event stays, due at the receiver's next try.
            wait_until(lambda: webhook_entries(store, slow_task.TaskId)[0].DueAt > 100.0, STATE_DEADLINE,
                       "the slow POST's end")  # fmt: skip
            assert slow.connections[0].bytes_sent < TRICKLE_BYTES
        failure = next(e for e in logs if e["event"] == "webhook not delivered; retrying later")
        assert failure["error"] == "TimeoutError" and failure["task_id"] == slow_task.TaskId
    finally:
        slow.stop()  # first: it ends a retry's POST at once
        deliverer.stop()
        store.close()
