"""The parts a router opens on first use, beside the task store (the hosts service, the lock
table, the module registry, ...): one of each per app, kept on `app.state` under its name, and
closed when the app stops (a request after that opens it again, and it is never closed)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from fastapi import Request

Part = TypeVar("Part")
_OPENED = "opened_parts"  # on app.state: the names of the parts opened, in order


def app_part(request: Request, name: str, open_part: Callable[[], Part]) -> Part:
    """The app's part `name`, opened now by `open_part` when it is not open yet."""
    state = request.app.state
    if getattr(state, name, None) is None:
        setattr(state, name, open_part())
        opened: list[str] = getattr(state, _OPENED, [])
        setattr(state, _OPENED, [*opened, name] if name not in opened else opened)
    return getattr(state, name)  # type: ignore[no-any-return]


def opened_part(state: Any, name: str) -> Any | None:
    """The app's part `name` if a request has opened it already, else None (nothing is opened)."""
    return getattr(state, name, None)


def close_parts(state: Any) -> None:
    """Close every part opened on first use (the app's end)."""
    for name in getattr(state, _OPENED, []):
        if getattr(state, name, None) is not None:
            getattr(state, name).close()
            setattr(state, name, None)
