"""Where and how the adapter connects: URLs, heartbeat, connection names, reconnect cap.

BATON_BROKER_URL may name several nodes of one cluster, comma-separated
(`amqp://u:p@rabbit-1:5672/v,amqp://u:p@rabbit-2:5672/v`). Every new connection starts at the
next node of the list and, when that one does not answer, tries the others in turn: a process
whose node dies reconnects to a live one at its first attempt. The first node is picked at
random per process, which spreads a fleet's connections over the cluster.
"""

from __future__ import annotations

import itertools
import random
import threading
from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

import pika
import structlog

from common.broker.rabbitmq.policy import PUBLISH_DEADLINE_SECONDS
from common.broker.rabbitmq.topology import Topology
from common.errors import ConfigError

log = structlog.get_logger(__name__)


def split_urls(url: str) -> tuple[str, ...]:
    """The node URLs of a BATON_BROKER_URL, in order; ConfigError if one is not amqp(s)."""
    urls = tuple(part.strip() for part in url.split(",") if part.strip())
    if not urls:
        raise ConfigError("BATON_BROKER_URL names no broker node")
    for n, one in enumerate(urls, 1):
        scheme = urlsplit(one).scheme.lower()
        if scheme not in {"amqp", "amqps"}:
            # The URL itself may carry a password: name its place and scheme only.
            raise ConfigError(f"BATON_BROKER_URL node {n}: scheme {scheme!r} is not amqp:// or amqps://")
    return urls


def masked_url(url: str) -> str:
    """The URL (or comma-separated URLs) without passwords, fit for a log line."""
    return ",".join(_masked_one(one) for one in url.split(","))


def _masked_one(url: str) -> str:
    parts = urlsplit(url.strip())
    if parts.password is None:
        return url.strip()
    netloc = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{netloc}"))


@dataclass(frozen=True)
class ConnectionSettings:
    url: str
    heartbeat: int
    reconnect_max_delay: float
    topology: Topology = field(default_factory=Topology)
    # Which node the next connection starts at (shared by every connection of the adapter).
    _turn: itertools.count = field(default_factory=lambda: itertools.count(random.randrange(1024)), repr=False, compare=False)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    @property
    def urls(self) -> tuple[str, ...]:
        return split_urls(self.url)

    @property
    def masked_url(self) -> str:
        return masked_url(self.url)

    def node_order(self) -> list[str]:
        """Every node URL, starting at the next one's turn."""
        urls = self.urls
        with self._lock:
            start = next(self._turn) % len(urls)
        return [*urls[start:], *urls[:start]]

    def parameters(self, role: str, url: str | None = None) -> pika.URLParameters:
        params = pika.URLParameters(url or self.node_order()[0])
        params.heartbeat = self.heartbeat
        # A broker under a resource alarm blocks publishers; give up instead of hanging forever.
        params.blocked_connection_timeout = PUBLISH_DEADLINE_SECONDS
        params.client_properties = {"connection_name": f"baton {role}"}
        # pika's own retries would wait on a dead node; the next node is tried instead.
        params.connection_attempts = 1
        return params

    def connect(self, role: str) -> pika.BlockingConnection:
        """A new connection, named after its `role` in the broker's connection list, to the
        first node of the list (from this connection's turn on) that answers."""
        return pika.BlockingConnection([self.parameters(role, url) for url in self.node_order()])

    @staticmethod
    def node_of(connection: object) -> str:
        """host:port a connection went to, for logs (never the credentials)."""
        params = getattr(connection, "_impl", connection)
        params = getattr(params, "params", None)
        return f"{params.host}:{params.port}" if params is not None else "?"


def close_quietly(connection: pika.BlockingConnection | None) -> None:
    if connection is None or not connection.is_open:
        return
    try:
        connection.close()
    except Exception as exc:  # closing what is broken already: nothing more to do about it
        log.debug("broker.close_failed", error=repr(exc))
