"""A dry run's answer: what a task would do if it were submitted now. Nothing is created."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from baton_client.models._base import Answer


class PlanLock(Answer):
    key: str
    limit: int
    scope: str = Field(description='"task" for the task type\'s lock, or the step whose units take it')
    mode: str = "exclusive"
    holders: list[str]
    waiting: int
    free: bool


class PlanRate(Answer):
    key: str
    limit: int
    per_seconds: float
    slots_left: int | None = Field(
        description="Start slots free now in the window of `per_seconds`; null to a token scoped to namespaces while"
        " slots are free (the count would include other teams' starts)"
    )
    next_slot_at: float | None = Field(None, description="None free: when the next one frees (epoch seconds)")


class PlanCommand(Answer):
    module: str
    command: str
    kind: str | None = None


class PlanForEach(Answer):
    parameter: str | None = None  # None: a source gives its items
    items: int | None  # None: from an earlier step's output, or from a source (unknown until it runs)
    max_parallel: int | None
    tolerate: str | None = None  # its failure budget, as said ("3 items", "1% of items")
    on_failure: str = "rollback"  # or "hold"
    source: str | None = None  # "module.command": its items come from there, a page at a time
    waves: list[str] | None = None  # its waves in order, each with its size and the gate after it


class PlanStep(Answer):
    index: int
    name: str
    after: list[str]
    starts_first: bool = False
    normal: PlanCommand | None = None
    rollback: PlanCommand | None = None
    timeout_seconds: float | None = None
    retries: int = 0
    for_each: PlanForEach | None = None
    sub_flow: PlanSubFlow | None = None
    lock_key: str | None = None
    rate: str | None = None  # the rate each attempt takes a slot of, as a template
    kind: str = "command"
    note: str = ""


class PlanSubFlow(Answer):
    task_type: str
    inputs: dict[str, str]
    steps: list[PlanStep]


class PlanModule(Answer):
    module: str
    queue: str
    live: bool
    needed: list[str]
    missing: list[str]
    drained: bool = False


class PlanStart(Answer):
    when: str = Field(description="What holds the start first: now (nothing), never, or a gate (freeze, at, after_task, "
                                  "lock, rate, or one added later)")
    text: str = Field("", description='How it reads, as what holds it says it: "once its lock is free"')
    at: float | None = None
    reasons: list[str]


class Plan(Answer):
    task_type: str
    existing_task_id: str | None = Field(None, description="The idempotency key names this task already")
    parameters: dict[str, Any]
    start: PlanStart
    steps: list[PlanStep]
    locks: list[PlanLock]
    rate: PlanRate | None = Field(None, description="Its task type's rate: the start slots left now")
    modules: list[PlanModule]
    warnings: list[str] = Field(description="What would make the task wait or fail if it ran now")


PlanStep.model_rebuild()
