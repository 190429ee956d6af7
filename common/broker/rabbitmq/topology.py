"""Declaring a queue with its dead-letter twin, the same way from the publisher and consumers.

What the port calls a queue is one classic priority queue, or (quorum) one quorum queue per
priority band, all dead-lettering into one quorum twin (common.queues).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from pika.adapters.blocking_connection import BlockingChannel
from pika.channel import Channel

from common.queues import (
    DEAD_LETTER_SUFFIX,
    QUEUE_MAX_PRIORITY,
    QueueType,
    band_queues,
    dead_letter_queue,
    is_dead_letter_queue,
    quorum_dead_letter_queue,
)

Declaration = tuple[str, dict[str, Any] | None]


@dataclass(frozen=True)
class Topology:
    queue_type: QueueType = "classic"
    delivery_limit: int = 20

    def declarations(self, queue: str) -> list[Declaration]:
        """(broker queue, arguments) to declare, durable, in this order, for `queue` to be usable."""
        if self.queue_type == "classic":
            return classic_declarations(queue)
        return quorum_declarations(queue, self.delivery_limit)


def classic_declarations(queue: str) -> list[Declaration]:
    if is_dead_letter_queue(queue):
        # Consuming a twin (the monitor, an operator draining it) must not redeclare it as a
        # queue of its own: RabbitMQ refuses a declare whose arguments differ.
        return [(queue, None)]
    arguments = {
        "x-max-priority": QUEUE_MAX_PRIORITY,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": dead_letter_queue(queue),
    }
    # The twin first: a queue must never dead-letter into a queue that does not exist yet.
    return [(dead_letter_queue(queue), None), (queue, arguments)]


def quorum_declarations(queue: str, delivery_limit: int) -> list[Declaration]:
    twin_arguments = {"x-queue-type": "quorum"}
    if is_dead_letter_queue(queue):
        return [(quorum_dead_letter_queue(queue[: -len(DEAD_LETTER_SUFFIX)]), twin_arguments)]
    twin = quorum_dead_letter_queue(queue)
    band_arguments = {
        "x-queue-type": "quorum",
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": twin,
        # At least once: the queue keeps a dead letter until its twin confirmed it (the default,
        # at-most-once, drops it if the twin's leader is unreachable at that moment). RabbitMQ
        # only allows it with reject-publish overflow.
        "x-dead-letter-strategy": "at-least-once",
        "x-overflow": "reject-publish",
        # A message that keeps killing its consumer (or is given back) this often is poison.
        "x-delivery-limit": delivery_limit,
    }
    return [(twin, twin_arguments), *((band, band_arguments) for band in band_queues(queue))]


def declare_pair(channel: BlockingChannel, queue: str, topology: Topology) -> None:
    for name, arguments in topology.declarations(queue):
        channel.queue_declare(name, durable=True, arguments=arguments)


def declare_pair_async(channel: Channel, queue: str, on_done: Callable[[], None], topology: Topology) -> None:
    """The same on an asynchronous channel: `on_done` runs once the broker declared them all. A
    refusal closes the channel instead (its close callback hears why)."""
    declarations = topology.declarations(queue)
    for n, (name, arguments) in enumerate(declarations):
        last = n == len(declarations) - 1
        # A callback, even one doing nothing, keeps each declare synchronous (no `nowait`).
        channel.queue_declare(
            name,
            durable=True,
            arguments=arguments,
            callback=(lambda _frame: on_done()) if last else (lambda _frame: None),
        )
