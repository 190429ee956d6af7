"""A step's own lock as a unit's gate: a unit's normal run waits for its key before it is
published (common.engine.gates.step_locks)."""

from __future__ import annotations

from common.engine.document import Run, Task
from common.engine.gates.gate import OpenGate
from common.engine.gates.step_locks import must_wait, wait_for_lock


class StepLockGate(OpenGate):
    name = "step_lock"

    def takes(self, task: Task, run: Run, due_at: float) -> bool:
        if not must_wait(task, run.unit):
            return False
        wait_for_lock(task, run, due_at)  # the outbox asks for the key instead of publishing
        return True
