"""The gates of a whole task (common.engine.gates.gate.Gate), which routing and `advance` ask."""

from __future__ import annotations

from common.engine.document import Task
from common.engine.gates.after_task import AfterTaskGate
from common.engine.gates.deadline import DeadlineGate
from common.engine.gates.freeze import FreezeGate
from common.engine.gates.gate import Gate, Hold
from common.engine.gates.lock import LockGate
from common.engine.gates.pause import PauseGate
from common.engine.gates.start_at import StartAtGate

GATES: tuple[Gate, ...] = (LockGate(), AfterTaskGate(), FreezeGate(), PauseGate(), StartAtGate(), DeadlineGate())


def held(task: Task) -> Hold:
    """The most any gate holds of the task's forward work."""
    return max((gate.holds(task) for gate in GATES), default=Hold.NONE)


def earliest_due(task: Task, now: float, base: float) -> float:
    """When a dispatch made now may be due: `base`, or later if a gate says so."""
    return max([base] + [due for gate in GATES if (due := gate.due(task, now)) is not None])


def expiry(task: Task, now: float) -> str | None:
    """Why the task must roll back now, if a gate says it must."""
    return next((why for gate in GATES if (why := gate.expired(task, now)) is not None), None)
