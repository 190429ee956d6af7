"""Retention of closed inventory claims: a job of the sweeper (BATON_RESOURCE_CLAIM_RETENTION_DAYS).

A closed claim (released, restored, expired) is kept so that its key never reserves again and the
API and CLI can show it. On MongoDB it lives in a collection of its own, not in its host's
document (modules.resource.inventory.mongo), so keeping it costs disk, not the host. This job deletes
those closed longer ago than the retention, at most once every PRUNE_EVERY_SECONDS, under the
sweeper's lock; a retention of 0 keeps them forever (`baton hosts sweep --prune-days` by hand).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from oss.services.retention import PRUNE_EVERY_SECONDS, Retention

if TYPE_CHECKING:
    from modules.resource.inventory import Inventory


class ClaimRetention(Retention):
    def __init__(self, inventory: Inventory, retention_seconds: float, every: float = PRUNE_EVERY_SECONDS):
        super().__init__(inventory.prune_closed, "closed claims", retention_seconds, every)
        self._inventory = inventory

    def close(self) -> None:
        self._inventory.close()
