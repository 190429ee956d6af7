"""Operator actions on the flow forward, as pure changes in the style of common.engine.operator.actions
(docs/design/operator-actions.md): pause, resume, skip. Each records a history event with the
operator and reason.

- pause (not started or running, no cancel asked): `Paused = {Actor, Reason, Time}`; routing
  starts no new unit while it is set. Claimed runs finish (a retry of a unit already running is
  not a new unit: it may still come); a first dispatch nobody claimed yet is withdrawn (its run
  and outbox entry removed, so a late delivery is refused by the claim) and its unit waits
  again. A pause holds the flow forward only: a task that rolls back (a failure, a cancel, its
  deadline) drops it, since undoing is never held up. A sub-flow step's child is paused too
  (a `pause_child` outbox entry), so "no new step starts" holds for the whole operation.
- resume: clears `Paused` and dispatches whatever became ready meanwhile; a child the pause
  paused is resumed (`resume_child`), one an operator paused by itself stays paused.
- skip: an operator marks a unit `operator_skipped`; the flow goes on as if it had succeeded
  (its dependents start; it has no output; nothing of it is rolled back). Two moments fit,
  because a unit that fails for good starts the task's rollback at once (and one held before
  its claim may be taken over by hand):
  * a running task, a unit that keeps failing (its last attempt failed, its retry is pending or
    running): its run is removed (a claimed command loses its lease and is stopped), no more
    attempts; or a unit a gate holds before any claim (a delayed start not due yet, a drained
    module: common.engine.core.held_view), whose unclaimed run is removed the same way;
  * a rolled-back task, a unit whose normal phase failed: the task runs again as a new
    generation (like retry) with that step skipped (the whole step: a `for_each` step fixes
    its items again when it starts).
"""

from __future__ import annotations

from common.engine.core.advance import advance
from common.engine.document import OperatorRequest, Task
from common.engine.operator.actions import check_reason, new_generation
from common.engine.core.units import Unit, unit_state
from common.engine.states import Phase, ResultCode, RunState, StepState, TaskStatus, UNCLAIMED
from common.engine.registry import kind_of, release_unit, retry_gates, run_hold
from common.step_index import NoSuchUnit
from common.engine.core.units import (
    IdFactory,
    Refusal,
    Timing,
    drop_outbox,
    new_id,
    record,
    remove_run,
    set_unit_state,
    unit_name,
)


