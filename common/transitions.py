"""Every change to a task document, as pure functions.

Each function takes the task as read from the store plus "now" and returns either a NEW task to
write with one compare-and-set, or a `Refusal` saying why the change does not apply (a stale
delivery, a lost lease, a task already final). No I/O here: the callers in the runtime, the
sweeper and OSS read, call one of these, and write.

The outbox lives in the document: whatever a change must tell the broker (the next step, a retry,
an alarm) is appended to `Outbox` by the same change, so it is committed atomically with the
outcome and cannot be lost by a crash between the write and the publish.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from common.masking import scrubbed_text
from common.models import (
    ActiveRun,
    Alarm,
    HistoryEvent,
    OperatorRequest,
    OutboxEntry,
    Step,
    StepMessage,
    Task,
)
from common.queues import ALARM_QUEUE, QUEUE_MAX_PRIORITY, module_queue
from common.routing import Finish, RunStep, route
from common.statuses import (
    FINAL_STATUSES,
    Phase,
    ResultCode,
    RunState,
    StepState,
    TaskStatus,
    check_step_transition,
    check_task_transition,
)

IdFactory = Callable[[], str]

# Message priorities: the next step of a task already running outranks a new task's first step,
# so a burst of submissions cannot starve work in flight. Task priority (0-4) orders within a band.
MAX_TASK_PRIORITY = 4
IN_FLIGHT_BAND = MAX_TASK_PRIORITY + 1
MAX_MESSAGE_PRIORITY = QUEUE_MAX_PRIORITY  # the bands fill it: IN_FLIGHT_BAND + MAX_TASK_PRIORITY
# A run nobody claimed is re-published after redeliver_after, then after 2x, 4x ... at most this
# many times redeliver_after (see expire).
MAX_REDISPATCH_BACKOFF = 16


def new_id() -> str:
    return uuid.uuid4().hex


@dataclass(frozen=True)
class Refusal:
    reason: str


@dataclass(frozen=True)
class AttemptResult:
    """How one attempt of a command ended."""

    code: ResultCode
    message: str = ""
    output: dict[str, Any] = field(default_factory=dict)
    retryable: bool = True

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


def create_task(
    *,
    task_type: str,
    steps: list[Step],
    parameters: dict[str, Any],
    timing: Timing,
    start_at: float | None = None,
    idempotency_key: str | None = None,
    priority: int = 0,
    user_id: str | None = None,
    labels: dict[str, str] | None = None,
    task_id: str | None = None,
    secret_parameters: list[str] | None = None,
    ids: IdFactory = new_id,
) -> Task:
    """A new task whose step 0 dispatch sits in the outbox, ready for one insert."""
    if not steps:
        raise ValueError("a task needs at least one step")
    task = Task(
        TaskId=task_id or ids(),
        TaskType=task_type,
        TimeCreate=timing.now,
        Parameters=dict(parameters),
        SubmittedParameters=dict(parameters),
        Steps=[s.model_copy(deep=True) for s in steps],
        IdempotencyKey=idempotency_key,
        Priority=max(0, min(priority, MAX_TASK_PRIORITY)),
        UserId=user_id,
        Labels=dict(labels or {}),
        SecretParameters=sorted(secret_parameters or []),
    )
    _record(task, timing.now, "created", actor="oss")
    due = max(timing.now, start_at) if start_at is not None else timing.now
    _dispatch(task, 0, Phase.NORMAL, 1, timing, due_at=due, actor="oss", ids=ids)
    return task


def claim(task: Task, message: StepMessage, owner: str, timing: Timing) -> Task | Refusal:
    """PENDING -> RUNNING for the dispatch in `message`, leased to `owner`."""
    active = task.Active
    if task.TaskStatus in FINAL_STATUSES or active is None:
        return Refusal(f"task is {task.TaskStatus.name}, nothing to run")
    if active.DispatchId != message.DispatchId:
        return Refusal("stale dispatch: the task has moved on")
    if active.State is RunState.RUNNING:
        return Refusal(f"already claimed by {active.Owner}")
    new = task.clone()
    run = new.Active
    assert run is not None
    run.State, run.Owner, run.Deadline = RunState.RUNNING, owner, timing.now + timing.lease
    # The claim proves the dispatch was delivered: its outbox entry goes in this same write, which
    # spares the publisher a write of its own to mark it sent.
    new.Outbox = [e for e in new.Outbox if e.DispatchId != run.DispatchId]
    step = new.Steps[run.Cursor]
    if run.Phase is Phase.NORMAL:
        step.Attempts = run.Attempt
        step.TimeStart = step.TimeStart or timing.now
        if new.TaskStatus is TaskStatus.NOT_STARTED:
            _set_status(new, TaskStatus.RUNNING)
            new.TimeStart = timing.now
    else:
        step.RollbackAttempts = run.Attempt
        step.RollbackTimeStart = step.RollbackTimeStart or timing.now
    _record(new, timing.now, "claimed", run, actor=owner)
    return new


def renew_lease(task: Task, dispatch_id: str, owner: str, timing: Timing) -> Task | Refusal:
    """Push the lease deadline out; refused once the claim is no longer ours."""
    refusal = _check_owner(task, dispatch_id, owner)
    if refusal:
        return refusal
    new = task.clone()
    assert new.Active is not None
    new.Active.Deadline = timing.now + timing.lease
    return new


def finish_attempt(
    task: Task,
    dispatch_id: str,
    owner: str,
    result: AttemptResult,
    timing: Timing,
    ids: IdFactory = new_id,
) -> Task | Refusal:
    """Record how the owner's attempt ended and decide what comes next (retry, route, finish)."""
    refusal = _check_owner(task, dispatch_id, owner)
    if refusal:
        return refusal
    new = task.clone()
    _conclude(new, result, timing, actor=owner, ids=ids)
    return new


