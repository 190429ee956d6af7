"""Routing over the flow graph (DESIGN.md sec. 4) as one pure function: what starts next.

`plan(task)` reads only the graph (`Steps[i].After`) and the state of every unit (a plain step,
or one item of a `for_each` step) and answers what to do now: open a `for_each` step (fix its
items), start normal units, start rollbacks, pass over units whose step has no rollback, or end
the task. The caller (common.engine.advance) applies the answer and asks again until nothing is left
to do, so one change may start a whole wave of ready steps.

Forward (task not started or running, no cancel asked):
- a step is ready when it is `waiting` and every step in its `After` has `succeeded`;
- a `for_each` step keeps up to `MaxParallel` of its items running;
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

from common.engine.document import Step, Task, UnitState
from common.engine.gates.gate import Hold
from common.engine.gates.task_gates import held
from common.engine.states import DONE_FORWARD, FINAL_STATUSES, Phase, StepState, TaskStatus
from common.engine.step_summary import APPLIED, SETTLED_BACKWARD

Unit = tuple[int, int | None]  # (cursor, item index or None)

@dataclass
class Plan:
    open_steps: list[int] = field(default_factory=list)  # for_each steps whose items to fix
    start: list[Unit] = field(default_factory=list)  # normal phase of these units
    roll_back: list[Unit] = field(default_factory=list)  # rollback phase of these units
    skip: list[Unit] = field(default_factory=list)  # applied, but their step has no rollback
    finish: TaskStatus | None = None

    def __bool__(self) -> bool:
        return bool(self.open_steps or self.start or self.roll_back or self.skip or self.finish is not None)


def units(step: Step) -> list[tuple[int | None, UnitState]]:
    """The units of a step: its items once a for_each step has fixed them, else the step.

    A for_each step over zero items (or whose list was not a list) is its own unit: it has
    nothing to undo, but it is passed over backward only once its dependents settled, like a
    step without rollback, so the order still flows through it."""
    if step.Items:
        return list(enumerate(step.Items))
    return [(None, step)]


def unit_state(task: Task, unit: Unit) -> UnitState:
    cursor, item = unit
    step = task.Steps[cursor]
    if item is None:
        return step
    assert step.Items is not None
    return step.Items[item]


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
    hold = held(task)  # a lock, another task, a pause (common.engine.gates.task_gates)
    if hold is Hold.ALL:
        return result  # whoever opens the gate advances the task
    for cursor, step in enumerate([] if hold is Hold.STARTS else task.Steps):
        if step.State is StepState.WAITING and step.Items is None:
            if all(_done(task, b) for b in step.After or ()):
                if step.ForEach:
                    result.open_steps.append(cursor)
                else:
                    result.start.append((cursor, None))
        elif step.Items is not None:
            result.start += _within_limit(step, cursor, StepState.RUNNING, {StepState.WAITING})
    if not _busy(task) and all(step.State in DONE_FORWARD for step in task.Steps):
        result.finish = TaskStatus.SUCCESS
    return result


def _busy(task: Task) -> bool:
    """A run remains: one in the document, or an item of a step over records (DESIGN.md 12)."""
    return bool(task.Runs) or any(step.ItemsOpen for step in task.Steps)


def _items_draining(task: Task) -> bool:
    return any(step.ItemsOpen and step.State is StepState.RUNNING for step in task.Steps)


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
            result.roll_back += _within_limit(step, cursor, StepState.ROLLING_BACK, APPLIED)
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


def _within_limit(step: Step, cursor: int, busy: StepState, startable: frozenset[StepState] | set[StepState]) -> list[Unit]:
    """Items of a for_each step to start now: in item order, keeping at most MaxParallel busy."""
    assert step.Items is not None
    limit = step.MaxParallel or len(step.Items)
    running = sum(1 for item in step.Items if item.State is busy)
    chosen: list[Unit] = []
    for index, item in enumerate(step.Items):
        if running >= limit:
            break
        if item.State in startable:
            chosen.append((cursor, index))
            running += 1
    return chosen
