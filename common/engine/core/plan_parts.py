"""Each gate's part of a dry run's plan (oss/services/plans.py), from its folder's `plan.py`:
`PLAN_FIELDS`, the plan's fields it fills (name: (type, pydantic field), as `create_model` takes
them), and `PLAN_PART(task, read, now)`, their values for a task from what the dry run read of
the gates' own tables (`read`: by table, each key `plan_reads` names and its document). Found by
folder and asked in the registry's order, so the plan names no gate. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from types import ModuleType
from typing import Any

from common.engine.core.declared import beside
from common.engine.document import Task
from common.engine.gates.gate import PlanPart
from common.engine.registry import GATES

__all__ = ["PlanPart", "plan_fields", "plan_parts"]


@cache
def _plans() -> tuple[ModuleType, ...]:
    return tuple(m for m in beside(GATES, "plan") if hasattr(m, "PLAN_PART"))


@cache
def plan_fields() -> dict[str, tuple[Any, Any]]:
    """The plan's fields the gates fill, in the registry's order."""
    return merged_plan_fields(_plans())


def merged_plan_fields(modules: tuple[ModuleType, ...]) -> dict[str, tuple[Any, Any]]:
    """Each module's PLAN_FIELDS in turn. ValueError naming both folders when two declare one
    field: a field of the plan is one gate folder's."""
    fields: dict[str, tuple[Any, Any]] = {}
    owner: dict[str, str] = {}
    for module in modules:
        for name, field in module.PLAN_FIELDS.items():
            if name in fields:
                raise ValueError(f"plan field {name!r} is declared by {owner[name]} and by {module.__name__}")
            fields[name], owner[name] = field, module.__name__
    return fields


def plan_parts(task: Task, read: Mapping[str, Mapping[str, Any]], now: float) -> list[PlanPart]:
    """Each gate folder's part of the task's plan, in the registry's order."""
    return [module.PLAN_PART(task, read, now) for module in _plans()]
