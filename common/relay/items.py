"""Carrying out what a step over item records owes (docs/design/item-records.md).

Two sources: the task's outbox entries that open a step's items, withdraw their unclaimed runs
or start their rollback (`apply`, like common.relay.child_relay), and an item record's `Owes`
once its change is written (`apply_owes`): start the next item of its chain, send the task
backward, start the next rollback of its chain, and ask whether the step is done. Every one is
idempotent, so the committing process applies them at once and the sweeper repeats whatever a
crash left (records with `Owes`, entries past the relay grace).
"""

from __future__ import annotations

from collections.abc import Callable
from enum import Enum

import structlog

from common.engine.document import (
    OWES_FAILED,
    OWES_ROLLBACK_SUCCESSOR,
    OWES_SETTLED,
    OWES_SUCCESSOR,
    OWES_TOLERATE,
    ItemRecord,
    OutboxEntry,
    Task,
)
from common.engine.codes import OutboxKind
from common.engine.changes import (
    IdFactory,
    Refusal,
    Timing,
    UNACCOUNTED,
    applied_owes_done,
    cancel_item,
    item_failed,
    items_settled,
    new_id,
    new_records,
    none_if_refused,
    start_successor,
    stop_item,
    take_budget_place,
    tolerate_item,
    withdraw_unpublished,
)
from common.engine.views import chain_count, opens_forward
from common.engine.states import FINAL_STATUSES, Phase, RunState, StepState
from common.engine.views import budget_place
from common.relay.item_looks import ItemLooks
from common.relay.item_operator_entries import OperatorEntries
from common.relay.item_waves import WaveEntries
from common.relay.item_pages import SourcePages
from common.relay.item_rollbacks import RollbackChains
from common.store.items.port import ItemStore
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore
from common.store.tasks.reads import TaskReads
from common.errors import StoreError
from common.store.retry import compare_and_set_loop

log = structlog.get_logger(__name__)
INSERT_BATCH = 500  # records per insert when a step opens
SETTLE_TRIES = 50  # each try is a few indexed look-ups; only a task changing all the time loses this often


class _Settling(Enum):
    MOVED = "moved"  # the task moved since the step's items were looked up: look again


MOVED = _Settling.MOVED


