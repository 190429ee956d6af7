"""The task types flows.yaml defines, as `GET /task-types` shows them."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from baton_client.models._base import Answer
from baton_client.models.task import BackoffPolicy


class PhaseView(Answer):
    module: str
    command: str
    timeout: float
    retry: int
    backoff: BackoffPolicy


class StepView(Answer):
    name: str
    normal: PhaseView | None = Field(description="None for a sub-flow step: its child does the work")
    rollback: PhaseView | None
    after: list[str]
    for_each: str | None = None
    max_parallel: int | None = None
    max_items: int | None = None
    tolerate: str | None = None  # its failure budget, as said ("3 items", "1% of items")
    on_failure: str = "rollback"  # or "hold"
    flow: str | None = None
    inputs: dict[str, str] = Field(default_factory=dict)


class TaskTypeView(Answer):
    name: str
    description: str
    steps: list[StepView]
    parameters: dict[str, dict[str, Any]] | None = Field(description="The parameter schema; None: any parameters")
    version: str | None = None
    content_hash: str = ""


class TaskTypeList(Answer):
    items: list[TaskTypeView]
