"""Module announcements: each module process says who it is (module name, commands, version,
worker id) and renews a heartbeat; OSS, `baton modules`, `check-flows --live` and the sweeper
read them to know which modules and commands are live.

A registration is live while its heartbeat is younger than `ttl` (three announcement periods, so
one late renewal is not a death). A process that stops cleanly withdraws its own; one that dies
leaves a stale one, shown as not live. Pure rules here; adapters beside this file.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Protocol

from pydantic import BaseModel, ConfigDict


class ModuleRegistration(BaseModel):
    model_config = ConfigDict(extra="forbid")

    WorkerId: str  # the process's owner id, as it appears in leases and task history
    Module: str  # also its queue's name (common.queues.module_queue)
    Commands: list[str]
    Kinds: dict[str, str] = {}  # command -> process, thread or async (docs/design/runtime.md)
    Version: str
    Host: str
    Pid: int
    StartedAt: float
    HeartbeatAt: float


class ModuleRegistry(Protocol):
    def announce(self, registration: ModuleRegistration) -> None:
        """Store or replace the registration of `registration.WorkerId`."""

    def withdraw(self, worker_id: str) -> None:
        """Remove it (a clean shutdown); nothing happens if it is not there."""

    def registrations(self) -> list[ModuleRegistration]:
        """Every stored registration, live or stale, by Module then WorkerId."""

    def forget_older_than(self, cutoff: float) -> int:
        """Remove registrations whose heartbeat is before `cutoff` (long dead); how many."""

    def close(self) -> None: ...


def is_live(registration: ModuleRegistration, now: float, ttl: float) -> bool:
    return now - registration.HeartbeatAt <= ttl


def live_modules(registrations: Iterable[ModuleRegistration], now: float, ttl: float) -> dict[str, frozenset[str]]:
    """module -> the commands its live processes serve (the union: replicas may differ mid-deploy)."""
    live: dict[str, set[str]] = {}
    for registration in registrations:
        if is_live(registration, now, ttl):
            live.setdefault(registration.Module, set()).update(registration.Commands)
    return {module: frozenset(commands) for module, commands in live.items()}
