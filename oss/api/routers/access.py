"""`GET /api/v1/access`: what the token may see and do (docs/design/access.md)."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel, Field

from oss.api.auth import Reader
from oss.api.schemas import error_responses
from oss.settings import Role

router = APIRouter(prefix="/api/v1", tags=["access"])


class NamespaceView(BaseModel):
    name: str
    role: Role
    task_types: list[str] = Field(description="Empty: any task type")
    labels: dict[str, str] = Field(description="Every pair a task must have")


class AccessView(BaseModel):
    name: str
    role: Role = Field(description="The highest role it has (on every task when not scoped)")
    scoped: bool = Field(description="Limited to its namespaces")
    namespaces: list[NamespaceView]


@router.get("/access", response_model=AccessView, summary="What this token may see and do",
            responses=error_responses(401))  # fmt: skip
def access(token: Reader) -> AccessView:
    namespaces = [NamespaceView(name=ns.name, role=ns.role, task_types=sorted(ns.task_types), labels=dict(ns.labels))
                  for ns in token.scope or ()]  # fmt: skip
    return AccessView(name=token.name, role=token.role, scoped=token.scope is not None, namespaces=namespaces)
