"""The API's bearer token, kept out of every repr, str, log line and error this client makes."""

from __future__ import annotations

from collections.abc import Generator
from typing import NoReturn

import httpx


class Token:
    """A token from BATON_API_TOKENS. Shown as `Token('***')`; `reveal()` is the one way to it."""

    __slots__ = ("_value",)

    def __init__(self, value: str):
        if not isinstance(value, str) or not value.strip():
            raise ValueError("the API token is empty")
        if any(ord(c) < 33 or ord(c) == 127 for c in value):
            raise ValueError("the API token holds a space or a control character")  # never the token itself
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Token('***')"

    __str__ = __repr__

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Token) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __reduce__(self) -> NoReturn:  # pickling would write it out in full
        raise TypeError("a Token is not pickled")


class BearerAuth(httpx.Auth):
    """Adds `Authorization: Bearer <token>` to each request (httpx masks it in a headers repr)."""

    def __init__(self, token: Token):
        self._token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self._token.reveal()}"
        yield request

    def __repr__(self) -> str:
        return "BearerAuth(Token('***'))"
