"""What an operator may do to a task, as pure changes in the style of common.engine.core.entries.

Each takes the task as read, the operator's name and reason, and "now"; it returns a NEW task to
write with one compare-and-set, or a Refusal when the action does not fit the task's state (an
API answers 409). Each records a history event with Actor = the operator and Message = the
reason. Whatever must be dispatched goes into the outbox, exactly as the engine does it; the
caller publishes it with OutboxPublisher.flush after the write. docs/design/operator-actions.md.

- cancel: every pending normal run (nobody claimed it, or it waits out a retry backoff) is fenced
  at once: its dispatch is dropped, so a late delivery is refused by the claim. Claimed runs
  finish (their outcome, success or failure, routes into rollback, without further retries),
  or with `stop_running` are stopped now: their runs are removed, so the module's next lease
  renewal is refused and it kills the command; they count as failed (they may have done part of
  their work). A sub-flow step's child is cancelled too. Then every applied unit rolls back.
  A task nothing of which was claimed ends ROLLED_BACK at once.
- retry (ROLLED_BACK): the task runs again. Its rollback undid every unit that had run, so
  resuming at the failed one would run it on top of nothing (deduct capacity for an instance
  that was dropped): the flow starts again from its roots, from the parameters the task was
  submitted with, as a new generation whose idempotency keys are new (so its commands really
  run again). The history keeps the first run's events.
- retry_rollback (ROLLBACK_FAILED): dispatches every failed rollback again.
- compensate (ROLLBACK_FAILED): the operator undid the failed units by hand; they become
  COMPENSATED and the rollback continues with the units they depended on.
"""

from __future__ import annotations

from common.engine.core.advance import advance, dispatch, enter_rollback
from common.engine.document import OperatorRequest, Task
from common.engine.core.units import Unit, unit_state, units
from common.engine.states import FINAL_STATUSES, Phase, ResultCode, StepState, TaskStatus, UNCLAIMED, set_waiting
from common.engine.registry import kind_of, retry_gates
from common.engine.core.units import (
    AttemptResult,
    IdFactory,
    Refusal,
    Timing,
    cancel_message,
    new_id,
    record,
    remove_run,
    reset_rollback,
    reset_step,
    set_status,
    set_unit_state,
    store_result,
    unit_name,
)


def cancel(task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id,
           stop_running: bool = False) -> Task | Refusal:
    check_reason(reason)
    status = task.TaskStatus
    if status in FINAL_STATUSES:
        return Refusal(f"task is {status.name}: it has ended, there is nothing to cancel")
    if status is TaskStatus.ROLLING_BACK:
        return Refusal("task is ROLLING_BACK already: there is nothing left to cancel")
    if task.CancelRequested is not None:
        return Refusal(f"cancel already requested by {task.CancelRequested.Actor}")
    new = task.clone()
    request = OperatorRequest(Actor=actor, Reason=reason, Time=timing.now)
    new.CancelRequested = request
    busy = [r for r in new.Runs if r.State not in UNCLAIMED]
    record(new, timing.now, "cancel_requested", busy[0] if len(busy) == 1 else None, actor=actor, message=reason)
    for run in busy:
        if kind_of(new.Steps[run.Cursor]).cancel_run(new, run, request):
            continue  # the kind's own way (a sub-flow's child is cancelled)
        if stop_running:
            remove_run(new, run)
            store_result(unit_state(new, run.unit), run.Phase, AttemptResult(ResultCode.FAILED, "stopped by a cancel"), timing.now)
            set_unit_state(new, run.unit, StepState.FAILED)
            record(new, timing.now, "stopped", run, actor=actor, message=reason)
    for cursor, step in enumerate(new.Steps):  # runs the task does not hold (items in records)
        kind_of(step).cancel_step(new, cursor, request, stop_running)
    if new.Runs and all(r.State not in UNCLAIMED for r in new.Runs):
        return new  # the claimed runs' outcomes route into rollback (common.engine.core.advance.conclude)
    # Pending runs are fenced now; draining runs finish; routing rolls back once they are gone.
    new.TaskMessage = cancel_message(request)
    enter_rollback(new, timing, actor)
    advance(new, timing, actor, ids)
    return new


