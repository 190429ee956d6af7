"""The rate gate's part of a dry run's plan (common.engine.core.plan_parts): its task type's rate
and the start slots left of it now (`rate`); with none left, it holds the start until the next
frees. Pure."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, Field

from common.engine.document import Task
from common.engine.gates.freeze.window import utc_text
from common.engine.gates.gate import PlanPart
from common.engine.gates.rate.shown import PLAN_START
from common.engine.gates.rate.task_rate import per_text
from common.engine.gates.rate.window import slots_left


class PlanRate(BaseModel):
    key: str
    limit: int
    per_seconds: float
    slots_left: int | None = Field(description="Start slots free now in the window of `per_seconds` "
                                   "(docs/guide/rate-limits.md); null for a token limited to namespaces while "
                                   "some are free: the count is of every namespace's starts")
    next_slot_at: float | None = Field(None, description="None free: when the next one frees (epoch seconds)")


PLAN_FIELDS = {"rate": (PlanRate | None, Field(None, description="Its task type's rate: the start slots left now"))}


def plan_part(task: Task, read: Mapping[str, Mapping[str, Any]], now: float) -> PlanPart:
    """`read["rate"]`: the rate table's document of the task's rate key (none: no start recorded)."""
    if task.Rate is None:
        return PlanPart({"rate": None})
    left, next_at = slots_left(read.get("rate", {}).get(task.Rate.Key), task.Rate.Limit, task.Rate.Per, now)
    rate = PlanRate(key=task.Rate.Key, limit=task.Rate.Limit, per_seconds=task.Rate.Per, slots_left=left,
                    next_slot_at=next_at)  # fmt: skip
    holds = None
    if rate.next_slot_at is not None:
        holds = (PLAN_START[0], f"once a start slot of rate {rate.key} frees at {utc_text(rate.next_slot_at)} "
                                f"({rate.limit} per {per_text(rate.per_seconds)}, none left now)")
    return PlanPart({"rate": rate}, holds)


PLAN_PART = plan_part
