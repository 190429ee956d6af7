"""The item relay's part for a step's rollback over item records (docs/design/item-records.md):
its chains undone one item at a time, last applied first within a chain; a chain whose item is
still rolling back (an earlier one, or one failed within the budget and undoing itself as the
task turned backward) is left to that item's end. A mixin of common.relay.items.ItemRelay,
whose reads and writes it uses."""

from __future__ import annotations

from collections.abc import Collection

from common.engine.changes import start_item_rollback
from common.engine.document import ItemRecord, Task
from common.engine.states import APPLIED, StepState
from common.engine.views import chain_count
from common.relay.item_operator_entries import rolling_back
from common.relay.item_relay_part import RelayPart


class RollbackChains(RelayPart):
    def _start_rollbacks(self, task: Task, cursor: int) -> None:
        """The first applied item of each chain starts its rollback; the rest follow their chain.
        Applied again (the sweeper's relay repeating the entry), it starts only what is still owed."""
        if not rolling_back(task, cursor):
            return  # the step's rollback concluded since: a late repeat of the entry
        if not self._look.any(task, cursor, [StepState.ROLLBACK_FAILED]):  # a failed rollback: none starts (4.3)
            self._start_idle_chains(task, cursor)
        self.check_settled(task.TaskId, cursor)  # nothing was applied: done at once

    def _rollback_successor(self, task: Task, record: ItemRecord) -> None:
        if not rolling_back(task, record.Cursor):
            return  # an item tolerated while the step went forward: no chain of rollbacks runs yet
        if self._look.any(task, record.Cursor, [StepState.ROLLBACK_FAILED]):
            # a rollback failed for good: no new rollback starts (docs/design/graph-and-routing.md,
            # "Backward")
            return
        chains = chain_count(task, record.Cursor)
        residue, after = record.Item % chains, record.Item
        if record.Tolerated:
            # A tolerated item undid itself while its chain went on forward, and the step's
            # rollback, begun meanwhile, held the chain for it (_start_idle_chains): the chain's
            # items before it are still applied, so it goes on from the chain's first. Unless the
            # step's rollback started that one already (this record ended before its look): its
            # end goes on with the chain, one item of a chain at a time.
            if self._items.page_items(task.TaskId, task.Generation, record.Cursor, limit=1,
                                      states=[StepState.ROLLING_BACK], modulus=chains, residue=residue):
                return
            after = None
        following = self._items.page_items(task.TaskId, task.Generation, record.Cursor, after=after, limit=1,
                                           states=APPLIED, modulus=chains, residue=residue)
        if following:
            self._roll_back(task, following[0])

    def _start_idle_chains(self, task: Task, cursor: int, held: Collection[int] = ()) -> None:
        """Start the rollback of each chain's first applied item, but in a chain that has an
        item rolling back: that one's end starts the next, one item of a chain at a time. It is
        an earlier item (a repeat of the entry that began the rollback), or a later one failed
        within the step's budget and still undoing itself as the task turned backward (its end
        goes on from the chain's first applied item). The applied items are read before the
        ones rolling back, so an item ending its rollback in between has its successor either
        still applied (the first applied, which its own notice starts too: the same
        compare-and-set, done once) or rolling back already (seen by the later read). `held`:
        chains left alone."""
        chains, first = chain_count(task, cursor), {}
        for record in self._look.pages(task, cursor, APPLIED):
            first.setdefault(record.Item % chains, record)
            if len(first) == chains:
                break
        for record in self._look.pages(task, cursor, [StepState.ROLLING_BACK]):
            first.pop(record.Item % chains, None)
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
        if self._look.any(task, record.Cursor, [StepState.ROLLBACK_FAILED]):
            self._take_back(started, "another item's rollback failed")
            return
        self._publish_item(started)
