"""The task's lock as a gate: nothing starts while it waits in the key's line
(common.engine.gates.task_lock asks for it, common.engine.gates.lock_transitions opens it)."""

from __future__ import annotations

from common.engine.codes import WaitKind
from common.engine.document import Task
from common.engine.gates.gate import Hold, OpenGate


class LockGate(OpenGate):
    name = "lock"

    def holds(self, task: Task) -> Hold:
        waiting = task.WaitingFor is not None and task.WaitingFor.Kind is WaitKind.LOCK
        return Hold.ALL if waiting else Hold.NONE
