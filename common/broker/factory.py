"""Pick the broker adapter a URL names. Called from entry points, never at import time."""

from __future__ import annotations

import threading
from urllib.parse import urlsplit

from common.broker.inprocess import InProcessBroker
from common.broker.port import Broker
from common.errors import ConfigError

# The embedded mode runs OSS and every module as threads of one process: they must all reach the
# same in-process broker, so one URL means one instance for the life of the process.
_in_process: dict[str, InProcessBroker] = {}
_in_process_lock = threading.Lock()


def open_broker(url: str, heartbeat: int | None = None) -> Broker:
    """`heartbeat`: the AMQP heartbeat timeout in seconds (BATON_BROKER_HEARTBEAT_SECONDS);
    None for the adapter's default."""
    scheme = urlsplit(url).scheme.lower()
    if scheme in {"amqp", "amqps"}:
        # Imported here so that the embedded mode never needs pika.
        from common.broker.rabbitmq import RabbitBroker

        return RabbitBroker(url) if heartbeat is None else RabbitBroker(url, heartbeat=heartbeat)
    if scheme == "memory":
        with _in_process_lock:
            if url not in _in_process:
                _in_process[url] = InProcessBroker()
            return _in_process[url]
    raise ConfigError(
        f"unknown broker URL scheme {scheme!r}: use amqp://, amqps:// or memory://"
    )
