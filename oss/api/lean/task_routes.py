"""The fast paths (oss/api/lean/route.py) of POST /api/v1/tasks and GET /api/v1/tasks/{task_id}:
the endpoint's arguments for a request with a valid token, no query and (a submission) a JSON
body that validates as CreateTask; None for anything else, which FastAPI's own handler then
answers or refuses with its usual words."""

from __future__ import annotations

import json
from typing import Any

from fastapi import Request
from pydantic import ValidationError
from starlette.exceptions import HTTPException

from oss.api.auth import authenticate_first
from oss.api.errors import ApiError
from oss.api.lean.route import LeanRoute
from oss.api.routers.modules import opened_module_registry
from oss.api.schemas import CreateTask


async def submission_arguments(request: Request) -> dict[str, Any] | None:
    scope = request.scope
    if scope.get("query_string") or _content_type(scope) != b"application/json":
        return None  # a query is refused by name; other media types as FastAPI decides
    try:
        authenticate_first(request)  # what the route's dependencies would judge: the token, its role
    except ApiError:
        return None
    try:
        raw = await request.body()
    except HTTPException:  # the body limit's 413
        raise
    except Exception:  # as FastAPI's body reader answers it
        raise HTTPException(400, "There was an error parsing the body") from None
    try:
        # json.loads, then validation of the Python value: what FastAPI does with a JSON body,
        # so a body valid here is one FastAPI would have passed, with the same values.
        body = CreateTask.model_validate(json.loads(raw))
    except (ValueError, RecursionError, ValidationError):  # empty, broken or nested past the parser, a field refused
        return None
    return {"body": body, "context": request.app.state.baton, "token": request.state.baton_token,
            "request": request}  # fmt: skip


async def reading_arguments(request: Request) -> dict[str, Any] | None:
    state = request.app.state
    registry = opened_module_registry(state)
    if request.scope.get("query_string") or registry is None:
        return None  # the registry is opened on first use by the route's own dependency
    try:
        authenticate_first(request)
    except ApiError:
        return None
    return {"task_id": request.path_params["task_id"], "context": state.baton, "token": request.state.baton_token,
            "registry": registry}  # fmt: skip


def _content_type(scope: dict[str, Any]) -> bytes | None:
    for name, value in scope["headers"]:
        if name == b"content-type":
            return value  # type: ignore[no-any-return]
    return None


class SubmitRoute(LeanRoute):
    lean = staticmethod(submission_arguments)


class ReadRoute(LeanRoute):
    lean = staticmethod(reading_arguments)
