"""The alarm webhook goes through the same delivery piece as task notifications: signed, kept
and retried until the receiver takes it (no attempt limit, no answer given up on), secrets
masked, and offering never waits on the network. Real HTTP receivers on 127.0.0.1."""

from __future__ import annotations

import json

import pytest
import structlog

from common.engine.document import Alarm
from common.store.sqlite.tasks import SqliteStore
from common.relay.webhook_sender import SenderConfig, signature
from modules.monitor.webhook import AlarmWebhook, alarm_payload
from tests.support.cluster import wait_until
from tests.support.trickling_receiver import TricklingReceiver
from tests.support.webhook_receiver import WebhookReceiver

SECRET = "alarm-signing-key"
WAIT = 60


def alarm(alarm_id: str = "a1") -> Alarm:
    return Alarm(AlarmId=alarm_id, Kind="rollback_failed", Time=1.0, Message="db://u:hunter2@h rollback failed", TaskId="t1")


@pytest.fixture
def store(tmp_path):
    opened = SqliteStore(tmp_path / "baton.db")
    yield opened
    opened.close()


def sender(url: str, store, timeout: float = 5.0) -> AlarmWebhook:
    return AlarmWebhook(url, store, SenderConfig(SECRET, timeout=timeout, backoff_max=0.2, alarm_after=3600))


def test_an_alarm_is_posted_signed_with_its_secrets_masked(store) -> None:
    receiver = WebhookReceiver(SECRET)
    receiver.start()
    webhook = sender(receiver.url, store)
    try:
        webhook.notify(alarm())
        wait_until(receiver.received, WAIT, "the alarm")
        [delivery] = receiver.received()
        assert delivery.signature_ok and delivery.headers["X-Baton-Signature"] == signature(SECRET, delivery.raw)
        assert delivery.headers["X-Baton-Event"] == "alarm" and delivery.headers["X-Baton-Event-Id"] == "a1"
        assert delivery.body["type"] == "baton.alarm" and delivery.body["alarm"]["AlarmId"] == "a1"
        assert "hunter2" not in delivery.raw.decode()
    finally:
        webhook.stop()
        receiver.stop()


def test_an_alarm_is_retried_until_the_receiver_takes_it(store) -> None:
    receiver = WebhookReceiver(SECRET, refuse_next=8)  # more refusals than any attempt limit
    receiver.start()
    webhook = sender(receiver.url, store)
    try:
        webhook.notify(alarm())
        wait_until(receiver.received, WAIT, "the alarm, once the receiver takes it")
        assert receiver.attempted() == 9 and [d.body["alarm"]["AlarmId"] for d in receiver.received()] == ["a1"]
    finally:
        webhook.stop()
        receiver.stop()


def test_an_alarm_waits_while_the_receiver_is_down_and_arrives_once_it_is_back(store) -> None:
    receiver = WebhookReceiver(SECRET)  # not started: its port refuses
    webhook = sender(receiver.url, store)
    try:
        with structlog.testing.capture_logs() as logs:
            webhook.notify(alarm("a1"))
            webhook.notify(alarm("a2"))
            webhook.notify(alarm("a1"))  # the same alarm again: held once
            wait_until(lambda: any(e["event"] == "webhook not delivered; retrying later" for e in logs), WAIT,
                       "a refused try")
        receiver.start()
        wait_until(lambda: len(receiver.received()) == 2, WAIT, "both alarms")
        assert sorted(d.body["alarm"]["AlarmId"] for d in receiver.received()) == ["a1", "a2"]
    finally:
        webhook.stop()
        receiver.stop()


def test_notify_never_waits_for_a_slow_receiver(store) -> None:
    slow = TricklingReceiver("headers")
    webhook = sender(slow.url, store, timeout=30)
    try:
        webhook.notify(alarm("a1"))
        wait_until(lambda: slow.connections, WAIT, "the first POST")
        for number in range(2, 50):
            webhook.notify(alarm(f"a{number}"))
        assert not slow.connections[0].client_left.is_set()  # returned while the first POST hangs
        assert len(slow.connections) == 1  # one POST at a time per receiver
    finally:
        slow.stop()
        webhook.stop()


def test_the_payload_carries_the_alarm_masked() -> None:
    body = alarm_payload(alarm())
    assert body["alarm"]["TaskId"] == "t1" and "hunter2" not in json.dumps(body)


def test_the_monitor_signs_alarms_with_the_webhook_secret_and_backs_off_like_task_webhooks(store) -> None:
    from common.settings import load_settings
    from modules.monitor.alarms import alarm_webhook
    from modules.monitor.settings import MonitorSettings

    receiver = WebhookReceiver(SECRET, refuse_next=1)
    receiver.start()
    webhook = alarm_webhook(load_settings(webhook_secret=SECRET, webhook_backoff_max_seconds=0.2),
                            MonitorSettings(webhook_url=receiver.url, webhook_timeout_seconds=7), store)
    assert webhook is not None
    try:
        webhook.notify(alarm())
        wait_until(receiver.received, WAIT, "the alarm, after one refusal")
        assert receiver.attempted() == 2 and receiver.received()[0].signature_ok
    finally:
        webhook.stop()
        receiver.stop()
    assert alarm_webhook(load_settings(), MonitorSettings(webhook_url=None), store) is None
