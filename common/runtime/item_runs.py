"""A module's side of a step over item records (docs/design/item-records.md): the claim, the outcome
and the release of an item's run are compare-and-sets on the item's record; the task document is
read (parameters, status), never written here. What a record's change owes its step (the next item
of its chain, the step's end, the task going backward) is applied at once by the item relay
(common.relay.items), and by the sweeper's relay after a crash.
"""

from __future__ import annotations

from collections.abc import Callable

import structlog

from common.engine.document import ItemRecord, StepMessage, Task
from common.engine.views import going_forward, keeps_records
from common.engine.changes import (
    AttemptResult,
    Refusal,
    Timing,
    cancel_item,
    claim_item,
    claimed_releasing,
    finish_item_attempt,
    hold_item,
    new_id,
    release_item,
)
from common.engine.states import FINAL_STATUSES, Phase, RunState
from common.errors import StoreError
from common.relay.outbox import OutboxPublisher
from common.store.tasks.port import TaskStore
from common.store.retry import compare_and_set_loop
from common.store.tasks.reads import TaskReads

log = structlog.get_logger(__name__)
Change = Callable[[ItemRecord], "ItemRecord | Refusal"]


def names_record(task: Task, message: StepMessage) -> bool:
    """Whether `message` names an item whose run lives in the item's record."""
    return message.Item is not None and 0 <= message.Cursor < len(task.Steps) and keeps_records(task.Steps[message.Cursor])


def record_key(record: ItemRecord) -> tuple[int, int, int]:
    """What a lease needs to find the record again: (generation, cursor, item)."""
    return record.Generation, record.Cursor, record.Item


class ItemRuns:
    def __init__(self, tasks: TaskStore, publisher: OutboxPublisher, owner: str):
        self.reads = TaskReads(tasks)  # the task, parsed again only when it changed: read, never changed
        self._publisher = publisher
        self._items = publisher.item_store
        self._owner = owner

    def claim(self, task: Task, message: StepMessage, timing: Timing,
              undrain: Callable[[], tuple[str, str] | None] = lambda: None) -> ItemRecord | Refusal:
        """PENDING -> RUNNING on the record. A normal run of a task gone backward is withdrawn
        (cancelled: it never ran) instead; one of a paused task stays pending for later. A run a
        drain held records who undrained the module (`undrain`: who and why) as it goes."""
        assert message.Item is not None
        record = self._items.get_item(task.TaskId, task.Generation, message.Cursor, message.Item)
        if record is None:
            return Refusal("no such item record (the task was retried since)")
        claim = claimed_releasing(lambda r: claim_item(r, task, message.DispatchId, self._owner, timing), undrain,
                                  timing.now)
        claimed = self._change(record, claim)
        if isinstance(claimed, ItemRecord):
            return claimed
        going_back = task.TaskStatus not in FINAL_STATUSES and not going_forward(task)
        if message.Type is Phase.NORMAL and going_back:
            cancelled = self._change(record, lambda r: cancel_item(r, task, timing))
            if isinstance(cancelled, ItemRecord):
                self._publisher.items.apply_owes(cancelled)  # the step may be settled now
        return claimed

    def hold(self, task: Task, message: StepMessage, module: str, actor: str, reason: str,
             timing: Timing) -> ItemRecord | Refusal:
        """The item's delivery reached a drained module: its run is held on its record."""
        assert message.Item is not None
        record = self._items.get_item(task.TaskId, task.Generation, message.Cursor, message.Item)
        if record is None:
            return Refusal("no such item record (the task was retried since)")
        return self._change(record, lambda r: hold_item(r, task, message, module, actor, reason, timing))

    def claimed_after_error(self, task: Task, message: StepMessage, timing: Timing) -> ItemRecord | None:
        """After a StoreError during the claim: the record if OUR claim was written after all
        (this owner, this dispatch, the lease deadline this very claim wrote)."""
        assert message.Item is not None
        try:
            record = self._items.get_item(task.TaskId, task.Generation, message.Cursor, message.Item)
        except StoreError:
            return None
        run = record.Run if record is not None else None
        ours = (run is not None and run.DispatchId == message.DispatchId and run.State is RunState.RUNNING
                and run.Owner == self._owner and run.Deadline == timing.now + timing.lease)
        return record if ours else None

    def commit(self, claimed: ItemRecord, task: Task, message: StepMessage, result: AttemptResult,
               timing: Timing) -> ItemRecord | Refusal:
        """Record how the attempt ended on the record (a retry, a check again, or its end and
        what that owes the step). StoreError and StoreRefused reach the caller."""
        return self._change(claimed, lambda r: finish_item_attempt(r, task, message.DispatchId, self._owner, result,
                                                                   timing, new_id))

    def release(self, task: Task, message: StepMessage, timing: Timing) -> ItemRecord | Refusal:
        """Shutdown stopped the command: the run is dispatched again (or, going backward, ends)."""
        assert message.Item is not None
        record = self._items.get_item(task.TaskId, task.Generation, message.Cursor, message.Item)
        if record is None:
            return Refusal("no such item record")
        current = self.task_now(task)
        return self._change(record, lambda r: release_item(r, current, message.DispatchId, self._owner, timing, new_id))

    def publish(self, record: ItemRecord) -> None:
        """What the written record owes the broker (its next run) and its step (apply_owes)."""
        self._publisher.item_outbox.flush(record)
        if record.Owes:
            self._publisher.items.apply_owes(record)

    def task_now(self, task: Task) -> Task:
        """The task as stored now: an outcome or a release decides on whether the task still
        goes forward (it may have turned back while the command ran), not on the claim's read."""
        stored = self.reads.get(task.TaskId)
        return stored if stored is not None else task

    def _change(self, record: ItemRecord, change: Change) -> ItemRecord | Refusal:
        refusals: list[Refusal] = []

        def decided(current: ItemRecord) -> ItemRecord | None:
            outcome = change(current)
            if isinstance(outcome, Refusal):
                refusals.append(outcome)
                return None
            return outcome

        read = lambda: self._items.get_item(record.TaskId, record.Generation, record.Cursor, record.Item)  # noqa: E731
        written = compare_and_set_loop(record, read=read, change=decided, write=self._items.compare_and_set_item,
                                       what=f"item {record.record_id}")
        if written is not None:
            return written
        return refusals[-1] if refusals else Refusal("the item record is gone")
