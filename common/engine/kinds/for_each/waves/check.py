"""A wave's health check (docs/design/waves.md, "A wave's check"): after its bake, the wave's
`check: {module, command}` runs as a child task of its own (one step, that command), whose
parameters are the wave's items with their states and outputs. Its child's end decides: the
next gate (a pause) or the next wave when it succeeded, the step failed (the task rolls back)
otherwise. No item of the next wave is started before: the wave's `Index` stays where it was.

The child is created and reports back as a sub-flow's child does (common.relay.child_relay:
`start_child` and `child_finished` entries, each applied once); its id is derived from the
step and the wave, so a repeat creates one task."""

from __future__ import annotations

from typing import Any

from common.engine.codes import OutboxKind
from common.engine.core.units import IdFactory, Refusal, Timing, record
from common.engine.document import OutboxEntry, ParentLink, Step, Task
from common.engine.kinds.for_each.item_changes import going_forward
from common.engine.kinds.for_each.waves.fields import CHECKING
from common.engine.kinds.for_each.waves.opening import BATON, open_next, pause, where
from common.engine.kinds.for_each.waves.sizes import bounds, spec_of, wave_count
from common.engine.states import TaskStatus
from common.reserved import RESERVED_PREFIX

START_CHILD = OutboxKind.START_CHILD
CHECK_STEP = "check"
# The most items a wave's check is given in its `items` (docs/design/waves.md, "A wave's check"):
# the failed ones first; the whole wave is paged through the items API (`items_page`).
CHECK_ITEMS = 500


def check_task_id(task: Task, cursor: int, index: int) -> str:
    name = f"{task.TaskId}.{cursor}.wave{index + 1}"
    return name if task.Generation == 0 else f"{name}.g{task.Generation}"


def wants_check(step: Step) -> bool:
    """Whether the open wave's gate runs a check (the relay then reads the wave's items for it)."""
    return step.Wave is not None and step.Waves is not None and spec_of(step.Waves, step.Wave.Index).Check is not None


def start_check(task: Task, cursor: int, wave_items: list[dict[str, Any]], now: float) -> None:
    """In place: the wave waits for its check; the child task that runs it is owed (an entry)."""
    step = task.Steps[cursor]
    wave = step.Wave
    assert wave is not None and step.Waves is not None
    check = spec_of(step.Waves, wave.Index).Check
    assert check is not None
    child_id = check_task_id(task, cursor, wave.Index)
    wave.Phase, wave.Until, wave.Check = CHECKING, None, child_id
    start, end = bounds(wave.Ends, wave.Index)
    done, failed = wave.Tallies[wave.Index] if len(wave.Tallies) > wave.Index else (None, None)
    parameters: dict[str, Any] = {
        "wave": wave.Index + 1, "waves": wave_count(step), "items": wave_items, "item_count": end - start,
        "done": done, "failed": failed, "items_truncated": len(wave_items) < end - start,
        "items_page": {"task": task.TaskId, "step": step.Name, "after": start - 1 if start else None, "until": end},
    }
    parameters.update({k: v for k, v in task.Parameters.items() if k.startswith(RESERVED_PREFIX)})  # drills' faults
    only = Step(Name=CHECK_STEP, NormalModule=check.Module, NormalCommand=check.Command, After=[])
    dispatch = f"{child_id}:start"
    body = {
        "TaskId": child_id, "ParentTaskId": task.TaskId, "DispatchId": dispatch,
        "TaskType": f"{task.TaskType}.{step.Name}.check", "Steps": [only.model_dump(mode="json")],
        "Parameters": parameters, "SecretParameters": [],
        "Parent": ParentLink(TaskId=task.TaskId, Cursor=cursor, Item=None).model_dump(mode="json"),
        "Priority": task.Priority, "UserId": task.UserId, "Labels": task.Labels, "Notify": [],
    }
    task.Outbox.append(OutboxEntry(DispatchId=dispatch, Kind=START_CHILD, Body=body, DueAt=now))
    record(task, now, "wave_check_started", actor=BATON, unit=(cursor, None),
           message=f"{where(step)}: {check.Module}.{check.Command} as task {child_id}")


def is_wave_check(task: Task, body: dict[str, Any]) -> bool:
    """Whether a child's `child_finished` is a wave's check (not a sub-flow's unit)."""
    cursor = body.get("Cursor")
    if not isinstance(cursor, int) or not 0 <= cursor < len(task.Steps) or body.get("Item") is not None:
        return False
    wave = task.Steps[cursor].Wave
    return wave is not None and wave.Check == body.get("ChildTaskId")


def check_finished(task: Task, body: dict[str, Any], timing: Timing, ids: IdFactory) -> Task | Refusal:
    """The check's child ended: the wave's gate goes on, or the step fails."""
    from common.engine.kinds.for_each.waves.failing import fail  # routes on: loaded by this change only

    cursor = body["Cursor"]
    step = task.Steps[cursor]
    wave = step.Wave
    if wave is None or wave.Phase != CHECKING or wave.Check != body["ChildTaskId"]:
        return Refusal("the wave's check concluded already")
    if not going_forward(task):
        return Refusal("the task goes backward: nothing waits for the check")
    new = task.clone()
    step = new.Steps[cursor]
    assert step.Wave is not None and step.Waves is not None
    status, child = TaskStatus(body["Status"]), body["ChildTaskId"]
    step.Wave.Check = None
    if status is not TaskStatus.SUCCESS:
        why = body.get("Message") or status.name
        fail(new, cursor, f"{where(step)}: its check (task {child}) failed: {why}", timing, ids)
        return new
    record(new, timing.now, "wave_checked", actor=f"child {child}", unit=(cursor, None), message=where(step))
    if spec_of(step.Waves, step.Wave.Index).Pause:
        pause(new, cursor, timing.now)
    else:
        open_next(new, cursor, timing, BATON, "check passed")
    return new
