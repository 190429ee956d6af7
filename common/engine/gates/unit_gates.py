"""The gates of one unit (common.engine.gates.gate.Gate), which a new run passes first."""

from __future__ import annotations

from common.engine.document import Run, Task
from common.engine.gates.gate import Gate
from common.engine.gates.step_lock import StepLockGate

UNIT_GATES: tuple[Gate, ...] = (StepLockGate(),)


def taken(task: Task, run: Run, due_at: float) -> bool:
    """In place: the first unit gate that holds the new run takes it (it is not published)."""
    return any(gate.takes(task, run, due_at) for gate in UNIT_GATES)