class ItemRelay(OperatorEntries, WaveEntries, SourcePages, RollbackChains):
    def __init__(self, tasks: TaskStore, items: ItemStore, timing: Callable[[], Timing],
                 flush_task: Callable[[Task], None], publish_item: Callable[[ItemRecord], None],
                 ids: IdFactory = new_id, finished: Callable[[Task], None] | None = None):
        self._tasks = tasks
        self._reads = TaskReads(tasks)  # read-only uses: parsed again only when the task changed
        self._items = items
        self._look = ItemLooks(items)  # what it reads of a step's records
        self._timing = timing
        self._flush_task = flush_task  # publishes what a task change here put in its outbox
        self._publish_item = publish_item  # publishes a record's fresh dispatch
        self._ids = ids
        self._finished = finished  # told of each task a write here ended (the tasks_finished metric)

    # --- the task's entries ------------------------------------------------------------------

    def apply(self, task_id: str, entry: OutboxEntry) -> bool:
        """Apply one of the task's item entries; True once done (the caller marks it sent)."""
        task = self._reads.get(task_id)
        body = entry.Body
        if task is None or body.get("Generation") != task.Generation:
            return True  # the task is gone, or retried since: the entry is moot
        handlers = {  # this relay's rows of the flushers' table (common.engine.outbox.FLUSHERS)
            OutboxKind.OPEN_ITEMS: lambda cursor: self._open(task, cursor, body["Values"], body.get("From") or 0,
                                                             bool(body.get("Last"))),
            OutboxKind.CANCEL_ITEMS: lambda cursor: self._cancel(task, cursor, body.get("Stop")),
            OutboxKind.ROLLBACK_ITEMS: lambda cursor: self._start_rollbacks(task, cursor),
            OutboxKind.RESUME_ITEMS: lambda cursor: self._resume(task, cursor),
            OutboxKind.REOPEN_ROLLBACKS: lambda cursor: self._reopen_rollbacks(task, cursor, body, entry.DispatchId),
            OutboxKind.REDRIVE_ITEMS: lambda cursor: self._redrive(task, cursor, body),
            OutboxKind.WAVE_GATE: lambda cursor: self._wave_gate(task, cursor, body),
        }
        if entry.Kind not in handlers:
            raise ValueError(f"not an item entry: {entry.Kind}")
        handlers[entry.Kind](body["Cursor"])
        return True

    def _open(self, task: Task, cursor: int, values: list, first: int = 0, last: bool = False) -> None:
        """Insert the step's records (`first`: the index of the first, a page of a source's), then
        dispatch the chain heads among them; a source's last page asks whether the step settled."""
        records = new_records(task, cursor, values, self._timing(), self._ids, "relay", first)
        for start in range(0, len(records), INSERT_BATCH):
            self._items.insert_items(records[start:start + INSERT_BATCH])
        # The task read before the insert may have gone backward since, its entry withdrawing
        # unclaimed runs finding none of these records: read it again after writing them. Gone
        # backward, the heads this wrote (not published yet) wait again, and the step settles.
        now = self._reads.get(task.TaskId)
        if now is None or now.Generation != task.Generation:
            return  # retried since: these records are never read again
        if not opens_forward(now, cursor):
            for built in records[:chain_count(task, cursor)]:
                if built.Run is not None:  # by its dispatch id: another writer's stored one is not ours
                    self._change(built, lambda r, d=built.Run.DispatchId: withdraw_unpublished(r, d))
            self._cancel(now, cursor)
            return
        # Publish what is stored, not what was built: a repeat finds the first writer's dispatches.
        heads = chain_count(task, cursor) - first
        if heads > 0:
            for record in self._items.page_items(task.TaskId, task.Generation, cursor, limit=heads,
                                                 states=[StepState.RUNNING], **({"after": first - 1} if first else {})):
                self._publish_item(record)
        if first:
            self._start_page_chains(now, cursor, first, len(values))
        if last:
            self.check_settled(task.TaskId, cursor)
        elif first and now.Steps[cursor].Wave is not None:
            self.check_wave_ended(task.TaskId, cursor)  # a page that completes a wave whose items ended

    def _cancel(self, task: Task, cursor: int, stop: dict | None = None) -> None:
        """Withdraw the step's unclaimed normal runs; `stop` (an operator's cancel that stops
        running runs: its actor and reason): stop the claimed ones too."""
        for record in list(self._look.pages(task, cursor, [StepState.RUNNING])):
            run = record.Run
            if run is None or run.Phase is not Phase.NORMAL:
                continue
            if run.State is RunState.PENDING:
                changed = self._change(record, lambda r: cancel_item(r, task, self._timing()))
            elif stop is not None:
                changed = self._change(record, lambda r: stop_item(r, stop["Actor"], stop["Reason"], self._timing()))
            else:
                continue
            if changed is not None:
                self.apply_owes(changed, check_settled=False)
        self.check_settled(task.TaskId, cursor)

    # --- an outside change of one record --------------------------------------------------------

    def change_item(self, record: ItemRecord, change: Callable[[ItemRecord], ItemRecord | Refusal]) -> ItemRecord | Refusal:
        """Write `change` of the record (an operator's), re-reading on a lost race, then publish
        its dispatch and settle what it owes, as for an item's outcome. The Refusal when the
        record as read refuses it."""
        for _ in range(20):
            current = self._items.get_item(record.TaskId, record.Generation, record.Cursor, record.Item)
            if current is None:
                return Refusal("the item has no record")
            new = change(current)
            if isinstance(new, Refusal):
                return new
            new.Version = current.Version + 1
            if self._items.compare_and_set_item(new, current.Version):
                self._publish_item(new)
                self.apply_owes(new)
                return new
        return Refusal("the item kept changing: try again")

    # --- what a record owes ------------------------------------------------------------------

    def apply_owes(self, record: ItemRecord, *, check_settled: bool = True) -> None:
        """Apply, in order, what `record` (as written) owes its step, dropping each once done."""
        task = self._reads.get(record.TaskId)
        if task is None or task.Generation != record.Generation:
            return
        for owes in list(record.Owes):
            if owes == OWES_SUCCESSOR and task.Paused is not None and self._waiting_successor(task, record):
                continue  # a pause holds the chain: owed until the task resumes (the sweeper asks again)
            if owes == OWES_TOLERATE:
                decided = self._tolerate(task, record)
                if decided is not None:  # what the decision owes, applied at once
                    self.apply_owes(decided, check_settled=check_settled)
                    return
            elif owes == OWES_SUCCESSOR:
                self._successor(task, record)
            elif owes == OWES_FAILED:
                message = record.RollbackMessage if record.State is StepState.ROLLBACK_FAILED else record.Message
                changed = self._write_task(record.TaskId,
                                           lambda t: item_failed(t, record.Cursor, record.Item, message,
                                                                 self._timing(), "relay", self._ids))
                if not isinstance(changed, Refusal):
                    self._flush_task(changed)
                    task = changed
            elif owes == OWES_ROLLBACK_SUCCESSOR:
                self._rollback_successor(task, record)
            elif owes == OWES_SETTLED and check_settled:
                self.check_settled(record.TaskId, record.Cursor)
            done = self._change(record, lambda r, o=owes: applied_owes_done(r, o))
            record = done or record

    def _tolerate(self, task: Task, record: ItemRecord) -> ItemRecord | None:
        """Take the item a place in its step's budget (one compare-and-set of the task: items
        failing together are decided one at a time; a repeat finds the place taken and counts
        nothing twice), then decide on the record: its own rollback, or the task backward."""
        stored = self._items.get_item(record.TaskId, record.Generation, record.Cursor, record.Item)
        if stored is None or OWES_TOLERATE not in stored.Owes:
            return None  # decided already (a repeat, from the record as it was)
        if stored.State is StepState.FAILED and stored.Run is None:
            taken = self._write_task(task.TaskId, lambda t: take_budget_place(t, record.Cursor, record.Item))
            if isinstance(taken, Refusal):
                now = self._reads.get(task.TaskId)
                if now is None or now.Generation != task.Generation:
                    return None  # retried since: the record is never read again
                task = now
            else:
                task = taken
        place = budget_place(task, record.Cursor, record.Item)
        decided = self._change(stored, lambda r: tolerate_item(r, task, place, self._timing(), self._ids, "relay"))
        if decided is not None and decided.Tolerated and decided.Run is not None:
            log.info("item failure tolerated", task_id=task.TaskId, step=record.Cursor, item=record.Item,
                     phase=decided.Run.Phase.label, attempt=record.Attempts, place=place)
            self._publish_item(decided)
        return decided

    def _waiting_successor(self, task: Task, record: ItemRecord) -> bool:
        following = record.Item + chain_count(task, record.Cursor)
        if following >= (task.Steps[record.Cursor].ItemCount or 0):
            return False
        successor = self._items.get_item(task.TaskId, task.Generation, record.Cursor, following)
        return successor is not None and successor.State is StepState.WAITING

    def _successor(self, task: Task, record: ItemRecord) -> None:
        following = record.Item + chain_count(task, record.Cursor)
        if following >= (task.Steps[record.Cursor].ItemCount or 0):
            return
        successor = self._items.get_item(task.TaskId, task.Generation, record.Cursor, following)
        if successor is not None:
            self._start_next(task, successor)

    def _start_next(self, task: Task, record: ItemRecord) -> None:
        """Start a chain's waiting item, decided on `task` as read before. The task may have gone
        backward since, and the step ended without this item (its ask saw nothing running): so
        read the task again after writing the start, as the turn back wrote the task before it
        looked for running items; gone backward, the start (not published) is taken back."""
        started = self._change(record, lambda r: start_successor(r, task, self._timing(), self._ids, "relay"))
        if started is None:
            return
        now = self._reads.get(task.TaskId)
        if now is not None and now.Generation == task.Generation and not opens_forward(now, record.Cursor):
            self._take_back(started, "the task went backward")
            return
        self._publish_item(started)

    def _take_back(self, started: ItemRecord, why: str) -> None:
        """Take back a start not published yet, then ask whether the step is done: the ask that
        raced it may have seen this item busy and waited for it."""
        assert started.Run is not None
        run = started.Run
        if self._change(started, lambda r: withdraw_unpublished(r, run.DispatchId)) is not None:
            log.info("item start taken back", reason=why, task_id=started.TaskId, step=started.Cursor,
                     item=started.Item, phase=run.Phase.label, attempt=run.Attempt)
        self.check_settled(started.TaskId, started.Cursor)

    # --- the step's end ----------------------------------------------------------------------

    def check_settled(self, task_id: str, cursor: int) -> None:
        """Conclude the step's current direction once no item has work left in it. Each item
        writes its record before it asks, so the last of two items ending together sees both.

        The conclusion is written only on the very version of the task the look-ups were decided
        on, and decided again when the task moved: two asks overlap, and the later one may have
        concluded the forward part and started the step's rollback in between; the earlier one's
        "no item running" must not then conclude that rollback while its items still roll back."""
        self.check_wave_ended(task_id, cursor)  # a step with waves: its open wave may have ended
        for _ in range(SETTLE_TRIES):
            task = self._reads.get(task_id)
            if task is None or not task.Steps[cursor].ItemsOpen:
                return
            settled = self._look.settled(task, cursor)
            if settled is None:
                return
            counts = self._items.count_by_state(task_id, task.Generation, cursor)
            attempts = self._items.attempt_sums(task_id, task.Generation, cursor)

            def conclude(current: Task, seen: Task = task, failure=settled[0]) -> Task | Refusal:
                if current.Version != seen.Version:
                    return Refusal("the task moved since the step's items were looked up", code=MOVED)
                return items_settled(current, cursor, counts, self._timing(), "relay",
                                     lambda: self._items.outputs(task_id, seen.Generation, cursor), failure, self._ids,
                                     attempts)

            changed = self._write_task(task_id, conclude)
            if not isinstance(changed, Refusal):
                self._flush_task(changed)
                return
            if changed.code is UNACCOUNTED:
                # Its looks found nothing open, yet an item is neither done nor failed: the step
                # stays open for that item's own end to settle it, never concluded without it.
                log.error("step settle refused: items unaccounted for", task_id=task_id, step=cursor,
                          phase="normal", attempt=None, reason=changed.reason)
            if changed.code is not MOVED:
                return
        raise StoreError(f"task {task_id}: step {cursor} kept changing while its items settled")

    # --- the parts ---------------------------------------------------------------------------

    def _write_task(self, task_id: str, change: Callable[[Task], Task | Refusal]) -> Task | Refusal:
        """One change of the task; a write that moved it into a final status is told to
        `finished`, once: a repeat of the change is refused or finds the task final already."""
        before: list[bool] = []

        def noted(current: Task) -> Task | Refusal:
            before[:] = [current.TaskStatus in FINAL_STATUSES]  # read first: the change may edit it in place
            return change(current)

        changed = mutate(self._tasks, task_id, noted)
        if not isinstance(changed, Refusal) and changed.TaskStatus in FINAL_STATUSES and not before[0]:
            if self._finished is not None:
                self._finished(changed)
        return changed

    def _change(self, record: ItemRecord, change: Callable[[ItemRecord], ItemRecord | Refusal]) -> ItemRecord | None:
        return compare_and_set_loop(
            record,
            read=lambda: self._items.get_item(record.TaskId, record.Generation, record.Cursor, record.Item),
            change=none_if_refused(change),
            write=self._items.compare_and_set_item,
            what=f"item {record.record_id}",
        )
