"""Managing the resource inventory's hosts: what the CLI (`baton hosts ...`) and the REST API call.

Thin on purpose: the inventory port does the work and raises its own errors, which callers map
to their answers (InvalidInventoryInput -> 400/422, HostConflict -> 409, UnknownHost -> 404).
Every result has `as_dict()` for JSON.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from common.module_hooks import module_hook
from common.settings import Settings
from common.store.factory import IndexMode

if TYPE_CHECKING:
    from modules.resource.inventory import Claim, Host, Inventory

# The resource module's inventory (modules/resource/hooks.py): its opener, its types, its errors.
resource_inventory = module_hook("inventory")


@dataclass(frozen=True)
class SweepResult:
    expired: int
    pruned: int

    def as_dict(self) -> dict[str, int]:
        return {"expired": self.expired, "pruned": self.pruned}


class HostsService:
    def __init__(self, inventory: Inventory, clock: Callable[[], float] = time.time):
        self._inventory = inventory
        self._clock = clock

    @classmethod
    def open(cls, settings: Settings, indexes: IndexMode = "create") -> HostsService:
        """On the inventory the resource module uses: BATON_RESOURCE_INVENTORY_URL, else beside
        the task store; every call bounded like the store's."""
        return cls(resource_inventory.open_configured_inventory(
            settings, timeout_seconds=settings.effective_store_timeout, indexes=indexes))

    def add(self, name: str, cpu: int, memory_mb: int, storage_gb: int) -> Host:
        return self._inventory.add_host(name, resource_inventory.Capacity(cpu, memory_mb, storage_gb), self._clock())

    def list(self) -> list[Host]:
        return self._inventory.list_hosts(self._clock())

    def get(self, name: str) -> Host:
        host = self._inventory.get_host(name, self._clock())
        if host is None:
            raise resource_inventory.UnknownHost("no such host")  # the name asked for is not echoed
        return host

    def drain(self, name: str) -> Host:
        """No new reservations on it; what it holds stays until released."""
        return self._inventory.set_host_state(name, resource_inventory.HostState.DRAINING, self._clock())

    def activate(self, name: str) -> Host:
        return self._inventory.set_host_state(name, resource_inventory.HostState.ACTIVE, self._clock())

    def claims(self, *, host: str | None = None, holder: str | None = None, live_only: bool = True) -> list[Claim]:
        return self._inventory.list_claims(self._clock(), host=host, holder=holder, live_only=live_only)

    def sweep(self, prune_after_seconds: float | None = None) -> SweepResult:
        """Close lapsed reservations; with prune_after_seconds, also forget claims closed that long ago."""
        now = self._clock()
        expired = self._inventory.expire_due(now)
        pruned = self._inventory.prune_closed(now - prune_after_seconds) if prune_after_seconds is not None else 0
        return SweepResult(expired, pruned)

    def close(self) -> None:
        self._inventory.close()
