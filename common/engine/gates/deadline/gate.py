"""A task's deadline as a gate (docs/design/operations.md): past it, a task that has not ended
forward rolls back.

`Task.Deadline` (epoch). Past it (strictly: a change at the deadline itself still counts as in
time) no new unit starts, running units finish, the applied ones are undone.
`common.engine.core.advance.advance` applies it on every change; `SweepAt` includes the deadline
while the task runs forward, so the sweeper applies it when no change comes (nothing running: a
paused task, one waiting for another).
"""

from __future__ import annotations

from typing import Any

from common.engine.document import Task
from common.engine.gates.gate import Gate
from common.engine.states import TaskStatus


def overdue(task: Task, now: float) -> bool:
    return (task.Deadline is not None and now > task.Deadline
            and task.TaskStatus in (TaskStatus.NOT_STARTED, TaskStatus.RUNNING))  # fmt: skip


def deadline_message(task: Task) -> str:
    return f"deadline passed: the task had {task.DeadlineSeconds:g} s to finish"


class DeadlineGate(Gate):
    name = "deadline"
    asks = "deadline_seconds"

    def expired(self, task: Task, now: float) -> str | None:
        return deadline_message(task) if overdue(task, now) else None

    def enter(self, task: Task, ask: Any, now: float, starts: float) -> None:
        if ask is not None:  # its clock runs from when it may start (docs/design/operations.md)
            task.DeadlineSeconds, task.Deadline = ask, starts + ask

    def on_retry(self, task: Task, now: float) -> None:
        if task.DeadlineSeconds is not None:  # a new generation gets its time again
            task.Deadline = now + task.DeadlineSeconds
