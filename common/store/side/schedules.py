"""The schedule store port: periodic task definitions and where each stands.

A change to a schedule is a compare-and-set on its `Version`, like a task's: the sweeper that
handles its ticks and an operator pausing it cannot overwrite each other.
"""

from __future__ import annotations

from typing import Protocol

from common.scheduling import Schedule


class ScheduleStore(Protocol):
    def insert(self, schedule: Schedule) -> None:
        """Store a new schedule. Raises DuplicateSchedule if its id or name is taken."""

    def get(self, schedule_id: str) -> Schedule | None: ...

    def get_by_name(self, name: str) -> Schedule | None: ...

    def list_schedules(self, *, limit: int = 100) -> list[Schedule]:
        """By name; [] when limit <= 0."""

    def due(self, now: float, limit: int) -> list[Schedule]:
        """Schedules not paused whose NextAt <= now, earliest first."""

    def compare_and_set(self, schedule: Schedule, expected_version: int) -> bool:
        """Replace iff the stored Version equals `expected_version`; `schedule.Version` must be
        `expected_version + 1` (ValueError otherwise). False when another writer won or the
        schedule was deleted."""

    def delete(self, schedule_id: str) -> bool:
        """False if there was none."""

    def close(self) -> None: ...


def check_next_version(schedule: Schedule, expected_version: int) -> None:
    if schedule.Version != expected_version + 1:
        raise ValueError(f"schedule Version must be {expected_version + 1}, not {schedule.Version}")
