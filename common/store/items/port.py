"""The item record port: the records of `for_each` steps (common.engine.kinds.for_each.item_record,
docs/design/item-records.md), kept beside the tasks (the same SQLite file, the same MongoDB
database).

Adapters only read, insert and compare-and-set whole records; every decision is a pure function
of the engine applied by its caller, which re-reads and re-decides when another writer won.
Every `limit` returns [] when <= 0.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from typing import Protocol

from common.engine.document import ItemRecord
from common.engine.states import StepState


class ItemStore(Protocol):
    def insert_items(self, records: Sequence[ItemRecord]) -> int:
        """Insert the records whose id is not stored yet (a repeat is harmless: an existing record
        is left as it is, whatever it holds); returns how many were new."""

    def get_item(self, task_id: str, generation: int, cursor: int, item: int) -> ItemRecord | None: ...

    def compare_and_set_item(self, record: ItemRecord, expected_version: int) -> bool:
        """Replace the stored record iff its Version equals `expected_version`; `record.Version`
        must be `expected_version + 1` (ValueError otherwise). False when another writer won or
        the record does not exist."""

    def any_open(self, task_id: str, generation: int, cursor: int) -> bool:
        """Whether any record of the step has `Open` set (an indexed look-up, not a scan)."""

    def exists_in_states(self, task_id: str, generation: int, cursor: int, states: Collection[StepState]) -> bool:
        """Whether any record of the step is in one of `states`: one indexed look-up per state,
        never a scan of the step's records (it is asked after every item's conclusion)."""

    def count_by_state(self, task_id: str, generation: int, cursor: int) -> dict[StepState, int]:
        """How many records of the step are in each state (states with none left out)."""

    def attempt_sums(self, task_id: str, generation: int, cursor: int) -> tuple[int, int]:
        """The sums of the step's records' `Attempts` and `RollbackAttempts`: what the step shows
        as its own, as a step keeping its items inline sums them (one read of the step's records
        by its key prefix)."""

    def page_items(self, task_id: str, generation: int, cursor: int, *, after: int | None = None,
                   limit: int = 100, states: Collection[StepState] | None = None,
                   modulus: int | None = None, residue: int | None = None) -> list[ItemRecord]:
        """The step's records by item index ascending, those with `Item > after` (all when None),
        in one of `states` (any when None), and with `Item % modulus == residue` when a modulus is
        given (a chain of items, docs/design/item-records.md, "The life of a step over records")."""

    def page_failed(self, task_id: str, generation: int, cursor: int, *, after: int | None = None,
                    limit: int = 100) -> list[ItemRecord]:
        """The step's records whose normal phase ended failed (`Code` set and not OK), whatever
        their state now (rolled back, say), by item index ascending, those with `Item > after`.
        It walks the step's records in item order (their key): a reader's look for the item
        that failed, not a query of the engine's."""

    def outputs(self, task_id: str, generation: int, cursor: int) -> list[dict]:
        """Every record's `Output`, in item order (read once, when the step succeeds)."""

    def due_for_sweep(self, now: float, limit: int) -> list[ItemRecord]:
        """Records whose `SweepAt` <= now, earliest first."""

    def unsent_outbox(self, due_before: float, limit: int) -> list[ItemRecord]:
        """Records holding an outbox entry with `DueAt` <= due_before, oldest first."""

    def owing(self, limit: int) -> list[ItemRecord]:
        """Records whose `Owes` is not empty (what a crash left for the relay)."""

    def delete_task_items(self, task_id: str) -> int:
        """Remove every record of a task (every generation): retention. How many went."""

    def close(self) -> None: ...


def check_next_version(record: ItemRecord, expected_version: int) -> None:
    if record.Version != expected_version + 1:
        raise ValueError(f"item record Version must be {expected_version + 1}, not {record.Version}")
