"""The RabbitMQ adapter (pika). The only module of baton that imports pika.

pika's BlockingConnection is not thread-safe, so every connection here has exactly one owner:
- the publisher connection belongs to whoever holds `RabbitBroker._lock` (publish, declare,
  queue_depth, purge, ping, and the keep-alive thread that services its heartbeats);
- each subscription's connection belongs to that subscription's I/O thread. Other threads reach
  it only through `connection.add_callback_threadsafe`, the one thread-safe pika call.

Why BlockingConnection and not SelectConnection for consumers: with one connection per I/O
thread, a loop of `process_data_events(time_limit)` gives us heartbeats, callbacks queued from
other threads, and deliveries, while control (consume, cancel, reconnect) stays straight-line
code instead of a chain of callbacks. The I/O thread never blocks on anything but pika itself:
the handler hands deliveries to workers and returns, so heartbeats keep flowing however long the
work takes.

pika exceptions never leave this module: they become BrokerError / UnroutableMessage.
"""

from __future__ import annotations

import random
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar
from urllib.parse import urlsplit, urlunsplit

import pika
import pika.exceptions
import structlog
from pika.adapters.blocking_connection import BlockingChannel

from common.backoff import retry_delay
from common.broker.inprocess import check_priority, is_dead_letter_queue
from common.broker.port import DeliveryHandler
from common.errors import BrokerError, UnroutableMessage
from common.models import BackoffPolicy
from common.queues import dead_letter_queue
from common.transitions import MAX_MESSAGE_PRIORITY

log = structlog.get_logger(__name__)

T = TypeVar("T")

PUBLISH_DEADLINE_SECONDS = 30.0  # how long publish keeps reconnecting before BrokerError
FIRST_CONNECT_SECONDS = 15.0  # subscribe() fails if it cannot start consuming in this time
POLL_SECONDS = 1.0  # longest an I/O loop sleeps without looking at its stop flag
PAUSE_WAIT_SECONDS = 5.0
STOP_JOIN_SECONDS = 10.0

STABLE_SECONDS = 10.0  # a consumer connection that lived this long reconnects at once when lost

# Errors that mean "this connection or channel is gone": reconnect and try again.
_CONNECTION_ERRORS = (pika.exceptions.AMQPError, OSError)
# Errors that mean "the broker said no" (wrong credentials or vhost, queue arguments that differ):
# configuration faults that reconnecting will not mend.
_REFUSALS = (
    pika.exceptions.ChannelClosedByBroker,
    pika.exceptions.AuthenticationError,
    pika.exceptions.ProbableAuthenticationError,
    pika.exceptions.ProbableAccessDeniedError,
)


# -- pure decisions -------------------------------------------------------------------------------


def reconnect_delay(attempt: int, max_delay: float, unit_random: float) -> float:
    """Seconds before reconnect attempt `attempt` (1 = first).

    The first is immediate: most losses are one connection dropped by a broker that is still
    up. Then 0.5 s doubling up to `max_delay`, jittered so that the modules a broker restart
    disconnected together do not all come back in the same instant.
    """
    if attempt <= 1:
        return 0.0
    policy = BackoffPolicy(Initial=min(0.5, max_delay), Max=max_delay, Multiplier=2.0, Jitter=0.2)
    return retry_delay(policy, attempt - 1, unit_random)


def keepalive_interval(heartbeat: int) -> float:
    """How often to service an idle publisher connection: well inside the heartbeat timeout."""
    return min(5.0, max(0.25, heartbeat / 4))


def queue_arguments(queue: str) -> dict[str, Any]:
    return {
        "x-max-priority": MAX_MESSAGE_PRIORITY,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": dead_letter_queue(queue),
    }


