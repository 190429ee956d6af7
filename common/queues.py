"""Queue names. A module's queue carries its module's name; each has a dead-letter twin."""

ALARM_QUEUE = "baton.alarms"  # consumed by the monitor module
DEAD_LETTER_SUFFIX = ".dead"

# Every queue (not its twin) orders messages by priority 0..QUEUE_MAX_PRIORITY: RabbitMQ's
# x-max-priority, and the top of the message priority bands of common.engine.transitions.
QUEUE_MAX_PRIORITY = 9


def module_queue(module: str) -> str:
    return module


def dead_letter_queue(queue: str) -> str:
    return queue + DEAD_LETTER_SUFFIX


def is_dead_letter_queue(queue: str) -> bool:
    return queue.endswith(DEAD_LETTER_SUFFIX)


def check_priority(priority: int) -> None:
    if not 0 <= priority <= QUEUE_MAX_PRIORITY:
        raise ValueError(f"priority must be within 0..{QUEUE_MAX_PRIORITY}, not {priority}")