def pause(task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    check_reason(reason)
    if task.TaskStatus not in (TaskStatus.NOT_STARTED, TaskStatus.RUNNING):
        return Refusal(f"task is {task.TaskStatus.name}: only a task going forward can be paused")
    if task.Paused is not None:
        return Refusal(f"paused already by {task.Paused.Actor}")
    if task.CancelRequested is not None:
        return Refusal(f"cancel requested by {task.CancelRequested.Actor}: nothing more starts anyway")
    new = task.clone()
    new.Paused = request = OperatorRequest(Actor=actor, Reason=reason, Time=timing.now)
    record(new, timing.now, "paused", actor=actor, message=reason)
    # Only a unit never claimed goes back to waiting: one that ran (a retry's backoff, a check
    # again later) keeps its pending run. A unit in line for its step lock leaves the line (a
    # grant would otherwise publish it, paused or not), and one granted its key but not yet
    # claimed gives the key back to the tasks waiting for it; resuming queues it again.
    for run in [r for r in new.Runs if r.Phase is Phase.NORMAL and r.State in UNCLAIMED
                and r.Attempt == 1 and unit_state(new, r.unit).Attempts == 0]:  # fmt: skip
        remove_run(new, run)
        drop_outbox(new, run.DispatchId)
        release_unit(new, run.unit, timing.now)
        set_unit_state(new, run.unit, StepState.WAITING)
        record(new, timing.now, "withdrawn", run, actor=actor, message="paused before anyone claimed it")
    for cursor, step in enumerate(new.Steps):  # each kind's own part (a sub-flow's child is paused too)
        kind_of(step).pause(new, cursor, request)
    return new


def resume(task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    check_reason(reason)
    if task.Paused is None:
        return Refusal(f"task is {task.TaskStatus.name} and not paused: nothing to resume")
    if task.Held is not None:
        return Refusal("task is held by a failure: redrive it, roll it back or cancel it")
    new = task.clone()
    new.Paused = None
    record(new, timing.now, "resumed", actor=actor, message=reason)
    request = OperatorRequest(Actor=actor, Reason=reason, Time=timing.now)
    for cursor, step in enumerate(new.Steps):  # each kind's own part (a child or held items go on)
        kind_of(step).resume(new, cursor, request, ids)
    advance(new, timing, actor, ids)
    return new


def skip(task: Task, actor: str, reason: str, timing: Timing, ids: IdFactory = new_id, *,
         cursor: int, item: int | None = None) -> Task | Refusal:  # fmt: skip
    """Mark unit (cursor, item) operator_skipped. ValueError: no such unit in this task."""
    check_reason(reason)
    unit = _unit(task, cursor, item)
    if task.TaskStatus is TaskStatus.ROLLED_BACK:
        return _skip_in_new_generation(task, unit, actor, reason, timing, ids)
    if task.TaskStatus not in (TaskStatus.NOT_STARTED, TaskStatus.RUNNING) or task.CancelRequested is not None:
        return Refusal(f"task is {task.TaskStatus.name}: a step can be skipped while it keeps failing "
                       "(running task) or after it failed (rolled-back task)")  # fmt: skip
    state = unit_state(task, unit)
    run = next((r for r in task.Runs if r.unit == unit and r.Phase is Phase.NORMAL), None)
    # A gate (a delayed start, a drained module) keeps its run from any claim: nothing of it ran.
    held = run is not None and run.State is RunState.PENDING and run_hold(task, run, timing.now) is not None
    if not held and (state.State is not StepState.RUNNING or run is None or state.Code in (None, ResultCode.OK)):
        return Refusal(f"{unit_name(task, unit)} is {state.State.value} and has not failed an attempt: only a step that "
                       "keeps failing, or one held before its claim (a delayed start, a drained module), "
                       "can be skipped")  # fmt: skip
    if (refused := kind_of(task.Steps[cursor]).skip_refused(task, run)) is not None:
        return Refusal(refused)
    new = task.clone()
    remove_run(new, run)
    drop_outbox(new, run.DispatchId)
    _mark(new, unit, actor, reason, timing.now)
    step = new.Steps[cursor]
    if step.Items is not None and step.State is StepState.SUCCEEDED:  # the last item: the list is done
        new.Parameters[step.Name] = [i.Output for i in step.Items]
    advance(new, timing, actor, ids)
    return new


def _skip_in_new_generation(task: Task, unit: Unit, actor: str, reason: str, timing: Timing,
                            ids: IdFactory) -> Task | Refusal:  # fmt: skip
    cursor, item = unit
    if item is not None:
        raise ValueError("a rolled-back task runs again and fixes its items anew: skip the whole step (no item)")
    step = task.Steps[cursor]
    failed = [u for u in ([step, *(step.Items or [])]) if u.Code not in (None, ResultCode.OK)
              and u.State is not StepState.CANCELLED]  # fmt: skip
    if not failed:
        return Refusal(f"{unit_name(task, unit)} did not fail: only the step that failed can be skipped")
    new = task.clone()
    new_generation(new, timing.now)
    record(new, timing.now, "retried", actor=actor, message=f"skipping {unit_name(new, unit)}: {reason}")
    retry_gates(new, timing.now)  # as a retry: its lock asked for again, a deadline restarted
    _mark(new, unit, actor, reason, timing.now)
    advance(new, timing, actor, ids)
    return new


def _mark(task: Task, unit: Unit, actor: str, reason: str, now: float) -> None:
    set_unit_state(task, unit, StepState.OPERATOR_SKIPPED)
    state = unit_state(task, unit)
    state.Message, state.TimeEnd = f"skipped by {actor}: {reason}", now
    record(task, now, "operator_skipped", actor=actor, message=reason, unit=unit, phase=Phase.NORMAL)


def _unit(task: Task, cursor: int, item: int | None) -> Unit:
    if not 0 <= cursor < len(task.Steps):
        raise NoSuchUnit("step", f"step {cursor}: the task has steps 0 to {len(task.Steps) - 1}")
    kind = kind_of(task.Steps[cursor])
    count = kind.item_count(task.Steps[cursor])
    if item is not None and not 0 <= item < count:
        raise NoSuchUnit("item", f"item {item}: step {cursor} has {count} items")
    if item is None and count and task.TaskStatus is not TaskStatus.ROLLED_BACK:
        raise NoSuchUnit("item", f"step {cursor} runs {count} items: name the item to skip")
    if item is not None and (elsewhere := kind.item_skip_elsewhere(task.Steps[cursor], cursor, item)) is not None:
        raise ValueError(elsewhere)
    return cursor, item
