"""What the tasks run on and around: task types, hosts, modules and their drains, locks,
schedules, and OSS's own health."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal

from baton_client.call import Call, endpoint, segment
from baton_client.models.fleet import (
    AccessView, DrainView, Health, HostList, HostView, LockList, LockView, ModuleList, ModuleView, Readiness, ScheduleList,
    ScheduleView,
)  # fmt: skip
from baton_client.models.requests import CreateSchedule, DrainAction, HostCreate
from baton_client.models.task_types import TaskTypeList, TaskTypeView

SCHEDULES = "/api/v1/schedules"
CREATED = frozenset({201})


class FleetCalls:
    @endpoint
    def list_task_types() -> Call[list[TaskTypeView]]:
        """Every task type flows.yaml defines: steps, parameter schema, version and hash."""
        return Call("GET", "/api/v1/task-types", TaskTypeList, unwrap="items", safe=True)

    @endpoint
    def get_task_type(name: str) -> Call[TaskTypeView]:
        return Call("GET", f"/api/v1/task-types/{segment(name)}", TaskTypeView, safe=True)

    @endpoint
    def list_hosts() -> Call[list[HostView]]:
        """The resource inventory: each host's capacity, use and room."""
        return Call("GET", "/api/v1/hosts", HostList, unwrap="items", safe=True)

    @endpoint
    def add_host(name: str, *, cpu: int, memory_mb: int, storage_gb: int) -> Call[HostView]:
        """Add a host; adding it again changes nothing (so it is retried)."""
        body = HostCreate(name=name, cpu=cpu, memory_mb=memory_mb, storage_gb=storage_gb)
        return Call("POST", "/api/v1/hosts", HostView, body=body, safe=True, ok=CREATED)

    @endpoint
    def drain_host(name: str) -> Call[HostView]:
        """No new reservation on this host."""
        return Call("POST", f"/api/v1/hosts/{segment(name)}/drain", HostView)

    @endpoint
    def activate_host(name: str) -> Call[HostView]:
        """Take new reservations again."""
        return Call("POST", f"/api/v1/hosts/{segment(name)}/activate", HostView)

    @endpoint
    def list_modules(*, stale: bool = False) -> Call[list[ModuleView]]:
        """The modules that announced themselves, live first (`stale`: stopped ones too), with
        their commands, workers and drain."""
        return Call("GET", "/api/v1/modules", ModuleList, unwrap="items",
                    params={"stale": stale}, safe=True)  # fmt: skip

    @endpoint
    def drain_module(module: str, reason: str) -> Call[DrainView]:
        """Hold a module's new steps for a deploy; its running commands finish."""
        return Call("POST", f"/api/v1/modules/{segment(module)}/drain", DrainView,
                    body=DrainAction(reason=reason))  # fmt: skip

    @endpoint
    def undrain_module(module: str, reason: str) -> Call[DrainView]:
        """Let the steps a drain held go."""
        return Call("POST", f"/api/v1/modules/{segment(module)}/undrain", DrainView,
                    body=DrainAction(reason=reason))  # fmt: skip

    @endpoint
    def list_locks(*, key: str | None = None, limit: int = 100) -> Call[list[LockView]]:
        """Busy lock keys (or only `key`): holders, and waiters in the order they will start."""
        return Call("GET", "/api/v1/locks", LockList, unwrap="items",
                    params={"key": key, "limit": limit}, safe=True)  # fmt: skip

    @endpoint
    def create_schedule(
        name: str, task_type: str, parameters: Mapping[str, Any] | None = None, *, cron: str | None = None,
        interval_seconds: float | None = None, timezone: str = "UTC",
        overlap: Literal["skip", "queue", "allow"] = "skip", missed: Literal["latest", "skip", "all"] = "latest",
        priority: int = 0, labels: Mapping[str, str] | None = None,
    ) -> Call[ScheduleView]:  # fmt: skip
        """A periodic task: `cron` (five fields, in `timezone`) or `interval_seconds`, one of them."""
        body = CreateSchedule(name=name, task_type=task_type, parameters=dict(parameters or {}), cron=cron,
                              interval_seconds=interval_seconds, timezone=timezone, overlap=overlap, missed=missed,
                              priority=priority, labels=dict(labels or {}))  # fmt: skip
        return Call("POST", SCHEDULES, ScheduleView, body=body, ok=CREATED)

    @endpoint
    def list_schedules(*, limit: int = 100) -> Call[list[ScheduleView]]:
        return Call("GET", SCHEDULES, ScheduleList, unwrap="items",
                    params={"limit": limit}, safe=True)  # fmt: skip

    @endpoint
    def get_schedule(schedule: str) -> Call[ScheduleView]:
        """One schedule, by id or name."""
        return Call("GET", f"{SCHEDULES}/{segment(schedule)}", ScheduleView, safe=True)

    @endpoint
    def pause_schedule(schedule: str) -> Call[ScheduleView]:
        return Call("POST", f"{SCHEDULES}/{segment(schedule)}/pause", ScheduleView)

    @endpoint
    def resume_schedule(schedule: str) -> Call[ScheduleView]:
        """The next tick is the first after now: ticks missed while paused are not run."""
        return Call("POST", f"{SCHEDULES}/{segment(schedule)}/resume", ScheduleView)

    @endpoint
    def delete_schedule(schedule: str) -> Call[None]:
        """The tasks it created stay."""
        return Call("DELETE", f"{SCHEDULES}/{segment(schedule)}", None, ok=frozenset({204}))

    @endpoint
    def access() -> Call[AccessView]:
        """What this client's token may see and do: its role, and its namespaces when scoped."""
        return Call("GET", "/api/v1/access", AccessView, safe=True)

    @endpoint
    def health() -> Call[Health]:
        """The OSS process answers (no token needed)."""
        return Call("GET", "/healthz", Health, safe=True)

    @endpoint
    def ready() -> Call[Readiness]:
        """Whether OSS's store and broker answer now: `ready` False says which failed. Never
        retried: the answer is the point."""
        return Call("GET", "/readyz", Readiness, ok=frozenset({200, 503}))

    @endpoint
    def metrics() -> Call[str]:
        """The Prometheus metrics, as text."""
        return Call("GET", "/metrics", str, safe=True)
