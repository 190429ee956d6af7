"""What went wrong, as one exception class per thing a caller does about it.

Every error the server answers has one shape, `{"error": {"code", "message", "fields"}}`: the
exception carries the status, the code (`idempotency_conflict`, `frozen`, `store_unavailable`...),
the server's message and the field errors (`fields`: where, and what is wrong there; the server
never echoes a value back). `error_for_answer` is pure: status and body in, exception out.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from pydantic import BaseModel, ValidationError


@dataclass(frozen=True)
class FieldError:
    path: str  # "parameters.cpu", "query.limit", "task_type"
    message: str

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


class BatonError(Exception):
    """The base of every error this client raises. `status` is the HTTP status (None when no
    answer came); `code` the server's error code (or the client's own)."""

    def __init__(self, message: str, *, status: int | None = None, code: str = "", fields: tuple[FieldError, ...] = ()):
        self.message, self.status, self.code, self.fields = message, status, code, tuple(fields)
        shown = f"{status} {code}: {message}" if status is not None else message
        if self.fields:
            shown += " (" + "; ".join(str(f) for f in self.fields) + ")"
        super().__init__(shown)


class InvalidInput(BatonError):
    """400, 413 or 422: the request is refused for its form; `fields` say where. Do not repeat it."""


class Unauthorized(BatonError):
    """401: no token, or one the server does not know."""


class Forbidden(BatonError):
    """403: the token's role may not do this (a read token cancelling a task)."""


class NotFound(BatonError):
    """404: no such task, task type, alarm, host, schedule or module."""


class Conflict(BatonError):
    """409: the request does not fit the state (cancelling a task that succeeded), an
    idempotency key reused for another request (`fields` name what differs), a frozen type."""


class Gone(Conflict):
    """410: a callback whose wait is over (it timed out, its attempt ended): nothing changed."""


class RateLimited(BatonError):
    """429: too many requests from this address (a callback's); try again later."""


class Unavailable(BatonError):
    """503 after every retry, or the server could not be reached: the store or the broker is
    down, or the network. Try again later."""


class OutcomeUnknown(Unavailable):
    """The connection broke after a request that is not safe to repeat was sent: it may or may
    not have been applied. Read the state (get_task) before acting again."""


class ServerError(BatonError):
    """Any other status: a 500 is a bug in OSS (its log says where)."""


class WaitTimeout(BatonError):
    """The task did not end (or the stream lasted) past the given timeout. The task goes on."""


class ErrorField(BaseModel):
    path: str
    message: str


class ErrorDetail(BaseModel):
    code: str
    message: str
    fields: list[ErrorField]


class ErrorBody(BaseModel):
    error: ErrorDetail


_BY_STATUS: dict[int, type[BatonError]] = {
    400: InvalidInput, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict, 410: Gone,
    413: InvalidInput, 422: InvalidInput, 429: RateLimited, 503: Unavailable,
}  # fmt: skip


def error_for_answer(status: int, body: bytes) -> BatonError:
    """The exception for an answer that is not a success: its class from the status, its code,
    message and fields from the body (an answer from a proxy, not OSS, keeps its first words)."""
    kind = _BY_STATUS.get(status, ServerError)
    try:
        detail = ErrorBody.model_validate_json(body).error
    except (ValidationError, json.JSONDecodeError, UnicodeDecodeError):
        text = body[:200].decode("utf-8", "replace").strip()
        return kind(text or "no explanation in the answer", status=status, code="")
    fields = tuple(FieldError(f.path, f.message) for f in detail.fields)
    return kind(detail.message, status=status, code=detail.code, fields=fields)