def masked_url(url: str) -> str:
    """The URL without its password, fit for a log line."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    return urlunsplit(parts._replace(netloc=f"{parts.username}:***@{netloc}"))


# -- shared I/O helpers ---------------------------------------------------------------------------


def _declare_pair(channel: BlockingChannel, queue: str) -> None:
    if is_dead_letter_queue(queue):
        # Consuming a twin (the monitor, an operator draining it) must not redeclare it as a
        # queue of its own: RabbitMQ refuses a declare whose arguments differ.
        channel.queue_declare(queue, durable=True)
        return
    # The twin first: a queue must never dead-letter into a queue that does not exist yet.
    channel.queue_declare(dead_letter_queue(queue), durable=True)
    channel.queue_declare(queue, durable=True, arguments=queue_arguments(queue))


def _close_quietly(connection: pika.BlockingConnection | None) -> None:
    if connection is None or not connection.is_open:
        return
    try:
        connection.close()
    except Exception as exc:  # closing what is broken already: nothing more to do about it
        log.debug("broker.close_failed", error=repr(exc))


class RabbitBroker:
    def __init__(self, url: str, *, heartbeat: int = 30, reconnect_max_delay: float = 10.0):
        self._url = url
        self._heartbeat = heartbeat
        self._reconnect_max_delay = reconnect_max_delay
        self._lock = threading.Lock()  # owns the publisher connection and self._declared
        self._connection: pika.BlockingConnection | None = None
        self._channel: BlockingChannel | None = None
        self._declared: set[str] = set()
        self._subscriptions: list[RabbitSubscription] = []
        self._closed = threading.Event()
        self._keepalive = threading.Thread(
            target=self._keep_alive, name="baton-rabbit-keepalive", daemon=True
        )
        self._keepalive.start()

    def parameters(self, role: str) -> pika.URLParameters:
        params = pika.URLParameters(self._url)
        params.heartbeat = self._heartbeat
        # A broker under a resource alarm blocks publishers; give up instead of hanging forever.
        params.blocked_connection_timeout = PUBLISH_DEADLINE_SECONDS
        params.client_properties = {"connection_name": f"baton {role}"}
        return params

    # -- the Broker port ------------------------------------------------------------------------

    def declare(self, queue: str) -> None:
        self._run(f"declare {queue}", partial(_declare_pair, queue=queue))
        with self._lock:
            self._declared.add(queue)

    def publish(
        self, queue: str, body: bytes, *, priority: int = 0, message_id: str | None = None
    ) -> None:
        check_priority(priority)
        properties = pika.BasicProperties(
            content_type="application/json",
            delivery_mode=pika.DeliveryMode.Persistent,
            priority=priority,
            message_id=message_id,
        )

        def publish_on(channel: BlockingChannel) -> None:
            # With confirms on, this returns after the broker's ack, and raises UnroutableError
            # when a Basic.Return (mandatory, no queue took it) preceded that ack.
            channel.basic_publish("", queue, body, properties, mandatory=True)

        self._run(f"publish to {queue}", publish_on)

    def subscribe(
        self, queue: str, handler: DeliveryHandler, *, prefetch: int
    ) -> RabbitSubscription:
        if prefetch < 1:
            raise ValueError("prefetch must be at least 1")
        if self._closed.is_set():
            raise BrokerError(f"subscribe {queue}: the broker adapter is closed")
        subscription = RabbitSubscription(self, queue, handler, prefetch)
        subscription.start()  # declares the queue, or raises if the broker refused it
        with self._lock:
            self._declared.add(queue)
            self._subscriptions.append(subscription)
        return subscription

    def queue_depth(self, queue: str) -> int:
        def depth(channel: BlockingChannel) -> int:
            return channel.queue_declare(queue, passive=True).method.message_count

        return self._run(f"queue_depth {queue}", depth)

    def purge(self, queue: str) -> int:
        def purge_on(channel: BlockingChannel) -> int:
            return channel.queue_purge(queue).method.message_count

        return self._run(f"purge {queue}", purge_on)

    def ping(self) -> None:
        self._run("ping", lambda channel: channel.connection.process_data_events(0), deadline=0)

    def close(self) -> None:
        self._closed.set()
        with self._lock:
            subscriptions, self._subscriptions = self._subscriptions, []
        for subscription in subscriptions:
            subscription.stop()
        with self._lock:
            _close_quietly(self._connection)
            self._connection = self._channel = None
        self._keepalive.join(STOP_JOIN_SECONDS)

    # -- the publisher connection ---------------------------------------------------------------

    def _run(
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
                    return operation(self._publisher_channel())
                except pika.exceptions.UnroutableError:
                    raise UnroutableMessage(f"{what}: no queue took the message") from None
                except pika.exceptions.ChannelClosedByBroker as exc:
                    # No such queue, different arguments: retrying cannot help. The connection
                    # is fine; only the channel must be opened again.
                    self._channel = None
                    raise BrokerError(f"{what}: {exc.reply_code} {exc.reply_text}") from None
                except _REFUSALS as exc:
                    self._drop_publisher(what, exc)
                    raise BrokerError(f"{what}: refused by the broker ({exc!r})") from None
                except _CONNECTION_ERRORS as exc:
                    self._drop_publisher(what, exc)
                    attempt += 1
                    delay = reconnect_delay(attempt, self._reconnect_max_delay, random.random())
                    if time.monotonic() + delay > give_up_at:
                        raise BrokerError(f"{what}: broker unreachable ({exc!r})") from None
                    time.sleep(delay)

    def _publisher_channel(self) -> BlockingChannel:
        reconnected = False
        if self._connection is None or not self._connection.is_open:
            self._connection = pika.BlockingConnection(self.parameters("publisher"))
            self._channel = None
            reconnected = True
            log.info("broker.connected", role="publisher", url=masked_url(self._url))
        if self._channel is None or not self._channel.is_open:
            channel = self._connection.channel()
            channel.confirm_delivery()
            if reconnected:
                # A broker that comes back without its definitions (a new node, a reset) would
                # otherwise find every publish unroutable.
                for queue in sorted(self._declared):
                    _declare_pair(channel, queue)
            self._channel = channel
        return self._channel

    def _drop_publisher(self, what: str, error: BaseException) -> None:
        log.warning("broker.publisher_lost", during=what, error=repr(error))
        _close_quietly(self._connection)
        self._connection = self._channel = None

    def _keep_alive(self) -> None:
        """Service the idle publisher connection so the broker does not time out its heartbeats.

        A BlockingConnection only answers heartbeats while one of its methods runs; a module that
        publishes once a minute would otherwise see its connection closed under it.
        """
        while not self._closed.wait(keepalive_interval(self._heartbeat)):
            with self._lock:
                if self._connection is None or not self._connection.is_open:
                    continue  # reconnecting is publish's job, when there is something to send
                try:
                    self._connection.process_data_events(0)
                except _CONNECTION_ERRORS as exc:
                    self._drop_publisher("keep-alive", exc)


# -- consuming ------------------------------------------------------------------------------------


@dataclass(eq=False)
class _Link:
    """One connection of a subscription. Deliveries remember theirs: a delivery whose link is no
    longer current came from a lost connection and settles as a no-op."""

    connection: pika.BlockingConnection
    channel: BlockingChannel
    generation: int
    consumer_tag: str | None = None


class RabbitDelivery:
    def __init__(
        self,
        subscription: RabbitSubscription,
        link: _Link,
        method: pika.spec.Basic.Deliver,
        properties: pika.BasicProperties,
        body: bytes,
    ):
        self._subscription = subscription
        self._link = link
        self._tag = method.delivery_tag
        self._settled = threading.Lock()  # held for good by the first settle
        self.body = body
        self.redelivered = bool(method.redelivered)
        self.message_id: str | None = properties.message_id
        self.priority: int = properties.priority or 0
        self.persistent = properties.delivery_mode == pika.DeliveryMode.Persistent.value

    def ack(self) -> None:
        self._settle("ack")

    def dead_letter(self) -> None:
        self._settle("dead_letter")

    def requeue(self) -> None:
        self._settle("requeue")

    def _settle(self, action: str) -> None:
        # Settling twice would make the broker close the channel (unknown delivery tag).
        if self._settled.acquire(blocking=False):
            self._subscription._settle(self._link, self._tag, action)


class RabbitSubscription:
    def __init__(
        self, broker: RabbitBroker, queue: str, handler: DeliveryHandler, prefetch: int
    ):
        self._broker = broker
        self._queue = queue
        self._handler = handler
        self._prefetch = prefetch
        self._link: _Link | None = None
        self._generation = 0
        self._cond = threading.Condition()  # guards the desired/applied state below
        self._paused = False
        self._requested = 0  # bumped by pause/resume; the I/O thread applies up to it
        self._applied = 0
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

    def _settle(self, link: _Link, tag: int, action: str) -> None:
        try:
            link.connection.add_callback_threadsafe(partial(self._settle_on_io, link, tag, action))
        except pika.exceptions.AMQPError:
            # The connection is gone; the broker requeued the message and will redeliver it.
            log.info("broker.settle_skipped", queue=self._queue, action=action, reason="closed")

    # -- the I/O thread -------------------------------------------------------------------------

    def _io_loop(self) -> None:
        attempt = 0
        while not self._stopping.is_set():
            connected_at = None
            try:
                link = self._connect()
                connected_at = time.monotonic()
                self._serve(link)
            except _REFUSALS as exc:
                log.warning("broker.consumer_refused", queue=self._queue, error=repr(exc))
                if not self._started.is_set():
                    # Refused before ever consuming: a configuration fault that retrying will
                    # not mend; subscribe() reports it. Later on, keep trying (with backoff).
                    self._refusal = repr(exc)
                    self._started.set()
                    break
            except _CONNECTION_ERRORS as exc:
                log.warning("broker.consumer_lost", queue=self._queue, error=repr(exc))
            except Exception:
                # A bug of ours: log it loudly but keep the module consuming.
                log.exception("broker.consumer_failed", queue=self._queue)
            finally:
                self._drop_link()
            if self._stopping.is_set():
                break
            if connected_at is not None and time.monotonic() - connected_at > STABLE_SECONDS:
                attempt = 0  # a healthy connection lost: back off from the start again
            attempt += 1
            delay = reconnect_delay(attempt, self._broker._reconnect_max_delay, random.random())
            log.info("broker.reconnecting", queue=self._queue, attempt=attempt, delay=delay)
            self._stopping.wait(delay)

    def _connect(self) -> _Link:
        connection = pika.BlockingConnection(self._broker.parameters(f"consumer {self._queue}"))
        try:
            channel = connection.channel()
            _declare_pair(channel, self._queue)
            channel.basic_qos(prefetch_count=self._prefetch)
        except BaseException:
            _close_quietly(connection)
            raise
        self._generation += 1
        link = _Link(connection, channel, self._generation)
        # The broker cancels our consumer if the queue is deleted: consume again (which fails,
        # and reconnecting re-declares the queue).
        channel.add_on_cancel_callback(lambda _frame: setattr(link, "consumer_tag", None))
        self._link = link
        log.info(
            "broker.connected",
            role="consumer",
            queue=self._queue,
            generation=link.generation,
            url=masked_url(self._broker._url),
        )
        return link

    def _serve(self, link: _Link) -> None:
        while not self._stopping.is_set():
            self._apply_requests(link)
            link.connection.process_data_events(time_limit=POLL_SECONDS)
        if link.consumer_tag is not None:
            link.channel.basic_cancel(link.consumer_tag)
            link.consumer_tag = None
        # Run the settles already queued by workers before the connection goes.
        link.connection.process_data_events(0)
        link.connection.close()  # unsettled deliveries go back to the queue

    def _apply_requests(self, link: _Link) -> None:
        with self._cond:
            paused, wanted = self._paused, self._requested
        if paused and link.consumer_tag is not None:
            # pika nacks (requeue) what arrived but was not dispatched yet.
            link.channel.basic_cancel(link.consumer_tag)
            link.consumer_tag = None
        elif not paused and link.consumer_tag is None:
            link.consumer_tag = link.channel.basic_consume(
                self._queue, partial(self._on_message, link)
            )
            self._started.set()
        with self._cond:
            self._applied = max(self._applied, wanted)
            self._cond.notify_all()

    def _on_message(
        self,
        link: _Link,
        channel: BlockingChannel,
        method: pika.spec.Basic.Deliver,
        properties: pika.BasicProperties,
        body: bytes,
    ) -> None:
        if self._paused or self._stopping.is_set():
            # Arrived before our cancel took effect: not ours to hand out any more.
            channel.basic_reject(method.delivery_tag, requeue=True)
            return
        delivery = RabbitDelivery(self, link, method, properties, body)
        try:
            self._handler(delivery)
        except Exception:
            # A handler that raises must not kill the consumer; its message is poison until
            # proven otherwise (DESIGN, Reliability 8). No-op if the handler settled it.
            log.exception("broker.handler_failed", queue=self._queue)
            delivery.dead_letter()

    def _settle_on_io(self, link: _Link, tag: int, action: str) -> None:
        if link is not self._link or not link.channel.is_open:
            return  # from an earlier connection: the broker has requeued it already
        if action == "ack":
            link.channel.basic_ack(tag)
        elif action == "dead_letter":
            link.channel.basic_nack(tag, requeue=False)  # the queue's DLX routes it to the twin
        else:
            link.channel.basic_nack(tag, requeue=True)

    def _drop_link(self) -> None:
        link, self._link = self._link, None
        if link is not None:
            _close_quietly(link.connection)
        with self._cond:
            self._cond.notify_all()  # a pause() waiting on this link need wait no more
