"""The ModuleRegistry contract, run against every backend (the inventory suite's ids)."""

from __future__ import annotations

from typing import Any

from common.store.side.modules import ModuleRegistration, live_modules
from tests.contract.inventory_fixtures import backend, module_registry  # noqa: F401

NOW = 1_700_000_000.0


def registration(worker: str, module: str = "mysql", heartbeat: float = NOW, commands: tuple[str, ...] = ("a", "b")) -> ModuleRegistration:
    return ModuleRegistration(WorkerId=worker, Module=module, Commands=list(commands), Version="0.1.0",
                              Host="h1", Pid=42, StartedAt=NOW - 100, HeartbeatAt=heartbeat)  # fmt: skip


def test_announce_replaces_by_worker_and_lists_by_module(module_registry: Any) -> None:
    module_registry.announce(registration("w2", "resource"))
    module_registry.announce(registration("w1", "mysql", NOW - 50))
    module_registry.announce(registration("w1", "mysql", NOW))  # a heartbeat: the same worker
    listed = module_registry.registrations()
    assert [(r.Module, r.WorkerId, r.HeartbeatAt) for r in listed] == [("mysql", "w1", NOW), ("resource", "w2", NOW)]
    assert listed[0] == registration("w1", "mysql", NOW)


def test_withdraw_and_forget_remove_registrations(module_registry: Any) -> None:
    for worker, heartbeat in (("w1", NOW), ("w2", NOW - 3600), ("w3", NOW - 10)):
        module_registry.announce(registration(worker, heartbeat=heartbeat))
    module_registry.withdraw("w1")
    module_registry.withdraw("never-there")
    assert module_registry.forget_older_than(NOW - 60) == 1
    assert [r.WorkerId for r in module_registry.registrations()] == ["w3"]


def test_live_modules_join_the_commands_of_fresh_heartbeats_only() -> None:
    registrations = [
        registration("w1", "mysql", NOW, ("init",)),
        registration("w2", "mysql", NOW - 20, ("init", "drop")),
        registration("w3", "resource", NOW - 31, ("check",)),  # past the ttl: stale
    ]
    assert live_modules(registrations, NOW, ttl=30) == {"mysql": frozenset({"init", "drop"})}
