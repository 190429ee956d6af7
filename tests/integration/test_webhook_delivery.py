"""The webhook deliverer (common.relay.webhooks) against a real HTTP receiver and a real SQLite store:
signed POSTs, the entry removed once taken, postponed with backoff while the receiver is down,
and one alarm when an event stays undelivered too long."""

from __future__ import annotations

from common.engine.document import NotifyTarget
from common.engine.notifications import WEBHOOK, add_notifications
from common.store.factory import open_store
from common.engine.transitions import Timing, create_task
from common.relay.webhooks import WebhookConfig, WebhookDeliverer, retry_after
from tests.support.builders import counter_ids, make_step
from tests.support.cluster import wait_until
from tests.support.webhook_receiver import WebhookReceiver

SECRET = "s3cret-for-signing"


def stored_task(store, url):
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(100.0), ids=counter_ids())
    task.Notify = [NotifyTarget(Url=url)]
    add_notifications(None, task)
    store.insert(task)
    return task


def webhook_entries(store, task_id):
    return [e for e in store.get(task_id).Outbox if e.Kind == WEBHOOK]


def test_delivery_backs_off_while_the_receiver_is_down_alarms_once_then_delivers(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'baton.db'}")
    receiver = WebhookReceiver(SECRET)  # not started: its port refuses
    now = [100.0]
    deliverer = WebhookDeliverer(store, WebhookConfig(None, SECRET, timeout=2, backoff_max=4, alarm_after=60),
                                 clock=lambda: now[0])
    task = stored_task(store, receiver.url)
    try:
        def offer_and_wait(due_after: float) -> None:
            [entry] = webhook_entries(store, task.TaskId)
            deliverer.offer(task.TaskId, entry)
            wait_until(lambda: not webhook_entries(store, task.TaskId)
                       or webhook_entries(store, task.TaskId)[0].DueAt > due_after, 10, "the entry handled")

        offer_and_wait(100.0)
        assert webhook_entries(store, task.TaskId)[0].DueAt == 100.0 + retry_after(1, 4)
        assert store.list_alarms() == []
        for round_ in range(2, 6):  # still down, and past the alarm bound: one alarm, not four
            now[0] = 100.0 + 60 * round_
            offer_and_wait(now[0])
        alarms = store.list_alarms()
        assert [a.Kind for a in alarms] == ["webhook_failing"] and receiver.url not in alarms[0].Message
        assert webhook_entries(store, task.TaskId)[0].DueAt == now[0] + 4  # capped

        receiver.start()
        now[0] += 5
        offer_and_wait(now[0])
        assert webhook_entries(store, task.TaskId) == []
        [delivery] = receiver.received()
        assert delivery.signature_ok and delivery.body["Event"] == "created"
        assert delivery.body["TaskId"] == task.TaskId and delivery.headers["X-Baton-Event-Id"] == delivery.body["EventId"]
    finally:
        deliverer.stop()
        receiver.stop()
        store.close()
