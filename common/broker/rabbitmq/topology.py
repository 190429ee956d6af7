"""Declaring a queue with its dead-letter twin, the same way from the publisher and consumers."""

from __future__ import annotations

from typing import Any

from pika.adapters.blocking_connection import BlockingChannel

from common.queues import QUEUE_MAX_PRIORITY, dead_letter_queue, is_dead_letter_queue


def queue_arguments(queue: str) -> dict[str, Any]:
    return {
        "x-max-priority": QUEUE_MAX_PRIORITY,
        "x-dead-letter-exchange": "",
        "x-dead-letter-routing-key": dead_letter_queue(queue),
    }


def declare_pair(channel: BlockingChannel, queue: str) -> None:
    if is_dead_letter_queue(queue):
        # Consuming a twin (the monitor, an operator draining it) must not redeclare it as a
        # queue of its own: RabbitMQ refuses a declare whose arguments differ.
        channel.queue_declare(queue, durable=True)
        return
    # The twin first: a queue must never dead-letter into a queue that does not exist yet.
    channel.queue_declare(dead_letter_queue(queue), durable=True)
    channel.queue_declare(queue, durable=True, arguments=queue_arguments(queue))
