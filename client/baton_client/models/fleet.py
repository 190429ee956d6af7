"""The things around the tasks: hosts, modules and their drains, locks, schedules, health."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from baton_client.models._base import Answer


class Amounts(Answer):
    cpu: int
    memory_mb: int
    storage_gb: int


class HostView(Answer):
    name: str
    state: str
    capacity: Amounts
    used: Amounts
    free: Amounts
    created_at: float


class HostList(Answer):
    items: list[HostView]


class WorkerView(Answer):
    worker_id: str
    version: str
    host: str
    pid: int
    started_at: float
    heartbeat_at: float
    live: bool


class DrainView(Answer):
    module: str
    drained: bool
    actor: str
    reason: str
    since: float
    version: int


class ModuleView(Answer):
    module: str
    queue: str
    live: bool = Field(description="At least one worker renewed its heartbeat in time")
    commands: list[str]
    kinds: dict[str, str] = Field(default_factory=dict, description="Each command's kind: process, thread or async")
    workers: list[WorkerView]
    drain: DrainView | None = None


class ModuleList(Answer):
    items: list[ModuleView]


class HolderView(Answer):
    task_id: str
    mode: str
    since: float


class WaiterView(Answer):
    task_id: str
    mode: str
    priority: int
    submitted_at: float
    since: float


class LockView(Answer):
    key: str
    limit: int
    holders: list[HolderView]
    waiters: list[WaiterView] = Field(description="In the order they will be granted")


class LockList(Answer):
    items: list[LockView]


class ScheduleView(Answer):
    ScheduleId: str
    Name: str
    TaskType: str
    Parameters: dict[str, Any]
    Cron: str | None
    IntervalSeconds: float | None
    Timezone: str
    Overlap: str
    Missed: str
    Priority: int
    Labels: dict[str, str]
    Paused: bool
    NextAt: float
    LastTickAt: float | None
    LastTaskId: str | None
    Fired: int
    Skipped: int
    LastError: str
    CreatedBy: str | None
    TimeCreate: float
    Version: int


class ScheduleList(Answer):
    items: list[ScheduleView]


class Health(Answer):
    status: str


class Readiness(Answer):
    ready: bool
    checks: dict[str, str] = Field(description='"ok", or why the store or the broker failed')


class NamespaceView(Answer):
    name: str
    role: str = Field(description="read, submit or operator")
    task_types: list[str] = Field(description="Empty: any task type")
    labels: dict[str, str] = Field(description="Every pair a task must have")


class AccessView(Answer):
    """What the token in use may see and do (docs/guide/access.md)."""

    name: str
    role: str = Field(description="The highest role it has (on every task when not scoped)")
    scoped: bool = Field(description="Limited to its namespaces")
    namespaces: list[NamespaceView]
