"""A sub-flow step (docs/design/sub-flows.md): its run waits for a child task the outbox creates."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from common.engine.document import OperatorRequest, OutboxEntry, Run, Step, Task
from common.engine.kinds.kind import StepKind, StepShown
from common.engine.kinds.sub_flow.spec import SubFlowPart
from common.engine.kinds.sub_flow.entries import (
    PAUSE_CHILD,
    RESUME_CHILD,
    cancel_child_entry,
    child_entry,
    child_finished_entry,
    child_task_id,
    hold_child_entry,
)
from common.engine.core.units import Unit, unit_state
from common.engine.states import Phase, ResultCode, RunState, StepState, move_run
from common.engine.core.units import AttemptResult, Timing, begin_attempt, record, set_unit_state, store_result, unit_name


class SubFlowKind(StepKind):
    name = "sub_flow"
    spec = SubFlowPart()

    def unit_gated(self, step: Step) -> bool:
        return False  # the child type's own lock gates the child

    def run_deadline(self, step: Step, timing: Timing, due_at: float) -> float | None:
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
        record(task, timing.now, "rollback_succeeded", actor=actor, unit=unit, phase=Phase.ROLLBACK, message=message)
        return True

    def cancel_run(self, task: Task, run: Run, request: OperatorRequest) -> bool:
        if run.State is not RunState.WAITING_CHILD:
            return False
        task.Outbox.append(cancel_child_entry(task, run, request.Actor, request.Reason, request.Time))
        return True  # the child rolls back, and its end concludes this run

    def on_task_end(self, task: Task, now: float) -> None:
        if task.Parent is not None:  # a child task: its parent's waiting run concludes on this
            task.Outbox.append(child_finished_entry(task, now))

    def reset(self, step: Step) -> None:
        step.ChildTaskId = None

    def describe_run(self, task: Task, run: Run) -> str | None:
        return "waiting for its child task" if run.State is RunState.WAITING_CHILD else None

    def describe(self, step: Step, counts: Mapping[str, int] | None = None) -> StepShown:
        return StepShown(kind=self.name, note=f"sub-flow {step.Flow}", child=step.ChildTaskId)

    def pause(self, task: Task, cursor: int, request: OperatorRequest) -> None:
        # "No new step starts" holds for the whole operation: the child is paused too.
        _tell_children(task, cursor, PAUSE_CHILD, request)

    def resume(self, task: Task, cursor: int, request: OperatorRequest, ids: Callable[[], str]) -> None:
        # The child relay resumes only a child the parent's pause paused, not one an operator paused.
        _tell_children(task, cursor, RESUME_CHILD, request)

    def skip_refused(self, task: Task, run: Run) -> str | None:
        if run.State is RunState.WAITING_CHILD:  # the child's own steps are what fail
            return f"{unit_name(task, run.unit)} runs a child task: act on the child task instead"
        return None


def _tell_children(task: Task, cursor: int, kind: str, request: OperatorRequest) -> None:
    """In place: a pause or resume entry for each child a run of step `cursor` waits for (the
    child relay applies it to the child, common.relay.child_relay)."""
    for run in task.Runs:
        if run.Cursor == cursor and run.State is RunState.WAITING_CHILD and run.Phase is Phase.NORMAL:
            task.Outbox.append(hold_child_entry(task, run, kind, request.Actor, request.Reason, request.Time))
