"""Queue names. A module's queue carries its module's name; each has a dead-letter twin."""

ALARM_QUEUE = "baton.alarms"  # consumed by the monitor module
DEAD_LETTER_SUFFIX = ".dead"


def module_queue(module: str) -> str:
    return module


def dead_letter_queue(queue: str) -> str:
    return queue + DEAD_LETTER_SUFFIX
