"""The request body limit, enforced on the raw bytes before anything parses them.

A declared Content-Length over the limit is answered 413 at once, unread. A body without one
(chunked transfer encoding) is counted as it arrives, and reading stops with 413 the moment the
count passes the limit: a client cannot make the server buffer more than the limit either way.
"""

from __future__ import annotations

from typing import Any

from starlette.exceptions import HTTPException
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from oss.api.errors import ApiError, error_response


class BodyTooLarge(HTTPException):
    # An HTTPException, so FastAPI's body reader passes it on untouched (it turns any other
    # exception from reading the body into a 400) and the error handlers answer 413.
    def __init__(self, limit: int):
        super().__init__(413, f"the request body is larger than {limit} bytes")


class BodyLimit:
    def __init__(self, app: ASGIApp, max_bytes: int):
        self.app = app
        self.max_bytes = max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        declared = _content_length(scope)
        if declared is not None and declared > self.max_bytes:
            await self._too_large(scope, receive, send)
            return
        seen = 0
        started = False

        async def counted_receive() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.max_bytes:
                    raise BodyTooLarge(self.max_bytes)
            return message

        async def tracked_send(message: Message) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, counted_receive, tracked_send)
        except BodyTooLarge:
            # Read by something other than a route's body parser: answer here if we still can.
            if started:
                raise
            await self._too_large(scope, receive, send)

    async def _too_large(self, scope: Scope, receive: Receive, send: Send) -> None:
        response = error_response(ApiError(413, f"the request body is larger than {self.max_bytes} bytes"))
        response.headers["Connection"] = "close"  # the rest of the body is never read
        await response(scope, receive, send)


def _content_length(scope: Scope) -> int | None:
    headers: Any = scope.get("headers") or []
    for name, value in headers:
        if name == b"content-length":
            # bytes.isdigit() is ASCII only; int() alone would take " 12" and "1_000" too.
            return int(value) if value.isdigit() else None  # the server rejects a malformed length itself
    return None
