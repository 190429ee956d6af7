"""The sweeper's round over item records (docs/design/item-records.md): what a crash leaves behind
in a step over records, healed as the task-document round heals tasks.

- A record whose run passed its deadline: a lapsed lease is a failed attempt (`worker_lost`), a
  dispatch nobody claimed is published again (backing off), a normal one of a task gone backward
  is withdrawn.
- A record that still owes its step something (its writer died before applying it), once it has
  stayed so for the relay grace (common/relay/owes_grace.py).
- A record's dispatch left unpublished past the relay grace.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

import structlog

from common.backoff import retry_delay
from common.engine.document import ItemRecord, Run
from common.engine.changes import MAX_REDISPATCH_BACKOFF, Timing, expire_item, new_id, none_if_refused
from common.engine.states import RunState
from common.relay.outbox import OutboxPublisher
from common.relay.owes_grace import OwesGrace
from common.store.tasks.port import TaskStore
from common.store.retry import compare_and_set_loop

log = structlog.get_logger(__name__)
BATCH = 500


def note_expired(report: Any, task_id: str, run: Run) -> None:
    """Count (and, for a lapsed lease, log) a run the sweeper expired."""
    if run.State is RunState.RUNNING:
        report.leases_lapsed += 1
        log.warning("lease lapsed", task_id=task_id, step=run.Cursor, item=run.Item, phase=run.Phase.label,
                    attempt=run.Attempt, owner=run.Owner)
    else:
        report.redispatched += 1


class ItemSweep:
    def __init__(self, tasks: TaskStore, publisher: OutboxPublisher, lease: float, redeliver_after: float,
                 clock: Callable[[], float], rng: random.Random, guarded: Callable[[Any, Any, Any], None]):
        self._tasks = tasks
        self._publisher = publisher
        self._items = publisher.item_store
        self._lease = lease
        self._redeliver_after = redeliver_after
        self._clock = clock
        self._rng = rng
        self._guarded = guarded  # runs one record's healing; its failure is logged, the batch goes on
        self._owes_grace = OwesGrace()

    def sweep(self, now: float, relay_before: float, report: Any) -> None:
        for record in self._items.due_for_sweep(now, BATCH):
            self._guarded(self._expire, record, report)
        for record in self._owes_grace.due(self._items.owing(BATCH), now, relay_before):
            self._guarded(lambda r, _: self._publisher.items.apply_owes(r), record, report)
        for record in self._items.unsent_outbox(relay_before, BATCH):
            self._guarded(lambda r, rep: self._relay(r, rep, relay_before), record, report)

    def _expire(self, record: ItemRecord, report: Any) -> None:
        task = self._tasks.get(record.TaskId)
        run = record.Run
        if task is None or run is None:
            return
        delay = retry_delay(task.Steps[run.Cursor].backoff(run.Phase), run.Attempt, self._rng.random())
        timing = Timing(self._clock(), self._lease, self._redeliver_after, delay)
        read = lambda: self._items.get_item(record.TaskId, record.Generation, record.Cursor, record.Item)  # noqa: E731
        changed = compare_and_set_loop(
            record, read=read, change=none_if_refused(lambda r: expire_item(r, task, timing, new_id, MAX_REDISPATCH_BACKOFF)),
            write=self._items.compare_and_set_item, what=f"item {record.record_id}")
        if changed is None:
            return
        note_expired(report, record.TaskId, run)
        if run.State is RunState.PENDING and run.HeldBy is None and changed.Run is not None:
            report.unclaimed_items.append((task, changed.Run))
        self._publisher.item_outbox.flush(changed)
        self._publisher.items.apply_owes(changed)

    def _relay(self, record: ItemRecord, report: Any, relay_before: float) -> None:
        key = (record.TaskId, record.Generation, record.Cursor, record.Item)
        for entry in record.Outbox:
            if entry.DueAt <= relay_before and self._publisher.item_outbox.publish(key, entry, mark_now=True):
                report.relayed += 1
