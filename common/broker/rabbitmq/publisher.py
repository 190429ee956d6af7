"""The publisher: what the threads that publish (or declare, count, purge, ping) call.

Each call goes into the inbox with its own future and deadline, and the caller waits for its own
answer only; the publisher's I/O thread (publisher_loop.py) sends the calls and resolves the
futures as the broker's confirms come in. Many threads can so publish at once: nothing here holds
a lock across a round trip to the broker.
"""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any

import pika
import structlog
from pika.channel import Channel

from common.broker.port import Settled
from common.broker.rabbitmq.calls import PUBLISH_ID_HEADER, Call, Inbox, Operation, Publish
from common.broker.rabbitmq.connection import ConnectionSettings
from common.broker.rabbitmq.policy import (
    ANSWER_SLACK_SECONDS,
    PING_DEADLINE_SECONDS,
    PUBLISH_DEADLINE_SECONDS,
    STOP_JOIN_SECONDS,
)
from common.broker.rabbitmq.publisher_loop import PublisherLoop
from common.broker.rabbitmq.topology import declare_pair_async
from common.errors import BrokerClosed, BrokerError

log = structlog.get_logger(__name__)

Finish = Callable[[Any], None]


class Publisher:
    def __init__(self, settings: ConnectionSettings, closed: threading.Event):
        self._closed = closed  # the adapter's: once set, every call raises BrokerError
        self._inbox = Inbox()
        self._loop = PublisherLoop(settings, self._inbox)
        self._topology = settings.topology
        self._ids = itertools.count(1)  # next() on a count is atomic: no lock needed
        self._thread = threading.Thread(
            target=self._loop.run, name="baton-rabbit-publisher", daemon=True
        )
        self._thread.start()

    def publish(self, queue: str, body: bytes, properties: pika.BasicProperties) -> None:
        """Return once the broker confirmed; UnroutableMessage if no queue took it, BrokerError
        if it was not confirmed within PUBLISH_DEADLINE_SECONDS (reconnecting meanwhile)."""
        self._call(self._publish_call(queue, body, properties))

    def publish_soon(self, queue: str, body: bytes, properties: pika.BasicProperties, then: Settled) -> None:
        """The same publish, not waited for: `then` gets its outcome on the I/O thread, which
        settles the call's future (common.broker.port.Broker.publish_soon)."""
        call = self._publish_call(queue, body, properties)
        try:
            self._hand_over(call)
        except BrokerError as exc:
            then(exc)
            return
        call.future.add_done_callback(lambda future: _settled(future, then))

    def _publish_call(self, queue: str, body: bytes, properties: pika.BasicProperties) -> Publish:
        publish_id = str(next(self._ids))
        properties.headers = {**(properties.headers or {}), PUBLISH_ID_HEADER: publish_id}
        return Publish(
            what=f"publish to {queue}",
            give_up_at=time.monotonic() + PUBLISH_DEADLINE_SECONDS,
            queue=queue,
            body=body,
            properties=properties,
            publish_id=publish_id,
        )

    def declare(self, queue: str) -> None:
        topology = self._topology
        def start(channel: Channel, finish: Finish) -> None:
            declare_pair_async(channel, queue, lambda: finish(None), topology)

        self._operate(f"declare {queue}", start)

    def queue_depth(self, queue: str) -> int:
        def start(channel: Channel, finish: Finish) -> None:
            channel.queue_declare(
                queue, passive=True, callback=lambda frame: finish(frame.method.message_count)
            )

        return int(self._operate(f"queue_depth {queue}", start))

    def purge(self, queue: str) -> int:
        def start(channel: Channel, finish: Finish) -> None:
            channel.queue_purge(queue, callback=lambda frame: finish(frame.method.message_count))

        return int(self._operate(f"purge {queue}", start))

    def ping(self) -> None:
        """One connection attempt at most, then a round trip on it."""

        def start(channel: Channel, finish: Finish) -> None:
            channel.exchange_declare("amq.direct", passive=True, callback=lambda _f: finish(None))

        self._operate("ping", start, deadline=PING_DEADLINE_SECONDS, retry=False)

    def remember(self, queue: str) -> None:
        """Declare `queue` again on every new connection."""
        self._inbox.remember(queue)

    def close(self) -> None:
        """Let the publishes in flight be confirmed (briefly), then close the connection; call
        once the adapter's `closed` flag is set."""
        self._loop.shut_down()
        if threading.current_thread() is not self._thread:
            self._thread.join(STOP_JOIN_SECONDS)
            if self._thread.is_alive():
                log.warning("broker.publisher_stop_timeout")

    def _operate(
        self,
        what: str,
        start: Callable[[Channel, Finish], None],
        *,
        deadline: float = PUBLISH_DEADLINE_SECONDS,
        retry: bool = True,
    ) -> Any:
        give_up_at = time.monotonic() + deadline
        return self._call(Operation(what=what, give_up_at=give_up_at, retry=retry, start=start))

    def _call(self, call: Call) -> Any:
        self._hand_over(call)
        # The I/O thread fails the call at its deadline; the slack is for a bug of ours there.
        wait = max(0.0, call.give_up_at - time.monotonic()) + ANSWER_SLACK_SECONDS
        try:
            return call.future.result(timeout=wait)
        except TimeoutError:
            log.error("broker.publisher_unresponsive", what=call.what)
            raise BrokerError(f"{call.what}: no answer from the publisher's I/O thread") from None

    def _hand_over(self, call: Call) -> None:
        if self._closed.is_set():
            raise BrokerClosed(f"{call.what}: the broker adapter is closed")
        if self._inbox.put(call):
            self._loop.wake()


def _settled(future: Future[Any], then: Settled) -> None:
    """A publish not waited for was answered: tell its caller; a failing callback is logged,
    never raised into the I/O thread."""
    error = future.exception()
    try:
        then(error if isinstance(error, BrokerError) or error is None else BrokerError(str(error)))
    except Exception:
        log.exception("broker.publish_callback_failed")
