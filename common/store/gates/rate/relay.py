"""Flushing `rate_take` (docs/design/rates.md, "How a wait is woken"): take a start slot of the
task's rate key in the rate table, then tell the task. A slot: `rate_taken`, which dispatches its
ready roots. None free: `rate_deferred`, whose new entry is due when the next slot frees; the
process that wrote it sets a timer for it, and the sweeper's relay flushes it if that process died.

Idempotent: the table gives a member its own slot back, and a task that no longer waits refuses
the change, so the relay may repeat an entry after a crash and no task starts twice. A task that
waits holds nothing in the table: a cancelled one leaves nothing to reclaim.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

import structlog

from common.engine.changes import (
    Full, Refusal, Timing, member_of, rate_deferred, rate_taken, unit_rate_deferred, unit_rate_taken,
)
from common.engine.codes import OutboxKind, WaitKind
from common.engine.document import OutboxEntry, Task
from common.engine.outbox import body_of
from common.engine.states import RunState
from common.engine.views import per_text
from common.errors import StoreError
from common.store.gates.rate.table import RateTable, open_rate_store_for
from common.store.tasks.mutate import mutate
from common.store.tasks.port import TaskStore

if TYPE_CHECKING:  # the rate gate's own body; body_of reads an entry as one
    from common.engine.gates.rate.bodies import RateTakeBody

log = structlog.get_logger(__name__)


class RateRelay:
    def __init__(self, store: TaskStore, timing: Callable[[], Timing], flush: Callable[[Task], None],
                 table: RateTable | None = None):
        self._store = store
        self._timing = timing
        self._flush = flush  # publishes what the change put in the task's outbox (its steps, its next ask)
        self._table = table

    @property
    def table(self) -> RateTable:
        if self._table is None:  # opened on first use: most processes never see a rate
            self._table = RateTable(open_rate_store_for(self._store), clock=lambda: self._timing().now)
        return self._table

    def handlers(self) -> dict[OutboxKind, Callable[[str, OutboxEntry], None]]:
        """This relay's rows of the flushers' table (common.engine.outbox.FLUSHERS)."""
        return {OutboxKind.RATE_TAKE: self._take}

    def apply(self, task_id: str, entry: OutboxEntry) -> bool:
        """Apply one entry; False when a store failed (the entry stays for the relay)."""
        handler = self.handlers().get(entry.Kind)
        if handler is None:
            log.error("unknown rate entry kind; dropped", task_id=task_id, kind=entry.Kind)
            return True
        try:
            handler(task_id, entry)
        except StoreError as exc:
            log.warning("rate entry not applied; the outbox relay will retry", task_id=task_id,
                        kind=entry.Kind, error=str(exc))
            return False
        return True

    def _take(self, task_id: str, entry: OutboxEntry) -> None:
        body: RateTakeBody = body_of(entry.Kind, entry.Body)
        if body.DispatchId is not None:
            self._take_for_run(task_id, body, body.DispatchId)
            return
        task = self._store.get(task_id)
        if task is None or task.Generation != body.Generation or task.Rate is None or task.Rate.Key != body.Key:
            return  # gone, retried, or asks for another key: a relay's late repeat
        if task.WaitingFor is None or task.WaitingFor.Kind is not WaitKind.RATE:
            return  # started or ended already
        member = member_of(task_id, body.Generation)
        outcome = self.table.take(body.Key, member, limit=body.Limit, per=body.Per)
        timing = self._timing()
        if isinstance(outcome, Full):
            changed = mutate(self._store, task_id, lambda t: rate_deferred(t, body.Key, outcome.next_at, timing.now))
            log.info("rate full; asks again when a slot frees", task_id=task_id, key=body.Key, limit=body.Limit,
                     per=per_text(body.Per), next_at=outcome.next_at)
        else:
            changed = mutate(self._store, task_id, lambda t: rate_taken(t, body.Key, outcome.at, timing))
            if not isinstance(changed, Refusal):
                log.info("rate slot taken", task_id=task_id, key=body.Key, at=outcome.at)
        if not isinstance(changed, Refusal):
            self._flush(changed)

    def _take_for_run(self, task_id: str, body: RateTakeBody, dispatch_id: str) -> None:
        """A step's rate: the slot's member is the run's dispatch, so each attempt takes one."""
        task = self._store.get(task_id)
        run = task.run(dispatch_id) if task is not None else None
        if run is None or run.State is not RunState.WAITING_RATE:
            return  # published, withdrawn or gone already: a relay's late repeat
        outcome = self.table.take(body.Key, dispatch_id, limit=body.Limit, per=body.Per)
        timing = self._timing()
        if isinstance(outcome, Full):
            changed = mutate(self._store, task_id, lambda t: unit_rate_deferred(
                t, dispatch_id, body.Key, body.Limit, body.Per, outcome.next_at))
        else:
            changed = mutate(self._store, task_id, lambda t: unit_rate_taken(t, dispatch_id, body.Key, outcome.at, timing))
        log.info("step rate asked", task_id=task_id, step=run.Cursor, attempt=run.Attempt, key=body.Key,
                 taken=not isinstance(outcome, Full))
        if not isinstance(changed, Refusal):
            self._flush(changed)

    def close(self) -> None:
        if self._table is not None:
            self._table.close()
