"""The amounts and times the inventory contract suites share, and a reservation with their
defaults (tests/contract/test_inventory_contract.py, test_inventory_races.py)."""

from __future__ import annotations

from typing import Any

from modules.resource.inventory.port import Capacity

NOW = 1_700_000_000.0
TTL = 600.0
SMALL = Capacity(cpu=1, memory_mb=1024, storage_gb=10)
HOST = Capacity(cpu=4, memory_mb=4096, storage_gb=100)


def reserve(inv: Any, key: str, need: Capacity = SMALL, holder: str = "app", now: float = NOW, ttl: float = TTL) -> Any:
    return inv.reserve(key, need, holder, now, now + ttl)
