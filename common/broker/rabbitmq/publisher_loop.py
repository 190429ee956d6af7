"""The publisher's I/O thread: one SelectConnection at a time, and what to do when it is lost.

Everything here runs on that thread, in callbacks of its IOLoop, except `wake` and `shut_down`,
which other threads call: they go through `ioloop.add_callback_threadsafe`. The one IOLoop lives
as long as the thread; connections come and go on it. Each connection has two channels:
publishing.py (confirm mode, the publishes) and operations.py (declare, depth, purge, ping).

The connection is opened when there is work and kept open (the loop answers heartbeats). A lost
connection puts every call without an answer back at the front of the inbox, and a new one is
made (with the consumers' backoff) while there is work; a call whose deadline would pass before
the next attempt fails with BrokerError instead. A publish whose confirm was lost may thus reach
its queue twice: baton fences duplicates with its claims. While the broker refuses us
(credentials, a vhost gone), calls fail at once until the next attempt is due.
"""

from __future__ import annotations

import contextlib
import random
import time

import structlog
from pika.adapters.select_connection import IOLoop, SelectConnection

from common.broker.rabbitmq.calls import Call, Inbox
from common.broker.rabbitmq.connection import ConnectionSettings
from common.broker.rabbitmq.errors import REFUSALS, guarded
from common.broker.rabbitmq.operations import OperationsChannel
from common.broker.rabbitmq.policy import (
    CLOSE_GRACE_SECONDS,
    DEADLINE_CHECK_SECONDS,
    reconnect_delay,
)
from common.broker.rabbitmq.publishing import PublishingChannel
from common.errors import BrokerClosed, BrokerError

log = structlog.get_logger(__name__)


