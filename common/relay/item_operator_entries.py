"""The item relay's part for the entries an operator's action adds to a step over records
(docs/design/item-records.md, "What still holds" and "Hold and redrive"): resume, retry-rollback
or compensate, and redrive. A mixin of common.relay.items.ItemRelay, whose reads, changes and
settling it uses; kept apart so each file holds one job."""

from __future__ import annotations


from common.engine.changes import (
    compensate_item,
    redrive_item,
    republish_pending,
    retry_item_rollback,
)
from common.engine.document import Task
from common.engine.states import DONE_FORWARD, StepState
from common.engine.views import chain_count, wave_chains
from common.relay.item_relay_part import RelayPart


def rolling_back(task: Task, cursor: int) -> bool:
    step = task.Steps[cursor]
    return step.State is StepState.ROLLING_BACK and step.ItemsOpen


class OperatorEntries(RelayPart):
    def _resume(self, task: Task, cursor: int) -> None:
        """After a pause: a dispatch nobody claimed goes out again now, and each chain with no
        item in flight starts its next waiting item once the one before it is done."""
        if task.Paused is not None:
            return  # paused again since: the next resume's entry does it
        chains, busy = chain_count(task, cursor), set()
        for record in self._look.pages(task, cursor, [StepState.RUNNING]):
            busy.add(record.Item % chains)
            republished = self._change(record, lambda r: republish_pending(r, task, self._timing()))
            if republished is not None:
                self._publish_item(republished)
        residues = wave_chains(task, cursor, chains)  # a step in waves: the open wave's chains only
        for residue in residues if residues is not None else range(min(chains, task.Steps[cursor].ItemCount or 0)):
            if residue in busy:
                continue
            found = self._items.page_items(task.TaskId, task.Generation, cursor, limit=1, states=[StepState.WAITING],
                                           modulus=chains, residue=residue)  # fmt: skip
            if not found:
                continue
            before = found[0].Item - chains
            previous = self._items.get_item(task.TaskId, task.Generation, cursor, before) if before >= 0 else None
            # A tolerated predecessor (failed within the budget, rolled back on its own) is done
            # too: its chain goes on, as its own decision starts its successor (a wave's opening
            # starts here the successor that decision could not start past the wave's end).
            if before < 0 or (previous is not None and (previous.State in DONE_FORWARD or previous.Tolerated)):
                self._start_next(task, found[0])

    def _redrive(self, task: Task, cursor: int, body: dict) -> None:
        """An operator redrove the held step: each failed item is dispatched again (a new attempt,
        its chain going on from it), then what a resume does: the pending dispatches go out again
        and each idle chain starts its next waiting item. Applied again, it finds the failed items
        running already (refused) and the chains going."""
        if task.Paused is not None or task.Held is not None:
            return  # held (or paused) again since: the next redrive's entry does it
        for record in list(self._look.pages(task, cursor, [StepState.FAILED])):
            redriven = self._change(record, lambda r: redrive_item(r, task, body["Actor"], body["Reason"],
                                                                   self._timing(), self._ids))
            if redriven is not None:
                self._publish_item(redriven)
        self._resume(task, cursor)
        self.check_settled(task.TaskId, cursor)

    def _reopen_rollbacks(self, task: Task, cursor: int, body: dict, reopen: str) -> None:
        """An operator retried (or compensated) the step's failed item rollbacks: each is
        dispatched again (or compensated, its chain going on), and the chains the failure held
        back start their next applied item; the step settles as usual.

        Applied again (a redelivery, the sweeper repeating it), the entry leaves alone every item
        it retried or compensated, and every item whose rollback began after it (each carries
        the reopen it began under): one that failed since stays failed, as after the document's
        own retry, and no new rollback starts while one has failed
        (docs/design/graph-and-routing.md, "Backward")."""
        step = task.Steps[cursor]
        if not rolling_back(task, cursor) or step.ItemsReopen not in (None, reopen):
            return  # the step's rollback concluded since, or a later reopen took over from this one
        actor, reason, chains = body["Actor"], body["Reason"], chain_count(task, cursor)
        seen, compensated = set(), []
        for record in list(self._look.pages(task, cursor, [StepState.ROLLBACK_FAILED])):
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
        if not self._look.any(task, cursor, [StepState.ROLLBACK_FAILED]):  # failed again since: none starts
            self._start_idle_chains(task, cursor, held=seen)
        self.check_settled(task.TaskId, cursor)
