"""Sub-flows (docs/design/sub-flows.md): a step that runs a child task, as pure outbox entries and
changes.

The parent and the child are two documents; nothing here needs a transaction across them. The
parent's change that starts (or undoes) the step writes an outbox entry; whoever flushes the
outbox (common.relay.outbox) applies it to the child. The child's final change writes a
`child_finished` entry whose flush applies `child_finished` to the parent, fenced by the waiting
run and the child's id. Every flush is idempotent, so the sweeper's relay may repeat it.
"""

from __future__ import annotations

from typing import Any

from common.engine.codes import OutboxKind
from common.engine.document import OutboxEntry, ParentLink, Run, Step, Task
from common.reserved import RESERVED_PREFIX
from common.engine.states import Phase, TaskStatus
from common.secrets.names import SECRET_KEY
from common.engine.core.unit_parameters import command_parameters, unit_secrets
from common.engine.kinds.sub_flow.fields import CHILD_PARTS

START_CHILD = OutboxKind.START_CHILD
CHILD_FINISHED = OutboxKind.CHILD_FINISHED
UNDO_CHILD = OutboxKind.UNDO_CHILD
CANCEL_CHILD = OutboxKind.CANCEL_CHILD
PAUSE_CHILD = OutboxKind.PAUSE_CHILD
RESUME_CHILD = OutboxKind.RESUME_CHILD
PUBLISH = OutboxKind.PUBLISH


def child_task_id(task: Task, cursor: int, item: int | None) -> str:
    """Derived from the parent's, so creating it twice is one task."""
    name = f"{task.TaskId}.{cursor}" + ("" if item is None else f".{item}")
    return name if task.Generation == 0 else f"{name}.g{task.Generation}"


def child_entry(task: Task, run: Run, due_at: float) -> OutboxEntry:
    """What a sub-flow run owes the child: its creation (normal phase) or its undo (rollback).

    A `for_each` step runs one child per item (`<task>.<step>.<item>`), whose inputs may name
    `item` and `item_index` besides the parent's parameters, as a command's parameters do."""
    step = task.Steps[run.Cursor]
    template = step.FlowTemplate
    assert template is not None, "a sub-flow step carries its child's template"
    child_id = child_task_id(task, run.Cursor, run.Item)
    if run.Phase is Phase.NORMAL and run.Item is None:
        step.ChildTaskId = child_id  # shown with the step (the console links it)
    elif run.Phase is Phase.NORMAL:
        assert step.Items is not None
        step.Items[run.Item].ChildTaskId = child_id  # shown with the item
    body: dict[str, Any] = {"TaskId": child_id, "ParentTaskId": task.TaskId, "DispatchId": run.DispatchId}
    if run.Phase is Phase.NORMAL:
        sources = command_parameters(task, run.Cursor, run.Item)  # an item's: with item, item_index
        parameters = dict(template.Defaults)
        parameters.update({child: sources[parent] for child, parent in step.FlowInputs.items() if parent in sources})
        # Reserved keys (fault injection in tests and drills) reach the child as well.
        parameters.update({k: v for k, v in task.Parameters.items() if k.startswith(RESERVED_PREFIX)})
        body.update(
            TaskType=template.TaskType,
            Steps=[s.model_dump(mode="json") for s in template.Steps],
            Parameters=parameters,
            SecretParameters=inherited_secrets(task, step, template.SecretParameters),
            Parent=ParentLink(TaskId=task.TaskId, Cursor=run.Cursor, Item=run.Item).model_dump(mode="json"),
            Priority=task.Priority,
            UserId=task.UserId,
            Labels=task.Labels,
            Notify=[t.model_dump(mode="json") for t in task.Notify],  # the child notifies the same webhooks
        )
        if template.Lock is not None:  # the child type's own lock (common/engine/gates/lock/table.py)
            body["Lock"] = template.Lock.model_dump(mode="json")
        for part in CHILD_PARTS:  # each gate's template of the child type (a rate), when it has one
            body.update({name: getattr(template, name).model_dump(mode="json")
                         for name in part.model_fields if getattr(template, name) is not None})
        body.update(FlowVersion=template.FlowVersion, FlowHash=template.FlowHash)
        if task.Trace is not None:  # the child's trace is its parent's (common/tracing/task_spans.py)
            body["Trace"] = task.Trace.model_dump(mode="json")
    kind = START_CHILD if run.Phase is Phase.NORMAL else UNDO_CHILD
    return OutboxEntry(DispatchId=run.DispatchId, Kind=kind, Body=body, DueAt=due_at)


def inherited_secrets(task: Task, step: Step, declared: list[str]) -> list[str]:
    """The child's secret parameters: its type's, and each one mapped from a secret of the parent
    (declared, secret-looking, or the item of a secret list). A value that was secret stays
    secret: the child's views, events and webhooks mask it even where its type calls it plain."""
    hidden = unit_secrets(task.SecretParameters, step.ForEach)
    inherited = {child for child, parent in step.FlowInputs.items() if parent in hidden or SECRET_KEY.search(parent)}
    return sorted(set(declared) | inherited)


def cancel_child_entry(task: Task, run: Run, actor: str, reason: str, now: float) -> OutboxEntry:
    body = _operator_body(task, run, actor, reason)
    return OutboxEntry(DispatchId=f"{run.DispatchId}:cancel", Kind=CANCEL_CHILD, Body=body, DueAt=now)


def hold_child_entry(task: Task, run: Run, kind: str, actor: str, reason: str, now: float) -> OutboxEntry:
    """A parent's pause (PAUSE_CHILD) or resume (RESUME_CHILD) passed on to the child its run
    waits for. The version makes each its own entry: pause, resume, pause again are three."""
    assert kind in (PAUSE_CHILD, RESUME_CHILD)
    body = _operator_body(task, run, actor, reason)
    return OutboxEntry(DispatchId=f"{run.DispatchId}:{kind}:v{task.Version}", Kind=kind, Body=body, DueAt=now)


def _operator_body(task: Task, run: Run, actor: str, reason: str) -> dict[str, Any]:
    """An operator's action on the parent, passed on to the child its run waits for."""
    return {"TaskId": child_task_id(task, run.Cursor, run.Item), "ParentTaskId": task.TaskId, "Actor": actor, "Reason": reason}


def child_finished_entry(child: Task, now: float) -> OutboxEntry:
    """Written by the child's final change: tells the parent how the child ended."""
    parent = child.Parent
    assert parent is not None
    secrets = set(child.SecretParameters)
    given = set(child.SubmittedParameters)
    output = {k: v for k, v in child.Parameters.items() if k not in given and k not in secrets}
    body = {
        "TaskId": parent.TaskId, "Cursor": parent.Cursor, "Item": parent.Item,
        "ChildTaskId": child.TaskId, "Status": int(child.TaskStatus), "Message": child.TaskMessage,
        "Output": output,
    }
    # One per final change: a child that ends again (undone, retried) tells the parent again.
    key = f"{child.TaskId}:finished:{child.Version}:{child.history_count}"
    return OutboxEntry(DispatchId=key, Kind=CHILD_FINISHED, Body=body, DueAt=now)


def child_outcome(body: dict[str, Any]) -> tuple[TaskStatus, str]:
    return TaskStatus(body["Status"]), str(body.get("Message", ""))
