"""Bearer tokens from configuration (OssSettings.tokens) and their roles: read, submit, operator.

401 when the token is missing or unknown (with `WWW-Authenticate: Bearer`), 403 when a token's
role is below what the route needs (a read token creating a task or cancelling one). Tokens are compared in constant time, all of them every time,
so the answer's timing does not tell how much of a guess was right.

The token is judged before anything else of the request: a caller without a valid one learns
nothing of what the route takes (a 422 naming a query parameter or a body field would tell).
authenticate_first() does it for the checks that run before the route's own dependencies: the
refusal of unknown query parameters, and a body that is not JSON.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends, Request
from fastapi.dependencies.models import Dependant
from fastapi.routing import APIRoute
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from fastapi.security.utils import get_authorization_scheme_param

from oss.api.context import ApiContext, get_context
from oss.api.errors import ApiError
from oss.settings import ApiToken, Role

bearer = HTTPBearer(auto_error=False, description="A token from BATON_API_TOKENS")


def find_token(tokens: tuple[ApiToken, ...], presented: str) -> ApiToken | None:
    given = presented.encode("utf-8", "surrogateescape")
    found = None
    for token in tokens:
        if hmac.compare_digest(token.token.encode(), given):
            found = token
    return found


# The dependencies here do no I/O, so they are `async def`: FastAPI runs a plain `def` dependency
# in its thread pool, a hand-over each way per dependency and request, and three of them per
# request (context, token, role) cost more CPU than the token checks themselves.
async def reader(
    request: Request,
    context: Annotated[ApiContext, Depends(get_context)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> ApiToken:
    judged: ApiToken | None = getattr(request.state, "baton_token", None)  # by authenticate_first
    return judged or _valid(context, credentials.credentials if credentials else None)


def _valid(context: ApiContext, presented: str | None) -> ApiToken:
    token = find_token(context.tokens, presented) if presented is not None else None
    if token is None:
        raise ApiError(401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"})
    return token


def _may(token: ApiToken, role: Role) -> ApiToken:
    if not token.may(role):
        raise ApiError(403, f"{token.name} has the {token.role} role; this needs {role}")
    return token


def _needs(role: Role) -> Callable[[ApiToken], Awaitable[ApiToken]]:
    async def check(token: Annotated[ApiToken, Depends(reader)]) -> ApiToken:
        return _may(token, role)

    check.baton_role = role  # type: ignore[attr-defined]  (read by needed_role)
    return check


reader.baton_role = "read"  # type: ignore[attr-defined]


def route_role(route: APIRoute) -> Role | None:
    """needed_role of the route, kept on it: its dependencies never change (walked once)."""
    if not hasattr(route, "baton_role"):
        route.baton_role = needed_role(route.dependant)  # type: ignore[attr-defined]
    return route.baton_role  # type: ignore[attr-defined,no-any-return]


def needed_role(dependant: Dependant) -> Role | None:
    """The highest role the route's dependencies ask for (None: an open route)."""
    roles = [getattr(dependant.call, "baton_role", None)] + [needed_role(d) for d in dependant.dependencies]
    order: list[Role] = ["read", "submit", "operator"]
    asked = [role for role in roles if role is not None]
    return max(asked, key=order.index) if asked else None


def authenticate_first(request: Request) -> None:
    """401 or 403 as the route's own dependencies would answer, before any other check."""
    route = request.scope.get("route")
    role = route_role(route) if isinstance(route, APIRoute) else None
    if role is None:
        return
    scheme, presented = get_authorization_scheme_param(request.headers.get("Authorization"))
    context: ApiContext = request.app.state.baton
    token = _valid(context, presented if scheme.lower() == "bearer" and presented else None)
    request.state.baton_token = _may(token, role)  # the route's own dependencies take it from here


def _every_task(token: ApiToken) -> ApiToken:
    if token.scope is not None:
        raise ApiError(403, f"{token.name} is limited to namespaces; this needs a token of every task")
    return token


async def _every_task_operator(token: Annotated[ApiToken, Depends(_needs("operator"))]) -> ApiToken:
    """Hosts and modules are every team's: a token limited to namespaces reads them and changes
    none (docs/design/access.md)."""
    return _every_task(token)


async def every_task_reader(token: Annotated[ApiToken, Depends(reader)]) -> ApiToken:
    """What counts every team's tasks (a private /metrics): not for a token limited to namespaces."""
    return _every_task(token)


Reader = Annotated[ApiToken, Depends(reader)]
Submitter = Annotated[ApiToken, Depends(_needs("submit"))]
Operator = Annotated[ApiToken, Depends(_needs("operator"))]
SharedOperator = Annotated[ApiToken, Depends(_every_task_operator)]  # changes what every team shares
Context = Annotated[ApiContext, Depends(get_context)]
