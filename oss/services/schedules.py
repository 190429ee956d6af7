"""Creating and operating schedules: what the REST API and `baton schedules` call."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from common.errors import ActionRefused, InvalidInput, InvalidParameters, UnknownTask
from common.flows import FlowCatalog
from common.input_limits import InputLimits, check_input
from common.reserved import reserved_problems
from common.secrets.documents import masked_with_parameters
from common.scheduling import Missed, Overlap, Schedule, ScheduleError, check_timing, next_tick_after
from common.store.retry import compare_and_set_loop
from common.store.side_stores import open_schedule_store
from common.store.side.schedules import ScheduleStore
from common.engine.changes import new_id



class UnknownSchedule(UnknownTask):
    """No schedule has this id or name (HTTP 404)."""


class ScheduleService:
    def __init__(
        self,
        schedules: ScheduleStore,
        flows: FlowCatalog,
        clock: Callable[[], float] = time.time,
        limits: InputLimits | None = None,
    ):
        self._schedules = schedules
        self._flows = flows
        self._clock = clock
        self._limits = limits or InputLimits()

    @classmethod
    def open(
        cls, store_url: str, flows: FlowCatalog, clock: Callable[[], float] = time.time, limits: InputLimits | None = None
    ) -> ScheduleService:
        return cls(open_schedule_store(store_url), flows, clock, limits)

    def create(
        self,
        *,
        name: str,
        task_type: str,
        parameters: Mapping[str, Any],
        cron: str | None = None,
        interval_seconds: float | None = None,
        timezone: str = "UTC",
        overlap: Overlap = Overlap.SKIP,
        missed: Missed = Missed.LATEST,
        priority: int = 0,
        labels: Mapping[str, str] | None = None,
        created_by: str | None = None,
    ) -> Schedule:
        """Checked like a submission now (type, parameters), so a tick never fails on a typo.

        Raises ScheduleError (timing), UnknownTaskType, InvalidParameters, DuplicateSchedule.
        """
        # Stored, then submitted at every tick: the same input limits as a submission, first.
        check_input(self._limits, ("name", "task_type", "labels", "created_by", "cron", "timezone"), name=name,
                    task_type=task_type, parameters=dict(parameters), labels=dict(labels or {}),
                    created_by=created_by, cron=cron, timezone=timezone)  # fmt: skip
        if taken := reserved_problems(None, labels):  # its ticks' tasks carry baton's label
            raise InvalidInput(taken)
        check_timing(cron, interval_seconds, timezone)
        flow = self._flows.get(task_type)
        check = flow.validate(parameters)
        if not check.ok:
            raise InvalidParameters([(e.path, e.message) for e in check.errors])
        now = self._clock()
        schedule = Schedule(
            ScheduleId=new_id(), Name=name, TaskType=task_type, Parameters=check.parameters,
            Cron=cron, IntervalSeconds=interval_seconds, Timezone=timezone, Overlap=overlap,
            Missed=missed, Priority=priority, Labels=dict(labels or {}), CreatedBy=created_by,
            TimeCreate=now, NextAt=now,
        )  # fmt: skip
        schedule.NextAt = next_tick_after(schedule, now)
        self._schedules.insert(schedule)
        return schedule

    def get(self, id_or_name: str) -> Schedule:
        found = self._schedules.get(id_or_name) or self._schedules.get_by_name(id_or_name)
        if found is None:
            raise UnknownSchedule("no such schedule")  # the id or name asked for is not echoed
        return found

    def list(self, limit: int = 100) -> list[Schedule]:
        return self._schedules.list_schedules(limit=limit)

    def pause(self, id_or_name: str) -> Schedule:
        return self._change(id_or_name, lambda s: _paused(s, True, self._clock()))

    def resume(self, id_or_name: str) -> Schedule:
        """Ticks that passed while paused are not run: the next one is the first after now."""
        return self._change(id_or_name, lambda s: _paused(s, False, self._clock()))

    def delete(self, id_or_name: str) -> None:
        """Tasks it created stay; no tick runs after this."""
        if not self._schedules.delete(self.get(id_or_name).ScheduleId):
            raise UnknownSchedule("no such schedule")

    def shown(self, schedule: Schedule) -> dict[str, Any]:
        """The schedule as the API and CLI show it, masked as its tasks are (common.secrets.task_views):
        declared secrets, secret-looking keys, URL passwords, and their values in LastError."""
        known = schedule.TaskType in self._flows.task_types
        secret = self._flows.get(schedule.TaskType).secret_parameters if known else []
        return masked_with_parameters(schedule.model_dump(mode="json"), secret)

    def close(self) -> None:
        self._schedules.close()

    def _change(self, id_or_name: str, change: Callable[[Schedule], Schedule]) -> Schedule:
        """`change` raises ActionRefused when it does not apply; the schedule as written."""
        read = lambda: self.get(id_or_name)  # noqa: E731  (raises UnknownSchedule once it is gone)
        written = compare_and_set_loop(read(), read=read, change=change, write=self._schedules.compare_and_set,
                                       what=f"schedule {id_or_name!r}")
        assert written is not None  # the change never answers "nothing to write"
        return written


def _paused(schedule: Schedule, paused: bool, now: float) -> Schedule:
    if schedule.Paused == paused:
        raise ActionRefused(f"schedule {schedule.Name!r} is {'paused' if paused else 'running'} already")
    new = schedule.model_copy(deep=True)
    new.Paused = paused
    if not paused:
        new.NextAt = next_tick_after(new, now)
    return new


__all__ = ["ScheduleError", "ScheduleService", "UnknownSchedule"]
