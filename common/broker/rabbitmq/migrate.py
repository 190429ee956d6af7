"""Moving a classic deployment's messages into its quorum queues (`baton queues move-to-quorum`).

For each queue of the port: every message of the classic queue goes to the quorum band of its
priority, every message of the classic twin to the quorum twin, each published with a confirm
before it is acked at the source. A crash in between leaves a message in both places: a step
message twice is fenced by the claim (and a dead letter twice is two alarms' worth of reading,
nothing more). Then the emptied classic queues are deleted, unless a process still consumes them.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

import pika
import pika.exceptions
import structlog

from common.broker.rabbitmq.connection import ConnectionSettings, close_quietly
from common.broker.rabbitmq.policy import DEFAULT_HEARTBEAT_SECONDS, DEFAULT_RECONNECT_MAX_SECONDS
from common.broker.rabbitmq.topology import Topology, declare_pair
from common.errors import BrokerError
from common.queues import dead_letter_queue, physical_queue

log = structlog.get_logger(__name__)


@dataclass
class Moved:
    moved: dict[str, int] = field(default_factory=dict)  # classic queue -> messages moved
    deleted: list[str] = field(default_factory=list)
    kept: dict[str, str] = field(default_factory=dict)  # classic queue -> why it was not deleted


def move_classic_to_quorum(url: str, queues: list[str], delivery_limit: int, *, delete: bool = True) -> Moved:
    settings = ConnectionSettings(url, DEFAULT_HEARTBEAT_SECONDS, DEFAULT_RECONNECT_MAX_SECONDS,
                                  Topology("quorum", delivery_limit))
    result = Moved()
    try:
        connection = settings.connect("queue migration")
    except pika.exceptions.AMQPError as exc:
        raise BrokerError(f"queue migration: broker unreachable ({type(exc).__name__})") from None
    try:
        channel = connection.channel()
        channel.confirm_delivery()  # basic_publish raises on a nack or a return
        for queue in queues:
            declare_pair(channel, queue, settings.topology)
            for source in (queue, dead_letter_queue(queue)):
                if not _exists(connection, source):
                    continue
                result.moved[source] = _move(channel, source)
                if delete:
                    _delete(connection, source, result)
    except pika.exceptions.AMQPError as exc:
        raise BrokerError(f"queue migration: {type(exc).__name__}: {exc}") from None
    finally:
        close_quietly(connection)
    return result


def _move(channel, source: str) -> int:
    moved = 0
    while True:
        method, properties, body = channel.basic_get(source, auto_ack=False)
        if method is None:
            return moved
        target = physical_queue(source, "quorum", min(max(properties.priority or 0, 0), 9))
        channel.basic_publish("", target, body, properties, mandatory=True)
        channel.basic_ack(method.delivery_tag)
        moved += 1
        log.debug("broker.message_moved", source=source, target=target)


@contextmanager
def _answers_not_warnings() -> Iterator[None]:
    """A broker that closes a channel to say "no such queue" (404) or "still in use" (406)
    answers the question asked: pika's channel logger would print each as a warning beside the
    command's own report."""
    logger = logging.getLogger("pika.channel")
    level = logger.level
    logger.setLevel(logging.ERROR)
    try:
        yield
    finally:
        logger.setLevel(level)


def _exists(connection: pika.BlockingConnection, queue: str) -> bool:
    """A passive declare on a channel of its own: a missing queue closes that channel only."""
    channel = connection.channel()
    try:
        with _answers_not_warnings():
            channel.queue_declare(queue, passive=True)
    except pika.exceptions.ChannelClosedByBroker:
        return False
    channel.close()
    return True


def _delete(connection: pika.BlockingConnection, queue: str, result: Moved) -> None:
    channel = connection.channel()
    try:
        with _answers_not_warnings():  # a refusal is reported as kept, with the broker's reason
            channel.queue_delete(queue, if_unused=True, if_empty=True)
    except pika.exceptions.ChannelClosedByBroker as exc:
        # Still consumed (a process not restarted yet) or a message published meanwhile: run
        # the command again once every process uses quorum queues.
        result.kept[queue] = exc.reply_text
        return
    channel.close()
    result.deleted.append(queue)
