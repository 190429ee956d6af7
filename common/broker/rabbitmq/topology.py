"""Declaring a queue with its dead-letter twin, the same way from the publisher and consumers."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pika.adapters.blocking_connection import BlockingChannel
from pika.channel import Channel

from common.queues import QUEUE_MAX_PRIORITY, dead_letter_queue, is_dead_letter_queue


def queue_arguments(queue: str) -> dict[str, Any]:
    return {
        "x-max-priority": QUEUE_MAX_PRIORITY,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": dead_letter_queue(queue),
    }


def pair_declarations(queue: str) -> list[tuple[str, dict[str, Any] | None]]:
    """(queue, arguments) to declare, durable, in this order, for `queue` to be usable."""
    if is_dead_letter_queue(queue):
        # Consuming a twin (the monitor, an operator draining it) must not redeclare it as a
        # queue of its own: RabbitMQ refuses a declare whose arguments differ.
        return [(queue, None)]
    # The twin first: a queue must never dead-letter into a queue that does not exist yet.
    return [(dead_letter_queue(queue), None), (queue, queue_arguments(queue))]


def declare_pair(channel: BlockingChannel, queue: str) -> None:
    for name, arguments in pair_declarations(queue):
        channel.queue_declare(name, durable=True, arguments=arguments)


def declare_pair_async(channel: Channel, queue: str, on_done: Callable[[], None]) -> None:
    """The same on an asynchronous channel: `on_done` runs once the broker declared both. A
    refusal closes the channel instead (its close callback hears why)."""
    declarations = pair_declarations(queue)
    for n, (name, arguments) in enumerate(declarations):
        last = n == len(declarations) - 1
        # A callback, even one doing nothing, keeps each declare synchronous (no `nowait`).
        channel.queue_declare(
            name,
            durable=True,
            arguments=arguments,
            callback=(lambda _frame: on_done()) if last else (lambda _frame: None),
        )
