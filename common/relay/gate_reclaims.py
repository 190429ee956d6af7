"""The sweeper's job for the gates' own tables: every few seconds, each relay that reclaims asks
its table for what crashes left (a lock member whose task is gone or done with its lock, a grant
a crash interrupted: common.store.gates.lock.relay.LockRelay.reclaim), at the pace its table
declares (common.store.gates.GateTable.reclaim_every).

Not every round: a normal end gives back what it holds through the outbox (relayed after a crash
like any entry); this pass only catches what nothing else would, so a few seconds' delay is cheap.
"""

from __future__ import annotations

from common.relay.outbox import OutboxPublisher
from common.store.gates import gate_tables


class GateReclaims:
    def __init__(self, publisher: OutboxPublisher, every: float | None = None):
        """`every`: one pace for every table instead of each one's own (a test's 0: every round)."""
        self._publisher = publisher  # flushes what a reclaim's grants dispatch
        self._paces = {table.flusher: table.reclaim_every if every is None else every
                       for table in gate_tables() if table.reclaim_every is not None}
        self._last: dict[object, float] = {}

    def __call__(self, now: float) -> int:  # a sweeper job
        reclaimed = 0
        for flusher, pace in self._paces.items():
            last = self._last.get(flusher)
            if last is not None and now - last < pace:
                continue
            self._last[flusher] = now
            reclaimed += self._publisher.gate_relays[flusher].reclaim()
        return reclaimed

    def close(self) -> None:
        self._publisher.stop()
