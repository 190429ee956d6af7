"""Retention of closed inventory claims: a job of the sweeper (BATON_RESOURCE_CLAIM_RETENTION_DAYS).

A closed claim (released, restored, expired) is kept so that its key never reserves again and the
API and CLI can show it. On MongoDB it lives in a collection of its own, not in its host's
document (common.store.inventory_mongo), so keeping it costs disk, not the host. This job deletes
those closed longer ago than the retention, at most once every PRUNE_EVERY_SECONDS, under the
sweeper's lock; a retention of 0 keeps them forever (`baton hosts sweep --prune-days` by hand).
"""

from __future__ import annotations

import structlog

from common.store.inventory_port import Inventory

log = structlog.get_logger(__name__)
PRUNE_EVERY_SECONDS = 3600.0


class ClaimRetention:
    def __init__(self, inventory: Inventory, retention_seconds: float, every: float = PRUNE_EVERY_SECONDS):
        self._inventory = inventory
        self._retention = retention_seconds
        self._every = every
        self._last: float | None = None

    def __call__(self, now: float) -> int:
        if self._last is not None and now - self._last < self._every:
            return 0
        self._last = now
        pruned = self._inventory.prune_closed(now - self._retention)
        if pruned:
            log.info("closed claims pruned", pruned=pruned, retention_days=self._retention / 86400)
        return pruned

    def close(self) -> None:
        self._inventory.close()
