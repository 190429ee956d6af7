"""Carrying out what a step over item records owes (DESIGN.md sec. 12).

Two sources: the task's outbox entries that open a step's items, withdraw their unclaimed runs
or start their rollback (`apply`, like common.relay.child_relay), and an item record's `Owes`
once its change is written (`apply_owes`): start the next item of its chain, send the task
backward, start the next rollback of its chain, and ask whether the step is done. Every one is
idempotent, so the committing process applies them at once and the sweeper repeats whatever a
crash left (records with `Owes`, entries past the relay grace).
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Iterator

import structlog

from common.engine.document import OutboxEntry, Task
from common.engine.item_record import (
    OWES_FAILED,
    OWES_ROLLBACK_SUCCESSOR,
    OWES_SETTLED,
    OWES_SUCCESSOR,
    ItemRecord,
)
from common.engine.kinds.fan_out import CANCEL_ITEMS, OPEN_ITEMS, REOPEN_ROLLBACKS, RESUME_ITEMS, ROLLBACK_ITEMS
from common.engine.kinds.item_actions import compensate_item, republish_pending, retry_item_rollback, stop_item
from common.engine.kinds.fan_out_transitions import item_failed, items_settled
from common.engine.kinds.item_changes import (
    APPLIED,
    applied_owes_done,
    cancel_item,
    chain_count,
    new_records,
    opens_forward,
    start_item_rollback,
    start_successor,
    withdraw_unpublished,
)
from common.engine.states import DONE_FORWARD, FINAL_STATUSES, Phase, RunState, StepState, TaskStatus
from common.engine.units import IdFactory, Refusal, Timing, new_id
from common.store.items_port import ItemStore
from common.store.mutate import mutate
from common.store.port import TaskStore
from common.store.task_reads import TaskReads
from common.engine.units import none_if_refused
from common.errors import StoreError
from common.store.retry import compare_and_set_loop

log = structlog.get_logger(__name__)
INSERT_BATCH = 500  # records per insert when a step opens
PAGE = 500
FORWARD_OPEN = (StepState.WAITING, StepState.RUNNING)  # in this order: see check_settled
SETTLE_TRIES = 50  # each try is a few indexed look-ups; only a task changing all the time loses this often
MOVED = "the task moved since the step's items were looked up"


def _rolling_back(task: Task, cursor: int) -> bool:
    step = task.Steps[cursor]
    return step.State is StepState.ROLLING_BACK and step.ItemsOpen


class ItemRelay:
    def __init__(self, tasks: TaskStore, items: ItemStore, timing: Callable[[], Timing],
                 flush_task: Callable[[Task], None], publish_item: Callable[[ItemRecord], None],
                 ids: IdFactory = new_id, finished: Callable[[Task], None] | None = None):
        self._tasks = tasks
        self._reads = TaskReads(tasks)  # read-only uses: parsed again only when the task changed
        self._items = items
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
            OPEN_ITEMS: lambda cursor: self._open(task, cursor, body["Values"]),
            CANCEL_ITEMS: lambda cursor: self._cancel(task, cursor, body.get("Stop")),
            ROLLBACK_ITEMS: lambda cursor: self._start_rollbacks(task, cursor),
            RESUME_ITEMS: lambda cursor: self._resume(task, cursor),
            REOPEN_ROLLBACKS: lambda cursor: self._reopen_rollbacks(task, cursor, body, entry.DispatchId),
        }
        if entry.Kind not in handlers:
            raise ValueError(f"not an item entry: {entry.Kind}")
        handlers[entry.Kind](body["Cursor"])
        return True

    def _open(self, task: Task, cursor: int, values: list) -> None:
        records = new_records(task, cursor, values, self._timing(), self._ids, "relay")
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
        for record in self._items.page_items(task.TaskId, task.Generation, cursor, limit=chain_count(task, cursor),
                                             states=[StepState.RUNNING]):
            self._publish_item(record)

    def _cancel(self, task: Task, cursor: int, stop: dict | None = None) -> None:
        """Withdraw the step's unclaimed normal runs; `stop` (an operator's cancel that stops
        running runs: its actor and reason): stop the claimed ones too."""
        for record in list(self._pages(task, cursor, [StepState.RUNNING])):
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

    def _start_rollbacks(self, task: Task, cursor: int) -> None:
        """The first applied item of each chain starts its rollback; the rest follow their chain.
        Applied again (the sweeper's relay repeating the entry), it starts only what is still owed."""
        if not _rolling_back(task, cursor):
            return  # the step's rollback concluded since: a late repeat of the entry
        if not self._any(task, cursor, [StepState.ROLLBACK_FAILED]):  # a failed rollback: none starts (4.3)
            self._start_idle_chains(task, cursor)
        self.check_settled(task.TaskId, cursor)  # nothing was applied: done at once

    def _resume(self, task: Task, cursor: int) -> None:
        """After a pause: a dispatch nobody claimed goes out again now, and each chain with no
        item in flight starts its next waiting item once the one before it is done."""
        if task.Paused is not None:
            return  # paused again since: the next resume's entry does it
        chains, busy = chain_count(task, cursor), set()
        for record in self._pages(task, cursor, [StepState.RUNNING]):
            busy.add(record.Item % chains)
            republished = self._change(record, lambda r: republish_pending(r, task, self._timing()))
            if republished is not None:
                self._publish_item(republished)
        for residue in range(min(chains, task.Steps[cursor].ItemCount or 0)):
            if residue in busy:
                continue
            found = self._items.page_items(task.TaskId, task.Generation, cursor, limit=1, states=[StepState.WAITING],
                                           modulus=chains, residue=residue)  # fmt: skip
            if not found:
                continue
            before = found[0].Item - chains
            previous = self._items.get_item(task.TaskId, task.Generation, cursor, before) if before >= 0 else None
            if before < 0 or (previous is not None and previous.State in DONE_FORWARD):
                self._start_next(task, found[0])

    def _reopen_rollbacks(self, task: Task, cursor: int, body: dict, reopen: str) -> None:
        """An operator retried (or compensated) the step's failed item rollbacks: each is
        dispatched again (or compensated, its chain going on), and the chains the failure held
        back start their next applied item; the step settles as usual.

        Applied again (a redelivery, the sweeper repeating it), the entry leaves alone every item
        it retried or compensated, and every item whose rollback began after it (each carries
        the reopen it began under): one that failed since stays failed, as after the document's
        own retry, and no new rollback starts while one has failed (DESIGN.md 4.3)."""
        step = task.Steps[cursor]
        if not _rolling_back(task, cursor) or step.ItemsReopen not in (None, reopen):
            return  # the step's rollback concluded since, or a later reopen took over from this one
        actor, reason, chains = body["Actor"], body["Reason"], chain_count(task, cursor)
        seen, compensated = set(), []
        for record in list(self._pages(task, cursor, [StepState.ROLLBACK_FAILED])):
            seen.add(record.Item % chains)
            if body["Action"] == "retry":
                retried = self._change(record, lambda r: retry_item_rollback(r, task, actor, reason, self._timing(),
                                                                             self._ids, reopen))  # fmt: skip
                if retried is not None:
                    self._publish_item(retried)
            else:
                done = self._change(record, lambda r: compensate_item(r, actor, reason, self._timing(), reopen))
                compensated += [done] if done is not None else []
        for record in compensated:  # once none is failed any more: a chain goes on only then
            self.apply_owes(record, check_settled=False)
        if not self._any(task, cursor, [StepState.ROLLBACK_FAILED]):  # failed again since: none starts
            self._start_idle_chains(task, cursor, held=seen)
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
            if owes == OWES_SUCCESSOR:
                self._successor(task, record)
            elif owes == OWES_FAILED:
                changed = self._write_task(record.TaskId,
                                           lambda t: item_failed(t, record.Cursor, record.Item, record.Message,
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

    def _rollback_successor(self, task: Task, record: ItemRecord) -> None:
        if self._any(task, record.Cursor, [StepState.ROLLBACK_FAILED]):
            return  # a rollback failed for good: no new rollback starts (DESIGN.md 4.3)
        chains = chain_count(task, record.Cursor)
        following = self._items.page_items(task.TaskId, task.Generation, record.Cursor, after=record.Item, limit=1,
                                           states=APPLIED, modulus=chains, residue=record.Item % chains)
        if following:
            self._roll_back(task, following[0])

    def _start_idle_chains(self, task: Task, cursor: int, held: Collection[int] = ()) -> None:
        """Start the rollback of each chain's first applied item, but in a chain that has an
        earlier item rolling back (a repeat of the entry that began the rollback): that one's end
        starts the next. The applied items are read before the ones rolling back, so an item
        ending its rollback in between has its successor either still applied (the first
        applied, which its own notice starts too: the same compare-and-set, done once) or
        rolling back already (seen by the later read). `held`: chains left alone."""
        chains, first = chain_count(task, cursor), {}
        for record in self._pages(task, cursor, APPLIED):
            first.setdefault(record.Item % chains, record)
            if len(first) == chains:
                break
        for record in self._pages(task, cursor, [StepState.ROLLING_BACK]):
            residue = record.Item % chains
            if residue in first and record.Item < first[residue].Item:
                del first[residue]
        for residue, record in sorted(first.items()):
            if residue not in held:
                self._roll_back(task, record)

    def _roll_back(self, task: Task, record: ItemRecord) -> None:
        """Start an applied item's rollback, unless a rollback failed for good meanwhile. The
        failure's writer wrote its record before it looked for items rolling back; this writes
        its start before it looks for a failure: one of the two sees the other. Seen here, the
        start (not published yet) is taken back and the step asked whether it is done, since the
        failure's own ask may have seen this item rolling back and waited for it."""
        started = self._change(record, lambda r: start_item_rollback(r, task, self._timing(), self._ids, "relay"))
        if started is None:
            return
        if self._any(task, record.Cursor, [StepState.ROLLBACK_FAILED]):
            self._take_back(started, "another item's rollback failed")
            return
        self._publish_item(started)

    # --- the step's end ----------------------------------------------------------------------

    def check_settled(self, task_id: str, cursor: int) -> None:
        """Conclude the step's current direction once no item has work left in it. Each item
        writes its record before it asks, so the last of two items ending together sees both.

        The conclusion is written only on the very version of the task the look-ups were decided
        on, and decided again when the task moved: two asks overlap, and the later one may have
        concluded the forward part and started the step's rollback in between; the earlier one's
        "no item running" must not then conclude that rollback while its items still roll back."""
        for _ in range(SETTLE_TRIES):
            task = self._reads.get(task_id)
            if task is None or not task.Steps[cursor].ItemsOpen:
                return
            settled = self._settled(task, cursor)
            if settled is None:
                return
            counts = self._items.count_by_state(task_id, task.Generation, cursor)

            def conclude(current: Task, seen: Task = task, failure=settled[0]) -> Task | Refusal:
                if current.Version != seen.Version:
                    return Refusal(MOVED)
                return items_settled(current, cursor, counts, self._timing(), "relay",
                                     lambda: self._items.outputs(task_id, seen.Generation, cursor), failure, self._ids)

            changed = self._write_task(task_id, conclude)
            if not isinstance(changed, Refusal):
                self._flush_task(changed)
                return
            if changed.reason != MOVED:
                return
        raise StoreError(f"task {task_id}: step {cursor} kept changing while its items settled")

    def _settled(self, task: Task, cursor: int) -> tuple[tuple[int, str] | None] | None:
        """None while an item has work left in the step's direction; else the first failure of
        that direction (wrapped: None is a failure's absence)."""
        step = task.Steps[cursor]
        # The states are asked in the order an item passes through them (waiting, running; applied,
        # rolling back): an item that moves on between two look-ups is seen by the later one. In
        # the other order an item started in between was missed by both, and the step settled
        # under it (its run dispatched again after the task ended).
        if step.State is StepState.RUNNING:
            going_forward = task.TaskStatus in (TaskStatus.NOT_STARTED, TaskStatus.RUNNING) and task.CancelRequested is None
            if self._any(task, cursor, FORWARD_OPEN if going_forward else [StepState.RUNNING]):
                return None
            return (self._first(task, cursor, StepState.FAILED),)
        failure = self._first(task, cursor, StepState.ROLLBACK_FAILED)
        if failure is None and self._any(task, cursor, APPLIED):
            return None
        if self._any(task, cursor, [StepState.ROLLING_BACK]):
            return None
        return (failure,)

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

    def _any(self, task: Task, cursor: int, states: Collection[StepState]) -> bool:
        return self._items.exists_in_states(task.TaskId, task.Generation, cursor, states)

    def _first(self, task: Task, cursor: int, state: StepState) -> tuple[int, str] | None:
        found = self._items.page_items(task.TaskId, task.Generation, cursor, limit=1, states=[state])
        if not found:
            return None
        record = found[0]
        return record.Item, record.Message if state is StepState.FAILED else record.RollbackMessage

    def _pages(self, task: Task, cursor: int, states: Collection[StepState]) -> Iterator[ItemRecord]:
        after = None
        while True:
            page = self._items.page_items(task.TaskId, task.Generation, cursor, after=after, limit=PAGE, states=states)
            yield from page
            if len(page) < PAGE:
                return
            after = page[-1].Item

    def _change(self, record: ItemRecord, change: Callable[[ItemRecord], ItemRecord | Refusal]) -> ItemRecord | None:
        return compare_and_set_loop(
            record,
            read=lambda: self._items.get_item(record.TaskId, record.Generation, record.Cursor, record.Item),
            change=none_if_refused(change),
            write=self._items.compare_and_set_item,
            what=f"item {record.record_id}",
        )
