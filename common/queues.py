"""Queue names. A module's queue carries its module's name; each has a dead-letter twin.

Two queue types (BATON_QUEUE_TYPE). `classic`: one queue per name, ordered by message priority
(RabbitMQ's x-max-priority), on one broker node. `quorum`: replicated on every node of the
cluster, but first in, first out (RabbitMQ 3.x has no message priorities on them, and 4.x only
two), so a name becomes one quorum queue per message priority, its band, all consumed at once
and run highest first (docs/design/queues.md). Quorum queues get names of their own
(RabbitMQ refuses to redeclare a queue with another type), so a classic deployment and its
quorum successor can live side by side while one drains into the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ALARM_QUEUE = "baton.alarms"  # consumed by the monitor module
DEAD_LETTER_SUFFIX = ".dead"

# Every queue (not its twin) orders messages by priority 0..QUEUE_MAX_PRIORITY: RabbitMQ's
# x-max-priority, and the top of the message priority bands of common.engine.core.entries.
QUEUE_MAX_PRIORITY = 9

QueueType = Literal["classic", "quorum"]
QUEUE_TYPES: tuple[QueueType, ...] = ("classic", "quorum")

# How often a quorum queue hands out one message without a settle (a consumer that died holding
# it, a requeue) before it dead-letters it as poison. Generous: a module that gives deliveries
# back (stopping, or holding one too long for a free worker) requeues too, and the sweeper
# re-publishes a step that a dead-lettered message left unclaimed anyway.
DEFAULT_DELIVERY_LIMIT = 20


@dataclass(frozen=True)
class Band:
    """The messages of one priority: one quorum queue, `<queue>.q.<name>`."""

    name: str
    priority: int


# From how message priority is made (common.engine.core.units): a task of priority t (0..4) has its
# first step published at t, and every later run (next step, retry, rollback) at 5 + t; alarms
# at 9. Each priority is a band: `start` holds the first steps of priority-0 tasks, `start.3`
# those of priority-3 tasks, `flight` the runs of priority-0 tasks in flight, `flight.3` those of
# priority-3 tasks. The priority-0 bands keep the names of the two bands of earlier versions
# (`flight` then held 5..9, `start` 0..4), with the same arguments: an existing deployment's
# queues are bands of this one, and what an older replica still publishes there is consumed.
IN_FLIGHT_FROM = 5


def _band(priority: int) -> Band:
    phase, task_priority = ("flight", priority - IN_FLIGHT_FROM) if priority >= IN_FLIGHT_FROM else ("start", priority)
    return Band(phase if task_priority == 0 else f"{phase}.{task_priority}", priority)


BANDS: tuple[Band, ...] = tuple(_band(p) for p in range(QUEUE_MAX_PRIORITY, -1, -1))  # highest first
QUORUM_MARK = ".q"  # quorum queues are `<queue>.q.<band>` and `<queue>.q.dead`


def module_queue(module: str) -> str:
    return module


def dead_letter_queue(queue: str) -> str:
    return queue + DEAD_LETTER_SUFFIX


def is_dead_letter_queue(queue: str) -> bool:
    return queue.endswith(DEAD_LETTER_SUFFIX)


def check_priority(priority: int) -> None:
    if not 0 <= priority <= QUEUE_MAX_PRIORITY:
        raise ValueError(f"priority must be within 0..{QUEUE_MAX_PRIORITY}, not {priority}")


def check_queue_type(queue_type: str) -> QueueType:
    if queue_type not in QUEUE_TYPES:
        raise ValueError(f"queue type must be one of {', '.join(QUEUE_TYPES)}, not {queue_type!r}")
    return queue_type  # type: ignore[return-value]


def band_of(priority: int) -> Band:
    check_priority(priority)
    return BANDS[QUEUE_MAX_PRIORITY - priority]


def band_queue(queue: str, band: Band) -> str:
    """The quorum queue carrying `queue`'s messages of `band`."""
    return f"{queue}{QUORUM_MARK}.{band.name}"


def band_queues(queue: str) -> list[str]:
    """`queue`'s quorum queues, highest band first."""
    return [band_queue(queue, band) for band in BANDS]


def quorum_dead_letter_queue(queue: str) -> str:
    """Where every band of `queue` dead-letters (`<queue>.q.dead`, still a `.dead` twin)."""
    return dead_letter_queue(queue + QUORUM_MARK)


def physical_queues(queue: str, queue_type: QueueType) -> list[str]:
    """The broker queues that hold what the port calls `queue`, highest band first."""
    if queue_type == "classic":
        return [queue]
    if is_dead_letter_queue(queue):
        return [quorum_dead_letter_queue(queue[: -len(DEAD_LETTER_SUFFIX)])]
    return band_queues(queue)


def physical_queue(queue: str, queue_type: QueueType, priority: int) -> str:
    """The broker queue a message of `priority` published to `queue` goes to."""
    if queue_type == "classic":
        return queue
    if is_dead_letter_queue(queue):
        return physical_queues(queue, queue_type)[0]
    return band_queue(queue, band_of(priority))
