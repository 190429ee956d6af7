"""Tasks and task types as the API shows them. Every task goes through common.secrets.task_views first."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

from common.flows import FlowDefinition
from common.secrets.task_views import masked_alarm, masked_runs, masked_task, masked_task_view
from common.engine.document import Alarm, Run, Step, Task
from common.engine.registry import kind_of, start_entries
from common.engine.views import offered_actions, run_words, wait_words
from common.engine.states import Phase, RunState, TaskStatus
from common.engine.views import describe_budget
from common.relay.unserved import waiting_notice
from common.store.items.port import ItemStore
from oss.api.attempts import attempts
from oss.services.item_views import item_attempts, item_counts, item_runs
from oss.api.schemas import (
    AlarmView,
    PhaseView,
    StepActionView,
    StepShownView,
    StepView,
    TaskDetail,
    TaskSummary,
    TaskTypeView,
    WaitShownView,
    WaitWordView,
)


def task_view(task: Task, now: float, live_modules: Collection[str] | None = None,
              items: ItemStore | None = None) -> TaskDetail:
    """`live_modules` given: a step waiting on a module none of them is says so (`Waiting`).
    `items` given: a step over item records shows its counts by state (inline steps always do)."""
    in_flight = item_runs(task, items)  # of its items kept in records: a drain's hold, an unserved queue
    shown = TaskDetail.model_validate(masked_task_view(task, in_flight, now))
    return derived_view(shown, task, now, in_flight, items, live_modules)


def derived_view(shown: TaskDetail, task: Task, now: float, in_flight: Collection[Run] = (),
                 items: ItemStore | None = None, live_modules: Collection[str] | None = None) -> TaskDetail:
    """`shown` (the task as shown: masked, its held units `waiting`) with what the API derives
    from it set, from `task` itself where nothing shown matters (the actions its steps offer)."""
    for cursor, counts in item_counts(task, items).items():
        shown.Steps[cursor].ItemCounts = counts
    for cursor, (tried, undone) in item_attempts(task, items).items():  # a step over records: its items' sums
        shown.Steps[cursor].Attempts, shown.Steps[cursor].RollbackAttempts = tried, undone
    for cursor, step in enumerate(shown.Steps):  # each as its kind describes it: a surface needs no code per kind
        said = kind_of(step).describe(step, step.ItemCounts)
        offered = [StepActionView(Name=a.name, Label=a.label, Summary=a.summary) for a in offered_actions(task, cursor)]
        step.Shown = StepShownView(Kind=said.kind, State=said.state, Note=said.note, Total=said.total, Done=said.done, Child=said.child,
                                   Children=list(said.children), Actions=offered)
    shown.ScheduledFor = scheduled_for(task, now)
    shown.Attempts = attempts(shown)  # from the masked history: its messages are scrubbed
    shown.TaskStatusName = task.TaskStatus.name
    shown.ItemRuns = masked_runs(in_flight)  # a callback's answer kept on one: another system's output
    shown.WaitShown = wait_shown(shown)
    shown.RunWaits = {run.DispatchId: said for run in (*shown.Runs, *shown.ItemRuns)
                      if (said := run_words(shown, run)) is not None}
    if live_modules is not None:
        shown.Waiting = waiting_notice(task, live_modules, in_flight)
    return shown


def wait_shown(shown: TaskDetail) -> WaitShownView | None:
    """Its wait in its gate's words, from the task as shown (masked: a key may quote a secret)."""
    said = wait_words(shown, shown.WaitingFor)
    if said is None:
        return None
    return WaitShownView(Kind=said.kind, Style=said.style,
                         Words=[WaitWordView(Kind=kind, Value=value) for kind, value in said.words])


def scheduled_for(task: Task, now: float) -> float | None:
    """When a task submitted with a future start_at begins (`StartAt`, which holds through a
    pause or a wait for another task). None once it is due (or for any other task)."""
    if task.StartAt is not None:
        started = task.TaskStatus is not TaskStatus.NOT_STARTED
        return None if started or task.StartAt <= now else task.StartAt
    # A document written before StartAt was kept: its roots' dispatches wait in the outbox.
    pending = {r.DispatchId for r in task.Runs if r.State is RunState.PENDING}
    # A gate asked for when the start comes (a task type's lock): its entry carries the time.
    pending |= start_entries(task)
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
    """`in_flight`: the runs of its items kept in records (oss.services.item_views.item_runs)."""
    shown = masked_task(task, in_flight, now)  # TaskMessage may quote a secret
    return TaskSummary(
        TaskId=shown.TaskId,
        TaskType=shown.TaskType,
        TaskStatus=int(shown.TaskStatus),
        TaskStatusName=shown.TaskStatus.name,
        TaskMessage=shown.TaskMessage,
        TaskCursor=shown.TaskCursor,
        StepStates=[kind_of(step).shown_state(step) or step.State.value for step in shown.Steps],
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
        FailedItems=shown.FailedItems,
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
        tolerate=describe_budget(step.Tolerate) or None,
        on_failure=step.OnFailure or "rollback",
        flow=step.Flow,
        inputs=dict(step.FlowInputs),
    )
