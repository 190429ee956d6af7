"""An operator's pause as a gate (docs/design/operations.md): nothing new starts meanwhile; what
runs finishes, and a task whose every step is done ends (common.engine.operator.flow)."""

from __future__ import annotations

from common.engine.document import Task
from common.engine.gates.gate import Gate, Hold


class PauseGate(Gate):
    name = "pause"

    def holds(self, task: Task) -> Hold:
        return Hold.STARTS if task.Paused is not None else Hold.NONE
