"""A delayed start as a gate: a task not started yet dispatches nothing due before `StartAt`."""

from __future__ import annotations

from common.engine.document import Task
from common.engine.gates.gate import OpenGate
from common.engine.gates.task_waits import start_due


class StartAtGate(OpenGate):
    name = "start_at"

    def due(self, task: Task, now: float) -> float | None:
        return start_due(task, now)
