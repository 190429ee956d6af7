"""What the client sends, one model per request body. Fields left as None are not sent: the
server then applies its own default. Times are epoch seconds or a datetime (naive means UTC).
The server checks every value (patterns, bounds, the task type's parameters) and answers
InvalidInput naming the fields; the client does not guess its rules."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import Field

from baton_client.models._base import Request

Moment = float | datetime


class CreateTask(Request):
    task_type: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    idempotency_key: str | None = None
    priority: int = 0
    start_at: Moment | None = None
    user_id: str | None = None
    after_task: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    dry_run: bool = False


class CancelAction(Request):
    reason: str
    stop_running: bool = False


class OperatorAction(Request):
    """retry, retry-rollback, compensate, pause and resume: a reason (only cancel stops runs)."""

    reason: str
    stop_running: Literal[False] = False


class SkipAction(Request):
    reason: str
    step: int
    item: int | None = None


class StepActionBody(Request):
    reason: str


class CallbackBody(Request):
    action: Literal["succeed", "fail", "heartbeat"]
    output: dict[str, Any] = Field(default_factory=dict)
    message: str = ""
    retryable: bool = True


class BulkAction(Request):
    reason: str
    dry_run: bool = True
    limit: int = 1000
    task_type: str | None = None
    status: str | None = None
    user_id: str | None = None
    labels: dict[str, str] = Field(default_factory=dict)
    created_from: Moment | None = None
    created_to: Moment | None = None


class Migration(Request):
    to: str
    reason: str
    dry_run: bool = True
    limit: int = 1000


class AlarmFilter(Request):
    kind: str | None = None
    task_id: str | None = None


class AcknowledgeAlarms(Request):
    ids: list[str] = Field(default_factory=list)
    filter: AlarmFilter | None = None
    reason: str


class HostCreate(Request):
    name: str
    cpu: int
    memory_mb: int
    storage_gb: int


class CreateSchedule(Request):
    name: str
    task_type: str
    parameters: dict[str, Any] = Field(default_factory=dict)
    cron: str | None = None
    interval_seconds: float | None = None
    timezone: str = "UTC"
    overlap: Literal["skip", "queue", "allow"] = "skip"
    missed: Literal["latest", "skip", "all"] = "latest"
    priority: int = 0
    labels: dict[str, str] = Field(default_factory=dict)


class DrainAction(Request):
    reason: str
