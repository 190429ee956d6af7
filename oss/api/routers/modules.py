"""The modules that announced themselves (common/runtime/announce.py): which are live, with
which commands, workers and last heartbeats. `baton modules` shows the same."""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from common.queues import module_queue
from common.store.side_stores import open_module_registry
from common.store.side.modules import ModuleRegistration, ModuleRegistry, is_live
from oss.api.auth import Context, Reader
from oss.api.routers.module_drains import DrainView, Drains, drain_view
from oss.api.schemas import error_responses
from oss.api.parts import app_part, opened_part

router = APIRouter(prefix="/api/v1", tags=["modules"])


class WorkerView(BaseModel):
    worker_id: str
    version: str
    host: str
    pid: int
    started_at: float
    heartbeat_at: float
    live: bool


class ModuleView(BaseModel):
    module: str
    queue: str
    live: bool = Field(description="At least one worker renewed its heartbeat in time")
    commands: list[str] = Field(description="What its live workers serve (all workers when none is live)")
    kinds: dict[str, str] = Field(default_factory=dict, description="Each command's kind: process, thread or async")
    workers: list[WorkerView]
    drain: DrainView | None = Field(None, description="Its drain record: drained or not, by whom and why (none: never drained)")


class ModuleList(BaseModel):
    items: list[ModuleView]


_REGISTRY_PART = "module_registry"


def module_registry(request: Request, context: Context) -> ModuleRegistry:
    """One per app, opened on first use beside the task store."""
    return app_part(request, _REGISTRY_PART, lambda: open_module_registry(context.settings.store_url))


def opened_module_registry(state: Any) -> ModuleRegistry | None:
    """The app's module registry if a request opened it already (a fast path never opens it)."""
    return opened_part(state, _REGISTRY_PART)  # type: ignore[no-any-return]


Modules = Annotated[ModuleRegistry, Depends(module_registry)]


@router.get("/modules", response_model=ModuleList, summary="Modules that announced themselves, live first",
            responses=error_responses(401, 503))  # fmt: skip
def list_modules(
    registry: Modules,
    drains: Drains,
    context: Context,
    token: Reader,
    stale: Annotated[bool, Query(description="Also modules whose every worker stopped renewing")] = False,
) -> ModuleList:
    now, ttl = context.clock(), context.settings.module_ttl
    by_module: dict[str, list[ModuleRegistration]] = {}
    for registration in registry.registrations():
        by_module.setdefault(registration.Module, []).append(registration)
    records = {d.Module: drain_view(d) for d in drains.drains()}
    for drained in records.values():  # a drained module shows, its workers stopped for a deploy or not
        by_module.setdefault(drained.module, [])
    views = [_view(name, workers, now, ttl, records.get(name)) for name, workers in by_module.items()]
    shown = [v for v in views if v.live or stale or (v.drain is not None and v.drain.drained)]
    return ModuleList(items=sorted(shown, key=lambda v: (not v.live, v.module)))


def _view(module: str, registrations: list[ModuleRegistration], now: float, ttl: float,
          drain: DrainView | None) -> ModuleView:
    live = [r for r in registrations if is_live(r, now, ttl)]
    commands = sorted({c for r in (live or registrations) for c in r.Commands})
    kinds = {c: k for r in (live or registrations) for c, k in sorted(r.Kinds.items())}
    workers = [
        WorkerView(worker_id=r.WorkerId, version=r.Version, host=r.Host, pid=r.Pid, started_at=r.StartedAt,
                   heartbeat_at=r.HeartbeatAt, live=is_live(r, now, ttl))
        for r in registrations
    ]  # fmt: skip
    return ModuleView(module=module, queue=module_queue(module), live=bool(live), commands=commands, kinds=kinds,
                      workers=workers, drain=drain)
