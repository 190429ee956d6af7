"""A dry run (`POST /tasks` with `dry_run`, `baton submit --plan`): the submission's checks, then
the plan of the task it would create (oss/services/plans.py), read from the gates' own tables
(each gate says which keys: common.engine.registry.plan_reads) and the module registry. Nothing is
written, published or asked for."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from common.engine.registry import plan_reads
from common.store.side.drains import ModuleDrains
from common.store.side.modules import ModuleRegistry
from oss.services.plans import Plan, plan_of
from oss.services.tasks import TaskService


def dry_run(
    service: TaskService,
    tables: Mapping[str, Any],
    registry: ModuleRegistry,
    *,
    now: float,
    module_ttl: float,
    task_type: str,
    parameters: Mapping[str, Any],
    drains: ModuleDrains | None = None,
    **submission: Any,
) -> Plan:
    """The plan of what `service.submit(task_type, parameters, **submission)` would do now;
    raises what it would raise for a request it refuses. `tables`: each gate's own table by its
    gate's name (common.store.side_stores.open_gate_tables)."""
    draft = service.draft(task_type, parameters, **submission)
    read = {gate: {key: tables[gate].get(key) for key in keys}
            for gate, keys in plan_reads(draft.task).items() if gate in tables}
    drained = {d.Module for d in drains.drains() if d.Drained} if drains is not None else set()
    return plan_of(draft.task, existing=draft.existing is not None, awaited=draft.awaited,
                   registrations=list(registry.registrations()), now=now, module_ttl=module_ttl, drained=drained,
                   read=read)  # fmt: skip
