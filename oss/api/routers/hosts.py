"""The resource inventory's hosts over REST: list, add, drain, activate (`baton hosts` does the same)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Annotated

from fastapi import APIRouter, Depends, Path, Request
from pydantic import BaseModel, ConfigDict, Field

from oss.api.auth import Context, Reader, SharedOperator
from oss.api.errors import ApiError
from oss.api.schemas import JsonInt, error_responses
from oss.services.hosts import HostsService, resource_inventory
from oss.api.parts import app_part

if TYPE_CHECKING:
    from modules.resource.inventory import Host

router = APIRouter(prefix="/api/v1", tags=["hosts"])


class Amounts(BaseModel):
    cpu: int
    memory_mb: int
    storage_gb: int


class HostView(BaseModel):
    name: str
    state: str
    capacity: Amounts
    used: Amounts
    free: Amounts
    created_at: float


class HostList(BaseModel):
    items: list[HostView]


# The inventory's own rule, published: a name the schema allows is a name the inventory takes.
HostName = Annotated[str, Field(min_length=1, max_length=63, pattern=resource_inventory.HOST_NAME.pattern)]
HostInPath = Annotated[str, Path(min_length=1, max_length=63, pattern=resource_inventory.HOST_NAME.pattern)]


class HostCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")  # as every other request body: a typo is a 422

    name: HostName
    cpu: JsonInt = Field(ge=0, le=1_000_000)
    memory_mb: JsonInt = Field(ge=0, le=1_000_000_000)
    storage_gb: JsonInt = Field(ge=0, le=1_000_000_000)


def hosts_service(request: Request, context: Context) -> HostsService:
    """One per app, opened on first use beside the task store (as `baton hosts` does)."""
    return app_part(request, "hosts", lambda: HostsService.open(context.settings))


Hosts = Annotated[HostsService, Depends(hosts_service)]


@router.get("/hosts", response_model=HostList, summary="Hosts with their capacity, use and room",
            responses=error_responses(401, 503))  # fmt: skip
def list_hosts(hosts: Hosts, token: Reader) -> HostList:
    return HostList(items=[_view(h) for h in hosts.list()])


@router.post("/hosts", response_model=HostView, status_code=201, summary="Add a host (again: no change)",
             responses=error_responses(401, 403, 409, 422, 503))  # fmt: skip
def add_host(body: HostCreate, hosts: Hosts, token: SharedOperator) -> HostView:
    return _view(_answer(lambda: hosts.add(body.name, body.cpu, body.memory_mb, body.storage_gb)))


@router.post("/hosts/{name}/drain", response_model=HostView, summary="No new reservations on this host",
             responses=error_responses(401, 403, 404, 422, 503))  # fmt: skip
def drain_host(name: HostInPath, hosts: Hosts, token: SharedOperator) -> HostView:
    return _view(_answer(lambda: hosts.drain(name)))


@router.post("/hosts/{name}/activate", response_model=HostView, summary="Take new reservations again",
             responses=error_responses(401, 403, 404, 422, 503))  # fmt: skip
def activate_host(name: HostInPath, hosts: Hosts, token: SharedOperator) -> HostView:
    return _view(_answer(lambda: hosts.activate(name)))


def _answer(action) -> Host:  # type: ignore[no-untyped-def]
    """The inventory's own errors, as the API's answers."""
    try:
        return action()  # type: ignore[no-any-return]
    except resource_inventory.UnknownHost as exc:
        raise ApiError(404, str(exc)) from None
    except resource_inventory.HostConflict as exc:
        raise ApiError(409, str(exc)) from None
    except resource_inventory.InventoryError as exc:  # invalid input the schema did not catch
        raise ApiError(422, str(exc)) from None


def _view(host: Host) -> HostView:
    return HostView.model_validate(host.as_dict())
