"""A step's own rate as a unit's gate (docs/design/rates.md, "Step rates"): each attempt of a
unit's normal phase waits for a start slot of the step's key before it is published
(common.engine.gates.rate.unit_rate). Nothing is held: a settled unit gives nothing back. A run
waiting for its slot is shown as the task's `WaitingFor` (kind rate, the step's rendered key, and
`Until` the next free slot once the table said when), derived and never stored."""

from __future__ import annotations

from common.engine.document import Run, Task, WaitCondition
from common.engine.gates.gate import Gate
from common.engine.gates.rate.step_spec import StepRatePart
from common.engine.gates.rate.unit_rate import must_wait, slot_wait, wait_for_slot


class StepRateGate(Gate):
    name = "step_rate"
    spec = StepRatePart()

    def takes(self, task: Task, run: Run, due_at: float) -> bool:
        if not must_wait(task, run):
            return False
        wait_for_slot(task, run, due_at)  # the outbox asks for a slot instead of publishing
        return True

    def holds_run(self, task: Task, run: Run, now: float) -> WaitCondition | None:
        return slot_wait(task, run)  # shown as the task's `WaitingFor` (kind rate), never stored
