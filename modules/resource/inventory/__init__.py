"""The resource inventory: hosts with capacity and the claims tasks hold on them (port.py), its
rules, its SQLite and MongoDB adapters and its opener. The resource module's own domain: oss and
the mysql reconciler reach it through the module's `inventory` hook (modules/resource/hooks.py),
never by an import, and read its names from what the hook returns: this package."""

from __future__ import annotations

from modules.resource.inventory.factory import open_configured_inventory, open_inventory
from modules.resource.inventory.port import (
    Capacity,
    Claim,
    ClaimClosed,
    ClaimState,
    Host,
    HostConflict,
    HostState,
    InvalidInventoryInput,
    Inventory,
    InventoryError,
    KeyReused,
    NoCapacity,
    UnknownClaim,
    UnknownHost,
)
from modules.resource.inventory.rules import HOST_NAME

__all__ = [
    "HOST_NAME", "Capacity", "Claim", "ClaimClosed", "ClaimState", "Host", "HostConflict", "HostState",
    "InvalidInventoryInput", "Inventory", "InventoryError", "KeyReused", "NoCapacity", "UnknownClaim",
    "UnknownHost", "open_configured_inventory", "open_inventory",
]
