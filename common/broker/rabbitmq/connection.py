"""Where and how the adapter connects: URL, heartbeat, connection names, reconnect cap."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

import pika
import structlog

from common.broker.rabbitmq.policy import PUBLISH_DEADLINE_SECONDS

log = structlog.get_logger(__name__)


def masked_url(url: str) -> str:
    """The URL without its password, fit for a log line."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{netloc}"))


@dataclass(frozen=True)
class ConnectionSettings:
    url: str
    heartbeat: int
    reconnect_max_delay: float

    @property
    def masked_url(self) -> str:
        return masked_url(self.url)

    def parameters(self, role: str) -> pika.URLParameters:
        params = pika.URLParameters(self.url)
        params.heartbeat = self.heartbeat
        # A broker under a resource alarm blocks publishers; give up instead of hanging forever.
        params.blocked_connection_timeout = PUBLISH_DEADLINE_SECONDS
        params.client_properties = {"connection_name": f"baton {role}"}
        return params

    def connect(self, role: str) -> pika.BlockingConnection:
        """A new connection, named after its `role` in the broker's connection list."""
        return pika.BlockingConnection(self.parameters(role))


def close_quietly(connection: pika.BlockingConnection | None) -> None:
    if connection is None or not connection.is_open:
        return
    try:
        connection.close()
    except Exception as exc:  # closing what is broken already: nothing more to do about it
        log.debug("broker.close_failed", error=repr(exc))
