"""What the API takes and answers, as pydantic models (they make the OpenAPI document).

Request and envelope fields are snake_case; a task itself keeps the document's field names
(TaskId, TaskStatus, Steps[].NormalModule...), the same everywhere baton shows a task.
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, StringConstraints, field_validator

from common.models import Alarm, BackoffPolicy, OperatorRequest, Task
from oss.times import to_epoch

# Label keys are plain names (a dot would be a path to MongoDB); values short free text.
LabelKey = Annotated[str, StringConstraints(pattern=r"^[A-Za-z0-9_][A-Za-z0-9_/-]{0,62}$")]
LabelValue = Annotated[str, StringConstraints(max_length=256)]
MAX_LABELS = 32


class _Request(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateTask(_Request):
    task_type: str = Field(min_length=1, max_length=128, examples=["create_mysql_instance"])
    parameters: dict[str, Any] = Field(default_factory=dict, examples=[{"name": "app_db", "cpu": 2}])
    idempotency_key: str | None = Field(
        None, min_length=1, max_length=256,
        description="A business id: the same key answers the same task (200) instead of a new one.",
    )  # fmt: skip
    priority: int = Field(0, ge=0, le=4, description="0 (default) to 4: higher runs first")
    start_at: float | str | None = Field(
        None, description="Delayed start: ISO-8601 (no zone means UTC) or UNIX epoch seconds."
    )
    user_id: str | None = Field(None, min_length=1, max_length=256, description="Owner")
    labels: dict[LabelKey, LabelValue] = Field(default_factory=dict, max_length=MAX_LABELS)

    @field_validator("start_at", mode="before")  # before: pydantic would read true as 1.0
    @classmethod
    def _epoch(cls, value: Any) -> float | None:
        return None if value is None else to_epoch(value)


class OperatorAction(_Request):
    reason: str = Field(min_length=1, max_length=2000, description="Recorded in the history")

    @field_validator("reason")
    @classmethod
    def _not_blank(cls, value: str) -> str:
        if not value.strip():
            raise ValueError("must say why")
        return value.strip()


class TaskCreated(BaseModel):
    task_id: str
    created: bool = Field(description="false: the idempotency key named an existing task")
    location: str
    task: Task


class TaskSummary(BaseModel):
    TaskId: str
    TaskType: str
    TaskStatus: int
    TaskStatusName: str
    TaskMessage: str
    TaskCursor: int
    StepStates: list[str] = Field(description="Each step's State, in order: progress at a glance")
    TimeCreate: float
    TimeStart: float | None
    TimeEnd: float | None
    Priority: int
    UserId: str | None
    Labels: dict[str, str]
    CancelRequested: OperatorRequest | None


class TaskPage(BaseModel):
    items: list[TaskSummary]
    next_cursor: str | None = Field(description="Pass as ?cursor= for the next page; null: no more")


class PhaseView(BaseModel):
    module: str
    command: str
    timeout: float
    retry: int
    backoff: BackoffPolicy


class StepView(BaseModel):
    name: str
    normal: PhaseView
    rollback: PhaseView | None


class TaskTypeView(BaseModel):
    name: str
    description: str
    steps: list[StepView]
    parameters: dict[str, dict[str, Any]] | None = Field(
        description="The parameter schema (secrets' defaults masked); null: any parameters"
    )


class TaskTypeList(BaseModel):
    items: list[TaskTypeView]


class AlarmList(BaseModel):
    items: list[Alarm]


class Health(BaseModel):
    status: str


class Readiness(BaseModel):
    ready: bool
    checks: dict[str, str] = Field(description='"ok", or why the store / broker failed')


class ErrorField(BaseModel):
    path: str
    message: str


class ErrorDetail(BaseModel):
    code: str
    message: str
    fields: list[ErrorField]


class ErrorBody(BaseModel):
    error: ErrorDetail


def error_responses(*statuses: int) -> dict[int | str, dict[str, Any]]:
    """The error answers a route may give, for its OpenAPI entry."""
    words = {
        401: "No valid bearer token", 403: "The token's role may not do this",
        404: "No such task, task type or alarm", 409: "The action does not fit the task's state",
        413: "The body is over the limit", 422: "The request is not valid (fields say where)",
        503: "The store or broker cannot be reached",
    }  # fmt: skip
    return {status: {"model": ErrorBody, "description": words[status]} for status in statuses}
