"""The sweeper's schedule job: create the task of every due tick, exactly once per tick.

Runs under the sweeper's lease-lock, so one process handles ticks at a time; should two ever
overlap (a frozen sweeper waking after its lock lapsed), each tick's task is created with the
idempotency key of the tick (common.scheduling.tick_key), so the second creation answers with
the first's task, and the schedule's own compare-and-set keeps one writer's view.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import structlog

from common.errors import BatonError, StoreError
from common.engine.document import Task
from common.reserved import SCHEDULE_LABEL
from common.scheduling import OverlapDecision, Schedule, overlap_decision, plan_ticks, tick_key
from common.engine.states import FINAL_STATUSES
from common.store.port import TaskStore
from common.store.schedules_port import ScheduleStore

log = structlog.get_logger(__name__)
BATCH = 100


class Submit(Protocol):
    def __call__(self, task_type: str, parameters: dict[str, Any], **options: Any) -> Any:
        """TaskService.submit: returns a Submission whose `.task` is the created (or existing) task."""


@dataclass
class ScheduleReport:
    created: int = 0
    skipped: int = 0
    failed: int = 0


class ScheduleRunner:
    def __init__(
        self,
        schedules: ScheduleStore,
        tasks: TaskStore,
        submit: Submit,
        misfire_grace: float,
    ):
        self._schedules = schedules
        self._tasks = tasks
        self._submit = submit
        self._grace = misfire_grace

    def __call__(self, now: float) -> ScheduleReport:  # a sweeper job
        return self.run_due(now)

    def close(self) -> None:
        self._schedules.close()

    def run_due(self, now: float) -> ScheduleReport:
        report = ScheduleReport()
        for schedule in self._schedules.due(now, BATCH):
            try:
                self._run(schedule, now, report)
            except StoreError:
                raise  # the sweeper's loop waits for the store to come back
            except BatonError as exc:  # one broken schedule must not stop the others
                log.error("schedule failed", schedule=schedule.Name, error=str(exc))
        return report

    def _run(self, schedule: Schedule, now: float, report: ScheduleReport) -> None:
        plan = plan_ticks(schedule, now, self._grace)
        new = schedule.model_copy(deep=True)
        new.Skipped += plan.dropped
        report.skipped += plan.dropped
        new.NextAt = plan.next_at
        for tick in plan.fire:
            decision = overlap_decision(schedule.Overlap, self._previous_running(new))
            if decision is OverlapDecision.WAIT:
                new.NextAt = tick  # held: tried again next round, once the previous task ended
                break
            if decision is OverlapDecision.SKIP:
                new.Skipped += 1
                report.skipped += 1
                log.info("schedule tick skipped: the previous task is still running",
                         schedule=schedule.Name, task_id=new.LastTaskId)
                continue
            task = self._create(new, tick)
            if task is None:
                new.Skipped += 1
                report.failed += 1
                continue
            new.LastTickAt, new.LastTaskId, new.LastError = tick, task.TaskId, ""
            new.Fired += 1
            report.created += 1
        new.Version = schedule.Version + 1
        if not self._schedules.compare_and_set(new, schedule.Version):
            # Paused, deleted or handled by another sweeper meanwhile: the tasks created above
            # are the ticks' own (idempotency keys), so the next round creates nothing twice.
            log.info("schedule changed while its ticks ran; re-read next round", schedule=schedule.Name)

    def _create(self, schedule: Schedule, tick: float) -> Task | None:
        try:
            submission = self._submit(
                schedule.TaskType,
                dict(schedule.Parameters),
                idempotency_key=tick_key(schedule.ScheduleId, tick),
                priority=schedule.Priority,
                labels={**schedule.Labels, SCHEDULE_LABEL: schedule.Name},
                user_id=schedule.CreatedBy,
                by_baton=True,  # the tick's key and label are baton's own (common.reserved)
            )
        except StoreError:
            raise
        except BatonError as exc:  # the task type is gone, or its parameters are now refused
            schedule.LastError = f"tick {tick:.0f}: {exc}"
            log.error("schedule tick could not create its task", schedule=schedule.Name, error=str(exc))
            return None
        return submission.task  # type: ignore[no-any-return]

    def _previous_running(self, schedule: Schedule) -> bool:
        if schedule.LastTaskId is None:
            return False
        previous = self._tasks.get(schedule.LastTaskId)
        return previous is not None and previous.TaskStatus not in FINAL_STATUSES

