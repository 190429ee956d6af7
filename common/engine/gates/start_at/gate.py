"""A delayed start as a gate: a task not started yet dispatches nothing due before `StartAt`."""

from __future__ import annotations

from typing import Any

from common.engine.codes import WaitKind
from common.engine.document import Run, Task, WaitCondition
from common.engine.gates.gate import Gate
from common.engine.states import Phase, RunState, TaskStatus


def start_due(task: Task, now: float) -> float:
    """When a task not started yet may dispatch its first units: now, or its delayed start."""
    if task.StartAt is not None and task.TaskStatus is TaskStatus.NOT_STARTED:
        return max(now, task.StartAt)
    return now


def delayed_start(task: Task, now: float) -> WaitCondition | None:
    """The wait of a task not started yet whose start is still to come (shown, never stored)."""
    if task.StartAt is None or task.TaskStatus is not TaskStatus.NOT_STARTED or task.StartAt <= now:
        return None
    return WaitCondition(Kind=WaitKind.START_AT, Since=task.TimeCreate, Until=task.StartAt)


class StartAtGate(Gate):
    name = "start_at"
    asks = "start_at"
    wait_kind = WaitKind.START_AT

    def holds_run(self, task: Task, run: Run, now: float) -> WaitCondition | None:
        # Its first runs are written at the creation, their publication due at StartAt.
        if run.State is not RunState.PENDING or run.Phase is not Phase.NORMAL:
            return None
        return delayed_start(task, now)

    def describe_wait(self, task: Task, wait: WaitCondition) -> str:
        return ""  # its time is the wait's `Until`

    def due(self, task: Task, now: float) -> float | None:
        return start_due(task, now)

    def enter(self, task: Task, ask: Any, now: float, starts: float) -> None:
        # Nothing starts before it, however the task comes to dispatch (its creation, a resume
        # after a pause, the end of a wait).
        task.StartAt = ask
