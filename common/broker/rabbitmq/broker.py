"""RabbitBroker: the Broker port on RabbitMQ, one publisher connection plus one per subscription."""

from __future__ import annotations

import threading

import pika

from common.broker.port import DeliveryHandler, Settled
from common.broker.rabbitmq.connection import ConnectionSettings
from common.broker.rabbitmq.consumer import RabbitSubscription
from common.broker.rabbitmq.policy import DEFAULT_HEARTBEAT_SECONDS, DEFAULT_RECONNECT_MAX_SECONDS
from common.broker.rabbitmq.publisher import Publisher
from common.errors import BrokerError
from common.queues import check_priority


class RabbitBroker:
    def __init__(
        self,
        url: str,
        *,
        heartbeat: int = DEFAULT_HEARTBEAT_SECONDS,
        reconnect_max_delay: float = DEFAULT_RECONNECT_MAX_SECONDS,
    ):
        self._settings = ConnectionSettings(url, heartbeat, reconnect_max_delay)
        self._closed = threading.Event()
        self._publisher = Publisher(self._settings, self._closed)
        self._lock = threading.Lock()  # guards self._subscriptions
        self._subscriptions: list[RabbitSubscription] = []

    def declare(self, queue: str) -> None:
        self._publisher.declare(queue)
        self._publisher.remember(queue)

    def publish(
        self, queue: str, body: bytes, *, priority: int = 0, message_id: str | None = None
    ) -> None:
        self._publisher.publish(queue, body, _properties(priority, message_id))

    def publish_soon(
        self, queue: str, body: bytes, *, priority: int = 0, message_id: str | None = None, then: Settled
    ) -> None:
        self._publisher.publish_soon(queue, body, _properties(priority, message_id), then)

    def subscribe(
        self, queue: str, handler: DeliveryHandler, *, prefetch: int
    ) -> RabbitSubscription:
        if prefetch < 1:
            raise ValueError("prefetch must be at least 1")
        if self._closed.is_set():
            raise BrokerError(f"subscribe {queue}: the broker adapter is closed")
        subscription = RabbitSubscription(self._settings, queue, handler, prefetch)
        subscription.start()  # declares the queue, or raises if the broker refused it
        self._publisher.remember(queue)
        with self._lock:
            self._subscriptions.append(subscription)
        return subscription

    def queue_depth(self, queue: str) -> int:
        return self._publisher.queue_depth(queue)

    def purge(self, queue: str) -> int:
        return self._publisher.purge(queue)

    def ping(self) -> None:
        self._publisher.ping()

    def close(self) -> None:
        self._closed.set()  # from here on, publishing and subscribing raise BrokerError
        with self._lock:
            subscriptions, self._subscriptions = self._subscriptions, []
        for subscription in subscriptions:
            subscription.stop()
        self._publisher.close()


def _properties(priority: int, message_id: str | None) -> pika.BasicProperties:
    check_priority(priority)
    return pika.BasicProperties(
        content_type="application/json",
        delivery_mode=pika.DeliveryMode.Persistent,
        priority=priority,
        message_id=message_id,
    )
