"""A task's wait for another task (docs/design/operations.md), as pure parts.

`WaitingFor = {Kind: "task", TaskId, Since, RecheckAt}`; the awaited task lists the waiter in
`AwaitedBy`, and its final change (common.engine.core.advance.finish) puts a `task_finished`
outbox entry per waiter, whose flush applies `awaited_finished` to it. The sweeper applies the
same change at `RecheckAt`, a safety net (a crash before the waiter was listed), and pushes
`RecheckAt` later while the awaited task runs.
"""

from __future__ import annotations

from common.engine.codes import OutboxKind, WaitKind
from common.engine.document import OutboxEntry, Task, WaitCondition
from common.engine.states import FINAL_STATUSES, TaskStatus

TASK_FINISHED = OutboxKind.TASK_FINISHED
WAIT_TASK = WaitKind.TASK
RECHECK_SECONDS = 300.0  # the sweeper's safety net: the outbox wakes a waiter at once


def waiting_for_task(awaited_id: str, now: float) -> WaitCondition:
    return WaitCondition(Kind=WAIT_TASK, TaskId=awaited_id, Since=now, RecheckAt=now + RECHECK_SECONDS)


def task_finished_entries(task: Task, now: float) -> list[OutboxEntry]:
    """What a task's final change owes the tasks waiting for it: one wake-up each."""
    return [
        OutboxEntry(DispatchId=f"{task.TaskId}:awaited:{waiter}:{task.Version}", Kind=TASK_FINISHED, Body={
            "TaskId": waiter, "AwaitedTaskId": task.TaskId, "Status": int(task.TaskStatus)}, DueAt=now)
        for waiter in task.AwaitedBy
    ]


def awaits(task: Task, awaited_id: str) -> bool:
    wait = task.WaitingFor
    return (wait is not None and wait.Kind == WAIT_TASK and wait.TaskId == awaited_id
            and task.TaskStatus is TaskStatus.NOT_STARTED)  # fmt: skip


def awaited_outcome(awaited_id: str, status: TaskStatus) -> str | None:
    """None: the awaited task succeeded (go on); else the message the waiter ends with."""
    if status is TaskStatus.SUCCESS:
        return None
    assert status in FINAL_STATUSES
    return f"task {awaited_id}, which this task waited for, ended {status.name}: not started"