class PublisherLoop:
    def __init__(self, settings: ConnectionSettings, inbox: Inbox):
        self._settings = settings
        self._inbox = inbox
        self.ioloop = IOLoop()
        self._publishing = PublishingChannel(inbox, on_answered=self._on_answered, topology=settings.topology)
        self._operations = OperationsChannel(inbox, on_answered=self._on_answered)
        self._connection: SelectConnection | None = None
        self._attempt = 0
        self._next_attempt_at = 0.0  # time.monotonic(): no new connection before (backoff)
        self._refusal: str | None = None  # why the last attempt was refused
        self._reconnect_timer: object | None = None
        self._shutting_down = False

    # -- from any thread --------------------------------------------------------------------------

    def wake(self) -> None:
        self.ioloop.add_callback_threadsafe(self._drain)

    def shut_down(self) -> None:
        self.ioloop.add_callback_threadsafe(self._begin_shutdown)

    # -- the thread -------------------------------------------------------------------------------

    def run(self) -> None:
        self.ioloop.call_later(DEADLINE_CHECK_SECONDS, self._check_deadlines)
        while True:
            try:
                self.ioloop.start()
                break
            except Exception:  # out of pika itself: drop the connection, keep the thread
                log.exception("broker.publisher_loop_failed")
                connection = self._connection
                if connection is not None:
                    self._on_connection_lost(connection, RuntimeError("publisher I/O loop failed"))
                    with contextlib.suppress(Exception):
                        connection.close()
        self.ioloop.close()

    @guarded
    def _drain(self) -> None:
        if self._connection is None:
            if self._reconnect_timer is None and self._inbox.has_work():
                self._connect_when_due()
            return
        self._publishing.drain()
        self._operations.start_next()

    def _on_answered(self) -> None:
        if self._shutting_down:
            self._close_if_idle()

    # -- connecting -------------------------------------------------------------------------------

    def _connect_when_due(self) -> None:
        wait = self._next_attempt_at - time.monotonic()
        if wait <= 0:
            self._connect()
        elif self._refusal is not None:
            self._fail(self._inbox.remove(lambda call: True), self._refusal)
        else:
            self._reconnect_timer = self.ioloop.call_later(wait, self._reconnect)

    def _connect(self) -> None:
        self._refusal = None
        self._connection = SelectConnection(
            self._settings.parameters("publisher"),
            on_open_callback=self._on_connection_open,
            on_open_error_callback=self._on_connection_lost,
            on_close_callback=self._on_connection_lost,
            custom_ioloop=self.ioloop,
        )

    @guarded
    def _reconnect(self) -> None:
        self._reconnect_timer = None
        if self._connection is None and self._inbox.has_work() and not self._shutting_down:
            self._connect()

    @guarded
    def _on_connection_open(self, connection: SelectConnection) -> None:
        if connection is not self._connection:
            return
        self._attempt = 0  # connected: the next loss backs off from the start again
        log.info("broker.connected", role="publisher", node=self._settings.node_of(connection))
        self._publishing.open(connection, redeclare=True)
        self._operations.open(connection)

    @guarded
    def _on_connection_lost(self, connection: SelectConnection, reason: BaseException) -> None:
        if connection is not self._connection:
            return
        self._connection = None
        unanswered: list[Call] = [*self._publishing.abandon(), *self._operations.abandon()]
        unanswered = [call for call in unanswered if not call.done]
        if self._shutting_down:
            self._fail(unanswered + self._inbox.shut(), "the broker adapter is closed", BrokerClosed)
            self.ioloop.stop()
            return
        now = time.monotonic()
        self._attempt += 1
        delay = reconnect_delay(self._attempt, self._settings.reconnect_max_delay, random.random())
        refused = isinstance(reason, REFUSALS)
        log.warning(
            "broker.publisher_lost",
            error=repr(reason),
            unanswered=len(unanswered),
            attempt=self._attempt,
            delay=delay,
        )

        def hopeless(call: Call) -> bool:
            return refused or not call.retry or now + delay >= call.give_up_at

        self._inbox.put_back(call for call in unanswered if not hopeless(call))
        why = f"{'refused by the broker' if refused else 'broker unreachable'} ({reason!r})"
        self._fail([call for call in unanswered if hopeless(call)], why)
        self._fail(self._inbox.remove(hopeless), why)
        self._next_attempt_at = now + delay
        self._refusal = why if refused else None
        if self._inbox.has_work():
            self._reconnect_timer = self.ioloop.call_later(delay, self._reconnect)

    # -- deadlines and shutting down --------------------------------------------------------------

    @guarded
    def _check_deadlines(self) -> None:
        self.ioloop.call_later(DEADLINE_CHECK_SECONDS, self._check_deadlines)
        now = time.monotonic()

        def expired(call: Call) -> bool:
            return now >= call.give_up_at

        self._fail(self._inbox.remove(expired), "not sent in time: broker unreachable")
        if self._connection is None and self._reconnect_timer is None and not self._shutting_down:
            self._drain()  # a nacked publish put back while no connection was open
        answering: list[Call] = [*self._publishing.unanswered(), *self._operations.unanswered()]
        self._fail(
            [call for call in answering if expired(call)], "no answer from the broker in time"
        )

    @guarded
    def _begin_shutdown(self) -> None:
        self._shutting_down = True
        if self._reconnect_timer is not None:
            self.ioloop.remove_timeout(self._reconnect_timer)
            self._reconnect_timer = None
        if self._connection is None:
            self._fail(self._inbox.shut(), "the broker adapter is closed", BrokerClosed)
            self.ioloop.stop()
            return
        # Publishes taken before close() get their confirms, within a grace period.
        self.ioloop.call_later(CLOSE_GRACE_SECONDS, self._close_connection)
        self._close_if_idle()

    def _close_if_idle(self) -> None:
        if self._publishing.idle and self._operations.idle and not self._inbox.has_work():
            self._close_connection()

    @guarded
    def _close_connection(self) -> None:
        connection = self._connection
        if connection is not None and not (connection.is_closing or connection.is_closed):
            connection.close()  # _on_connection_lost fails what is left and stops the loop

    @staticmethod
    def _fail(calls: list[Call], why: str, error: type[BrokerError] = BrokerError) -> None:
        for call in calls:
            call.fail(error(f"{call.what}: {why}"))
