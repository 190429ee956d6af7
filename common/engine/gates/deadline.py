"""A deadline as a gate: past it, a task that has not ended forward rolls back
(common.engine.gates.task_waits.overdue says when)."""

from __future__ import annotations

from common.engine.document import Task
from common.engine.gates.gate import OpenGate
from common.engine.gates.task_waits import deadline_message, overdue


class DeadlineGate(OpenGate):
    name = "deadline"

    def expired(self, task: Task, now: float) -> str | None:
        return deadline_message(task) if overdue(task, now) else None
