"""The alarm webhook sender: what it retries, how long it waits, and that it never blocks."""

from __future__ import annotations

import json

import pytest

from common.engine.document import Alarm, BackoffPolicy
from modules.monitor.webhook import WebhookNotifier, WebhookPolicy, alarm_payload, worth_retrying


def alarm(alarm_id: str = "a1") -> Alarm:
    return Alarm(AlarmId=alarm_id, Kind="rollback_failed", Time=1.0, Message="db://u:hunter2@h rollback failed", TaskId="t1")


class Recorder:
    def __init__(self, answers: list[int | Exception]):
        self.answers = answers
        self.calls: list[tuple[str, dict, float]] = []

    def __call__(self, url: str, body: bytes, timeout: float) -> int:
        self.calls.append((url, json.loads(body), timeout))
        answer = self.answers.pop(0)
        if isinstance(answer, Exception):
            raise answer
        return answer


def notifier(post: Recorder, attempts: int = 4, queue_size: int = 10) -> WebhookNotifier:
    policy = WebhookPolicy("http://hook", 2.0, attempts, BackoffPolicy(Initial=0.001, Max=0.002, Multiplier=2, Jitter=0), queue_size)
    return WebhookNotifier(policy, post=post, rand=lambda: 0.5)


def test_a_delivered_alarm_is_posted_once_with_its_timeout_and_secrets_masked() -> None:
    post = Recorder([204])
    assert notifier(post).deliver(alarm()) is True
    (url, body, timeout), = post.calls
    assert (url, timeout, body["type"]) == ("http://hook", 2.0, "baton.alarm")
    assert body["alarm"]["AlarmId"] == "a1" and "hunter2" not in json.dumps(body)


def test_server_errors_and_silence_are_retried_then_given_up() -> None:
    post = Recorder([503, OSError("refused"), TimeoutError("slow"), 500])
    assert notifier(post, attempts=4).deliver(alarm()) is False
    assert len(post.calls) == 4
    post = Recorder([500, 200])
    assert notifier(post).deliver(alarm()) is True and len(post.calls) == 2


@pytest.mark.parametrize("status", [400, 401, 404])
def test_a_client_error_is_not_retried(status: int) -> None:
    post = Recorder([status, 200])
    assert notifier(post).deliver(alarm()) is False and len(post.calls) == 1


def test_worth_retrying() -> None:
    assert worth_retrying(None) and worth_retrying(502) and worth_retrying(429) and worth_retrying(408)
    assert not worth_retrying(404) and not worth_retrying(403)


def test_notify_never_blocks_even_when_the_backlog_is_full() -> None:
    sender = notifier(Recorder([]), queue_size=2)  # not started: nothing drains the queue
    for i in range(5):
        sender.notify(alarm(f"a{i}"))  # would hang here if it waited for room
    assert sender._queue.qsize() == 2


def test_the_sender_thread_delivers_queued_alarms_and_stops() -> None:
    post = Recorder([200, 200])
    sender = notifier(post)
    sender.start()
    sender.notify(alarm("a1"))
    sender.notify(alarm("a2"))
    import time

    deadline = time.monotonic() + 5
    while len(post.calls) < 2 and time.monotonic() < deadline:
        time.sleep(0.01)
    sender.stop()
    assert [c[1]["alarm"]["AlarmId"] for c in post.calls] == ["a1", "a2"]
    assert alarm_payload(alarm())["alarm"]["TaskId"] == "t1"
