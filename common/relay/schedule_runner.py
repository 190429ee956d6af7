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
from common.store.tasks.port import TaskStore
from common.store.retry import compare_and_set_loop
from common.store.side.schedules import ScheduleStore

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


def ticks_recorded(current: Schedule, decided: Schedule, skipped: int,
                   fired: list[tuple[float, str]]) -> Schedule | None:
    """The schedule changed while its ticks ran (paused, edited, or handled by another sweeper):
    what this round did (`decided`, with `skipped` ticks and the tasks `fired`), recorded on the
    schedule as it now is; None when another writer already recorded these ticks. A pause must
    not lose the count of a task its tick created; a second sweeper's ticks (the same tasks, by
    their keys) must not count twice."""
    new_fires = [(tick, task_id) for tick, task_id in fired if current.LastTickAt is None or tick > current.LastTickAt]
    passed_over = current.NextAt < decided.NextAt  # nobody else has moved past this round's ticks
    if not new_fires and not passed_over:
        return None
    merged = current.model_copy(deep=True)
    merged.Fired += len(new_fires)
    if new_fires:
        merged.LastTickAt, merged.LastTaskId = new_fires[-1]
    if passed_over:
        merged.Skipped += skipped
        merged.NextAt = decided.NextAt  # a resume starts after its own now either way
        merged.LastError = decided.LastError
    return merged


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
        """Each tick is recorded as soon as its task exists (a sweeper killed mid-round leaves no
        uncounted task); the round stops when the schedule changed under it (paused, edited,
        deleted, or handled by another sweeper): its plan is then stale."""
        plan = plan_ticks(schedule, now, self._grace)
        report.skipped += plan.dropped
        written = schedule
        new = schedule.model_copy(deep=True)
        new.Skipped += plan.dropped
        new.NextAt = plan.fire[0] if plan.fire else plan.next_at
        for index, tick in enumerate(plan.fire):
            if index and not self._unchanged(written):
                return
            decision = overlap_decision(schedule.Overlap, self._previous_running(new))
            if decision is OverlapDecision.WAIT:
                break  # held at this tick: tried again next round, once the previous task ended
            fired: list[tuple[float, str]] = []
            if decision is OverlapDecision.SKIP:
                new.Skipped += 1
                report.skipped += 1
                log.info("schedule tick skipped: the previous task is still running",
                         schedule=schedule.Name, task_id=new.LastTaskId)
            elif (task := self._create(new, tick)) is None:
                new.Skipped += 1
                report.failed += 1
            else:
                new.LastTickAt, new.LastTaskId, new.LastError = tick, task.TaskId, ""
                new.Fired += 1
                fired.append((tick, task.TaskId))
                report.created += 1
            new.NextAt = plan.fire[index + 1] if index + 1 < len(plan.fire) else plan.next_at
            recorded = self._record(written, new, fired)
            if recorded is None:
                return
            written, new = recorded, recorded.model_copy(deep=True)
        if new != written:
            self._record(written, new, [])

    def _unchanged(self, written: Schedule) -> bool:
        """Whether the schedule is still as this round last wrote it (not paused, edited or deleted
        since): read before each tick, so an operator's answer holds for the ticks not started."""
        current = self._schedules.get(written.ScheduleId)
        return current is not None and current.Version == written.Version

    def _record(self, written: Schedule, new: Schedule, fired: list[tuple[float, str]]) -> Schedule | None:
        """Write `new` over the schedule as this round last wrote it; the schedule as written, or
        None when it had changed under the round (what this tick did is then merged into it by
        ticks_recorded, or dropped when another writer already recorded it, or it is gone)."""
        changed = False

        def change(current: Schedule) -> Schedule | None:
            nonlocal changed
            if current.Version == written.Version:
                return new
            changed = True
            return ticks_recorded(current, new, new.Skipped - written.Skipped, fired)

        read = lambda: self._schedules.get(written.ScheduleId)  # noqa: E731
        result = compare_and_set_loop(written, read=read, change=change, write=self._schedules.compare_and_set,
                                      what=f"schedule {written.Name}")  # fmt: skip
        return None if changed else result

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

