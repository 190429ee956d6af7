"""The webhook deliverer (common.relay.webhooks) against a real HTTP receiver and a real SQLite store:
signed POSTs, the entry removed once taken, held with backoff while the receiver is down, one
alarm when an event stays undelivered too long, and retries due at their backoff, not when the
relay next looks. Time is an injected clock the test moves: nothing depends on the machine's
speed, every wait is for a condition."""

from __future__ import annotations

from common.broker.inprocess import InProcessBroker
from common.engine.document import NotifyTarget
from common.engine.core.notifications import WEBHOOK, add_notifications
from common.store.factory import open_store
from common.relay.sweeper import SweepConfig, Sweeper
from common.engine.core.entries import Timing, create_task
from common.relay.webhook_sender import retry_after
from common.relay.webhooks import WebhookConfig, WebhookDeliverer
from tests.support.builders import counter_ids, make_step
from tests.support.cluster import wait_until
from tests.support.webhook_receiver import WebhookReceiver

SECRET = "s3cret-for-signing"
WAIT = 60  # seconds: generous, the conditions come within one of the sender's clock checks
# A POST's own bound (the real clock): far above what a local receiver takes even on a loaded
# machine. A POST cut off by it would be retried only when the injected clock moves, which the
# test does not do after the last try: the delivery it waits for would never come.
POST_TIMEOUT = 120


def stored_task(store, url, created=100.0):
    task = create_task(task_type="t", steps=[make_step("a")], parameters={}, timing=Timing(created), ids=counter_ids())
    task.Notify = [NotifyTarget(Url=url)]
    add_notifications(None, task)
    store.insert(task)
    return task


def webhook_entries(store, task_id):
    return [e for e in store.get(task_id).Outbox if e.Kind == WEBHOOK]


def due_at(store, task_id):
    entries = webhook_entries(store, task_id)
    return entries[0].DueAt if entries else None


def test_delivery_backs_off_while_the_receiver_is_down_alarms_once_then_delivers(tmp_path):
    store = open_store(f"sqlite:///{tmp_path / 'baton.db'}")
    receiver = WebhookReceiver(SECRET)  # not started: its port refuses
    now = [100.0]
    config = WebhookConfig(None, SECRET, timeout=POST_TIMEOUT, backoff_max=4, alarm_after=60)
    deliverer = WebhookDeliverer(store, config, clock=lambda: now[0])
    task = stored_task(store, receiver.url)
    try:
        [entry] = webhook_entries(store, task.TaskId)
        deliverer.offer(task.TaskId, entry)  # once: the deliverer retries it by itself
        wait_until(lambda: due_at(store, task.TaskId) == 100.0 + retry_after(1, 4), WAIT, "the first try")
        assert store.list_alarms() == []
        for round_ in range(2, 6):  # still down, and past the alarm bound: one alarm, not four
            before = due_at(store, task.TaskId)
            now[0] = 100.0 + 60 * round_
            wait_until(lambda b=before: due_at(store, task.TaskId) != b, WAIT, f"try {round_}")
            assert due_at(store, task.TaskId) == now[0] + retry_after(round_, 4)
        alarms = store.list_alarms()
        assert [a.Kind for a in alarms] == ["webhook_failing"] and receiver.url not in alarms[0].Message
        assert alarms[0].TaskId == task.TaskId

        receiver.start()
        now[0] += 5
        wait_until(lambda: webhook_entries(store, task.TaskId) == [], WAIT, "the delivery")
        [delivery] = receiver.received()
        assert delivery.signature_ok and delivery.body["Event"] == "created"
        assert delivery.body["TaskId"] == task.TaskId and delivery.headers["X-Baton-Event-Id"] == delivery.body["EventId"]
    finally:
        deliverer.stop()
        receiver.stop()
        store.close()


def test_each_retry_is_due_at_its_backoff_not_at_the_relay_grace_after_it(tmp_path):
    """The sweeper's relay hands over an entry once it is older than the relay grace (5 s here);
    a retry of a receiver that is down must not wait that long again: each try comes when the
    clock reaches the due time the previous failure wrote, 0.5 s doubling up to the cap."""
    store = open_store(f"sqlite:///{tmp_path / 'baton.db'}")
    receiver = WebhookReceiver(SECRET, refuse_next=6)  # 503 six times, then takes it
    receiver.start()
    now = [1000.0]
    config = WebhookConfig(None, SECRET, timeout=POST_TIMEOUT, backoff_max=4, alarm_after=3600)
    deliverer = WebhookDeliverer(store, config, clock=lambda: now[0])
    broker = InProcessBroker()
    broker.declare("mod")  # the task's first step goes there: the relay publishes it too
    sweeper = Sweeper(store, broker, SweepConfig(lease=30, redeliver_after=60, relay_grace=5, interval=1),
                      clock=lambda: now[0], webhooks=deliverer)
    task = stored_task(store, receiver.url, created=1000.0)
    try:
        now[0] = 1005.0  # the relay grace has passed: the sweep hands the entry over
        sweeper.sweep_once()
        wait_until(lambda: due_at(store, task.TaskId) != 1000.0, WAIT, "the first try")
        tries = [now[0]]
        for attempt in range(2, 8):
            due = due_at(store, task.TaskId)
            assert receiver.attempted() == attempt - 1  # nothing tried before its due time
            now[0] = due  # exactly when the failure said the next try is due, no later
            sweeper.sweep_once()  # a relay round at that moment (it hands nothing new over)
            wait_until(lambda a=attempt: receiver.attempted() == a, WAIT, f"try {attempt} at its due time")
            tries.append(now[0])
            if attempt < 7:
                wait_until(lambda d=due: due_at(store, task.TaskId) != d, WAIT, f"try {attempt}'s next due time")
        gaps = [later - earlier for earlier, later in zip(tries, tries[1:])]
        assert gaps == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]  # the backoff, capped at 4 s; no relay grace in it
        wait_until(lambda: webhook_entries(store, task.TaskId) == [], WAIT, "the delivery")
        assert [d.body["Event"] for d in receiver.received()] == ["created"]
    finally:
        deliverer.stop()
        receiver.stop()
        store.close()
