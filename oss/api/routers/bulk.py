"""Bulk operator actions by filter: `POST /api/v1/bulk/{action}`, a dry run unless told otherwise."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Path
from pydantic import BaseModel, ConfigDict, Field, field_validator

from common.statuses import parse_task_status
from oss.api.auth import Context, Operator
from oss.api.errors import ApiError
from oss.api.schemas import MAX_LABELS, LabelKey, LabelValue, error_responses
from oss.bulk import MAX_TASKS, BulkActions
from oss.times import to_epoch

router = APIRouter(prefix="/api/v1", tags=["operator actions"])
BULK_ACTIONS = ("cancel", "retry", "retry-rollback")


class BulkAction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: str = Field(min_length=1, max_length=2000, description="Recorded in every task's history")
    dry_run: bool = Field(True, description="true (the default): only count and list what would change")
    limit: int = Field(1000, ge=1, le=MAX_TASKS, description="At most this many tasks, newest first")
    task_type: str | None = Field(None, min_length=1, max_length=128)
    status: str | None = Field(None, description="A code 0-5 or its name, e.g. ROLLED_BACK")
    user_id: str | None = Field(None, min_length=1, max_length=256)
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, max_length=MAX_LABELS)
    created_from: float | str | None = Field(None, description="ISO-8601 or epoch; inclusive")
    created_to: float | str | None = Field(None, description="ISO-8601 or epoch; exclusive")

    @field_validator("reason")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must say why")
        return value.strip()

    @field_validator("status")
    @classmethod
    def _status(cls, value: str | None) -> str | None:
        if value is not None:
            parse_task_status(value)  # a ValueError here is a 422 naming the field
        return value

    @field_validator("created_from", "created_to", mode="before")
    @classmethod
    def _epoch(cls, value: Any) -> float | None:
        return None if value is None else to_epoch(value)


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
    action: Annotated[str, Path(pattern="^(cancel|retry|retry-rollback)$")],
    body: BulkAction,
    context: Context,
    token: Operator,
) -> BulkOutcome:
    """Dry run first (the default): it evaluates the action on each matching task without
    writing, so the answer says exactly how many it fits. Then the same body with
    `"dry_run": false` applies it task by task, each recorded with the operator and reason."""
    filters = {
        "task_type": body.task_type,
        "status": parse_task_status(body.status) if body.status is not None else None,
        "user_id": body.user_id,
        "labels": body.labels,
        "created_from": body.created_from,
        "created_to": body.created_to,
    }
    bulk = BulkActions(context.store, context.service.actions, context.clock, context.settings.redeliver_after_seconds)
    try:
        result = bulk.run(action, filters, actor=token.name, reason=body.reason, dry_run=body.dry_run, limit=body.limit)
    except ValueError as exc:
        raise ApiError(422, "the request is not valid", fields=[("body", str(exc))]) from None
    return BulkOutcome(
        action=result.action, dry_run=result.dry_run, matched=result.matched, applied=result.applied,
        refused=[Refused(task_id=t, reason=r) for t, r in result.refused], truncated=result.truncated,
    )  # fmt: skip
