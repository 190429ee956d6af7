"""Bookkeeping of a task's runs and units, shared by every transition: no decisions here.

A unit is a plain step or one item of a `for_each` step (docs/design/task-document.md, "Units"); a
run is one dispatched attempt of one phase of one unit (2.2). These helpers add and remove runs,
write what a run owes the broker into the outbox, change unit and task states through the
legal-transition checkers, and record history events.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from enum import Enum
from typing import Any

from common.engine.document import HistoryEvent, OperatorRequest, OutboxEntry, Run, Step, StepMessage, Task, UnitState
from common.queues import QUEUE_MAX_PRIORITY, module_queue
from common.engine.core.step_summary import summarize
from common.engine.states import (
    FINAL_STATUSES,
    Phase,
    ResultCode,
    StepState,
    TaskStatus,
    check_step_transition,
    check_task_transition,
)

IdFactory = Callable[[], str]
Unit = tuple[int, int | None]  # (cursor, item index or None)

# Message priorities: the next run of a task already running outranks a new task's first run,
# so a burst of submissions cannot starve work in flight. Task priority (0-4) orders within a band.
MAX_TASK_PRIORITY = 4
IN_FLIGHT_BAND = MAX_TASK_PRIORITY + 1
MAX_MESSAGE_PRIORITY = QUEUE_MAX_PRIORITY  # the bands fill it: IN_FLIGHT_BAND + MAX_TASK_PRIORITY


def units(step: Step) -> list[tuple[int | None, UnitState]]:
    """The units of a step: its items once a for_each step has fixed them, else the step.

    A for_each step over zero items (or whose list was not a list) is its own unit: it has
    nothing to undo, but it is passed over backward only once its dependents settled, like a
    step without rollback, so the order still flows through it."""
    if step.Items:
        return list(enumerate(step.Items))
    return [(None, step)]


def unit_state(task: Task, unit: Unit) -> UnitState:
    cursor, item = unit
    step = task.Steps[cursor]
    if item is None:
        return step
    assert step.Items is not None
    return step.Items[item]


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Refusal:
    reason: str
    # What a caller that acts on a refusal (not only shows it) matches: a member of its owner's
    # enum, so the reason's words may change. None: a refusal only shown. Two refusals with one
    # reason are equal whatever their codes.
    code: Enum | None = field(default=None, kw_only=True, compare=False)


@dataclass(frozen=True)
class Forbidden(Refusal):
    """A refusal because of who asks, not of the document's state (an approver without the role
    the step names, the task's submitter where the step says not): an API answers 403."""


def none_if_refused(change: Callable[[Any], Any]) -> Callable[[Any], Any]:
    """A change for a store's compare-and-set loop (common.store.retry): None instead of a Refusal."""
    return lambda current: None if isinstance(outcome := change(current), Refusal) else outcome


@dataclass(frozen=True)
class AttemptResult:
    """How one attempt of a command ended."""

    code: ResultCode
    message: str = ""
    output: dict[str, Any] = field(default_factory=dict)
    retryable: bool = True
    # "Not done yet, check again in this many seconds" (message: its progress); not an attempt.
    check_again: float | None = None
    # A verify ran before this attempt (docs/design/runtime.md, "Verifying an unknown outcome"): its
    # verdict and reason, for the history and the unit's count of unknowns.
    verified: tuple[str, str] | None = None
    # "Wait, parked, for the callback of the token given out": (timeout, heartbeat) seconds.
    callback: tuple[float, float | None] | None = None

    @property
    def ok(self) -> bool:
        return self.code is ResultCode.OK


@dataclass(frozen=True)
class Timing:
    """The clock-derived inputs of a change, gathered so signatures stay short."""

    now: float
    lease: float = 30.0  # how long a claim holds without a heartbeat
    redeliver_after: float = 60.0  # re-publish a dispatch nobody claimed after this long
    retry_delay: float = 0.0  # backoff before the next attempt, drawn by the caller


def cancel_message(request: OperatorRequest) -> str:
    return f"cancelled by {request.Actor}: {request.Reason}"


