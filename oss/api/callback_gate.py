"""The callback route's rate, checked before anything else reads the request.

The callback route needs no API token, so its rate per client address is its guard against a
flood. The check runs here, in front of the body limit, the JSON parser and the body's
validation: a flood of bodies that are too large, not JSON or invalid is answered 429 once over
the rate, and costs no parsing. The bucket itself is `oss.api.callback_rate` (pure).
"""

from __future__ import annotations

import math

from starlette.types import ASGIApp, Receive, Scope, Send

from oss.api.callback_rate import CallbackRate
from oss.api.errors import ApiError, error_response

CALLBACK_PATH = "/api/v1/callbacks/"


def limiter(app_state: object) -> CallbackRate:
    """The app's bucket, made on first use (a test may set a smaller one on `app.state`)."""
    if getattr(app_state, "callback_rate", None) is None:
        app_state.callback_rate = CallbackRate()  # type: ignore[attr-defined]
    return app_state.callback_rate  # type: ignore[attr-defined, no-any-return]


class CallbackRateGate:
    def __init__(self, app: ASGIApp):
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["method"] == "POST" and scope["path"].startswith(CALLBACK_PATH):
            state = scope["app"].state
            client = scope.get("client")
            wait = limiter(state).wait(client[0] if client else "unknown", state.baton.clock())
            if wait > 0:
                response = error_response(ApiError(429, "too many callbacks from this address; try again later",
                                                   headers={"Retry-After": str(max(1, math.ceil(wait)))}))
                await response(scope, receive, send)
                return
        await self.app(scope, receive, send)
