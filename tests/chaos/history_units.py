"""How the chaos checks name what a History event is about: its unit (a step, or one item of a
for_each step), its phase and its attempt, and which events conclude an attempt or end a task.
Shared by the checks of tests/chaos/invariants.py and tests/chaos/forward_check.py."""

from __future__ import annotations

from common.engine.document import HistoryEvent
from common.engine.states import FINAL_STATUSES, Phase, StepState

OUTCOMES: dict[str, tuple[Phase, StepState]] = {
    "step_succeeded": (Phase.NORMAL, StepState.SUCCEEDED),
    "step_failed": (Phase.NORMAL, StepState.FAILED),
    "rollback_succeeded": (Phase.ROLLBACK, StepState.ROLLED_BACK),
    "rollback_failed": (Phase.ROLLBACK, StepState.ROLLBACK_FAILED),
}
FINAL_EVENTS = {f"task_{status.name.lower()}": status for status in FINAL_STATUSES}
CONCLUSIONS = frozenset({"attempt_failed", *OUTCOMES})
AFTER_FINAL = frozenset({"alarm_raised", "lock_released", "lock_kept"})  # recorded by the final change
SWEEPER = "sweeper"

PhaseKey = tuple[int, int]  # (unit, phase): unit is the cursor, or cursor + item for an item
AttemptKey = tuple[int, int, int]  # (unit, phase, attempt)
ITEM_BASE = 1_000_000  # an item's unit key: (cursor + 1) * ITEM_BASE + item; a step's: cursor


def unit_of(event: HistoryEvent) -> int:
    cursor = event.Cursor if event.Cursor is not None else -1
    return cursor if event.Item is None else (cursor + 1) * ITEM_BASE + event.Item


def unit_name(unit: int) -> str:
    return f"step {unit}" if unit < ITEM_BASE else f"step {unit // ITEM_BASE - 1} item {unit % ITEM_BASE}"


def phase_key(event: HistoryEvent) -> PhaseKey:
    return (unit_of(event), int(event.Phase) if event.Phase is not None else -1)


def attempt_key(event: HistoryEvent) -> AttemptKey:
    return (*phase_key(event), event.Attempt if event.Attempt is not None else -1)



def tolerated_units(task) -> set[int]:
    """The items failed within their step's budget (`ToleratedItems`): each rolled back on its own
    while the task goes on (docs/design/item-records.md, "A failure budget")."""
    return {(cursor + 1) * ITEM_BASE + item for cursor, step in enumerate(task.Steps)
            for item in getattr(step, "ToleratedItems", None) or []}
