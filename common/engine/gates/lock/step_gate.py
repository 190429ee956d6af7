"""A step's own lock as a unit's gate: a unit's normal run waits for its key before it is
published, and gives it back when it settles (common.engine.gates.lock.unit_locks)."""

from __future__ import annotations

from common.engine.core.units import Unit
from common.engine.document import Run, Task
from common.engine.gates.gate import Gate
from common.engine.gates.lock.plan import lock_keys
from common.engine.gates.lock.step_spec import StepLockPart
from common.engine.gates.lock.unit_locks import must_wait, release_all_units, release_unit, wait_for_lock


class StepLockGate(Gate):
    name = "step_lock"
    spec = StepLockPart()

    def takes(self, task: Task, run: Run, due_at: float) -> bool:
        if not must_wait(task, run.unit):
            return False
        wait_for_lock(task, run, due_at)  # the outbox asks for the key instead of publishing
        return True

    def release(self, task: Task, unit: Unit, now: float) -> None:
        release_unit(task, unit, now)  # a step lock is held until the unit settles

    def on_task_end(self, task: Task, now: float) -> None:
        release_all_units(task, now)  # a cancelled or drained unit may still hold one

    def plan_reads(self, task: Task) -> dict[str, list[str]]:
        keys = [ask.key for ask, scope in lock_keys(task) if scope != "task"]  # of the steps' locks
        return {"lock": keys} if keys else {}
