"""Bearer tokens from configuration (OssSettings.tokens) and their roles: read, submit, operator.

401 when the token is missing or unknown (with `WWW-Authenticate: Bearer`), 403 when a token's
role is below what the route needs (a read token creating a task or cancelling one). Tokens are compared in constant time, all of them every time,
so the answer's timing does not tell how much of a guess was right.
"""

from __future__ import annotations

import hmac
from collections.abc import Awaitable, Callable
from typing import Annotated

from fastapi import Depends
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer

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
    context: Annotated[ApiContext, Depends(get_context)],
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(bearer)],
) -> ApiToken:
    token = find_token(context.tokens, credentials.credentials) if credentials else None
    if token is None:
        raise ApiError(401, "a valid bearer token is required", headers={"WWW-Authenticate": "Bearer"})
    return token


def _needs(role: Role) -> Callable[[ApiToken], Awaitable[ApiToken]]:
    async def check(token: Annotated[ApiToken, Depends(reader)]) -> ApiToken:
        if not token.may(role):
            raise ApiError(403, f"{token.name} has the {token.role} role; this needs {role}")
        return token

    return check


Reader = Annotated[ApiToken, Depends(reader)]
Submitter = Annotated[ApiToken, Depends(_needs("submit"))]
Operator = Annotated[ApiToken, Depends(_needs("operator"))]
Context = Annotated[ApiContext, Depends(get_context)]
