"""Waiting for another task as a gate: nothing starts before it ended
(common.engine.gates.after_task.waits; the wake-up is common.engine.gates.after_task.changes)."""

from __future__ import annotations

from typing import Any

from common.engine.codes import WaitKind
from common.engine.document import Task
from common.engine.gates.after_task.waits import task_finished_entries, waiting_for_task
from common.engine.gates.gate import TaskWaitGate
from common.engine.states import set_waiting


class AfterTaskGate(TaskWaitGate):
    name = "after_task"
    asks = "after_task"
    wait_kind = WaitKind.TASK

    def enter(self, task: Task, ask: Any, now: float, starts: float) -> None:
        task.AfterTask = ask  # the id it named: a repeat of the idempotency key must name the same

    def open(self, task: Task, now: float) -> bool:
        if task.AfterTask is None:
            return False
        wait = waiting_for_task(task.AfterTask, now)
        if now > task.TimeCreate:
            # Opened after an earlier gate let go (a freeze window ended): the awaited task may
            # have ended meanwhile, and its wake-up found this task waiting for something else.
            # The sweeper looks at it at once.
            wait.RecheckAt = now
        set_waiting(task, wait)
        return True

    def on_task_end(self, task: Task, now: float) -> None:
        task.Outbox += task_finished_entries(task, now)  # wakes the tasks waiting for this one
