"""A schedule's two policies by name (see common.scheduling for what each does): plain enums, so
`baton schedules add` can offer them without importing the schedule model."""

from enum import StrEnum


class Overlap(StrEnum):
    SKIP = "skip"
    QUEUE = "queue"
    ALLOW = "allow"


class Missed(StrEnum):
    LATEST = "latest"
    SKIP = "skip"
    ALL = "all"
