"""Tasks a page at a time, a submission's answer, and a for_each step's items a page at a time."""

from __future__ import annotations

from typing import Any

from pydantic import ConfigDict, Field

from baton_client.models._base import Answer
from baton_client.models.task import OperatorRequest, TaskDetail, WaitCondition


class TaskSummary(Answer):
    """A task as the list shows it: `StepStates` gives each step's state, in order."""

    TaskId: str
    TaskType: str
    TaskStatus: int
    TaskStatusName: str
    TaskMessage: str
    TaskCursor: int
    StepStates: list[str]
    TimeCreate: float
    TimeStart: float | None
    TimeEnd: float | None
    Priority: int
    UserId: str | None
    Labels: dict[str, str]
    CancelRequested: OperatorRequest | None
    ScheduledFor: float | None = None
    WaitingFor: WaitCondition | None = None
    Lock: dict[str, Any] | None = None
    FailedItems: int | None = None  # succeeded with this many items failed within their steps' budgets


class TaskPage(Answer):
    items: list[TaskSummary]
    next_cursor: str | None = Field(description="Give it as `cursor` for the next page; None: the last page")
    total: int = Field(description="How many tasks match the filters, every page together")
    counts: dict[str, int] = Field(description="Per status name: the tasks matching every filter but the status")


class TaskCreated(Answer):
    task_id: str
    created: bool = Field(description="False: the idempotency key named a task created before")
    location: str
    task: TaskDetail


class ItemView(Answer):
    """One item of a for_each step: its index, value, state and output (and more, as stored)."""

    model_config = ConfigDict(extra="allow")

    Item: int
    State: str
    Value: Any = None
    Output: dict[str, Any] = Field(default_factory=dict)


class ItemPage(Answer):
    TaskId: str
    Step: int
    Name: str
    ItemCount: int = Field(description="How many items the step has, in every state")
    Items: list[ItemView]
    NextAfter: int | None = Field(description="Give it as `after` for the next page; None: the last page")