def release(task: Task, dispatch_id: str, owner: str, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    """Give a claimed step back (its module is shutting down): dispatched again at once.

    Not counted as an attempt: the command did not fail, its process was stopped under it.
    """
    refusal = _check_owner(task, dispatch_id, owner)
    if refusal:
        return refusal
    new = task.clone()
    run = new.Active
    assert run is not None
    _record(new, timing.now, "released", run, actor=owner, message="module shutting down")
    if new.CancelRequested is not None and run.Phase is Phase.NORMAL:
        # Cancelled meanwhile: no point running it again; it may have done part of its work,
        # so it is rolled back like a step that ended under a cancel.
        stopped = AttemptResult(ResultCode.FAILED, "stopped by a module shutdown")
        _conclude(new, stopped, timing, actor=owner, ids=ids)
        return new
    _dispatch(new, run.Cursor, run.Phase, run.Attempt, timing, timing.now, owner, ids)
    return new


def expire(task: Task, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    """The sweeper's change for a task whose active run is past its deadline.

    A RUNNING run lost its worker (dead or frozen): the attempt counts as failed and the step is
    retried or routed as any failure. A PENDING run was never claimed (the message was lost or
    purged): it is published again under the same dispatch id, and again after twice the period,
    four times... (it may only be waiting in a long queue).
    """
    active = task.Active
    if active is None or active.Deadline > timing.now:
        return Refusal("nothing past its deadline")
    new = task.clone()
    run = new.Active
    assert run is not None
    if run.State is RunState.RUNNING:
        lost = AttemptResult(ResultCode.WORKER_LOST, f"lease of {run.Owner} lapsed")
        _conclude(new, lost, timing, actor="sweeper", ids=ids)
        return new
    if not any(e.DispatchId == run.DispatchId for e in new.Outbox):
        new.Outbox.append(_outbox_entry(new, run, due_at=timing.now))
    # Back off: a message that merely waits in a long queue (a backlog, its module down) must not
    # be copied into that queue every period; each copy lengthens the wait, so ever more runs
    # pass their deadline and the queue grows without bound (a redelivery storm).
    earlier = 0  # re-publications of this dispatch: since it was last "dispatched"
    for e in reversed(new.History):
        if (e.Cursor, e.Phase, e.Attempt) == (run.Cursor, run.Phase, run.Attempt):
            if e.Event == "dispatched":
                break
            earlier += e.Event == "redispatched"
    run.Deadline = timing.now + timing.redeliver_after * min(2**earlier, MAX_REDISPATCH_BACKOFF)
    _record(new, timing.now, "redispatched", run, actor="sweeper", message="never claimed")
    return new


def mark_sent(task: Task, dispatch_id: str) -> Task | Refusal:
    """Drop an outbox entry the broker confirmed."""
    if not any(e.DispatchId == dispatch_id for e in task.Outbox):
        return Refusal("already marked sent")
    new = task.clone()
    new.Outbox = [e for e in new.Outbox if e.DispatchId != dispatch_id]
    return new


def cancel_message(request: OperatorRequest) -> str:
    return f"cancelled by {request.Actor}: {request.Reason}"


def idempotency_key(task_id: str, cursor: int, phase: Phase, generation: int = 0) -> str:
    """Stays the same across retries and redeliveries of one step phase, as DESIGN.md requires.

    A new generation (an operator restarted the rolled-back task) gets new keys: its steps must
    really run again, not answer with what the undone run did.
    """
    return f"{run_key(task_id, generation)}:{cursor}:{phase.label}"


def run_key(task_id: str, generation: int = 0) -> str:
    """Names one run of a task, shared by all its steps (a resource claim held across steps)."""
    return task_id if generation == 0 else f"{task_id}:g{generation}"


# --- the parts ---------------------------------------------------------------------------------


def _check_owner(task: Task, dispatch_id: str, owner: str) -> Refusal | None:
    active = task.Active
    if active is None or active.DispatchId != dispatch_id:
        return Refusal("stale dispatch: the task has moved on")
    if active.State is not RunState.RUNNING or active.Owner != owner:
        return Refusal(f"claim lost: run is {active.State.value}, owned by {active.Owner}")
    return None


def _conclude(task: Task, result: AttemptResult, timing: Timing, actor: str, ids: IdFactory) -> None:
    run = task.Active
    assert run is not None
    step = task.Steps[run.Cursor]
    _store_result(step, run.Phase, result, timing.now)
    # Cancelled while this step ran: no further attempt, and even a success routes into rollback
    # of this step (it did work that must be undone), as if it had failed.
    cancel = task.CancelRequested if run.Phase is Phase.NORMAL else None
    retry_left = run.Attempt <= step.retry(run.Phase)
    if not result.ok and result.retryable and cancel is None and retry_left:
        _record(task, timing.now, "attempt_failed", run, actor=actor, message=result.message)
        due = timing.now + timing.retry_delay
        _dispatch(task, run.Cursor, run.Phase, run.Attempt + 1, timing, due, actor, ids)
        return
    if result.ok:
        task.Parameters.update(result.output)
        new_state = StepState.SUCCEEDED if run.Phase is Phase.NORMAL else StepState.ROLLED_BACK
        event = "step_succeeded" if run.Phase is Phase.NORMAL else "rollback_succeeded"
    else:
        new_state = StepState.FAILED if run.Phase is Phase.NORMAL else StepState.ROLLBACK_FAILED
        event = "step_failed" if run.Phase is Phase.NORMAL else "rollback_failed"
    _set_step_state(step, new_state)
    _step_time_end(step, run.Phase, timing.now)
    _record(task, timing.now, event, run, actor=actor, message=result.message)
    if not result.ok:
        what = "step" if run.Phase is Phase.NORMAL else "rollback of step"
        failure = f"{what} {run.Cursor} ({step.Name}) failed: {result.message}"
        if run.Phase is Phase.ROLLBACK or task.TaskStatus is not TaskStatus.ROLLING_BACK:
            task.TaskMessage = failure
    if cancel is not None:
        task.TaskMessage = cancel_message(cancel)
        _record(task, timing.now, "cancelled", run, actor=cancel.Actor, message=cancel.Reason)
    succeeded = result.ok and cancel is None
    next_move = route([s.has_rollback for s in task.Steps], run.Cursor, run.Phase, succeeded)
    for index in next_move.passed_over:
        _set_step_state(task.Steps[index], StepState.SKIPPED)
    if isinstance(next_move, RunStep):
        if next_move.phase is Phase.ROLLBACK and task.TaskStatus is not TaskStatus.ROLLING_BACK:
            _set_status(task, TaskStatus.ROLLING_BACK)
        _dispatch(task, next_move.cursor, next_move.phase, 1, timing, timing.now, actor, ids)
        return
    _finish(task, next_move, run, timing.now, actor, ids)


def _store_result(step: Step, phase: Phase, result: AttemptResult, now: float) -> None:
    if phase is Phase.NORMAL:
        step.Code, step.Message = result.code, result.message
    else:
        step.RollbackCode, step.RollbackMessage = result.code, result.message


def _step_time_end(step: Step, phase: Phase, now: float) -> None:
    if phase is Phase.NORMAL:
        step.TimeEnd = now
    else:
        step.RollbackTimeEnd = now


def _finish(task: Task, end: Finish, run: ActiveRun, now: float, actor: str, ids: IdFactory) -> None:
    _set_status(task, end.status)
    task.TimeEnd = now
    task.Active = None
    if end.status is TaskStatus.SUCCESS:
        task.TaskMessage = ""
    elif end.status is TaskStatus.ROLLED_BACK:
        task.TaskMessage = f"rolled back: {task.TaskMessage}" if task.TaskMessage else "rolled back"
    _record(task, now, f"task_{end.status.name.lower()}", actor=actor, message=task.TaskMessage)
    if end.alarm:
        step = task.Steps[run.Cursor]
        alarm = Alarm(
            AlarmId=ids(),
            Kind="rollback_failed",
            Time=now,
            # The failure message may quote a secret parameter; the alarm travels to the monitor's
            # log, the alarm store and a webhook, none of which knows the task's secrets: scrub here.
            Message=scrubbed_text(task.TaskMessage, task),
            TaskId=task.TaskId,
            Cursor=run.Cursor,
            Phase=run.Phase,
            Module=step.module(run.Phase),
            Command=step.command(run.Phase),
        )
        task.Outbox.append(
            OutboxEntry(
                DispatchId=alarm.AlarmId,
                Queue=ALARM_QUEUE,
                Body=alarm.model_dump(mode="json"),
                Priority=MAX_MESSAGE_PRIORITY,
                DueAt=now,
            )
        )
        _record(task, now, "alarm_raised", run, actor=actor, message=alarm.AlarmId)


def _dispatch(
    task: Task,
    cursor: int,
    phase: Phase,
    attempt: int,
    timing: Timing,
    due_at: float,
    actor: str,
    ids: IdFactory,
) -> None:
    """Make (cursor, phase, attempt) the active run and put its message in the outbox."""
    step = task.Steps[cursor]
    if phase is Phase.NORMAL:
        _set_step_state(step, StepState.RUNNING)
        task.TaskCursor = max(task.TaskCursor, cursor)
    else:
        _set_step_state(step, StepState.ROLLING_BACK)
    run = ActiveRun(
        Cursor=cursor,
        Phase=phase,
        Attempt=attempt,
        DispatchId=ids(),
        Deadline=due_at + timing.redeliver_after,
    )
    task.Active = run
    task.Outbox.append(_outbox_entry(task, run, due_at))
    _record(task, timing.now, "dispatched", run, actor=actor)


def _outbox_entry(task: Task, run: ActiveRun, due_at: float) -> OutboxEntry:
    step = task.Steps[run.Cursor]
    message = StepMessage(
        TaskId=task.TaskId,
        Cursor=run.Cursor,
        Type=run.Phase,
        Parameters=task.Parameters,
        Module=step.module(run.Phase),
        Command=step.command(run.Phase),
        Timeout=step.timeout(run.Phase),
        Retry=step.retry(run.Phase),
        DispatchId=run.DispatchId,
        Attempt=run.Attempt,
    )
    first_of_task = run.Cursor == 0 and run.Phase is Phase.NORMAL and run.Attempt == 1
    priority = task.Priority + (0 if first_of_task else IN_FLIGHT_BAND)
    return OutboxEntry(
        DispatchId=run.DispatchId,
        Queue=module_queue(message.Module),
        Body=message.model_dump(mode="json"),
        Priority=priority,
        DueAt=due_at,
    )


def _set_status(task: Task, status: TaskStatus) -> None:
    check_task_transition(task.TaskStatus, status)
    task.TaskStatus = status


def _set_step_state(step: Step, state: StepState) -> None:
    check_step_transition(step.State, state)
    step.State = state


def _record(
    task: Task,
    now: float,
    event: str,
    run: ActiveRun | None = None,
    *,
    actor: str | None = None,
    message: str = "",
) -> None:
    task.History.append(
        HistoryEvent(
            Time=now,
            Event=event,
            Cursor=run.Cursor if run else None,
            Phase=run.Phase if run else None,
            Attempt=run.Attempt if run else None,
            Actor=actor,
            Message=message,
        )
    )
