"""The task types flows.yaml defines: steps, rollbacks, timeouts and parameter schemas."""

from __future__ import annotations

from fastapi import APIRouter

from oss.api.access import may_see_type
from oss.api.auth import Context, Reader
from oss.api.errors import ApiError
from oss.api.schemas import TaskTypeList, TaskTypeView, error_responses
from oss.api.views import task_type_view

router = APIRouter(prefix="/api/v1", tags=["task types"])


@router.get("/task-types", response_model=TaskTypeList, summary="Every task type",
            responses=error_responses(401))  # fmt: skip
def list_task_types(context: Context, token: Reader) -> TaskTypeList:
    return TaskTypeList(items=[task_type_view(f) for name, f in context.flows.task_types.items()
                               if may_see_type(token, name)])  # a scoped token: the types its namespaces hold


@router.get("/task-types/{name}", response_model=TaskTypeView, summary="One task type",
            responses=error_responses(401, 404, 422))  # fmt: skip
def get_task_type(name: str, context: Context, token: Reader) -> TaskTypeView:
    if name not in context.flows or not may_see_type(token, name):
        raise ApiError(404, "no such task type")  # the name asked for is not echoed
    return task_type_view(context.flows.get(name))
