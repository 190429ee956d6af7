"""Drain and undrain a module over REST (operator role): `baton modules drain|undrain` does the
same. A drained module claims nothing new; its running commands finish
(docs/design/operations.md)."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Path, Request
from pydantic import BaseModel, ConfigDict

from common.store.side.drains import ModuleDrain, ModuleDrains
from common.store.side_stores import open_module_drains
from oss.api.auth import Context, SharedOperator
from oss.api.errors import ApiError
from oss.api.schemas import Reason, error_responses
from oss.services.module_drains import DrainConflict, DrainRace, UnknownModule, set_drain, shown_reason
from oss.api.parts import app_part

router = APIRouter(prefix="/api/v1", tags=["modules"])
ModuleName = Annotated[str, Path(min_length=1, max_length=128, description="A module flows.yaml names")]


class DrainAction(BaseModel):
    model_config = ConfigDict(extra="forbid")

    reason: Reason


class DrainView(BaseModel):
    module: str
    drained: bool
    actor: str
    reason: str
    since: float
    version: int


def drain_view(drain: ModuleDrain) -> DrainView:
    return DrainView(module=drain.Module, drained=drain.Drained, actor=drain.Actor, reason=shown_reason(drain),
                     since=drain.Since, version=drain.Version)


def module_drains(request: Request, context: Context) -> ModuleDrains:
    """One per app, opened on first use beside the task store."""
    return app_part(request, "module_drains", lambda: open_module_drains(context.settings.store_url, indexes="none"))


Drains = Annotated[ModuleDrains, Depends(module_drains)]


def _set(drains: ModuleDrains, context: Context, module: str, drained: bool, actor: str, reason: str) -> DrainView:
    try:
        return drain_view(set_drain(drains, context.flows.modules(), module, drained, actor, reason, context.clock(),
                                    context.settings.input_limits))  # fmt: skip
    except UnknownModule as exc:
        raise ApiError(404, str(exc), fields=[("module", str(exc))]) from exc
    except (DrainConflict, DrainRace) as exc:
        raise ApiError(409, str(exc)) from exc


@router.post("/modules/{module}/drain", response_model=DrainView, responses=error_responses(401, 403, 404, 409, 422, 503),
             summary="Drain a module: its new steps wait, its running commands finish (409: drained already)")  # fmt: skip
def drain(module: ModuleName, body: DrainAction, drains: Drains, context: Context, token: SharedOperator) -> DrainView:
    return _set(drains, context, module, True, token.name, body.reason)


@router.post("/modules/{module}/undrain", response_model=DrainView, responses=error_responses(401, 403, 404, 409, 422, 503),
             summary="Undrain a module: the steps it held go (409: not drained)")  # fmt: skip
def undrain(module: ModuleName, body: DrainAction, drains: Drains, context: Context, token: SharedOperator) -> DrainView:
    return _set(drains, context, module, False, token.name, body.reason)
