"""The pure changes sub-flows make (docs/design/sub-flows.md), in the style of
common.engine.core.entries.

- `start_child`: the child task document, from a parent's `start_child` outbox entry.
- `child_finished`: applied to the parent when its child ended; concludes the waiting run.
- `undo`: applied to a child that succeeded, when its parent rolls the step back.
The outbox flusher (common.relay.child_relay) reads, calls one of these, and writes.
"""

from __future__ import annotations

from typing import Any

from common.engine.core.advance import advance, conclude, enter_rollback
from common.engine.document import NotifyTarget, ParentLink, Step, Task
from common.engine.core.units import unit_state
from common.engine.states import Phase, ResultCode, RunState, StepState, TaskStatus
from common.engine.kinds.sub_flow.entries import child_outcome, child_task_id
from common.engine.core.units import (
    AttemptResult,
    IdFactory,
    Refusal,
    Timing,
    new_id,
    record,
    remove_run,
    set_unit_state,
    store_result,
    unit_name,
)
from common.engine.core.entries import create_task
from common.engine.registry import child_asks
from common.tracing.carrier import TraceContext


def start_child(body: dict[str, Any], timing: Timing, ids: IdFactory = new_id, trace: TraceContext | None = None) -> Task:
    """The child task a parent's `start_child` entry asks for, its roots dispatched; `trace`:
    the span its trace goes on from (its start's)."""
    child = create_task(
        task_type=body["TaskType"],
        steps=[Step.model_validate(s) for s in body["Steps"]],
        parameters=body["Parameters"],
        timing=timing,
        priority=body.get("Priority", 0),
        user_id=body.get("UserId"),
        labels=body.get("Labels") or {},
        task_id=body["TaskId"],
        secret_parameters=body.get("SecretParameters") or [],
        parent=ParentLink.model_validate(body["Parent"]),
        ids=ids,
        **child_asks(body),  # what each gate's template of the child type asks (a lock, a rate)
        flow_version=body.get("FlowVersion"),
        flow_hash=body.get("FlowHash"),
        trace=trace,
    )
    child.Notify = [NotifyTarget.model_validate(t) for t in body.get("Notify") or []]
    return child


def child_finished(parent: Task, body: dict[str, Any], timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    """The child `body["ChildTaskId"]` ended: conclude the parent's run waiting for it (or, a
    wave's health check run as a child, go on with the parent's waves: its step's kind says)."""
    from common.engine.registry import kind_of  # the registry imports this kind's class: asked at run time

    cursor = body.get("Cursor")
    if isinstance(cursor, int) and 0 <= cursor < len(parent.Steps):
        own = kind_of(parent.Steps[cursor]).child_ended(parent, body, timing, ids)
        if own is not None:  # a child the step runs of its own, not a unit's
            return own
    unit = (body["Cursor"], body.get("Item"))
    step = parent.Steps[unit[0]] if 0 <= unit[0] < len(parent.Steps) else None
    if step is None or child_task_id(parent, *unit) != body["ChildTaskId"]:
        return Refusal("the parent's step runs another child (a newer generation)")
    waiting = next((r for r in parent.Runs if r.unit == unit and r.State is RunState.WAITING_CHILD), None)
    if waiting is None:
        return Refusal("no run of the parent waits for this child (already concluded)")
    status, message = child_outcome(body)
    child_id = body["ChildTaskId"]
    new = parent.clone()
    run = next(r for r in new.Runs if r.DispatchId == waiting.DispatchId)
    actor = f"child {child_id}"
    if run.Phase is Phase.NORMAL and status is TaskStatus.SUCCESS:
        # A plain step's output goes under its name; an item's is gathered with its siblings'
        # into that list, in item order, as a command's are (common.engine.core.advance._absorb_output).
        output = body.get("Output") or {}
        output = {step.Name: output} if run.Item is None else output
        conclude(new, run, AttemptResult(ResultCode.OK, output=output), timing, actor, ids)
    elif run.Phase is Phase.NORMAL and status is TaskStatus.ROLLED_BACK:
        # Failed, and clean already: its rollback is recorded as done without running anything.
        failed = AttemptResult(ResultCode.FAILED, f"child task {child_id} {message}", retryable=False)
        conclude(new, run, failed, timing, actor, ids)
    elif status is TaskStatus.ROLLBACK_FAILED:
        _rollback_failed(new, run, child_id, message, timing, actor, ids)
    elif run.Phase is Phase.ROLLBACK and status is TaskStatus.ROLLED_BACK:
        conclude(new, run, AttemptResult(ResultCode.OK), timing, actor, ids)
    else:
        return Refusal(f"child ended {status.name}: nothing to conclude for a {run.Phase.label} run")
    return new


def undo(child: Task, actor: str, timing: Timing, ids: IdFactory = new_id) -> Task | Refusal:
    """A child that succeeded rolls every applied step back: its parent is rolling back."""
    if child.TaskStatus is not TaskStatus.SUCCESS:
        return Refusal(f"child is {child.TaskStatus.name}: only a succeeded child is undone")
    new = child.clone()
    new.TaskMessage = f"undone: {actor} rolls back"
    new.TimeEnd = None
    record(new, timing.now, "undo_requested", actor=actor, message=new.TaskMessage)
    enter_rollback(new, timing, actor)
    advance(new, timing, actor, ids)
    return new


def _rollback_failed(task: Task, run: Any, child_id: str, message: str, timing: Timing, actor: str,
                     ids: IdFactory) -> None:
    """The child's rollback failed: the parent's unit failed and its rollback failed with it;
    the parent ends rollback failed (its alarm naming the child) once its other runs end."""
    unit = run.unit
    remove_run(task, run)
    state = unit_state(task, unit)
    text = f"child task {child_id} {message}"
    result = AttemptResult(ResultCode.FAILED, text, retryable=False)
    if run.Phase is Phase.NORMAL:
        # The history tells both halves, as for a child that rolled back (SubFlowKind.roll_back):
        # the normal phase failed, then the rollback (the child's own) failed.
        store_result(state, Phase.NORMAL, result, timing.now)
        set_unit_state(task, unit, StepState.FAILED)
        record(task, timing.now, "step_failed", run, actor=actor, message=text)
        set_unit_state(task, unit, StepState.ROLLING_BACK)
    store_result(state, Phase.ROLLBACK, result, timing.now)
    set_unit_state(task, unit, StepState.ROLLBACK_FAILED)
    rollback_run = run if run.Phase is Phase.ROLLBACK else None  # an undo that failed: its own run
    record(task, timing.now, "rollback_failed", rollback_run, actor=actor, unit=unit, phase=Phase.ROLLBACK,
           message=text)
    task.TaskMessage = f"rollback of {unit_name(task, unit)} failed: {text}"
    enter_rollback(task, timing, actor)
    advance(task, timing, actor, ids)
