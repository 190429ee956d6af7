"""The publisher connection's operations channel: declare, queue_depth, purge, ping.

One operation at a time, on a channel of its own: a refusal (a passive declare of a missing
queue closes its channel) fails that operation only and never touches publishes in flight. Runs
on the publisher's I/O thread only; publisher_loop.py owns it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

import pika
import pika.exceptions
from pika.channel import Channel

from common.broker.rabbitmq.calls import Inbox, Operation
from common.broker.rabbitmq.errors import guarded
from common.errors import BrokerError


class OperationsChannel:
    def __init__(self, inbox: Inbox, on_answered: Callable[[], None]):
        self._inbox = inbox
        self._on_answered = on_answered
        self._connection: pika.SelectConnection | None = None
        self._channel: Channel | None = None  # open
        self._running: Operation | None = None

    @property
    def idle(self) -> bool:
        return self._running is None

    def unanswered(self) -> list[Operation]:
        return [] if self._running is None else [self._running]

    def open(self, connection: pika.SelectConnection) -> None:
        self._connection = connection
        connection.channel(on_open_callback=functools.partial(self._on_open, connection))

    def abandon(self) -> list[Operation]:
        """The connection is lost: forget it; return the operation left without an answer."""
        running = self.unanswered()
        self._connection = self._channel = self._running = None
        return running

    def start_next(self) -> None:
        while self._channel is not None and self._running is None:
            operation = self._inbox.take_operation()
            if operation is None:
                return
            if operation.done:
                continue  # failed by its deadline while it waited
            self._running = operation
            try:
                operation.start(self._channel, functools.partial(self._finished, operation))
            except pika.exceptions.AMQPError:
                self._running = None
                self._inbox.put_back([operation])  # the channel is closing: run it after
                return

    @guarded
    def _on_open(self, connection: pika.SelectConnection, channel: Channel) -> None:
        if connection is not self._connection:
            return  # that connection was lost meanwhile
        self._channel = channel
        channel.add_on_close_callback(self._on_closed)
        self.start_next()

    @guarded
    def _finished(self, operation: Operation, result: Any) -> None:
        if operation is not self._running:
            return
        self._running = None
        operation.succeed(result)
        self.start_next()
        self._on_answered()

    @guarded
    def _on_closed(self, channel: Channel, reason: BaseException) -> None:
        if channel is not self._channel:
            return
        self._channel = None
        if not isinstance(reason, pika.exceptions.ChannelClosedByBroker):
            return  # the connection is going: the loop calls abandon()
        operation, self._running = self._running, None
        if operation is not None:
            # No such queue, different arguments: retrying cannot help.
            operation.fail(
                BrokerError(f"{operation.what}: {reason.reply_code} {reason.reply_text}")
            )
        self._on_answered()  # which may close the connection (shutting down)
        if self._connection is not None and self._connection.is_open:
            self.open(self._connection)
