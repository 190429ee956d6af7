"""A route with a fast path for its common request, beside FastAPI's own handler.

For every request FastAPI solves the route's dependencies (a walk of the dependency tree, a
cache key per node, the body field's validation with its error bookkeeping) before the endpoint
runs, a large part of a submission's CPU. A LeanRoute first asks its `lean` function for the
endpoint's arguments; `lean` builds them itself for a request it can judge whole (a valid
token, a JSON body that validates, no query) and answers None for any other. Then FastAPI's
own handler runs, unchanged: every refusal (401, 403, 422 naming the field, 413) comes from one
place, in the same words, and the OpenAPI document is FastAPI's, from the endpoint's declared
signature.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.concurrency import run_in_threadpool

Lean = Callable[[Request], Awaitable[dict[str, Any] | None]]


class LeanRoute(APIRoute):
    """Subclass it with `lean` set (a class attribute: FastAPI builds route objects itself).
    The endpoint is a plain `def` that returns a Response (its body already encoded): the fast
    path neither validates nor serialises the answer against the response model."""

    lean: Lean

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        standard = super().get_route_handler()  # also what an included router's copy runs
        endpoint = self.endpoint
        lean = type(self).lean

        async def handler(request: Request) -> Response:
            arguments = await lean(request)
            if arguments is None:
                return await standard(request)  # the body read so far is cached on the request
            answer = await run_in_threadpool(endpoint, **arguments)
            if not isinstance(answer, Response):
                raise TypeError(f"{endpoint.__name__} must return a Response on a LeanRoute")
            return answer

        return handler
