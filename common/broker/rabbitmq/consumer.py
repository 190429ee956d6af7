"""A subscription: one consumer connection, owned by the subscription's own I/O thread.

Other threads reach the connection only through `connection.add_callback_threadsafe`, the one
thread-safe pika call: to settle deliveries, and to wake the loop for a pause, resume or stop.

One channel consumes every broker queue behind the port's queue (one classic queue, or the band
queues of a quorum one, highest band first), each with a consumer of its own and the prefetch
of its own (`basic.qos` per consumer, not global): a band never waits for another's credit, so
the head of every band is in the handler's hands, and the handler (a module's inbox) takes the
highest priority it holds first.
"""

from __future__ import annotations

import random
import threading
from functools import partial

import pika
import pika.exceptions
import structlog
from pika.adapters.blocking_connection import BlockingChannel

from common.broker.port import DeliveryHandler
from common.broker.rabbitmq.connection import ConnectionSettings, close_quietly
from common.broker.rabbitmq.delivery import Link, RabbitDelivery, Settlement
from common.broker.rabbitmq.errors import CONNECTION_ERRORS, REFUSALS
from common.broker.rabbitmq.policy import (
    FIRST_CONNECT_SECONDS,
    PAUSE_WAIT_SECONDS,
    POLL_SECONDS,
    STOP_JOIN_SECONDS,
    reconnect_delay,
)
from common.broker.rabbitmq.topology import declare_pair
from common.errors import BrokerError
from common.handoff import HandOff
from common.logging import exception_summary

log = structlog.get_logger(__name__)


