"""Moving the tasks of a type in flight to the revision flows.yaml holds now:
`POST /api/v1/task-types/{name}/migrate`, a dry run unless told otherwise."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, ConfigDict, Field, StrictBool

from common.input_limits import NO_CONTROL_PATTERN
from oss.api.access import may_see_type, scope_for
from oss.api.auth import Context, Operator
from oss.api.errors import ApiError
from oss.api.schemas import JsonInt, Reason, error_responses
from oss.services.migrations import Migrations
from oss.services.action_names import MAX_BULK_TASKS

router = APIRouter(prefix="/api/v1", tags=["operator actions"])


class Migration(BaseModel):
    model_config = ConfigDict(extra="forbid")

    to: str = Field(min_length=1, max_length=128, pattern=NO_CONTROL_PATTERN,
                    description="The revision the service runs now: its `version` label or its content hash")  # fmt: skip
    reason: Reason = Field(description="Recorded in every moved task's history")
    dry_run: StrictBool = Field(True, description="true (the default): only say what would move")
    limit: JsonInt = Field(1000, ge=1, le=MAX_BULK_TASKS, description="At most this many tasks in flight, newest first")


class Refusal(BaseModel):
    task_id: str
    reason: str = Field(description="What is in doubt: the steps that started and changed, the lock")


class MigrationOutcome(BaseModel):
    task_type: str
    to_hash: str
    to_version: str | None
    dry_run: bool
    matched: int = Field(description="Tasks of the type not started or running (up to the limit)")
    moved: list[str] = Field(description="Dry run: the tasks that would move; else: the tasks moved")
    current: list[str] = Field(description="Tasks on that revision already")
    refused: list[Refusal] = Field(description="Tasks that cannot move without doubt, and why")
    truncated: bool = Field(description="More tasks in flight than `limit`")


@router.post("/task-types/{name}/migrate", response_model=MigrationOutcome,
             summary="Move the tasks of a type in flight to the revision the service runs",
             responses=error_responses(401, 403, 404, 409, 413, 422, 503))  # fmt: skip
def migrate_task_type(name: str, body: Migration, context: Context, token: Operator) -> MigrationOutcome:
    """Dry run first (the default): it evaluates the move on each task without writing. Then
    the same body with `"dry_run": false` moves each task that fits, recorded in its history
    with the operator and reason. 409 `unknown_revision`: `to` names no revision this service
    runs (it names its `version` label or content hash). A task moves only when every step it has started is unchanged
    and in its place in the new revision; the others are listed with what is in doubt."""
    if name not in context.flows or not may_see_type(token, name):
        raise ApiError(404, "no such task type")  # the name asked for is not echoed
    migrations = Migrations(context.store, context.flows, context.service.actions, context.clock,
                            context.settings.redeliver_after_seconds)  # fmt: skip
    try:
        result = migrations.run(name, body.to, actor=token.name, reason=body.reason, dry_run=body.dry_run,
                                limit=body.limit, scope=scope_for(token, "operator"))  # fmt: skip
    except ValueError as exc:  # a revision this service does not run: the request is fine, the state is not
        raise ApiError(409, str(exc), code="unknown_revision") from None
    return MigrationOutcome(
        task_type=result.task_type, to_hash=result.to_hash, to_version=result.to_version, dry_run=result.dry_run,
        matched=result.matched, moved=result.moved, current=result.current, truncated=result.truncated,
        refused=[Refusal(task_id=t, reason=r) for t, r in result.refused],
    )  # fmt: skip
