"""One received message, and the connection ("link") it arrived on."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

import pika
from pika.adapters.blocking_connection import BlockingChannel

Settlement = Literal["ack", "dead_letter", "requeue"]


@dataclass(eq=False)
class Link:
    """One connection of a subscription. Deliveries remember theirs: a delivery whose link is no
    longer current came from a lost connection and settles as a no-op."""

    connection: pika.BlockingConnection
    channel: BlockingChannel
    generation: int
    consumer_tags: dict[str, str] = field(default_factory=dict)  # broker queue -> its consumer's tag

    def cancelled(self, consumer_tag: str) -> None:
        """The broker cancelled that consumer (its queue was deleted)."""
        for queue, tag in list(self.consumer_tags.items()):
            if tag == consumer_tag:
                del self.consumer_tags[queue]


# What settling does: the subscription's, called with (link, delivery tag, settlement).
Settle = Callable[[Link, int, Settlement], None]


class RabbitDelivery:
    def __init__(
        self,
        settle: Settle,
        link: Link,
        method: pika.spec.Basic.Deliver,
        properties: pika.BasicProperties,
        body: bytes,
    ):
        self._settle_on = settle
        self._link = link
        self._tag = method.delivery_tag
        self._settled = threading.Lock()  # held for good by the first settle
        self.body = body
        self.redelivered = bool(method.redelivered)
        self.message_id: str | None = properties.message_id
        self.priority: int = properties.priority or 0
        # Quorum queues count the deliveries of a message that were not settled (a consumer
        # gone, a requeue); classic queues do not (0).
        self.delivery_count = int((properties.headers or {}).get("x-delivery-count", 0) or 0)
        self.persistent = properties.delivery_mode == pika.DeliveryMode.Persistent.value

    def ack(self) -> None:
        self._settle("ack")

    def dead_letter(self) -> None:
        self._settle("dead_letter")

    def requeue(self) -> None:
        self._settle("requeue")

    def _settle(self, settlement: Settlement) -> None:
        # Settling twice would make the broker close the channel (unknown delivery tag).
        if self._settled.acquire(blocking=False):
            self._settle_on(self._link, self._tag, settlement)
