"""The `forward` rule of the chaos checks (tests/chaos/invariants.py): no state went backwards.

Replaying History, every step's (and item's) state changes only along
common.engine.states.STEP_TRANSITIONS and the task's along TASK_TRANSITIONS; the replay ends in
the document's state; nothing but what the final change records follows the task_* event (a
sub-flow child's `undo_requested` excepted); every claim follows its dispatch.

An item failed within its step's budget rolls back while the task goes forward (its rollback
leaves the task RUNNING); a task held by a failed item stays RUNNING, and its redrive
(`redriven`) dispatches each item failed then once more: failed -> running, once per redrive."""

from __future__ import annotations

from common.engine.core.units import units
from common.engine.document import Task
from common.engine.states import STEP_TRANSITIONS, TASK_TRANSITIONS, Phase, StepState, TaskStatus
from tests.chaos.history_units import (
    AFTER_FINAL,
    FINAL_EVENTS,
    ITEM_BASE,
    OUTCOMES,
    AttemptKey,
    attempt_key,
    tolerated_units,
    unit_name,
    unit_of,
)


def check_forward(task: Task, violation) -> None:
    history = task.History
    if not history or history[0].Event != "created":
        violation("forward", "History does not start with 'created'")
    states: dict[int, StepState] = {}  # by unit (see unit_of); a unit not seen yet is waiting
    status = TaskStatus.NOT_STARTED
    dispatched: set[AttemptKey] = set()
    final_seen = False
    tolerated = tolerated_units(task)
    redriven: set[int] = set()  # the units failed when the last redrive came: each dispatched again once

    def move_task(new: TaskStatus, why: str) -> None:
        nonlocal status
        if new != status and (status, new) not in TASK_TRANSITIONS:
            violation("forward", f"task status {status.name} -> {new.name} ({why})")
        status = new

    for index, event in enumerate(history):
        name = event.Event
        if name == "undo_requested" and final_seen and status is TaskStatus.SUCCESS:
            final_seen = False  # a sub-flow child its parent undoes: it rolls back all it did
            move_task(TaskStatus.ROLLING_BACK, name)
        if final_seen and name not in AFTER_FINAL:
            violation("forward", f"event {index} '{name}' after the task's final event")
        cursor = event.Cursor
        if cursor is not None and not 0 <= cursor < len(task.Steps):
            violation("forward", f"event {index} '{name}' names step {cursor}, outside the flow")
            continue
        target: StepState | None = None
        if name == "redriven":
            redriven = {unit for unit, state in states.items() if state is StepState.FAILED and unit not in tolerated}
        if name == "dispatched":
            dispatched.add(attempt_key(event))
            target = StepState.RUNNING if event.Phase is Phase.NORMAL else StepState.ROLLING_BACK
            if event.Phase is Phase.NORMAL and unit_of(event) in redriven:
                redriven.discard(unit_of(event))
                states[unit_of(event)] = StepState.WAITING  # the redrive runs it again
            if event.Phase is Phase.ROLLBACK and status is TaskStatus.RUNNING and unit_of(event) not in tolerated:
                move_task(TaskStatus.ROLLING_BACK, "first rollback dispatched")
        elif name == "cancelled" and states.get(unit_of(event)) is StepState.RUNNING:
            # A dispatch nobody claimed, fenced when another unit failed: a first attempt never
            # ran; a later one did (it may have left debris) and counts as failed.
            target = StepState.CANCELLED if event.Attempt == 1 else StepState.FAILED
        elif name == "withdrawn":  # a pause took back a dispatch nobody claimed (operator_flow)
            target = StepState.WAITING
        elif name == "operator_skipped":  # an operator passed it as done (operator_flow.skip)
            target = StepState.OPERATOR_SKIPPED
        elif name == "step_failed" and event.Phase is None:
            target = StepState.FAILED  # a for_each step whose list was not a list
        elif name == "claimed":
            if attempt_key(event) not in dispatched:
                violation("forward", f"event {index}: claim of step {cursor} attempt {event.Attempt} never dispatched")
            if event.Phase is Phase.NORMAL and status is TaskStatus.NOT_STARTED:
                move_task(TaskStatus.RUNNING, "first claim")
        elif name in OUTCOMES:
            phase, target = OUTCOMES[name]
            if event.Phase is not phase:
                violation("forward", f"event {index} '{name}' recorded for the {event.Phase} phase")
            unit = unit_of(event)
            if phase is Phase.ROLLBACK and cursor is not None and task.Steps[cursor].Flow \
                    and states.get(unit) in (StepState.SUCCEEDED, StepState.FAILED):
                states[unit] = StepState.ROLLING_BACK  # its child rolled itself back: nothing dispatched
                if status is TaskStatus.RUNNING:
                    move_task(TaskStatus.ROLLING_BACK, f"{name} of a sub-flow unit")
        elif name in FINAL_EVENTS:
            move_task(FINAL_EVENTS[name], name)
            final_seen = True
        if target is not None and cursor is not None:
            unit = unit_of(event)
            old = states.get(unit, StepState.WAITING)
            if target != old and (old, target) not in STEP_TRANSITIONS:
                violation("forward", f"{unit_name(unit)}: {old.value} -> {target.value} at event {index} '{name}'")
            states[unit] = target

    if status != task.TaskStatus:
        violation("forward", f"History ends {status.name}, the document says {task.TaskStatus.name}")
    for cursor, step in enumerate(task.Steps):
        for item, unit_doc in units(step):
            unit = cursor if item is None else (cursor + 1) * ITEM_BASE + item
            stored, replayed = unit_doc.State, states.get(unit, StepState.WAITING)
            if item is None and step.Items is not None:  # a for_each step with no items
                continue
            if stored != replayed and (replayed, stored) not in STEP_TRANSITIONS:
                violation("forward", f"{unit_name(unit)}: History ends {replayed.value}, the document says {stored.value}")
            elif stored != replayed and stored is not StepState.SKIPPED:
                # Only passing over a step without rollback changes a state without an event.
                violation("forward", f"{unit_name(unit)}: {stored.value} in the document but never recorded")
            if stored is StepState.SKIPPED and step.has_rollback:
                violation("forward", f"{unit_name(unit)} skipped although it declares a rollback")


# --- alarms and queues ---------------------------------------------------------------------------
