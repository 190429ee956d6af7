"""Hand-made task documents for the checker's tests (tests/chaos/test_invariants*.py): driven
through the real pure transitions, so a clean History is exactly what the engine writes, and
then tampered with to break one promise at a time."""

from __future__ import annotations

import itertools

from common.engine.core.entries import (
    AttemptResult,
    Refusal,
    Timing,
    claim,
    create_task,
    finish_attempt,
    mark_sent,
)
from common.engine.document import HistoryEvent, StepMessage, Task
from common.engine.states import Phase, ResultCode, StepState
from tests.chaos.invariants import check_task
from tests.support.builders import counter_ids, make_step, only_run

OK = AttemptResult(ResultCode.OK)
FAIL = AttemptResult(ResultCode.FAILED, "boom")
_clock = itertools.count(1000)
task_ids = counter_ids("task")


def tick() -> Timing:
    return Timing(float(next(_clock)), lease=5.0, redeliver_after=10.0)


def new_task(rollbacks=(True, True, True), retry=0) -> Task:
    steps = [make_step(name, rollback=rb, retry=retry) for name, rb in zip("abc", rollbacks)]
    return create_task(task_type="t", steps=steps, parameters={}, timing=tick(), task_id=task_ids(), ids=counter_ids())


def ok(task: Task) -> Task:
    assert not isinstance(task, Refusal), task
    return task


def sent(task: Task) -> Task:
    """Mark every outbox entry sent, as the publisher does after the broker's confirm."""
    for entry in list(task.Outbox):
        task = ok(mark_sent(task, entry.DispatchId))
    return task


def message(task: Task) -> StepMessage:
    a = only_run(task)
    step = task.Steps[a.Cursor]
    return StepMessage(TaskId=task.TaskId, Cursor=a.Cursor, Type=a.Phase, Module=step.module(a.Phase),
                       Command=step.command(a.Phase), Timeout=1, Retry=0, DispatchId=a.DispatchId, Attempt=a.Attempt)


def attempt(task: Task, result: AttemptResult, owner="w1") -> Task:
    m = message(task)
    task = ok(claim(task, m, owner, tick()))
    return sent(ok(finish_attempt(task, m.DispatchId, owner, result, tick(), ids=counter_ids("n"))))


def drive(task: Task, verdict) -> Task:
    """Run the task to the end; `verdict(cursor, phase, attempt)` says whether an attempt works."""
    task = sent(task)
    while only_run(task) is not None:
        a = only_run(task)
        task = attempt(task, OK if verdict(a.Cursor, a.Phase, a.Attempt) else FAIL)
    return task


def succeed(*_):
    return True


def fail_at(cursor, rollback_fails_at=None):
    def verdict(c, phase, _attempt):
        if phase is Phase.NORMAL:
            return c != cursor
        return c != rollback_fails_at

    return verdict


def rules(task: Task) -> set[str]:
    violations, _ = check_task(task)
    return {v.rule for v in violations}


def event(name, cursor=None, phase=None, attempt=None, actor="w1") -> HistoryEvent:
    return HistoryEvent(Time=0.0, Event=name, Cursor=cursor, Phase=phase, Attempt=attempt, Actor=actor)


def graph_rolled_back() -> Task:
    """A fan-out of three items whose second fails: the task rolled back, items first, then the root."""
    from tests.unit.test_graph_transitions import FAIL as G_FAIL
    from tests.unit.test_graph_transitions import R as G_R
    from tests.unit.test_graph_transitions import do as g_do
    from tests.unit.test_graph_transitions import fan_out, new

    task = g_do(new(fan_out(max_parallel=2), {"hosts": [1, 2, 3]}), 0)
    task = g_do(task, 1, item=0)
    task = g_do(task, 1, G_FAIL, item=1)  # item 2 was dispatched by item 0's success: cancelled
    for item in (0, 1):
        task = g_do(task, 1, item=item, phase=G_R)
    return g_do(task, 0, phase=G_R)


def graph_rollout() -> Task:
    """A fan-out of four items that succeeded, as a step with a failure budget and `on_failure:
    hold` leaves it (the History the engine writes over item records, put inline): item 1 failed
    for good within the budget and was rolled back on its own; item 2 failed past it, the task
    held, an operator redrove it, and its second attempt succeeded. Times follow the order."""
    from tests.unit.test_graph_transitions import do as g_do
    from tests.unit.test_graph_transitions import fan_out, new

    task = g_do(new(fan_out(max_parallel=4), {"hosts": [1, 2, 3, 4]}), 0)
    for item in range(4):
        task = g_do(task, 1, item=item)
    task = g_do(task, 2)
    history = []
    for e in task.History:
        if e.Event == "step_succeeded" and e.Item == 1:
            undo = e.model_copy(update={"Phase": Phase.ROLLBACK})
            history += [e.model_copy(update={"Event": "step_failed"}), undo.model_copy(update={"Event": "dispatched"}),
                        undo.model_copy(update={"Event": "claimed"}), undo.model_copy(update={"Event": "rollback_succeeded"})]
        elif e.Event == "step_succeeded" and e.Item == 2:
            again = e.model_copy(update={"Attempt": 2})
            history += [e.model_copy(update={"Event": "step_failed"}), e.model_copy(update={"Event": "held", "Phase": None}),
                        e.model_copy(update={"Event": "redriven", "Phase": None}),
                        again.model_copy(update={"Event": "dispatched"}), again.model_copy(update={"Event": "claimed"}), again]
        else:
            history.append(e)
    task.History = [e.model_copy(update={"Time": float(index)}) for index, e in enumerate(history)]
    step = task.Steps[1]
    step.ToleratedItems, step.FailedItems = [1], 1
    step.Items[1].State = StepState.ROLLED_BACK
    return task
