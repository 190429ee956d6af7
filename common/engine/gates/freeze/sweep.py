"""The sweeper's part of a freeze window (common.engine.core.sweeping): at the window's end, the
task is let go."""

from __future__ import annotations

from common.engine.core.sweeping import Read, Sweep
from common.engine.document import Task
from common.engine.gates.freeze.changes import freeze_ended
from common.engine.gates.freeze.window import thawed


def sweep(task: Task, now: float, read: Read) -> Sweep | None:
    if not thawed(task, now):
        return None
    return Sweep(lambda t, timing: freeze_ended(t, timing), log="freeze window ended; the task may start")


SWEEP = sweep
