"""Tasks and task types as the API shows them. Every task goes through common.masking first."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from common.flows import FlowDefinition
from common.masking import masked_alarm, masked_task, masked_task_view
from common.engine.gates.locks import LOCK_ACQUIRE
from common.engine.document import Alarm, Run, Step, Task
from common.engine.states import Phase, RunState, TaskStatus
from common.relay.unserved import waiting_notice
from common.store.items_port import ItemStore
from oss.api.attempts import attempts
from oss.item_views import item_counts, item_runs
from oss.api.schemas import AlarmView, PhaseView, StepView, TaskDetail, TaskSummary, TaskTypeView


def task_view(task: Task, now: float, live_modules: Collection[str] | None = None,
              items: ItemStore | None = None) -> TaskDetail:
    """`live_modules` given: a step waiting on a module none of them is says so (`Waiting`).
    `items` given: a step over item records shows its counts by state (inline steps always do)."""
    in_flight = item_runs(task, items)  # of its items kept in records: a drain's hold, an unserved queue
    shown = TaskDetail.model_validate(masked_task_view(task, in_flight))
    for cursor, counts in item_counts(task, items).items():
        shown.Steps[cursor].ItemCounts = counts
    shown.ScheduledFor = scheduled_for(task, now)
    shown.Attempts = attempts(shown)  # from the masked history: its messages are scrubbed
    shown.TaskStatusName = task.TaskStatus.name
    if live_modules is not None:
        shown.Waiting = waiting_notice(task, live_modules, in_flight)
    return shown


def scheduled_for(task: Task, now: float) -> float | None:
    """When a task submitted with a future start_at begins (`StartAt`, which holds through a
    pause or a wait for another task). None once it is due (or for any other task)."""
    if task.StartAt is not None:
        started = task.TaskStatus is not TaskStatus.NOT_STARTED
        return None if started or task.StartAt <= now else task.StartAt
    # A document written before StartAt was kept: its roots' dispatches wait in the outbox.
    pending = {r.DispatchId for r in task.Runs if r.State is RunState.PENDING}
    # A task type with a lock asks for it when the start comes: that entry carries the time.
    pending |= {e.DispatchId for e in task.Outbox if e.Kind == LOCK_ACQUIRE}
    if task.TaskStatus is not TaskStatus.NOT_STARTED or not pending:
        return None
    due = [e.DueAt for e in task.Outbox if e.DispatchId in pending]
    return min(due) if due and min(due) > now else None


def alarm_view(alarm: Alarm, task: Task | None) -> AlarmView:
    shown = AlarmView.model_validate(masked_alarm(alarm, task).model_dump())
    if task is not None:
        shown.TaskStatus, shown.TaskStatusName = int(task.TaskStatus), task.TaskStatus.name
    return shown


def task_summary(task: Task, now: float, in_flight: Collection[Run] = ()) -> TaskSummary:
    """`in_flight`: the runs of its items kept in records (oss.item_views.item_runs)."""
    shown = masked_task(task, in_flight)  # TaskMessage may quote a secret
    return TaskSummary(
        TaskId=shown.TaskId,
        TaskType=shown.TaskType,
        TaskStatus=int(shown.TaskStatus),
        TaskStatusName=shown.TaskStatus.name,
        TaskMessage=shown.TaskMessage,
        TaskCursor=shown.TaskCursor,
        StepStates=[step.State.value for step in shown.Steps],
        TimeCreate=shown.TimeCreate,
        TimeStart=shown.TimeStart,
        TimeEnd=shown.TimeEnd,
        Priority=shown.Priority,
        UserId=shown.UserId,
        Labels=shown.Labels,
        CancelRequested=shown.CancelRequested,
        ScheduledFor=scheduled_for(task, now),
        WaitingFor=shown.WaitingFor,
        Lock=shown.Lock,
    )


def task_type_view(flow: FlowDefinition) -> TaskTypeView:
    return TaskTypeView(
        name=flow.name,
        description=flow.description,
        steps=[_step_view(step, [s.Name for s in flow.steps]) for step in flow.steps],
        parameters=_parameters(flow),
        version=flow.version,
        content_hash=flow.content_hash,
    )


def _parameters(flow: FlowDefinition) -> dict[str, dict[str, Any]] | None:
    """The declarations; those the lock key names are required as the check has them."""
    if flow.parameter_schema is None:
        return None
    shown = flow.parameter_schema.describe()
    for name in flow.lock_parameters:
        if name in shown and "default" not in shown[name]:
            shown[name]["required"] = True
    return shown


def _step_view(step: Step, names: list[str]) -> StepView:
    def phase(which: Phase) -> PhaseView:
        return PhaseView(
            module=step.module(which),
            command=step.command(which),
            timeout=step.timeout(which),
            retry=step.retry(which),
            backoff=step.backoff(which),
        )

    return StepView(
        name=step.Name,
        normal=phase(Phase.NORMAL) if step.NormalModule is not None else None,
        rollback=phase(Phase.ROLLBACK) if step.RollbackModule is not None else None,
        after=[names[i] for i in step.After or ()],
        for_each=step.ForEach,
        max_parallel=step.MaxParallel,
        max_items=step.MaxItems,
        flow=step.Flow,
        inputs=dict(step.FlowInputs),
    )
