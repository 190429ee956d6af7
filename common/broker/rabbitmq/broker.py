"""RabbitBroker: the Broker port on RabbitMQ, one publisher connection plus one per subscription.

With quorum queues (common.queues) one queue of the port is one broker queue per priority band:
publish picks the band of the message's priority, subscribe consumes every band (one consumer
each, on the subscription's one channel: consumer.py), and declare, queue_depth and purge cover
them all.
"""

from __future__ import annotations

import threading

import pika

from common.broker.port import DeliveryHandler, Settled, Subscription
from common.broker.rabbitmq.connection import ConnectionSettings, split_urls
from common.broker.rabbitmq.consumer import RabbitSubscription
from common.broker.rabbitmq.policy import DEFAULT_HEARTBEAT_SECONDS, DEFAULT_RECONNECT_MAX_SECONDS
from common.broker.rabbitmq.publisher import Publisher
from common.broker.rabbitmq.topology import Topology
from common.errors import BrokerClosed
from common.queues import DEFAULT_DELIVERY_LIMIT, QueueType, check_priority, check_queue_type, physical_queue, physical_queues


class RabbitBroker:
    def __init__(
        self,
        url: str,
        *,
        heartbeat: int = DEFAULT_HEARTBEAT_SECONDS,
        reconnect_max_delay: float = DEFAULT_RECONNECT_MAX_SECONDS,
        queue_type: QueueType = "classic",
        delivery_limit: int = DEFAULT_DELIVERY_LIMIT,
    ):
        split_urls(url)  # a malformed list fails here, not at the first reconnect
        topology = Topology(check_queue_type(queue_type), delivery_limit)
        self._settings = ConnectionSettings(url, heartbeat, reconnect_max_delay, topology)
        self._type = topology.queue_type
        self._closed = threading.Event()
        self._publisher = Publisher(self._settings, self._closed)
        self._lock = threading.Lock()  # guards self._subscriptions
        self._subscriptions: list[RabbitSubscription] = []

    @property
    def queue_type(self) -> QueueType:
        return self._type

    def declare(self, queue: str) -> None:
        self._publisher.declare(queue)
        self._publisher.remember(queue)

    def publish(
        self, queue: str, body: bytes, *, priority: int = 0, message_id: str | None = None
    ) -> None:
        target = physical_queue(queue, self._type, _checked(priority))
        self._publisher.publish(target, body, _properties(priority, message_id))

    def publish_soon(
        self, queue: str, body: bytes, *, priority: int = 0, message_id: str | None = None, then: Settled
    ) -> None:
        target = physical_queue(queue, self._type, _checked(priority))
        self._publisher.publish_soon(target, body, _properties(priority, message_id), then)

    def subscribe(self, queue: str, handler: DeliveryHandler, *, prefetch: int) -> Subscription:
        if prefetch < 1:
            raise ValueError("prefetch must be at least 1")
        if self._closed.is_set():
            raise BrokerClosed(f"subscribe {queue}: the broker adapter is closed")
        subscription = RabbitSubscription(
            self._settings, queue, handler, prefetch, consumes=physical_queues(queue, self._type)
        )
        subscription.start()  # declares the queues, or raises if refused
        self._publisher.remember(queue)
        with self._lock:
            self._subscriptions.append(subscription)
        return subscription

    def queue_depth(self, queue: str) -> int:
        return sum(self._publisher.queue_depth(one) for one in physical_queues(queue, self._type))

    def purge(self, queue: str) -> int:
        return sum(self._publisher.purge(one) for one in physical_queues(queue, self._type))

    def ping(self) -> None:
        self._publisher.ping()

    def close(self) -> None:
        self._closed.set()  # from here on, publishing and subscribing raise BrokerError
        with self._lock:
            subscriptions, self._subscriptions = self._subscriptions, []
        for subscription in subscriptions:
            subscription.stop()
        self._publisher.close()


def _checked(priority: int) -> int:
    check_priority(priority)
    return priority


def _properties(priority: int, message_id: str | None) -> pika.BasicProperties:
    # Kept on quorum queues too (which do not order by it): the consumer's inbox does.
    return pika.BasicProperties(
        content_type="application/json",
        delivery_mode=pika.DeliveryMode.Persistent,
        priority=priority,
        message_id=message_id,
    )
