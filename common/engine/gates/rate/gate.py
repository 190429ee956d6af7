"""A task type's rate as a gate (docs/design/rates.md): nothing starts before the task took a
start slot of its key (common.engine.gates.rate.task_rate asks, common.engine.gates.rate.changes
lets it go). After the lock: a task counts a start only once nothing else holds it back."""

from __future__ import annotations

from typing import Any

from common.engine.codes import WaitKind
from common.engine.document import Task, WaitCondition
from common.engine.gates.freeze.window import utc_text
from common.engine.gates.gate import TaskWaitGate
from common.engine.states import RateState
from common.engine.gates.rate.spec import RatePart
from common.engine.gates.rate.task_rate import (
    RateAsk, child_ask, defer_rate, described, leave_wait, move_rate, request_slot,
)


class RateGate(TaskWaitGate):
    name = "rate"
    asks = "rate"  # RateAsk (key, limit, per)
    wait_kind = WaitKind.RATE
    spec = RatePart()

    def enter(self, task: Task, ask: Any, now: float, starts: float) -> None:
        if ask is not None:  # asked for once the gates before it let the task go
            defer_rate(task, RateAsk(*ask))

    def open(self, task: Task, now: float) -> bool:
        if task.Rate is None or task.Rate.State is not RateState.PENDING:
            return False
        request_slot(task, now)
        return True

    def on_task_end(self, task: Task, now: float) -> None:
        leave_wait(task)

    def child_ask(self, body: dict[str, Any]) -> Any:
        return child_ask(body)

    def plan_reads(self, task: Task) -> dict[str, list[str]]:
        return {"rate": [task.Rate.Key]} if task.Rate is not None else {}  # the slots left of its key

    def on_retry(self, task: Task, now: float) -> None:
        if task.Rate is None:
            return
        move_rate(task.Rate, RateState.PENDING)
        task.Rate.Since = task.Rate.NextAt = None
        if task.WaitingFor is None:  # no gate before it waits: a new start slot, now
            self.open(task, now)

    def describe_wait(self, task: Task, wait: WaitCondition) -> str:
        if task.Rate is None or wait.Key != task.Rate.Key:  # a step's own rate: its key, `Until` its next slot
            return wait.Key or ""
        nxt = f", next slot at {utc_text(task.Rate.NextAt)}" if task.Rate.NextAt is not None else ""
        return f"{described(task.Rate)}{nxt}"
