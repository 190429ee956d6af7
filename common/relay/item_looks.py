"""What the item relay reads of a step's item records (docs/design/item-records.md): whether any
is in some states, the first in a state with its message, every one in some states a page at a
time, and whether the step's current direction has settled. Reads only: the relay changes."""

from __future__ import annotations

from collections.abc import Collection, Iterator

from common.engine.document import ItemRecord, Task
from common.engine.states import APPLIED, StepState
from common.engine.views import going_forward
from common.store.items.port import ItemStore

PAGE = 500
FORWARD_OPEN = (StepState.WAITING, StepState.RUNNING)  # in this order: see settled


class ItemLooks:
    def __init__(self, items: ItemStore) -> None:
        self._items = items

    def any(self, task: Task, cursor: int, states: Collection[StepState]) -> bool:
        return self._items.exists_in_states(task.TaskId, task.Generation, cursor, states)

    def first(self, task: Task, cursor: int, state: StepState) -> tuple[int, str] | None:
        found = self._items.page_items(task.TaskId, task.Generation, cursor, limit=1, states=[state])
        if not found:
            return None
        record = found[0]
        return record.Item, record.Message if state is StepState.FAILED else record.RollbackMessage

    def pages(self, task: Task, cursor: int, states: Collection[StepState]) -> Iterator[ItemRecord]:
        after = None
        while True:
            page = self._items.page_items(task.TaskId, task.Generation, cursor, after=after, limit=PAGE, states=states)
            yield from page
            if len(page) < PAGE:
                return
            after = page[-1].Item

    def settled(self, task: Task, cursor: int) -> tuple[tuple[int, str] | None] | None:
        """None while an item has work left in the step's direction; else the first failure of
        that direction (wrapped: None is a failure's absence)."""
        step = task.Steps[cursor]
        # The states are asked in the order an item passes through them (waiting, running; applied,
        # rolling back): an item that moves on between two look-ups is seen by the later one. In
        # the other order an item started in between was missed by both, and the step settled
        # under it (its run dispatched again after the task ended).
        if step.State is StepState.RUNNING:
            forward = going_forward(task)
            if self.any(task, cursor, FORWARD_OPEN if forward else [StepState.RUNNING]):
                return None
            # Going forward, an item failed within a failure budget is not done until its own
            # rollback ended: first it waits, failed and still open, for the relay's decision,
            # then it rolls back. Settled under it, the step would count it as neither failed
            # nor tolerated (docs/design/item-records.md, "A failure budget"). Asked after the
            # running items and in the order an item passes through them, as above.
            if forward and (self._deciding(task, cursor) or self.any(task, cursor, [StepState.ROLLING_BACK])):
                return None
            return (self.first(task, cursor, StepState.FAILED),)
        failure = self.first(task, cursor, StepState.ROLLBACK_FAILED)
        if failure is None and self.any(task, cursor, APPLIED):
            return None
        if self.any(task, cursor, [StepState.ROLLING_BACK]):
            return None
        return (failure,)

    def _deciding(self, task: Task, cursor: int) -> bool:
        """Whether a failed item still waits for the relay's decision on its place in the budget
        (failed, and still open). Asked once nothing waits or runs: the step's failed records are
        then few (the budget's own are rolling back or rolled back already)."""
        return any(record.Open for record in self.pages(task, cursor, [StepState.FAILED]))
