"""One item of a `for_each` step kept as a record of its own (docs/design/item-records.md).

A step over item records keeps in the task document only `ItemCount` and its derived outcome;
each item's state, run, outbox and events live here, changed by compare-and-set on the record's
own `Version`, so items never contend with each other or rewrite the task document.
"""

from __future__ import annotations

from typing import Any

from pydantic import Field

from common.engine.document import HistoryEvent, OutboxEntry, UnitState
from common.engine.document import Run as UnitRun  # the field below is named Run, as in the task

# What an item's change owes its step (`ItemRecord.Owes`), applied by the committing process
# and, after a crash, by the sweeper's relay. Each is idempotent.
OWES_SUCCESSOR = "successor"  # forward success: start the next item of this item's chain
OWES_SETTLED = "settled"  # the item concluded: ask whether the step is done
OWES_FAILED = "failed"  # the item failed for good: the task goes backward
OWES_ROLLBACK_SUCCESSOR = "rollback_successor"  # rolled back: start the next applied item's rollback
# Failed for good in a step with a failure budget: count the step's failures, then roll the item
# back on its own and go on (within the budget), or owe `failed` (past it).
OWES_TOLERATE = "tolerate"


def item_record_id(task_id: str, generation: int, cursor: int, item: int) -> str:
    return f"{task_id}:g{generation}:{cursor}:{item}"


class ItemRecord(UnitState):
    """The unit state fields (State, Code, Attempts, Rollback*, ...) are the step's own names, as
    for an inline item (`StepItem`), so the code handling a unit needs not know where it lives."""

    TaskId: str
    Generation: int = 0
    Cursor: int
    Item: int
    Value: Any = None
    Output: dict[str, Any] = Field(default_factory=dict)
    ChildTaskId: str | None = None  # a for_each sub-flow step: this item's child task
    Run: UnitRun | None = None  # at most one run per unit, as in the task document
    Owes: list[str] = Field(default_factory=list)
    # The step's reopen (Step.ItemsReopen) under which this item's latest rollback began, or
    # which compensated it: a repeat of that reopen's entry leaves the item alone.
    Reopen: str | None = None
    # Failed for good within its step's failure budget, and rolled back on its own while the step
    # went forward. Left out when False: a release that predates it reads the record.
    Tolerated: bool = Field(False, exclude_if=lambda value: not value)
    Outbox: list[OutboxEntry] = Field(default_factory=list)
    History: list[HistoryEvent] = Field(default_factory=list)
    # Work left in the step's current direction: forward, waiting or running; backward,
    # applied and not settled yet. "Is the step done?" is one indexed look-up for an open record.
    Open: bool = True
    # The sweeper's indexes, derived on serialisation like the task's
    # (docs/design/task-document.md).
    SweepAt: float | None = None
    OutboxDue: float | None = None
    Version: int = 0

    @property
    def record_id(self) -> str:
        return item_record_id(self.TaskId, self.Generation, self.Cursor, self.Item)

    def _refresh_indexes(self) -> None:
        self.SweepAt = self.Run.Deadline if self.Run is not None else None
        self.OutboxDue = min((e.DueAt for e in self.Outbox), default=None)

    def to_doc(self) -> dict[str, Any]:
        self._refresh_indexes()
        return self.model_dump(mode="json")

    def to_json(self) -> str:
        self._refresh_indexes()
        return self.model_dump_json()

    @classmethod
    def from_doc(cls, doc: dict[str, Any]) -> ItemRecord:
        return cls.model_validate({k: v for k, v in doc.items() if k != "_id"})

    @classmethod
    def from_json(cls, text: str | bytes) -> ItemRecord:
        return cls.model_validate_json(text)
