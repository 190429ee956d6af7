"""Routing over the flow graph (docs/design/graph-and-routing.md, "Routing") as one pure function:
what starts next.

`plan(task)` reads only the graph (`Steps[i].After`) and the state of every unit (a plain step,
or one item of a `for_each` step) and answers what to do now: open a step whose kind fixes its
units first (a `for_each` step's items), start normal units, start rollbacks, pass over units
whose step has no rollback, or end the task. What differs between kinds of step it asks the
step's kind (common.engine.registry.kind_of): whether it opens, which of its units start, whether
it has work under way outside the task's runs. The caller (common.engine.core.advance) applies the answer and asks again until nothing is left
to do, so one change may start a whole wave of ready steps.

Forward (task not started or running, no cancel asked):
- a step is ready when it is `waiting` and every step in its `After` has `succeeded`;
- a `for_each` step keeps up to `MaxParallel` of its items running (its kind says which);
- the task succeeds when every step succeeded and no run remains.
Backward (task rolling back), once no normal run is left (running ones drain first):
- an applied unit (`succeeded` or `failed`) rolls back once every step that depends on its step
  is settled backward; a unit whose step declares no rollback is passed over (`skipped`);
- a failed rollback starts nothing more: the task ends rollback failed once no run remains;
- the task is rolled back when no applied unit and no run remains.
For a line this is the line table: next step; on failure this step's rollback, then each
earlier one, last to first.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from common.engine.document import Task
from common.engine.core.units import Unit, units
from common.engine.gates.gate import Hold
from common.engine.registry import held, kind_of
from common.engine.states import APPLIED, SETTLED_BACKWARD, DONE_FORWARD, FINAL_STATUSES, Phase, StepState, TaskStatus


@dataclass
class Plan:
    open_steps: list[int] = field(default_factory=list)  # for_each steps whose items to fix
    start: list[Unit] = field(default_factory=list)  # normal phase of these units
    roll_back: list[Unit] = field(default_factory=list)  # rollback phase of these units
    skip: list[Unit] = field(default_factory=list)  # applied, but their step has no rollback
    finish: TaskStatus | None = None

    def __bool__(self) -> bool:
        return bool(self.open_steps or self.start or self.roll_back or self.skip or self.finish is not None)


def dependents(task: Task) -> list[list[int]]:
    """For each step, the steps whose `After` names it."""
    result: list[list[int]] = [[] for _ in task.Steps]
    for index, step in enumerate(task.Steps):
        for before in step.After or ():
            result[before].append(index)
    return result


def plan(task: Task) -> Plan:
    if task.TaskStatus in FINAL_STATUSES:
        return Plan()
    if task.TaskStatus is TaskStatus.ROLLING_BACK:
        return _backward(task)
    return _forward(task)


def _forward(task: Task) -> Plan:
    result = Plan()
    if task.CancelRequested is not None:
        return result  # the running units' outcomes route into rollback (transitions)
    hold = held(task)  # a lock, another task, a pause (common.engine.registry)
    if hold is Hold.ALL:
        return result  # whoever opens the gate advances the task
    for cursor, step in enumerate([] if hold is Hold.STARTS else task.Steps):
        if step.State is StepState.WAITING and step.Items is None:
            if all(_done(task, b) for b in step.After or ()):
                if kind_of(step).opens(step):  # its units are fixed first (a for_each step's items)
                    result.open_steps.append(cursor)
                else:
                    result.start.append((cursor, None))
        elif step.Items is not None:
            result.start += kind_of(step).units_to_start(step, cursor, StepState.RUNNING, {StepState.WAITING})
    if not _busy(task) and all(step.State in DONE_FORWARD for step in task.Steps):
        result.finish = TaskStatus.SUCCESS
    return result


def _busy(task: Task) -> bool:
    """A run remains: one in the document, or work a step's kind keeps elsewhere (the items of a
    step over records, docs/design/item-records.md)."""
    return bool(task.Runs) or any(kind_of(step).working(step) for step in task.Steps)


def _items_draining(task: Task) -> bool:
    return any(step.State is StepState.RUNNING and kind_of(step).working(step) for step in task.Steps)


def _done(task: Task, cursor: int) -> bool:
    """Its dependents may start: it succeeded, or an operator skipped it and what it waits for is
    done (a step skipped ahead, in a retry, is passed in its turn, not before)."""
    step = task.Steps[cursor]
    if step.State is StepState.OPERATOR_SKIPPED:
        return all(_done(task, before) for before in step.After or ())
    return step.State is StepState.SUCCEEDED


def _backward(task: Task) -> Plan:
    result = Plan()
    if any(run.Phase is Phase.NORMAL for run in task.Runs) or _items_draining(task):
        return result  # draining: the rollbacks wait for the normal runs still going
    if any(u.State is StepState.ROLLBACK_FAILED for s in task.Steps for _, u in units(s)):
        if not _busy(task):
            result.finish = TaskStatus.ROLLBACK_FAILED
        return result
    after_me = dependents(task)
    left = False
    for cursor, step in enumerate(task.Steps):
        applied = [(cursor, i) for i, u in units(step) if u.State in APPLIED]
        left = left or bool(applied) or any(u.State is StepState.ROLLING_BACK for _, u in units(step))
        if not applied or not all(_settled(task, d, after_me) for d in after_me[cursor]):
            continue
        if not step.has_rollback or step.Items == []:
            result.skip += applied
        elif step.Items is None:
            result.roll_back += applied
        else:
            result.roll_back += kind_of(step).units_to_start(step, cursor, StepState.ROLLING_BACK, APPLIED)
    if not left and not _busy(task):
        result.finish = TaskStatus.ROLLED_BACK
    return result


def _settled(task: Task, cursor: int, after_me: list[list[int]]) -> bool:
    states = [u.State for _, u in units(task.Steps[cursor])]
    if not all(state in SETTLED_BACKWARD for state in states):
        return False
    if StepState.OPERATOR_SKIPPED in states:  # skipped forward: it passes the reverse order through
        return all(_settled(task, d, after_me) for d in after_me[cursor])
    return True
