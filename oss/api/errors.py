"""Every error answered in one JSON shape, and no input able to produce a bare 500:

    {"error": {"code": "not_found", "message": "no task 42", "fields": []}}

`fields` lists (path, message) for a 422. FastAPI's own 422 handler echoes each offending value
back (`input`), which would return a secret to whoever sent it (and to every proxy log); ours
keeps only where and what. An unexpected exception is logged and answered 500 in the same shape
(the tests make sure no input reaches that branch).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from typing import Any

import structlog
from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from starlette.exceptions import HTTPException as StarletteHTTPException

from common.errors import (
    ActionForbidden,
    ActionRefused,
    BrokerError,
    Frozen,
    IdempotencyConflict,
    InvalidInput,
    InvalidParameters,
    StoreError,
    StoreRefused,
    UnknownAwaitedTask,
    UnknownStepAction,
    UnknownTask,
    UnknownTaskType,
    UnreadableTask,
)
from common.spec.problems import format_path
from common.input_limits import printable
from common.logging import exception_summary

log = structlog.get_logger(__name__)

_CODES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    410: "gone",
    413: "payload_too_large",
    415: "unsupported_media_type",
    422: "invalid_request",
    429: "too_many_requests",
    503: "unavailable",
}
NOT_JSON = ("body", "must be a JSON document")


class ApiError(Exception):
    def __init__(
        self,
        status: int,
        message: str,
        *,
        code: str | None = None,
        fields: Sequence[tuple[str, str]] = (),
        headers: dict[str, str] | None = None,
    ):
        super().__init__(message)
        self.status, self.message, self.fields, self.headers = status, message, fields, headers
        self.code = code or _CODES.get(status, "error")


def error_response(error: ApiError) -> JSONResponse:
    # printable(): a message quoting input that is not valid Unicode must still encode, or the
    # answer about a bad request would itself fail with a 500.
    body = {
        "error": {
            "code": error.code,
            "message": printable(error.message),
            "fields": [{"path": printable(path), "message": printable(message)} for path, message in error.fields],
        }
    }
    return JSONResponse(body, status_code=error.status, headers=error.headers)


def install_error_handlers(app: FastAPI, before_validation: Callable[[Request], None] = lambda _r: None) -> None:
    """`before_validation`: what a request must pass before any 422 about its form (the token)."""

    def handle(exc_type: type[BaseException], to_error: Any) -> None:
        async def handler(_request: Request, exc: Any) -> JSONResponse:
            return error_response(to_error(exc))

        app.add_exception_handler(exc_type, handler)

    async def invalid(request: Request, exc: Any) -> JSONResponse:
        # A body that is not JSON is refused before the route's dependencies ran (the token's).
        try:
            before_validation(request)
        except ApiError as error:
            return error_response(error)
        return error_response(_validation_error(exc))

    handle(ApiError, lambda e: e)
    app.add_exception_handler(RequestValidationError, invalid)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    handle(UnknownTask, lambda e: ApiError(404, str(e)))
    handle(UnknownAwaitedTask, lambda e: ApiError(404, "the task to wait for does not exist", code="not_found",
                                                  fields=e.errors))  # fmt: skip
    handle(ActionRefused, lambda e: ApiError(409, str(e)))
    handle(ActionForbidden, lambda e: ApiError(403, str(e)))
    handle(UnknownStepAction, lambda e: ApiError(404, str(e), fields=[(e.field, str(e))]))
    handle(Frozen, lambda e: ApiError(409, str(e), code="frozen", fields=[("task_type", f"frozen by window {e.window}")]))
    handle(InvalidInput, lambda e: ApiError(
        422, "the request breaks the input limits", code="invalid_input", fields=e.errors))  # fmt: skip
    handle(IdempotencyConflict, lambda e: ApiError(
        409, str(e), code="idempotency_conflict",
        fields=[(name, "differs from the request that created the task") for name in e.fields]))  # fmt: skip
    handle(UnreadableTask, lambda e: ApiError(409, f"{e}; an alarm was raised", code="unreadable_task"))
    handle(InvalidParameters, lambda e: ApiError(
        422, "the parameters do not fit the task type", code="invalid_parameters", fields=e.errors))  # fmt: skip
    handle(UnknownTaskType, lambda e: ApiError(
        422, "unknown task type", code="unknown_task_type", fields=[("task_type", str(e))]))  # fmt: skip
    handle(StoreError, lambda e: _unavailable("store", e))
    # The data itself cannot be stored (too large, too deep...): retrying cannot help, so not 503.
    handle(StoreRefused, lambda e: ApiError(422, str(e), code="refused_by_store"))
    handle(BrokerError, lambda e: _unavailable("broker", e))
    handle(Exception, _internal)


async def _http_error(request: Request, exc: StarletteHTTPException) -> JSONResponse:
    headers = dict(getattr(exc, "headers", None) or {})
    if exc.status_code == 405 and (methods := allowed_methods(request)) is not None:
        # Starlette names only the methods of the first route that matched the path; a path
        # served by two routes (GET and POST /tasks) must name both, as the document does.
        headers["Allow"] = ", ".join(methods)
    if exc.status_code == 400:
        # FastAPI's answer to a body it cannot decode (bytes that are not UTF-8 JSON): the same
        # 422 as a body that is JSON but not valid, so every operation has one answer for it.
        return error_response(ApiError(422, "the request is not valid", fields=[NOT_JSON]))
    return error_response(ApiError(exc.status_code, str(exc.detail), headers=headers or None))


def allowed_methods(request: Request) -> list[str] | None:
    """The methods the OpenAPI document lists for the request's path (None: not in it)."""
    path = request.scope.get("path", "")
    for template, item in request.app.openapi()["paths"].items():
        if re.fullmatch(re.sub(r"\\\{[^/]+?\\\}", "[^/]+", re.escape(template)), path):
            return sorted(method.upper() for method in item)
    return None


def _validation_error(exc: RequestValidationError) -> ApiError:
    fields = [_field(error) for error in exc.errors()]
    return ApiError(422, "the request is not valid", fields=fields[:100])


def _field(error: dict[str, Any]) -> tuple[str, str]:
    if error.get("type") == "json_invalid":
        return NOT_JSON
    loc = list(error.get("loc") or ())
    if loc and loc[0] == "body":  # body fields are named as in the body: "parameters.cpu"
        loc = loc[1:]
    message = str(error.get("msg", "is not valid")).removeprefix("Value error, ")
    if loc and loc[-1] == "[key]":  # pydantic's marker for a mapping key that is wrong
        loc, message = loc[:-1], f"key: {message}"
    path = format_path(tuple(p if isinstance(p, (str, int)) else str(p) for p in loc))
    return (path if len(path) <= 200 else path[:199] + "…"), message


def _unavailable(what: str, exc: Exception) -> ApiError:
    log.warning(f"{what} unavailable", error=str(exc))
    return ApiError(503, f"the {what} cannot be reached; try again later", code=f"{what}_unavailable")


def _internal(exc: Exception) -> ApiError:
    # The exception's text may quote the input (a pydantic error does): log where, not what.
    log.error("unexpected error", error=type(exc).__name__, where=exception_summary(exc))
    return ApiError(500, "internal error", code="internal")
