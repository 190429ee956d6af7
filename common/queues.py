"""Queue names. A module's queue carries its module's name; each has a dead-letter twin.

Two queue types (BATON_QUEUE_TYPE). `classic`: one queue per name, ordered by message priority
(RabbitMQ's x-max-priority), on one broker node. `quorum`: replicated on every node of the
cluster, but without message priorities (RabbitMQ 3.x), so a name becomes one queue per
priority band, consumed highest band first (docs/DESIGN.md, "Queue topology"). Quorum queues get
names of their own (RabbitMQ refuses to redeclare a queue with another type), so a classic
deployment and its quorum successor can live side by side while one drains into the other.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ALARM_QUEUE = "baton.alarms"  # consumed by the monitor module
DEAD_LETTER_SUFFIX = ".dead"

# Every queue (not its twin) orders messages by priority 0..QUEUE_MAX_PRIORITY: RabbitMQ's
# x-max-priority, and the top of the message priority bands of common.engine.transitions.
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
    """Message priorities `low`..`high` share one quorum queue, `<queue>.<name>`."""

    name: str
    low: int
    high: int


# From how message priority is made (common.engine.units): 5..9 is a task already in flight (its
# next step, a retry, a rollback; alarms at 9), 0..4 a task's first step by task priority. The
# promise that matters is the first: work in flight is never queued behind a burst of new tasks.
# Task priority within a band is kept among the deliveries a module holds (its inbox takes the
# highest first), not across a band's backlog. Highest band first in this tuple.
BANDS: tuple[Band, ...] = (Band("flight", 5, 9), Band("start", 0, 4))
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
    return next(band for band in BANDS if band.low <= priority <= band.high)


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