def retry(task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    check_reason(reason)
    if task.TaskStatus is TaskStatus.ROLLBACK_FAILED:
        return Refusal("a rollback step failed: retry that rollback or mark it compensated")
    if task.TaskStatus is not TaskStatus.ROLLED_BACK:
        return Refusal(f"task is {task.TaskStatus.name}: only a ROLLED_BACK task can be retried")
    new = task.clone()
    new_generation(new, timing.now)
    record(new, timing.now, "retried", actor=actor, message=reason)
    retry_gates(new, timing.now)  # a task type with a lock queues for it again; a deadline restarts
    advance(new, timing, actor, ids)
    return new


def new_generation(task: Task, now: float) -> None:
    """A rolled-back task back to not started, every step waiting (retry, skip); the caller
    records why, then lets the gates begin the new generation (common.engine.registry.retry_gates)."""
    for step in task.Steps:
        reset_step(step)
        kind_of(step).reset(step)
    task.Generation += 1
    task.Parameters = dict(task.SubmittedParameters)
    task.TaskCursor = 0
    task.CancelRequested = None
    task.TaskMessage = ""
    task.TimeStart = task.TimeEnd = None
    set_waiting(task, None)  # the operator runs it now, whatever it waited for
    set_status(task, TaskStatus.NOT_STARTED)


def retry_rollback(
    task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id
) -> Task | Refusal:
    reopened = _reopened(task, actor, reason, timing)
    if isinstance(reopened, Refusal):
        return reopened
    new, failed, request = reopened
    record(new, timing.now, "rollback_retried", actor=actor, message=reason)
    for unit in failed:
        if kind_of(new.Steps[unit[0]]).reopen_rollback(new, unit, "retry", request, ids):
            continue  # the kind's own way (items in records: their relay retries each)
        reset_rollback(unit_state(new, unit))
        dispatch(new, unit, Phase.ROLLBACK, 1, timing, timing.now, actor, ids)
    return new


def compensate(
    task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id
) -> Task | Refusal:
    reopened = _reopened(task, actor, reason, timing)
    if isinstance(reopened, Refusal):
        return reopened
    new, failed, request = reopened
    for unit in failed:
        if kind_of(new.Steps[unit[0]]).reopen_rollback(new, unit, "compensate", request, ids):
            record(new, timing.now, "compensated", actor=actor, message=reason, unit=unit, phase=Phase.ROLLBACK)
            continue
        set_unit_state(new, unit, StepState.COMPENSATED)
        unit_state(new, unit).RollbackMessage = f"compensated by hand by {actor}: {reason}"
        record(new, timing.now, "compensated", actor=actor, message=reason, unit=unit, phase=Phase.ROLLBACK)
    advance(new, timing, actor, ids)
    return new


# --- the parts ---------------------------------------------------------------------------------


def check_reason(reason: str) -> None:
    """Every operator action says why: the reason goes into the task's history."""
    if not reason.strip():
        raise ValueError("an operator action needs a reason")


def _failed_rollbacks(task: Task) -> list[Unit] | Refusal:
    if task.TaskStatus is not TaskStatus.ROLLBACK_FAILED:
        return Refusal(f"task is {task.TaskStatus.name}: only a ROLLBACK_FAILED task has a failed rollback")
    failed = [(c, i) for c, s in enumerate(task.Steps) for i, u in units(s) if u.State is StepState.ROLLBACK_FAILED]
    if not failed:
        return Refusal("no unit's rollback failed")
    return failed


def _reopened(task: Task, actor: str, reason: str, timing: Timing) -> tuple[Task, list[Unit], OperatorRequest] | Refusal:
    """A copy of a ROLLBACK_FAILED task rolling back again, its units whose rollback failed, and
    the operator's request (retry_rollback and compensate), or why it cannot."""
    check_reason(reason)
    failed = _failed_rollbacks(task)
    if isinstance(failed, Refusal):
        return failed
    new = task.clone()
    _reopen(new)
    return new, failed, OperatorRequest(Actor=actor, Reason=reason, Time=timing.now)


def _reopen(task: Task) -> None:
    """A ROLLBACK_FAILED task rolling back again: no end time, and the message says why it
    rolls back (the original failure, not the rollback's)."""
    set_status(task, TaskStatus.ROLLING_BACK)
    task.TimeEnd = None
    task.TaskMessage = _first_failure(task)


def _first_failure(task: Task) -> str:
    for cursor, step in enumerate(task.Steps):
        for item, unit in units(step):
            if unit.Code not in (None, ResultCode.OK) and unit.State is not StepState.CANCELLED:
                return f"{unit_name(task, (cursor, item))} failed: {unit.Message}"
    if task.CancelRequested is not None:
        return cancel_message(task.CancelRequested)
    return task.TaskMessage
