"""Sending alarms to a webhook, off the consumer's thread.

The alarm queue's consumer only enqueues (never waits on the network), so a slow or dead webhook
never holds up storing other alarms. One sender thread POSTs each alarm as JSON with a timeout and
retries with exponential backoff and jitter; an alarm it cannot deliver is logged and dropped: the
store holds every alarm regardless, and that is what an operator lists and acknowledges.

Best effort by design: an alarm queued when the monitor stops is not sent. Receivers can
deduplicate on `alarm.AlarmId`.
"""

from __future__ import annotations

import json
import queue
import random
import threading
import urllib.error
import urllib.request
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import structlog

from common.backoff import retry_delay
from common.logging import mask_secrets
from common.engine.document import Alarm, BackoffPolicy

log = structlog.get_logger(__name__)
Post = Callable[[str, bytes, float], int]  # (url, body, timeout) -> HTTP status; raises OSError


@dataclass(frozen=True)
class WebhookPolicy:
    url: str
    timeout: float
    attempts: int
    backoff: BackoffPolicy
    queue_size: int


def alarm_payload(alarm: Alarm) -> dict[str, Any]:
    return {"type": "baton.alarm", "alarm": mask_secrets(alarm.model_dump(mode="json"))}


def worth_retrying(status: int | None) -> bool:
    """None: no answer (timeout, refused). A 4xx other than 408/429 will not change by retrying."""
    return status is None or status >= 500 or status in (408, 429)


def http_post(url: str, body: bytes, timeout: float) -> int:
    request = urllib.request.Request(
        url, data=body, method="POST", headers={"Content-Type": "application/json", "User-Agent": "baton-monitor"}
    )
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:  # http(s) only: checked in settings
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


class WebhookNotifier:
    def __init__(self, policy: WebhookPolicy, post: Post = http_post, rand: Callable[[], float] = random.random):
        self._policy = policy
        self._post = post
        self._rand = rand
        self._queue: queue.Queue[Alarm] = queue.Queue(maxsize=policy.queue_size)
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="baton-alarm-webhook", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def notify(self, alarm: Alarm) -> None:
        """Never blocks: a full queue means the webhook is far behind; the alarm is stored anyway."""
        try:
            self._queue.put_nowait(alarm)
        except queue.Full:
            log.error("alarm webhook backlog full; alarm not sent", alarm_id=alarm.AlarmId)

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                alarm = self._queue.get(timeout=0.5)
            except queue.Empty:
                continue
            self.deliver(alarm)

    def deliver(self, alarm: Alarm) -> bool:
        body = json.dumps(alarm_payload(alarm)).encode()
        for attempt in range(1, self._policy.attempts + 1):
            status: int | None = None
            try:
                status = self._post(self._policy.url, body, self._policy.timeout)
                if 200 <= status < 300:
                    log.info("alarm sent to webhook", alarm_id=alarm.AlarmId, attempt=attempt)
                    return True
                problem = f"HTTP {status}"
            except (OSError, ValueError) as exc:  # URLError, timeouts and refused connections are OSErrors
                problem = f"{type(exc).__name__}: {exc}"
            if attempt == self._policy.attempts or not worth_retrying(status):
                break
            delay = retry_delay(self._policy.backoff, attempt, self._rand())
            log.warning("alarm webhook failed; retrying", alarm_id=alarm.AlarmId, attempt=attempt, error=problem, delay=round(delay, 2))
            if self._stop.wait(delay):
                break
        log.error("alarm webhook gave up", alarm_id=alarm.AlarmId, error=problem)
        return False
