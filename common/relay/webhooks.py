"""Delivering the `webhook` outbox entries (common.engine.core.notifications) through the one delivery piece
(common.relay.webhook_sender): signed POSTs with a whole-request timeout, receivers isolated from each
other, each retried with its own backoff while it is down.

Who delivers: the sweeper (in OSS, or `baton sweeper`), through its outbox relay. A module's
publisher leaves webhook entries in the outbox, so an HTTP call never sits on a step's path and
the webhook secret lives only where the sweeper runs. The relay hands each entry here (`offer`,
never blocks); the sender holds it until its receiver takes it, then it is removed from the
outbox. While a receiver is down its entries' due time moves to its next try, which the sender
makes itself when it is due; the relay only hands over entries the sender does not hold (new
ones, and every one after a restart). At least once, never dropped.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass

import structlog

from common.errors import StoreError, UnreadableTask
from common.engine.document import Alarm, OutboxEntry
from common.engine.changes import Refusal, mark_sent, postpone
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore
from common.relay import http_deadline
from common.relay.webhook_sender import Parcel, Post, SenderConfig, WebhookSender

log = structlog.get_logger(__name__)


def encode(entry: OutboxEntry) -> bytes:
    return json.dumps(entry.Body, separators=(",", ":"), sort_keys=True).encode()


@dataclass(frozen=True)
class WebhookConfig:
    global_url: str | None  # BATON_WEBHOOK_URL: the target of entries whose Queue is ""
    secret: str | None
    timeout: float = 5.0
    backoff_max: float = 30.0
    alarm_after: float = 900.0


class OutboxLedger:
    """The task outbox as the sender's record: a taken event leaves it, a held one is due later."""

    def __init__(self, store: TaskStore):
        self._store = store

    def delivered(self, parcel: Parcel) -> None:
        self._change(parcel.owner or "", lambda task: mark_sent(task, parcel.key))

    def deferred(self, parcels: list[Parcel], until: float) -> None:
        by_task: dict[str, set[str]] = {}
        for parcel in parcels:
            by_task.setdefault(parcel.owner or "", set()).add(parcel.key)
        for task_id, keys in by_task.items():
            self._change(task_id, lambda task, k=keys: postpone(task, k, until) or Refusal("delivered meanwhile"))  # type: ignore[misc]

    def alarm(self, alarm: Alarm) -> None:
        try:
            self._store.add_alarm(alarm)
        except StoreError as exc:
            log.warning("webhook alarm not stored", error=str(exc))

    def _change(self, task_id: str, change: Callable) -> None:  # type: ignore[type-arg]
        try:
            mutate(self._store, task_id, change)
        except (StoreError, UnreadableTask) as exc:  # the relay offers it again
            log.warning("webhook outbox entry not updated", task_id=task_id, error=str(exc))


class WebhookDeliverer:
    def __init__(self, store: TaskStore, config: WebhookConfig, clock: Callable[[], float] = time.time,
                 post: Post = http_deadline.post):
        self._store = store
        self._config = config
        self._clock = clock
        self._sender = WebhookSender(
            OutboxLedger(store),
            SenderConfig(config.secret, config.timeout, config.backoff_max, config.alarm_after),
            clock, post,
        )

    def offer(self, task_id: str, entry: OutboxEntry) -> None:
        """Hand one entry to the sender unless it holds it already. Never waits."""
        url = entry.Queue or self._config.global_url
        if url is None:  # written while a global webhook was set; this sweeper has none
            log.warning("no BATON_WEBHOOK_URL for a global webhook event; kept", task_id=task_id)
            OutboxLedger(self._store).deferred([self._parcel(task_id, entry, "")], self._clock() + self._config.backoff_max)
            return
        self._sender.offer(self._parcel(task_id, entry, url))

    def stop(self) -> None:
        self._sender.stop()

    @staticmethod
    def _parcel(task_id: str, entry: OutboxEntry, url: str) -> Parcel:
        return Parcel(key=entry.DispatchId, url=url, body=encode(entry), event=str(entry.Body.get("Event")),
                      event_id=str(entry.Body.get("EventId")), since=float(entry.Body.get("Time") or entry.DueAt),
                      owner=task_id)
