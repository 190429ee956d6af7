"""Units a gate holds after their dispatch, as a reader is shown them (docs/design/task-document.md,
"A unit held before its claim is shown `waiting`"). Pure: the time of the view is handed in.

A delayed start and a drained module keep a unit's run from its claim; its stored state stays
`running` (routing's: a run of it exists), but nothing of it runs, so it is shown `waiting`, and
the task's `WaitingFor` names the gate. A step parked waiting for people (common.engine.core.
parking) runs, and stays `running`: the task's `WaitingFor` names what it waits for when no gate
holds anything. Nothing here is ever stored.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from common.engine.document import Run, Task, WaitCondition
from common.engine.core.parking import parked_wait
from common.engine.registry import run_hold
from common.engine.states import Phase, StepState
from common.engine.core.units import Unit


@dataclass(frozen=True)
class HeldView:
    units: dict[Unit, WaitCondition] = field(default_factory=dict)  # held units (an item's, or a step's own)
    steps: frozenset[int] = frozenset()  # running steps whose every running unit is held
    wait: WaitCondition | None = None  # the earliest hold, shown when the task has no wait of its own


def held_view(task: Task, now: float, item_runs: Iterable[Run] = ()) -> HeldView:
    """Which units of the task a gate holds now, which steps are held as a whole, and the wait
    the task shows. `item_runs`: the runs of its items kept in records, as a reader found them
    (their holds name the wait; their step keeps showing its counts)."""
    units = {run.unit: wait for run in task.Runs
             if run.Phase is Phase.NORMAL and (wait := run_hold(task, run, now)) is not None}
    item_runs = list(item_runs)
    item_holds = [(run, run_hold(task, run, now)) for run in item_runs]
    steps = frozenset(cursor for cursor, step in enumerate(task.Steps)
                      if step.State is StepState.RUNNING and (_all_held(task, cursor, units) if step.Items is not None
                                                              or step.ItemCount is None
                                                              else _records_held(cursor, item_holds)))
    waits = list(units.values()) + [wait for _, wait in item_holds if wait is not None]
    if task.WaitingFor is not None:
        return HeldView(units, steps, None)
    # Else the earliest hold, else a parked step's wait (it runs: its state stays `running`).
    return HeldView(units, steps, min(waits, key=lambda w: w.Since) if waits else parked_wait(task))


def _all_held(task: Task, cursor: int, held: dict[Unit, WaitCondition]) -> bool:
    step = task.Steps[cursor]
    if step.Items is None:
        return (cursor, None) in held
    running = [(cursor, index) for index, item in enumerate(step.Items) if item.State is StepState.RUNNING]
    return bool(running) and all(unit in held for unit in running)


def _records_held(cursor: int, item_holds: list[tuple[Run, WaitCondition | None]]) -> bool:
    """A step over item records is held when every run of its items in flight that the reader
    found (its first ones, by item: common.engine.kinds.for_each.item_drain.IN_FLIGHT_LOOK) is
    held: a drain holds every run sent to its module, so nothing of the step runs, as an inline
    step whose every running item is held."""
    found = [wait for run, wait in item_holds if run.Cursor == cursor]
    return bool(found) and all(wait is not None for wait in found)


def show_held(doc: dict[str, Any], view: HeldView) -> None:
    """In place, on a task's document as shown (`Task.to_doc`): held units and steps read
    `waiting`, and a task without a wait of its own shows the earliest hold as `WaitingFor`."""
    for cursor, item in view.units:
        if item is not None:
            doc["Steps"][cursor]["Items"][item]["State"] = StepState.WAITING.value
    for cursor in view.steps:
        doc["Steps"][cursor]["State"] = StepState.WAITING.value
    if view.wait is not None and doc.get("WaitingFor") is None:
        doc["WaitingFor"] = view.wait.model_dump(mode="json")
