"""What an operator may do to a task, as pure changes in the style of common.transitions.

Each takes the task as read, the operator's name and reason, and "now"; it returns a NEW task to
write with one compare-and-set, or a Refusal when the action does not fit the task's state (an
API answers 409). Each records a history event with Actor = the operator and Message = the
reason. Whatever must be dispatched goes into the outbox, exactly as the engine does it; the
caller publishes it with OutboxPublisher.flush after the write.

- cancel: a task whose step is claimed and running gets `CancelRequested`; that step's outcome,
  success or failure, then routes into rollback of that step and every earlier one
  (transitions._conclude), without further retries. A step only dispatched (pending: nobody has
  claimed it, or it waits out a retry backoff) is fenced at once: its dispatch is dropped, so a
  late delivery of it is refused by the claim, and the rollback starts now. A task whose step 0
  was never claimed (not started, or waiting for its start time) ends ROLLED_BACK at once.
  Concurrent with a module's claim or commit, the compare-and-set decides which came first;
  either order ends in the same place.
- retry (ROLLED_BACK): the task runs again. Its rollback undid every step that had run, so
  resuming at the failed step would run it on top of nothing (deduct capacity for an instance
  that was dropped): the flow starts again at step 0, from the parameters the task was submitted
  with, as a new generation whose idempotency keys are new (so its commands really run again).
  The history keeps the first run's events. A failed *rollback* is resumed where it failed
  instead: see retry_rollback.
- retry_rollback (ROLLBACK_FAILED): dispatches the failed rollback step again.
- compensate (ROLLBACK_FAILED): the operator undid the failed rollback step by hand; the step
  becomes COMPENSATED and the rollback continues with the earlier steps.
"""

from __future__ import annotations

from typing import cast

from common.models import ActiveRun, OperatorRequest, Step, Task
from common.routing import RunStep, rollback_from
from common.statuses import FINAL_STATUSES, Phase, ResultCode, RunState, StepState, TaskStatus
from common.transitions import (
    IdFactory,
    Refusal,
    Timing,
    _dispatch,
    _finish,
    _record,
    _set_status,
    _set_step_state,
    cancel_message,
    new_id,
)


