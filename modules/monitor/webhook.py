"""Sending alarms to a webhook (BATON_MONITOR_WEBHOOK_URL) through the one delivery piece that
sends task notifications (common.relay.webhook_sender): the same whole-request timeout, backoff while
the receiver is down, signature (BATON_WEBHOOK_SECRET) and `webhook_failing` alarm.

The alarm queue's consumer only offers (never waits on the network), so a slow or dead webhook
never holds up storing other alarms. The monitor keeps each alarm it offered and retries it until
the receiver takes it; an alarm still waiting when the monitor stops is not sent again by the
next one (the store holds every alarm regardless: that is what an operator lists and
acknowledges). Receivers deduplicate on `alarm.AlarmId` (also `X-Baton-Event-Id`).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from typing import Any

import structlog

from common.relay import http_deadline
from common.errors import StoreError
from common.secrets.documents import mask_secrets
from common.engine.document import Alarm
from common.store.tasks.port import TaskStore
from common.relay.webhook_sender import Parcel, Post, SenderConfig, WebhookSender

log = structlog.get_logger(__name__)
ALARM_EVENT = "alarm"


def alarm_payload(alarm: Alarm) -> dict[str, Any]:
    return {"type": "baton.alarm", "alarm": mask_secrets(alarm.model_dump(mode="json"))}


class AlarmLedger:
    """Alarms are stored before they are offered; delivery is only logged."""

    def __init__(self, store: TaskStore):
        self._store = store

    def delivered(self, parcel: Parcel) -> None:
        log.info("alarm sent to webhook", alarm_id=parcel.key)

    def deferred(self, parcels: list[Parcel], until: float) -> None:
        pass  # held in memory by the sender: nothing else records them

    def alarm(self, alarm: Alarm) -> None:
        try:
            self._store.add_alarm(alarm)
        except StoreError as exc:
            log.warning("webhook alarm not stored", error=str(exc))


class AlarmWebhook:
    def __init__(self, url: str, store: TaskStore, config: SenderConfig, clock: Callable[[], float] = time.time,
                 post: Post = http_deadline.post):
        self._url = url
        self._clock = clock
        self._sender = WebhookSender(AlarmLedger(store), config, clock, post, name="baton-alarm-webhook")

    def notify(self, alarm: Alarm) -> None:
        """Never blocks: the alarm is stored already; sending it is the sender's."""
        body = json.dumps(alarm_payload(alarm)).encode()
        parcel = Parcel(key=alarm.AlarmId, url=self._url, body=body, event=ALARM_EVENT, event_id=alarm.AlarmId,
                        since=alarm.Time, owner=alarm.TaskId)
        if not self._sender.offer(parcel):
            log.error("alarm webhook backlog full; alarm only stored", alarm_id=alarm.AlarmId)

    def stop(self) -> None:
        self._sender.stop()
