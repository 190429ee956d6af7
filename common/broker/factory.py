"""Pick the broker adapter a URL names. Called from entry points, never at import time."""

from __future__ import annotations

import threading
from typing import Any
from urllib.parse import urlsplit

from common.broker.inprocess import InProcessBroker
from common.broker.port import Broker
from common.errors import ConfigError
from common.queues import DEFAULT_DELIVERY_LIMIT, QueueType

# The embedded mode runs OSS and every module as threads of one process: they must all reach the
# same in-process broker, so one URL means one instance for the life of the process.
_in_process: dict[str, InProcessBroker] = {}
_in_process_lock = threading.Lock()


def open_broker(
    url: str,
    heartbeat: int | None = None,
    *,
    queue_type: QueueType = "classic",
    delivery_limit: int = DEFAULT_DELIVERY_LIMIT,
) -> Broker:
    """`heartbeat`: the AMQP heartbeat timeout in seconds (BATON_BROKER_HEARTBEAT_SECONDS);
    None for the adapter's default. `queue_type` and `delivery_limit` (BATON_QUEUE_TYPE,
    BATON_QUEUE_DELIVERY_LIMIT) are RabbitMQ's; the in-process broker has one kind of queue.
    `url` may name several RabbitMQ nodes, comma-separated."""
    scheme = urlsplit(url.split(",", 1)[0].strip()).scheme.lower()
    if scheme in {"amqp", "amqps"}:
        # Imported here so that the embedded mode never needs pika.
        from common.broker.rabbitmq import RabbitBroker

        options: dict[str, Any] = {"queue_type": queue_type, "delivery_limit": delivery_limit}
        if heartbeat is not None:
            options["heartbeat"] = heartbeat
        return RabbitBroker(url, **options)
    if scheme == "memory":
        with _in_process_lock:
            if url not in _in_process:
                _in_process[url] = InProcessBroker()
            return _in_process[url]
    raise ConfigError(
        f"unknown broker URL scheme {scheme!r}: use amqp://, amqps:// or memory://"
    )


def move_to_quorum(url: str, queues: list[str], delivery_limit: int = DEFAULT_DELIVERY_LIMIT, *, delete: bool = True):
    """Move the messages of RabbitMQ's classic `queues` (and twins) into their quorum queues;
    returns what was moved, deleted and kept (common.broker.rabbitmq.migrate)."""
    scheme = urlsplit(url.split(",", 1)[0].strip()).scheme.lower()
    if scheme not in {"amqp", "amqps"}:
        raise ConfigError("queue types are RabbitMQ's: BATON_BROKER_URL must be amqp:// or amqps://")
    from common.broker.rabbitmq.migrate import move_classic_to_quorum

    return move_classic_to_quorum(url, queues, delivery_limit, delete=delete)