def cancel(task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    _check_reason(reason)
    status = task.TaskStatus
    if status in FINAL_STATUSES:
        return Refusal(f"task is {status.name}: it has ended, there is nothing to cancel")
    if status is TaskStatus.ROLLING_BACK:
        return Refusal("task is ROLLING_BACK already: there is nothing left to cancel")
    if task.CancelRequested is not None:
        return Refusal(f"cancel already requested by {task.CancelRequested.Actor}")
    new = task.clone()
    run = new.Active
    assert run is not None  # every task that has not ended has an active run
    request = OperatorRequest(Actor=actor, Reason=reason, Time=timing.now)
    new.CancelRequested = request
    _record(new, timing.now, "cancel_requested", run, actor=actor, message=reason)
    if run.State is RunState.RUNNING:
        return new  # the running step's outcome routes into rollback
    # Pending: nobody holds it. Drop its dispatch (a copy already published is refused by the
    # claim, since the task no longer points at it) and roll back from here.
    new.Outbox = [e for e in new.Outbox if e.DispatchId != run.DispatchId]
    step = new.Steps[run.Cursor]
    _record(new, timing.now, "cancelled", run, actor=actor, message=reason)
    new.TaskMessage = cancel_message(request)
    if run.Attempt == 1:
        _set_step_state(step, StepState.CANCELLED)  # never ran: nothing of it to undo
        first = run.Cursor - 1
    else:
        _set_step_state(step, StepState.FAILED)  # failed attempts ran: it may have left debris
        step.TimeEnd = timing.now
        first = run.Cursor
    _roll_back_from(new, first, run, timing, actor, ids)
    return new


def retry(task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    _check_reason(reason)
    if task.TaskStatus is TaskStatus.ROLLBACK_FAILED:
        return Refusal("a rollback step failed: retry that rollback or mark it compensated")
    if task.TaskStatus is not TaskStatus.ROLLED_BACK:
        return Refusal(f"task is {task.TaskStatus.name}: only a ROLLED_BACK task can be retried")
    new = task.clone()
    for step in new.Steps:
        _set_step_state(step, StepState.WAITING)
        _reset_normal(step)
        _reset_rollback(step)
    new.Generation += 1
    new.Parameters = dict(new.SubmittedParameters)
    new.TaskCursor = 0
    new.CancelRequested = None
    new.TaskMessage = ""
    new.TimeStart = new.TimeEnd = None
    _set_status(new, TaskStatus.NOT_STARTED)
    _record(new, timing.now, "retried", actor=actor, message=reason)
    _dispatch(new, 0, Phase.NORMAL, 1, timing, timing.now, actor, ids)
    return new


def retry_rollback(
    task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id
) -> Task | Refusal:
    _check_reason(reason)
    cursor = _failed_rollback(task)
    if isinstance(cursor, Refusal):
        return cursor
    new = task.clone()
    _reset_rollback(new.Steps[cursor])
    _reopen(new)
    _record(new, timing.now, "rollback_retried", actor=actor, message=reason)
    _dispatch(new, cursor, Phase.ROLLBACK, 1, timing, timing.now, actor, ids)
    return new


def compensate(
    task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id
) -> Task | Refusal:
    _check_reason(reason)
    cursor = _failed_rollback(task)
    if isinstance(cursor, Refusal):
        return cursor
    new = task.clone()
    step = new.Steps[cursor]
    _set_step_state(step, StepState.COMPENSATED)
    step.RollbackMessage = f"compensated by hand by {actor}: {reason}"
    new.TaskMessage = _first_failure(new)
    new.TimeEnd = None
    event_run = ActiveRun(Cursor=cursor, Phase=Phase.ROLLBACK, Attempt=step.RollbackAttempts or 1,
                          DispatchId="", Deadline=timing.now)  # fmt: skip
    _record(new, timing.now, "compensated", event_run, actor=actor, message=reason)
    _roll_back_from(new, cursor - 1, event_run, timing, actor, ids)
    return new


# --- the parts ---------------------------------------------------------------------------------


def _check_reason(reason: str) -> None:
    if not reason.strip():
        raise ValueError("an operator action needs a reason")


def _roll_back_from(
    task: Task, first: int, run: ActiveRun, timing: Timing, actor: str, ids: IdFactory
) -> None:
    """Dispatch the rollback of step `first` or the nearest earlier one that has a rollback, or
    end the task ROLLED_BACK when there is none."""
    move = rollback_from([s.has_rollback for s in task.Steps], first)
    for index in move.passed_over:
        _set_step_state(task.Steps[index], StepState.SKIPPED)
    if isinstance(move, RunStep):
        if task.TaskStatus is not TaskStatus.ROLLING_BACK:
            _set_status(task, TaskStatus.ROLLING_BACK)
        _dispatch(task, move.cursor, Phase.ROLLBACK, 1, timing, timing.now, actor, ids)
        return
    _finish(task, move, cast(ActiveRun, run), timing.now, actor, ids)  # no alarm: run unused


def _failed_rollback(task: Task) -> int | Refusal:
    if task.TaskStatus is not TaskStatus.ROLLBACK_FAILED:
        return Refusal(f"task is {task.TaskStatus.name}: only a ROLLBACK_FAILED task has a failed rollback")
    failed = [i for i, s in enumerate(task.Steps) if s.State is StepState.ROLLBACK_FAILED]
    if len(failed) != 1:
        return Refusal(f"expected one step whose rollback failed, found {len(failed)}")
    return failed[0]


def _reopen(task: Task) -> None:
    """A ROLLBACK_FAILED task rolling back again: no end time, and the message says why it
    rolls back (the original failure, not the rollback's)."""
    _set_status(task, TaskStatus.ROLLING_BACK)
    task.TimeEnd = None
    task.TaskMessage = _first_failure(task)


def _first_failure(task: Task) -> str:
    step = task.Steps[task.TaskCursor]
    if step.Code not in (None, ResultCode.OK):
        return f"step {task.TaskCursor} ({step.Name}) failed: {step.Message}"
    if task.CancelRequested is not None:
        return cancel_message(task.CancelRequested)
    return task.TaskMessage


def _reset_normal(step: Step) -> None:
    step.Code, step.Message, step.TimeStart, step.TimeEnd, step.Attempts = None, "", None, None, 0


def _reset_rollback(step: Step) -> None:
    step.RollbackCode, step.RollbackMessage = None, ""
    step.RollbackTimeStart, step.RollbackTimeEnd, step.RollbackAttempts = None, None, 0
