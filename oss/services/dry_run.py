"""A dry run (`POST /tasks` with `dry_run`, `baton submit --plan`): the submission's checks, then
the plan of the task it would create (oss/services/plans.py), read from the lock table and the
module registry (and the rate table). Nothing is written, published or asked for."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.store.side.drains import ModuleDrains
from common.store.gates.lock.table import LockTable
from common.store.side.modules import ModuleRegistry
from common.store.gates.rate.table import RateTable
from oss.services.plans import Plan, lock_keys, plan_of
from oss.services.tasks import TaskService


def dry_run(
    service: TaskService,
    locks: LockTable,
    registry: ModuleRegistry,
    *,
    now: float,
    module_ttl: float,
    task_type: str,
    parameters: Mapping[str, Any],
    drains: ModuleDrains | None = None,
    rates: RateTable | None = None,
    **submission: Any,
) -> Plan:
    """The plan of what `service.submit(task_type, parameters, **submission)` would do now;
    raises what it would raise for a request it refuses."""
    draft = service.draft(task_type, parameters, **submission)
    states = {ask.key: locks.get(ask.key) for ask, _ in lock_keys(draft.task)}
    drained = {d.Module for d in drains.drains() if d.Drained} if drains is not None else set()
    rate = rates.get(draft.task.Rate.Key) if rates is not None and draft.task.Rate is not None else None
    return plan_of(draft.task, existing=draft.existing is not None, awaited=draft.awaited, locks=states,
                   registrations=list(registry.registrations()), now=now, module_ttl=module_ttl,
                   drained=drained, rate=rate)  # fmt: skip
