"""What must hold of a graph task's final document (docs/design/graph-and-routing.md, "Backward" and
docs/design/protocol.md, "How each still holds with several runs"), checked from its unit states and
its history: shared by the unit, property, end-to-end and chaos tests.

- every applied unit is rolled back exactly once (or compensated, or passed over when its step
  declares no rollback); a unit that never ran is never rolled back;
- a unit's rollback starts only after the rollbacks of every unit of every step that depends on
  its step (transitively) have ended: a valid reverse topological order;
- a join (a unit's normal phase) is dispatched once per attempt.
"""

from __future__ import annotations

from collections import Counter

from common.engine.document import Task
from common.engine.core.routing import dependents
from common.engine.core.units import units
from common.engine.states import Phase, StepState, TaskStatus

NEVER_RAN = {StepState.WAITING, StepState.CANCELLED}


def rollback_violations(task: Task) -> list[str]:
    problems: list[str] = []
    history = list(enumerate(task.History))
    start: dict[tuple[int, int | None], int] = {}
    end: dict[tuple[int, int | None], int] = {}
    done = Counter()
    for index, event in history:
        unit = (event.Cursor, event.Item)
        if event.Event == "dispatched" and event.Phase is Phase.ROLLBACK:
            start.setdefault(unit, index)
        if event.Event in ("rollback_succeeded", "compensated"):
            start.setdefault(unit, index)
            end[unit] = index
            done[unit] += event.Event == "rollback_succeeded"
    for cursor, step in enumerate(task.Steps):
        for item, state in units(step):
            unit = (cursor, item)
            if done[unit] > 1:
                problems.append(f"{unit} rolled back {done[unit]} times")
            if state.State in NEVER_RAN and unit in start:
                problems.append(f"{unit} never ran but was rolled back")
            if task.TaskStatus is TaskStatus.ROLLED_BACK and state.State in (StepState.SUCCEEDED, StepState.FAILED):
                problems.append(f"{unit} applied ({state.State.value}) but not rolled back")
            if state.State is StepState.ROLLED_BACK and done[unit] != 1:
                problems.append(f"{unit} is rolled_back with {done[unit]} rollback events")
    after_me = dependents(task)
    for unit, began in start.items():
        for later_step in _descendants(after_me, unit[0]):
            for item, state in units(task.Steps[later_step]):
                other = (later_step, item)
                if other in start and (other not in end or end[other] > began):
                    problems.append(f"rollback of {unit} began before the rollback of {other} (depends on it) ended")
    return problems


def join_violations(task: Task) -> list[str]:
    """No (unit, normal attempt) dispatched twice, but for a release (a module shutting down gives
    its claimed run back: the same attempt dispatched again)."""
    counts = Counter((e.Cursor, e.Item, e.Attempt) for e in task.History
                     if e.Event == "dispatched" and e.Phase is Phase.NORMAL)
    counts.subtract((e.Cursor, e.Item, e.Attempt) for e in task.History
                    if e.Event == "released" and e.Phase is Phase.NORMAL)
    return [f"{key} dispatched {n} times" for key, n in counts.items() if n > 1]


def _descendants(after_me: list[list[int]], cursor: int) -> set[int]:
    seen: set[int] = set()
    todo = list(after_me[cursor])
    while todo:
        step = todo.pop()
        if step not in seen:
            seen.add(step)
            todo += after_me[step]
    return seen
