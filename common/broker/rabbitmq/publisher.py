"""The publisher connection: one per adapter, shared by every thread that publishes.

It belongs to whoever holds `Publisher._lock`: the callers of `run` (publish, declare,
queue_depth, purge, ping) and the keep-alive thread that services its heartbeats.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from typing import TypeVar

import pika
import pika.exceptions
import structlog
from pika.adapters.blocking_connection import BlockingChannel

from common.broker.rabbitmq.connection import ConnectionSettings, close_quietly
from common.broker.rabbitmq.errors import CONNECTION_ERRORS, REFUSALS
from common.broker.rabbitmq.policy import (
    PUBLISH_DEADLINE_SECONDS,
    STOP_JOIN_SECONDS,
    keepalive_interval,
    reconnect_delay,
)
from common.broker.rabbitmq.topology import declare_pair
from common.errors import BrokerError, UnroutableMessage

log = structlog.get_logger(__name__)

T = TypeVar("T")


class Publisher:
    def __init__(self, settings: ConnectionSettings, closed: threading.Event):
        self._settings = settings
        self._closed = closed  # the adapter's: once set, `run` refuses and the keep-alive ends
        self._lock = threading.Lock()  # owns the connection, the channel and self._declared
        self._connection: pika.BlockingConnection | None = None
        self._channel: BlockingChannel | None = None
        self._declared: set[str] = set()
        self._keepalive = threading.Thread(
            target=self._keep_alive, name="baton-rabbit-keepalive", daemon=True
        )
        self._keepalive.start()

    def run(
        self,
        what: str,
        operation: Callable[[BlockingChannel], T],
        *,
        deadline: float = PUBLISH_DEADLINE_SECONDS,
    ) -> T:
        """Run `operation` on the publisher channel, reconnecting until `deadline` seconds pass.

        Retrying a publish whose confirm was lost may deliver it twice: the protocol expects
        at-least-once delivery and fences duplicates in the store.
        """
        if self._closed.is_set():
            raise BrokerError(f"{what}: the broker adapter is closed")
        give_up_at = time.monotonic() + deadline
        attempt = 0
        with self._lock:
            while True:
                try:
                    return operation(self._open_channel())
                except pika.exceptions.UnroutableError:
                    raise UnroutableMessage(f"{what}: no queue took the message") from None
                except pika.exceptions.ChannelClosedByBroker as exc:
                    # No such queue, different arguments: retrying cannot help. The connection
                    # is fine; only the channel must be opened again.
                    self._channel = None
                    raise BrokerError(f"{what}: {exc.reply_code} {exc.reply_text}") from None
                except REFUSALS as exc:
                    self._drop(what, exc)
                    raise BrokerError(f"{what}: refused by the broker ({exc!r})") from None
                except CONNECTION_ERRORS as exc:
                    self._drop(what, exc)
                    attempt += 1
                    delay = reconnect_delay(
                        attempt, self._settings.reconnect_max_delay, random.random()
                    )
                    if time.monotonic() + delay > give_up_at:
                        raise BrokerError(f"{what}: broker unreachable ({exc!r})") from None
                    time.sleep(delay)

    def remember(self, queue: str) -> None:
        """Declare `queue` again on every reconnect (see _open_channel)."""
        with self._lock:
            self._declared.add(queue)

    def close(self) -> None:
        """Close the connection; call once the adapter's `closed` flag is set."""
        with self._lock:
            close_quietly(self._connection)
            self._connection = self._channel = None
        self._keepalive.join(STOP_JOIN_SECONDS)

    def _open_channel(self) -> BlockingChannel:
        reconnected = False
        if self._connection is None or not self._connection.is_open:
            self._connection = self._settings.connect("publisher")
            self._channel = None
            reconnected = True
            log.info("broker.connected", role="publisher", url=self._settings.masked_url)
        if self._channel is None or not self._channel.is_open:
            channel = self._connection.channel()
            channel.confirm_delivery()
            if reconnected:
                # A broker that comes back without its definitions (a new node, a reset) would
                # otherwise find every publish unroutable.
                for queue in sorted(self._declared):
                    declare_pair(channel, queue)
            self._channel = channel
        return self._channel

    def _drop(self, what: str, error: BaseException) -> None:
        log.warning("broker.publisher_lost", during=what, error=repr(error))
        close_quietly(self._connection)
        self._connection = self._channel = None

    def _keep_alive(self) -> None:
        """Service the idle connection so the broker does not time out its heartbeats.

        A BlockingConnection only answers heartbeats while one of its methods runs; a module that
        publishes once a minute would otherwise see its connection closed under it.
        """
        while not self._closed.wait(keepalive_interval(self._settings.heartbeat)):
            with self._lock:
                if self._connection is None or not self._connection.is_open:
                    continue  # reconnecting is run's job, when there is something to send
                try:
                    self._connection.process_data_events(0)
                except CONNECTION_ERRORS as exc:
                    self._drop("keep-alive", exc)
