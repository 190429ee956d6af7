"""Webhook notifications of a task's status changes (docs/design/operations.md), as pure functions.

A change that moves a task's status gets one outbox entry of kind `webhook` per target of the
task (`Task.Notify`) that asks for the event, written by the SAME compare-and-set as the change
(common.store.tasks.mutate calls `add_notifications`; a new task's insert too): a crash after the
commit loses no notification, and the sweeper delivers it (common.relay.webhooks) at least once.
The payload is built here, from the masked task: a secret parameter never leaves.
"""

from __future__ import annotations

from typing import Any

from common.engine.codes import OutboxKind
from common.secrets.documents import mask_secrets, scrub_values
from common.secrets.documents import mask_parameters
from common.secrets.values import secret_values
from common.engine.document import OutboxEntry, Task, TaskBefore
from common.engine.registry import KINDS
from common.engine.states import FINAL_STATUSES, TaskStatus

WEBHOOK = OutboxKind.WEBHOOK
CREATED = "created"
CANCELLED = "cancelled"
# The lock feature's hook: a task that waits for a lock emits this event from the change that
# makes it wait (add it in `task_events` once the task records `WaitingFor`).
WAITING_FOR_LOCK = "waiting_for_lock"
# A task that succeeded with items failed within their for_each steps' budgets: sent beside
# `succeeded`, so a receiver that wants only these asks for it alone.
SUCCEEDED_WITH_FAILED_ITEMS = "succeeded_with_failed_items"
# A failure held the task (on_failure: hold): it waits for an operator's redrive or rollback.
HELD = "held"
# Every status a change can move a task to has its event: a new status must name one here.
STATUS_EVENTS: dict[TaskStatus, str] = {
    TaskStatus.NOT_STARTED: "restarted",  # an operator's retry or skip starts a rolled-back task again
    TaskStatus.RUNNING: "started",
    TaskStatus.SUCCESS: "succeeded",
    TaskStatus.ROLLING_BACK: "rolling_back",
    TaskStatus.ROLLED_BACK: "rolled_back",
    TaskStatus.ROLLBACK_FAILED: "rollback_failed",
}
# Each kind of step declares its own (`StepKind.events`: an approval asked for, given, refused):
# a change that records one in the history tells the webhooks.
KIND_EVENTS: tuple[str, ...] = tuple(event for kind in KINDS.values() for event in kind.events)
EVENTS: tuple[str, ...] = (CREATED, *STATUS_EVENTS.values(), CANCELLED, WAITING_FOR_LOCK, SUCCEEDED_WITH_FAILED_ITEMS,
                           HELD, *KIND_EVENTS)


def task_events(before: Task | TaskBefore | None, after: Task) -> list[str]:
    """What a change from `before` (None: the task is new) to `after` tells the webhooks."""
    if before is None:  # a task created waiting for people (its first step an approval) says so too
        return [CREATED, *dict.fromkeys(e.Event for e in after.History if e.Event in KIND_EVENTS)]
    events = []
    # The change's own events: numbered from the task's creation (older ones may be archived).
    new_events = after.History[max(0, before.history_count - after.HistoryArchived):]
    if any(e.Event == "cancel_requested" for e in new_events):
        events.append(CANCELLED)
    if any(e.Event == "waiting_for_lock" for e in new_events):
        events.append(WAITING_FOR_LOCK)
    if any(e.Event == "held" for e in new_events):
        events.append(HELD)
    events += [e.Event for e in new_events if e.Event in KIND_EVENTS and e.Event not in events]
    if after.TaskStatus != before.TaskStatus:
        events.append(STATUS_EVENTS[after.TaskStatus])
        if after.TaskStatus is TaskStatus.SUCCESS and after.FailedItems:
            events.append(SUCCEEDED_WITH_FAILED_ITEMS)
    return events


def add_notifications(before: Task | TaskBefore | None, after: Task) -> None:
    """Append to `after`'s outbox the webhook entries its change owes (edits `after` in place:
    call it on the task about to be written, with its final Version)."""
    if not after.Notify:
        return
    events = task_events(before, after)
    if not events:
        return
    old = None if before is None else before.TaskStatus
    now = after.History[-1].Time if after.History else after.TimeCreate
    for event in events:
        event_id = f"{after.TaskId}:{after.Version}:{event}"
        body = payload(after, event, event_id, old, now)
        if event in KIND_EVENTS:  # who did what on which step, as the history says (the last one)
            said = next(e for e in reversed(after.History) if e.Event == event)
            body.update(mask_secrets(scrub_values({
                "Step": None if said.Cursor is None else after.Steps[said.Cursor].Name,
                "Actor": said.Actor, "Message": said.Message}, secret_values(after))))
        for number, target in enumerate(after.Notify):
            if target.Events and event not in target.Events:
                continue
            after.Outbox.append(OutboxEntry(
                DispatchId=f"{event_id}:{number}", Kind=WEBHOOK, Queue=target.Url or "", Body=body, DueAt=now))


def payload(task: Task, event: str, event_id: str, old: TaskStatus | None, now: float) -> dict[str, Any]:
    """What the receiver gets: the event and the task as the API shows it, secrets masked."""
    body = {
        "EventId": event_id,
        "Event": event,
        "Time": now,
        "TaskId": task.TaskId,
        "TaskType": task.TaskType,
        "OldStatus": None if old is None else old.name,
        "NewStatus": task.TaskStatus.name,
        "TaskStatus": int(task.TaskStatus),
        "TaskMessage": task.TaskMessage,
        "Parameters": mask_parameters(task.Parameters, task.SecretParameters),
        "UserId": task.UserId,
        "Labels": dict(task.Labels),
        "Parent": None if task.Parent is None else task.Parent.TaskId,
    }
    # Every string scrubbed of the secret values (a message or label quoting one), as the API does.
    return mask_secrets(scrub_values(body, secret_values(task)))  # type: ignore[no-any-return]


def settled(task: Task) -> bool:
    """Final, and owing nothing to the engine: a webhook still waiting for its receiver does not
    keep a task's watchers (SSE, `baton run`) waiting."""
    return task.TaskStatus in FINAL_STATUSES and all(e.Kind == WEBHOOK for e in task.Outbox)


def postpone(task: Task, dispatch_ids: set[str], until: float) -> Task | None:
    """The task with those webhook entries due again at `until` (a receiver that is down); None
    when none is left (delivered meanwhile). Moving DueAt also moves the task's `OutboxDue`, so a
    long outage does not keep its tasks at the head of the relay's batch."""
    if not any(e.DispatchId in dispatch_ids for e in task.Outbox):
        return None
    new = task.clone()
    for entry in new.Outbox:
        if entry.DispatchId in dispatch_ids:
            entry.DueAt = max(entry.DueAt, until)
    return new
