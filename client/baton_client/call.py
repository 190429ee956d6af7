"""One API call as a value: the request it makes and how its answer is read.

Every call is defined once (baton_client/calls/), as a function returning a `Call`; `endpoint`
makes it a method of both clients: read from a BatonClient it sends the call and returns the
answer, read from an AsyncBatonClient it returns a coroutine of the answer. Building a call
does no I/O, so the definitions are the same for both.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import TYPE_CHECKING, Any, Generic, ParamSpec, TypeVar, cast, overload
from urllib.parse import quote

from pydantic import BaseModel

from baton_client.errors import error_for_answer
from baton_client.models._base import Request

if TYPE_CHECKING:
    from baton_client.async_client import AsyncBatonClient
    from baton_client.sync_client import BatonClient

T = TypeVar("T")
P = ParamSpec("P")
QueryValue = str | int | float | bool | datetime | Sequence[str] | None


@dataclass(frozen=True)
class Call(Generic[T]):
    method: str
    path: str  # its ids already quoted (segment())
    # What the answer is read as: a model (validated), str (the body as text) or None (no body).
    answer: type[BaseModel] | type[str] | None
    params: Mapping[str, QueryValue] = field(default_factory=dict)
    body: Request | None = None
    # May be sent again after a 503 or a lost answer (baton_client.retries says when).
    safe: bool = False
    ok: frozenset[int] = frozenset({200})  # the statuses whose body is the answer
    unwrap: str | None = None  # the answer's field the caller gets (a list's `items`)

    def query(self) -> tuple[tuple[str, str], ...]:
        """The query string's pairs: None left out, a list repeated, a bool as true/false."""
        pairs: list[tuple[str, str]] = []
        for name, value in self.params.items():
            values = value if isinstance(value, (list, tuple)) else [value]
            pairs += [(name, query_text(v)) for v in values if v is not None]
        return tuple(pairs)

    def json(self) -> dict[str, Any] | None:
        return None if self.body is None else self.body.model_dump(mode="json", exclude_none=True)

    def result(self, status: int, content: bytes) -> T:
        """The answer, or the exception the status and body say (errors.error_for_answer)."""
        if status not in self.ok:
            raise error_for_answer(status, content)
        if self.answer is None:
            return None  # type: ignore[return-value]
        if self.answer is str:
            return content.decode("utf-8")  # type: ignore[return-value]
        read = self.answer.model_validate_json(content)  # type: ignore[union-attr]
        return cast(T, getattr(read, self.unwrap) if self.unwrap else read)

    def describe(self) -> str:
        return f"{self.method} {self.path}"


def query_text(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, datetime):
        return value.isoformat()
    return str(value)


def segment(value: str | int) -> str:
    """A path segment: an id with a `/` or `?` in it stays one segment (and one id). `.` and `..`
    are written %2E: as dot segments, httpx would remove them and the call would name another
    route (the task list for `get_task(".")`). An empty one would too: ValueError."""
    text = str(value)
    if not text:
        raise ValueError("an id or name in a path is never empty")
    return "%2E" * len(text) if text in (".", "..") else quote(text, safe="")


class endpoint(Generic[P, T]):  # noqa: N801  (used as a decorator)
    """A call's definition as a method of both clients (see the module's docstring)."""

    def __init__(self, build: Callable[P, Call[T]]):
        self.build = build
        functools.update_wrapper(self, build)  # type: ignore[arg-type]

    @overload
    def __get__(self, client: None, owner: type) -> endpoint[P, T]: ...

    @overload
    def __get__(self, client: AsyncBatonClient, owner: type) -> Callable[P, Awaitable[T]]: ...

    @overload
    def __get__(self, client: BatonClient, owner: type) -> Callable[P, T]: ...

    def __get__(self, client: Any, owner: type | None = None) -> Any:
        if client is None:
            return self
        build, send = self.build, client._send

        @functools.wraps(build)
        def call(*args: P.args, **kwargs: P.kwargs) -> Any:
            return send(build(*args, **kwargs))

        return call