class RabbitSubscription:
    def __init__(
        self,
        settings: ConnectionSettings,
        queue: str,
        handler: DeliveryHandler,
        prefetch: int,
        *,
        consumes: list[str] | None = None,
    ):
        self._settings = settings
        self._queue = queue  # the port's queue, declared (with its twin) first
        self._consumes = consumes or [queue]  # the broker queues consumed, highest band first
        self._handler = handler
        self._prefetch = prefetch
        self._link: Link | None = None
        self._generation = 0
        self._cond = threading.Condition()  # guards the desired/applied state below
        self._paused = False
        self._requested = 0  # bumped by pause/resume; the I/O thread applies up to it
        self._applied = 0
        self._settles: HandOff[tuple[Link, int, Settlement]] = HandOff()  # for the I/O thread to send
        self._stopping = threading.Event()
        self._started = threading.Event()  # consuming for the first time, or refused at once
        self._refusal: str | None = None
        self._thread = threading.Thread(
            target=self._io_loop, name=f"baton-rabbit-{queue}", daemon=True
        )

    def start(self) -> None:
        self._thread.start()
        started = self._started.wait(FIRST_CONNECT_SECONDS)
        if not started or self._refusal is not None:
            self.stop()
            why = self._refusal or "broker unreachable"
            raise BrokerError(f"could not start consuming {self._queue!r}: {why}")

    # -- the Subscription port, callable from any thread ----------------------------------------

    def pause(self) -> None:
        self._request(paused=True)

    def resume(self) -> None:
        self._request(paused=False)

    def stop(self) -> None:
        self._stopping.set()
        self._wake()
        if threading.current_thread() is not self._thread:
            self._thread.join(STOP_JOIN_SECONDS)
            if self._thread.is_alive():
                log.warning("broker.consumer_stop_timeout", queue=self._queue)

    def _request(self, *, paused: bool) -> None:
        """Ask the I/O thread to cancel or restart consuming, and wait until it has: after
        pause() returns, the handler is not called again."""
        with self._cond:
            self._paused = paused
            self._requested += 1
            wanted = self._requested
        if threading.current_thread() is self._thread:
            return  # inside the handler: applied as soon as it returns; see _on_message
        self._wake()
        with self._cond:
            self._cond.wait_for(
                lambda: self._applied >= wanted or self._link is None or self._stopping.is_set(),
                timeout=PAUSE_WAIT_SECONDS,
            )

    def _wake(self) -> None:
        """Make the I/O thread's process_data_events return now instead of at its next poll."""
        link = self._link
        if link is not None:
            try:
                link.connection.add_callback_threadsafe(lambda: None)
            except pika.exceptions.AMQPError:
                pass  # closed: the loop is on its way out or reconnecting, and will look

    def _settle(self, link: Link, tag: int, settlement: Settlement) -> None:
        """Queue the settlement for the I/O thread, one wake-up per batch (common.handoff). The I/O
        loop also takes what is queued at each turn, so a wake-up lost with its connection
        strands nothing."""
        if not self._settles.put((link, tag, settlement)):
            return
        try:
            link.connection.add_callback_threadsafe(self._settle_queued)
        except pika.exceptions.AMQPError:
            # The connection is gone; the broker requeued the message and will redeliver it.
            self._settles.wake_failed()
            log.info("broker.settle_skipped", queue=self._queue, action=settlement, reason="closed")

    def _settle_queued(self) -> None:  # on the I/O thread
        for link, tag, settlement in self._settles.take():
            self._settle_on_io(link, tag, settlement)

    # -- the I/O thread -------------------------------------------------------------------------

    def _io_loop(self) -> None:
        attempt = 0
        while not self._stopping.is_set():
            try:
                link = self._connect()
                attempt = 0  # connected: the next loss backs off from the start again
                self._serve(link)
            except REFUSALS as exc:
                log.warning("broker.consumer_refused", queue=self._queue, error=repr(exc))
                if not self._started.is_set():
                    # Refused before ever consuming: a configuration fault that retrying will
                    # not mend; subscribe() reports it. Later on, keep trying (with backoff).
                    self._refusal = repr(exc)
                    self._started.set()
                    break
            except CONNECTION_ERRORS as exc:
                log.warning("broker.consumer_lost", queue=self._queue, error=repr(exc))
            except Exception:
                # A bug of ours: log it loudly but keep the module consuming.
                log.exception("broker.consumer_failed", queue=self._queue)
            finally:
                self._drop_link()
            if self._stopping.is_set():
                break
            attempt += 1
            delay = reconnect_delay(attempt, self._settings.reconnect_max_delay, random.random())
            log.info("broker.reconnecting", queue=self._queue, attempt=attempt, delay=delay)
            self._stopping.wait(delay)

    def _connect(self) -> Link:
        connection = self._settings.connect(f"consumer {self._queue}")
        try:
            channel = connection.channel()
            declare_pair(channel, self._queue, self._settings.topology)
            channel.basic_qos(prefetch_count=self._prefetch)  # per consumer: each band has its own
        except BaseException:
            close_quietly(connection)
            raise
        self._generation += 1
        link = Link(connection, channel, self._generation)
        # The broker cancels a consumer if its queue is deleted: consume again (which fails, and
        # reconnecting re-declares the queue).
        channel.add_on_cancel_callback(lambda frame: link.cancelled(frame.method.consumer_tag))
        self._link = link
        log.info(
            "broker.connected",
            role="consumer",
            queue=self._queue,
            generation=link.generation,
            node=self._settings.node_of(connection),
        )
        return link

    def _serve(self, link: Link) -> None:
        while not self._stopping.is_set():
            if self._requests_pending(link):
                self._apply_requests(link)
            self._settle_queued()
            link.connection.process_data_events(time_limit=POLL_SECONDS)
        self._cancel_consumers(link)
        # Send the settles already queued by workers before the connection goes.
        self._settle_queued()
        link.connection.process_data_events(0)
        link.connection.close()  # unsettled deliveries go back to the queue

    def _requests_pending(self, link: Link) -> bool:
        """Whether the consumers differ from what is wanted: a pause or resume not yet applied,
        or a consumer the broker cancelled. Read without the lock, at every turn of the loop: a
        request made meanwhile wakes the loop again, so it is seen at the next turn."""
        if self._applied < self._requested:
            return True
        if self._paused:
            return bool(link.consumer_tags)
        return len(link.consumer_tags) < len(self._consumes)

    def _apply_requests(self, link: Link) -> None:
        with self._cond:
            paused, wanted = self._paused, self._requested
        if paused:
            self._cancel_consumers(link)
        else:
            for queue in self._consumes:  # highest band first: its deliveries come first
                if queue not in link.consumer_tags:
                    link.consumer_tags[queue] = link.channel.basic_consume(queue, partial(self._on_message, link))
            self._started.set()
        with self._cond:
            self._applied = max(self._applied, wanted)
            self._cond.notify_all()

    @staticmethod
    def _cancel_consumers(link: Link) -> None:
        # pika nacks (requeue) what arrived but was not dispatched yet.
        for queue, tag in list(link.consumer_tags.items()):
            link.channel.basic_cancel(tag)
            del link.consumer_tags[queue]

    def _on_message(
        self,
        link: Link,
        channel: BlockingChannel,
        method: pika.spec.Basic.Deliver,
        properties: pika.BasicProperties,
        body: bytes,
    ) -> None:
        if self._paused or self._stopping.is_set():
            # Arrived before our cancel took effect: not ours to hand out any more.
            channel.basic_reject(method.delivery_tag, requeue=True)
            return
        delivery = RabbitDelivery(self._settle, link, method, properties, body)
        try:
            self._handler(delivery)
        except Exception as exc:
            # A handler that raises must not kill the consumer; its message is poison until
            # proven otherwise (DESIGN, Reliability 8). No-op if the handler settled it.
            # Type and place only: the message of an error about a task may quote its secrets.
            log.error("broker.handler_failed", queue=self._queue, error=type(exc).__name__, where=exception_summary(exc))
            delivery.dead_letter()

    def _settle_on_io(self, link: Link, tag: int, settlement: Settlement) -> None:
        if link is not self._link or not link.channel.is_open:
            return  # from an earlier connection: the broker has requeued it already
        if settlement == "ack":
            link.channel.basic_ack(tag)
        elif settlement == "dead_letter":
            link.channel.basic_nack(tag, requeue=False)  # the queue's DLX routes it to the twin
        else:
            link.channel.basic_nack(tag, requeue=True)

    def _drop_link(self) -> None:
        link, self._link = self._link, None
        if link is not None:
            close_quietly(link.connection)
        with self._cond:
            self._cond.notify_all()  # a pause() waiting on this link need wait no more
