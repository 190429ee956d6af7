"""The task's lock as a gate: nothing starts while it waits in the key's line
(common.engine.gates.lock.task_lock asks for it, common.engine.gates.lock.changes opens it)."""

from __future__ import annotations

from typing import Any

from common.engine.codes import WaitKind
from common.engine.document import Task, WaitCondition
from common.engine.gates.gate import TaskWaitGate
from common.engine.gates.lock.modes import EXCLUSIVE
from common.engine.gates.lock.plan import lock_keys
from common.engine.gates.lock.spec import LockPart
from common.engine.gates.lock.table import PENDING
from common.engine.gates.lock.task_lock import (
    LockAsk, asked, asked_at_start, child_ask, defer_lock, lock_changed, release_on_finish, request_again, request_lock,
)


class LockGate(TaskWaitGate):
    name = "lock"
    asks = "lock"  # (key, limit[, mode, shares])
    wait_kind = WaitKind.LOCK
    spec = LockPart()

    def enter(self, task: Task, ask: Any, now: float, starts: float) -> None:
        if ask is not None:  # asked for once the gates before it let the task go
            defer_lock(task, LockAsk(*ask))

    def open(self, task: Task, now: float) -> bool:
        if task.Lock is None or task.Lock.State != PENDING:
            return False
        request_lock(task, asked(task.Lock), now)  # nothing starts before it is taken, nor asked before StartAt
        return True

    def on_task_end(self, task: Task, now: float) -> None:
        release_on_finish(task, now)

    def on_retry(self, task: Task, now: float) -> None:
        request_again(task, now)  # in line again

    def child_ask(self, body: dict[str, Any]) -> Any:
        return child_ask(body)

    def describe_wait(self, task: Task, wait: WaitCondition) -> str:
        mode = task.Lock.Mode if task.Lock is not None else EXCLUSIVE
        return f"{wait.Key} (mode {mode})" if mode != EXCLUSIVE else wait.Key or ""

    def move_doubt(self, task: Task, ask: Any) -> str | None:
        return lock_changed(task, ask)

    def start_entries(self, task: Task) -> set[str]:
        return asked_at_start(task)

    def plan_reads(self, task: Task) -> dict[str, list[str]]:
        return {"lock": [ask.key for ask, scope in lock_keys(task) if scope == "task"]} if task.Lock is not None else {}

