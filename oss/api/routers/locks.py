"""Per-key locks over REST (DESIGN.md sec. 10): every busy key, who holds it, who waits, in the
order they will be granted. `baton locks` shows the same."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request

from common.input_limits import NO_CONTROL_PATTERN
from common.store.side_stores import open_lock_store
from common.store.locks_table import LockTable
from oss.api.auth import Context, Reader
from oss.api.query import ASCII_INT
from oss.api.schemas import error_responses
from oss.lock_views import LockList, lock_view

router = APIRouter(prefix="/api/v1", tags=["locks"])


def lock_table(request: Request, context: Context) -> LockTable:
    """One per app, opened on first use beside the task store."""
    state = request.app.state
    if getattr(state, "locks", None) is None:
        state.locks = LockTable(open_lock_store(context.settings.store_url, indexes="none"))
    return state.locks  # type: ignore[no-any-return]


Locks = Annotated[LockTable, Depends(lock_table)]


@router.get("/locks", response_model=LockList, summary="Busy lock keys, their holders and waiters",
            responses=error_responses(401, 503))  # fmt: skip
def list_locks(
    locks: Locks,
    token: Reader,
    key: Annotated[str | None, Query(min_length=1, max_length=256, pattern=NO_CONTROL_PATTERN, description="Only this key")] = None,
    limit: Annotated[int, Query(ge=1, le=1000), ASCII_INT] = 100,
) -> LockList:
    found = [locks.get(key)] if key is not None else locks.list_locks(limit=limit)
    return LockList(items=[lock_view(lock) for lock in found if lock is not None and not lock.idle])
