"""The sweeper's lock job: every few seconds, reclaim lock members whose task is gone or done
with its lock, and finish grants a crash interrupted (common.relay.lock_relay.LockRelay.reclaim).

Not every round: a normal end releases its lock through the outbox (relayed after a crash like
any entry); this pass only catches what nothing else would, so a few seconds' delay is cheap.
"""

from __future__ import annotations

from common.relay.outbox import OutboxPublisher

RECLAIM_EVERY = 5.0


class LockReclaim:
    def __init__(self, publisher: OutboxPublisher, every: float = RECLAIM_EVERY):
        self._publisher = publisher  # flushes what a grant dispatches
        self._every = every
        self._last: float | None = None

    def __call__(self, now: float) -> int:  # a sweeper job
        if self._last is not None and now - self._last < self._every:
            return 0
        self._last = now
        return self._publisher.locks.reclaim()

    def close(self) -> None:
        self._publisher.stop()