def idempotency_key(task_id: str, cursor: int, phase: Phase, generation: int = 0, item: int | None = None) -> str:
    """Stays the same across retries and redeliveries of one unit's phase (docs/design/protocol.md,
    "Transitions").

    A new generation (an operator restarted the rolled-back task) gets new keys: its steps must
    really run again, not answer with what the undone run did.
    """
    where = cursor if item is None else f"{cursor}.{item}"
    return f"{run_key(task_id, generation)}:{where}:{phase.label}"


def run_key(task_id: str, generation: int = 0) -> str:
    """Names one run of a task, shared by all its steps (a resource claim held across steps)."""
    return task_id if generation == 0 else f"{task_id}:g{generation}"


def unit_name(task: Task, unit: Unit) -> str:
    cursor, item = unit
    name = f"step {cursor} ({task.Steps[cursor].Name})"
    return name if item is None else f"{name} item {item}"


def set_status(task: Task, status: TaskStatus) -> None:
    check_task_transition(task.TaskStatus, status)
    task.TaskStatus = status


def set_unit_state(task: Task, unit: Unit, state: StepState) -> None:
    """Change one unit's state; a for_each step's own state follows its items."""
    target = unit_state(task, unit)
    check_step_transition(target.State, state)
    target.State = state
    step = task.Steps[unit[0]]
    if unit[1] is not None:
        step.State = summarize(step.State, step.Items or [])


def begin_attempt(task: Task, run: Run, at: float) -> None:
    """`run`'s attempt has begun at `at`: a module claimed it, or (a sub-flow) its child task was
    asked for; no module claims a sub-flow's run, so its unit would otherwise show none started."""
    unit = unit_state(task, run.unit)
    if run.Phase is Phase.NORMAL:
        unit.Attempts = run.Attempt
        unit.TimeStart = unit.TimeStart or at
        if task.TaskStatus is TaskStatus.NOT_STARTED:
            set_status(task, TaskStatus.RUNNING)
            task.TimeStart = at
    else:
        unit.RollbackAttempts = run.Attempt
        unit.RollbackTimeStart = unit.RollbackTimeStart or at


def retries_left(step: Step, run: Run, result: AttemptResult, stopping: bool) -> bool:
    """Whether a failed attempt gets another (the unit's task still goes its way)."""
    return not result.ok and result.retryable and not stopping and run.Attempt <= step.retry(run.Phase)


def concluded_state(result: AttemptResult, phase: Phase) -> tuple[StepState, str]:
    """The unit's state once its phase ended for good, and the history event that says so."""
    if phase is Phase.NORMAL:
        return (StepState.SUCCEEDED, "step_succeeded") if result.ok else (StepState.FAILED, "step_failed")
    return (StepState.ROLLED_BACK, "rollback_succeeded") if result.ok else (StepState.ROLLBACK_FAILED, "rollback_failed")


def store_result(unit: UnitState, phase: Phase, result: AttemptResult, now: float) -> None:
    if phase is Phase.NORMAL:
        unit.Code, unit.Message, unit.TimeEnd = result.code, result.message, now
    else:
        unit.RollbackCode, unit.RollbackMessage, unit.RollbackTimeEnd = result.code, result.message, now


def add_run(task: Task, unit: Unit, phase: Phase, attempt: int, ids: IdFactory, deadline: float | None,
            since: float | None = None) -> Run:  # fmt: skip
    cursor, item = unit
    run = Run(Cursor=cursor, Item=item, Phase=phase, Attempt=attempt, DispatchId=ids(), Deadline=deadline, Since=since)
    task.Runs.append(run)
    return run


def remove_run(task: Task, run: Run) -> None:
    task.Runs = [r for r in task.Runs if r.DispatchId != run.DispatchId]


def delivered_run(task: Task, message: StepMessage) -> Run | Refusal:
    """The run a delivery names, in the task as stored, or why there is nothing to run (the task
    ended, or moved on past that dispatch). Its state is the caller's to judge."""
    if task.TaskStatus in FINAL_STATUSES:
        return Refusal(f"task is {task.TaskStatus.name}, nothing to run")
    found = task.run(message.DispatchId)
    if found is None:
        return Refusal("stale dispatch: the task has moved on")
    return found


