"""The publisher connection's publishing channel: confirm mode, and the publishes it carries.

Publishes go out as soon as they are taken from the inbox, each remembered under its delivery
tag until the broker's ack, nack or return-then-ack (confirms.py) resolves its future. Runs on
the publisher's I/O thread only; publisher_loop.py owns it and tells it when a connection opens
or is lost.
"""

from __future__ import annotations

import contextlib
import functools
import time
from collections.abc import Callable

import pika
import pika.exceptions
import structlog
from pika.channel import Channel

from common.broker.rabbitmq.calls import PUBLISH_ID_HEADER, Inbox, Publish
from common.broker.rabbitmq.confirms import ConfirmTracker
from common.broker.rabbitmq.errors import guarded
from common.broker.rabbitmq.policy import NACK_REOPEN_SECONDS, NACK_RETRY_SECONDS
from common.broker.rabbitmq.topology import Topology, declare_pair_async
from common.errors import BrokerError, UnroutableMessage

log = structlog.get_logger(__name__)


class PublishingChannel:
    def __init__(self, inbox: Inbox, on_answered: Callable[[], None], topology: Topology):
        self._inbox = inbox
        self._topology = topology
        self._on_answered = on_answered  # some publishes were answered (or failed)
        self._connection: pika.SelectConnection | None = None
        self._channel: Channel | None = None
        self._ready = False  # the channel is in confirm mode
        self._next_tag = 1
        self._unconfirmed: ConfirmTracker[Publish] = ConfirmTracker()
        self._nacked_since: float | None = None  # nacks only, since then (None: the last answer was an ack)

    @property
    def idle(self) -> bool:
        return not self._unconfirmed

    def unanswered(self) -> list[Publish]:
        return self._unconfirmed.pending()

    def open(self, connection: pika.SelectConnection, *, redeclare: bool) -> None:
        self._connection = connection
        connection.channel(
            on_open_callback=functools.partial(self._on_open, connection, redeclare=redeclare)
        )

    def abandon(self) -> list[Publish]:
        """The connection is lost: forget it; return the publishes left without an answer."""
        self._connection = self._channel = None
        self._ready = False
        self._nacked_since = None
        return self._unconfirmed.abandon()

    def drain(self) -> None:
        """Send every publish waiting in the inbox, if the channel is ready for them."""
        if not self._ready:
            return
        calls = self._inbox.take_publishes()
        for n, call in enumerate(calls):
            if not self._send(call):
                self._inbox.put_back(calls[n:])
                return

    def _send(self, call: Publish) -> bool:
        if call.done:
            return True  # failed by its deadline while it waited
        assert self._channel is not None
        try:
            self._channel.basic_publish("", call.queue, call.body, call.properties, mandatory=True)
        except pika.exceptions.AMQPError:
            return False  # the channel is closing: its close callback comes next
        self._unconfirmed.sent(self._next_tag, call.publish_id, call)
        self._next_tag += 1
        return True

    @guarded
    def _on_open(
        self, connection: pika.SelectConnection, channel: Channel, *, redeclare: bool
    ) -> None:
        if connection is not self._connection:
            return  # that connection was lost meanwhile
        self._channel = channel
        channel.add_on_close_callback(self._on_closed)
        channel.add_on_return_callback(self._on_return)
        if redeclare:
            # A broker that comes back without its definitions (a new node, a reset) would
            # otherwise find every publish unroutable. On this channel, before confirm mode is
            # on: no publish can overtake them.
            for queue in self._inbox.remembered():
                declare_pair_async(channel, queue, lambda: None, self._topology)
        channel.confirm_delivery(
            functools.partial(self._on_confirm, channel),
            callback=lambda _frame: self._on_ready(channel),
        )

    @guarded
    def _on_ready(self, channel: Channel) -> None:
        if channel is not self._channel:
            return
        self._ready = True
        self._next_tag = 1
        self.drain()

    @guarded
    def _on_confirm(self, channel: Channel, frame: pika.frame.Method) -> None:
        if channel is not self._channel:
            return
        method = frame.method
        if isinstance(method, pika.spec.Basic.Ack):
            settled = self._unconfirmed.acked(method.delivery_tag, method.multiple)
        else:
            settled = self._unconfirmed.nacked(method.delivery_tag, method.multiple)
        for call, outcome in settled:
            if outcome == "confirmed":
                call.succeed()
            elif outcome == "unroutable":
                call.fail(UnroutableMessage(f"{call.what}: no queue took the message"))
            elif not self._retry_later(call):
                call.fail(BrokerError(f"{call.what}: the broker refused the message (nack)"))
        if isinstance(method, pika.spec.Basic.Ack):
            self._nacked_since = None
        elif self._nacked_since is None:
            self._nacked_since = time.monotonic()
        elif time.monotonic() - self._nacked_since >= NACK_REOPEN_SECONDS:
            self._replace(channel)
        self._on_answered()

    def _replace(self, channel: Channel) -> None:
        """Close a channel that keeps being nacked and open a new one on the same connection
        (policy.NACK_REOPEN_SECONDS says why); its publishes still unanswered go again on it
        (at least once: a duplicate is harmless, claims fence them)."""
        log.warning("broker.publishing_channel_replaced", reason="nacked for longer than the reopen limit")
        self._channel, self._ready, self._nacked_since = None, False, None
        self._inbox.put_back(call for call in self._unconfirmed.abandon() if not call.done)
        with contextlib.suppress(pika.exceptions.AMQPError):
            channel.close()  # its close callback finds it is no longer ours
        if self._connection is not None and self._connection.is_open:
            self.open(self._connection, redeclare=False)

    def _retry_later(self, call: Publish) -> bool:
        """Send a nacked publish again after NACK_RETRY_SECONDS, if its deadline allows. A quorum
        queue nacks while it elects a new leader (its old one's node died) and while it is full
        (reject-publish): both pass. A duplicate is harmless (claims fence them)."""
        connection = self._connection
        if connection is None or time.monotonic() + NACK_RETRY_SECONDS >= call.give_up_at:
            return False
        log.info("broker.publish_nacked_retrying", queue=call.queue)

        def again() -> None:
            if not call.done:
                self._inbox.put_back([call])
                self.drain()

        connection.ioloop.call_later(NACK_RETRY_SECONDS, guarded(again))
        return True

    @guarded
    def _on_return(
        self,
        channel: Channel,
        method: pika.spec.Basic.Return,
        properties: pika.BasicProperties,
        body: bytes,
    ) -> None:
        publish_id = (properties.headers or {}).get(PUBLISH_ID_HEADER)
        if channel is not self._channel or not self._unconfirmed.returned(str(publish_id)):
            log.warning("broker.unmatched_return", queue=method.routing_key, publish_id=publish_id)

    @guarded
    def _on_closed(self, channel: Channel, reason: BaseException) -> None:
        if channel is not self._channel:
            return
        self._channel = None
        self._ready = False
        if not isinstance(reason, pika.exceptions.ChannelClosedByBroker):
            return  # the connection is going: the loop calls abandon()
        # The connection is fine; the broker refused something on this channel (a message too
        # large, no write permission, a re-declare that does not match). Which publish did it
        # cannot be told, and none of those in flight is known to be confirmed.
        log.warning("broker.publishing_channel_closed", error=repr(reason))
        why = f"channel closed by the broker ({reason.reply_code} {reason.reply_text})"
        for call in self._unconfirmed.abandon():
            call.fail(BrokerError(f"{call.what}: {why}"))
        self._on_answered()  # which may close the connection (shutting down)
        if self._connection is not None and self._connection.is_open:
            self.open(self._connection, redeclare=False)
