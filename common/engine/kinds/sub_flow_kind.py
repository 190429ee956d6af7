"""A sub-flow step (DESIGN.md sec. 6): its run waits for a child task the outbox creates."""

from __future__ import annotations

from common.engine.document import OutboxEntry, Run, Step, Task
from common.engine.kinds.subflow import child_entry, child_task_id
from common.engine.routing import Unit, unit_state
from common.engine.states import Phase, ResultCode, RunState, StepState, move_run
from common.engine.units import AttemptResult, Timing, begin_attempt, record, set_unit_state, store_result


class SubFlowKind:
    name = "sub-flow"
    unit_gated = False  # the child type's own lock gates the child

    def runs(self, step: Step) -> bool:
        return step.Flow is not None

    def run_deadline(self, timing: Timing, due_at: float) -> float | None:
        return None  # no module claims it: the child's end concludes it

    def start(self, task: Task, run: Run, timing: Timing, due_at: float) -> OutboxEntry:
        move_run(run, RunState.WAITING_CHILD)
        entry = child_entry(task, run, due_at)
        if due_at <= timing.now:  # no module claims it: asking for the child begins the attempt
            begin_attempt(task, run, due_at)
        return entry

    def before_conclude(self, task: Task, run: Run, timing: Timing) -> None:
        begin_attempt(task, run, run.Since or timing.now)  # a child asked for later began when it was due

    def roll_back(self, task: Task, unit: Unit, timing: Timing, actor: str) -> bool:
        state = unit_state(task, unit)
        if state.Code is ResultCode.OK:
            return False  # the child succeeded: undo it
        # The child failed and rolled itself back already: nothing left to undo here. Its
        # rollback is recorded as done when the child ended.
        message = f"child task {child_task_id(task, *unit)} rolled itself back"
        set_unit_state(task, unit, StepState.ROLLING_BACK)
        store_result(state, Phase.ROLLBACK, AttemptResult(ResultCode.OK, message), state.TimeEnd or timing.now)
        state.RollbackTimeStart = state.RollbackTimeEnd
        set_unit_state(task, unit, StepState.ROLLED_BACK)
        record(task, timing.now, "rollback_succeeded", actor=actor, unit=unit, message=message)
        return True