def drop_outbox(task: Task, dispatch_id: str) -> None:
    task.Outbox = [e for e in task.Outbox if e.DispatchId != dispatch_id]


def step_message(task: Task, run: Run) -> StepMessage:
    step = task.Steps[run.Cursor]
    return StepMessage(
        TaskId=task.TaskId,
        Cursor=run.Cursor,
        Item=run.Item,
        Type=run.Phase,
        Module=step.module_of(run.Item, run.Phase),
        Command=step.command_of(run.Item, run.Phase),
        Timeout=step.timeout(run.Phase),
        Retry=step.retry(run.Phase),
        DispatchId=run.DispatchId,
        Attempt=run.Attempt,
        Trace=task.Trace,
    )


def step_body(task: Task, run: Run) -> dict[str, Any]:
    """`step_message(task, run)` as its JSON body, without Parameters (the module reads them from
    the document at the claim, so secrets stay off the broker and the document holds one copy,
    not one per run) nor Trace when the task has none (the message is then what it was before
    traces). Built as a dict, not through the model: every dispatch writes one, and the model's
    validation and dump were a fifth of a step's outcome. Its values come from the validated
    task; a test holds it equal to the model's dump."""
    step, phase = task.Steps[run.Cursor], run.Phase
    body = {
        "TaskId": task.TaskId, "Cursor": run.Cursor, "Item": run.Item, "Type": int(phase),
        "Module": step.module_of(run.Item, phase), "Command": step.command_of(run.Item, phase),
        "Timeout": float(step.timeout(phase)), "Retry": step.retry(phase), "DispatchId": run.DispatchId,
        "Attempt": run.Attempt,
    }
    if task.Trace is not None:
        body["Trace"] = task.Trace.model_dump(mode="json")
    return body


def publish_entry(task: Task, run: Run, due_at: float) -> OutboxEntry:
    """The outbox entry that publishes `run`'s step message to its module's queue."""
    body = step_body(task, run)
    # A root's first attempt is the task's start: it waits behind work already in flight.
    first_of_task = run.Phase is Phase.NORMAL and run.Attempt == 1 and not task.Steps[run.Cursor].After
    priority = task.Priority + (0 if first_of_task else IN_FLIGHT_BAND)
    return OutboxEntry(DispatchId=run.DispatchId, Queue=module_queue(body["Module"]), Body=body, Priority=priority,
                       DueAt=due_at)


def record(
    task: Task,
    now: float,
    event: str,
    run: Run | None = None,
    *,
    actor: str | None = None,
    message: str = "",
    unit: Unit | None = None,
    phase: Phase | None = None,
) -> None:
    cursor, item = (run.Cursor, run.Item) if run else unit or (None, None)
    # The history is in the order changes committed. A change computed on an earlier clock
    # reading (it lost a compare-and-set race and was applied again) never goes back in time:
    # readers that merge events by time (item records' events) keep the commit order.
    if task.History and now < task.History[-1].Time:
        now = task.History[-1].Time
    task.History.append(
        HistoryEvent(
            Time=now,
            Event=event,
            Cursor=cursor,
            Item=item,
            Phase=run.Phase if run else phase,
            Attempt=run.Attempt if run else None,
            Actor=actor,
            Message=message,
        )
    )


def reset_normal(unit: UnitState) -> None:
    unit.Code, unit.Message, unit.TimeStart, unit.TimeEnd, unit.Attempts = None, "", None, None, 0
    unit.Progress, unit.WaitingSince, unit.Verifies = "", None, 0


def reset_rollback(unit: UnitState) -> None:
    unit.RollbackCode, unit.RollbackMessage, unit.RollbackVerifies = None, "", 0
    unit.RollbackTimeStart, unit.RollbackTimeEnd, unit.RollbackAttempts = None, None, 0
    unit.WaitingSince = None


def reset_step(step: Step) -> None:
    """Back to waiting, as a step never reached (an operator's retry of the task)."""
    check_step_transition(step.State, StepState.WAITING)
    step.State = StepState.WAITING
    reset_normal(step)
    reset_rollback(step)  # its kind's own fields: StepKind.reset
