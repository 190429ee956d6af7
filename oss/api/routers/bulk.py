"""Bulk operator actions by filter: `POST /api/v1/bulk/{action}`, a dry run unless told otherwise."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from common.input_limits import NO_CONTROL_PATTERN
from common.engine.states import parse_task_status
from oss.api.access import scope_for
from oss.api.auth import Context, Operator
from oss.api.errors import ApiError
from oss.api.schemas import (
    MAX_LABELS,
    NO_OTHER_KEYS,
    JsonInt,
    LabelKey,
    LabelValue,
    Moment,
    Reason,
    StatusFilter,
    at_least_one_of,
    error_responses,
)
from oss.services.bulk import MAX_TASKS, BulkActions

router = APIRouter(prefix="/api/v1", tags=["operator actions"])
BULK_ACTIONS = ("cancel", "retry", "retry-rollback", "pause", "resume")


_FILTERS = ("task_type", "status", "user_id", "labels", "created_from", "created_to")


class BulkAction(BaseModel):
    # A filter is required (a bulk action on every task is never what was meant): the schema says so.
    model_config = ConfigDict(extra="forbid", json_schema_extra=at_least_one_of(*_FILTERS))

    reason: Reason = Field(description="Recorded in every task's history")
    dry_run: StrictBool = Field(True, description="true (the default): only count and list what would change")
    limit: JsonInt = Field(1000, ge=1, le=MAX_TASKS, description="At most this many tasks, newest first")
    task_type: str | None = Field(None, min_length=1, max_length=128, pattern=NO_CONTROL_PATTERN)
    status: StatusFilter | None = Field(None, description="A code 0-5 or its name, e.g. ROLLED_BACK")
    user_id: str | None = Field(None, min_length=1, max_length=256, pattern=NO_CONTROL_PATTERN)
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, max_length=MAX_LABELS, json_schema_extra=NO_OTHER_KEYS)
    created_from: Moment | None = Field(None, description="ISO-8601 or epoch; inclusive")
    created_to: Moment | None = Field(None, description="ISO-8601 or epoch; exclusive")


class Refused(BaseModel):
    task_id: str
    reason: str


class BulkOutcome(BaseModel):
    action: str
    dry_run: bool
    matched: int = Field(description="Tasks the filter selected (up to the limit)")
    applied: list[str] = Field(description="Dry run: the tasks the action fits; else: the tasks it changed")
    refused: list[Refused] = Field(description="Tasks whose state does not fit the action, and why")
    truncated: bool = Field(description="More tasks match than `limit`")


@router.post("/bulk/{action}", response_model=BulkOutcome, summary="An operator action on every task a filter selects",
             responses=error_responses(401, 403, 413, 422, 503))  # fmt: skip
def bulk_action(
    action: Annotated[str, Path(pattern="^(cancel|retry|retry-rollback|pause|resume)$")],
    body: BulkAction,
    context: Context,
    token: Operator,
) -> BulkOutcome:
    """Dry run first (the default): it evaluates the action on each matching task without
    writing, so the answer says exactly how many it fits. Then the same body with
    `"dry_run": false` applies it task by task, each recorded with the operator and reason."""
    filters = {
        "task_type": body.task_type,
        "status": parse_task_status(body.status.value) if body.status is not None else None,
        "user_id": body.user_id,
        "labels": body.labels,
        "created_from": body.created_from,
        "created_to": body.created_to,
    }
    bulk = BulkActions(context.store, context.service.actions, context.clock, context.settings.redeliver_after_seconds)
    try:
        result = bulk.run(action, filters, actor=token.name, reason=body.reason, dry_run=body.dry_run, limit=body.limit,
                          scope=scope_for(token, "operator"))  # only its namespaces where it is an operator
    except ValueError as exc:
        raise ApiError(422, "the request is not valid", fields=[("body", str(exc))]) from None
    return BulkOutcome(
        action=result.action, dry_run=result.dry_run, matched=result.matched, applied=result.applied,
        refused=[Refused(task_id=t, reason=r) for t, r in result.refused], truncated=result.truncated,
    )  # fmt: skip
