"""Waiting for another task as a gate: nothing starts before it ended
(common.engine.gates.task_waits; the wake-up is common.engine.gates.wait_transitions)."""

from __future__ import annotations

from common.engine.codes import WaitKind
from common.engine.document import Task
from common.engine.gates.gate import Hold, OpenGate


class AfterTaskGate(OpenGate):
    name = "after_task"

    def holds(self, task: Task) -> Hold:
        waiting = task.WaitingFor is not None and task.WaitingFor.Kind is WaitKind.TASK
        return Hold.ALL if waiting else Hold.NONE
