"""Per-key locks over REST (DESIGN.md sec. 10): every busy key, who holds it, who waits, in the
order they will be granted. `baton locks` shows the same."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query, Request
from pydantic import BaseModel, Field

from common.input_limits import NO_CONTROL_PATTERN
from common.engine.gates.locks import KeyLock
from common.store.inventory_factory import open_lock_store
from common.store.locks_table import LockTable
from oss.api.auth import Context, Reader
from oss.api.query import ASCII_INT
from oss.api.schemas import error_responses

router = APIRouter(prefix="/api/v1", tags=["locks"])


class HolderView(BaseModel):
    task_id: str
    since: float = Field(description="When it took the lock (epoch seconds)")


class WaiterView(BaseModel):
    task_id: str
    priority: int
    submitted_at: float
    since: float = Field(description="When it joined the line (epoch seconds)")


class LockView(BaseModel):
    key: str
    limit: int = Field(description="How many tasks may hold the key at once")
    holders: list[HolderView]
    waiters: list[WaiterView] = Field(description="In the order they will be granted: priority, then submission")


class LockList(BaseModel):
    items: list[LockView]


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


def lock_view(lock: KeyLock) -> LockView:
    line = sorted(lock.Waiters, key=lambda w: (-w.Priority, w.Seq))
    return LockView(
        key=lock.Key, limit=lock.Limit,
        holders=[HolderView(task_id=h.TaskId, since=h.Since) for h in lock.Holders],
        waiters=[WaiterView(task_id=w.TaskId, priority=w.Priority, submitted_at=w.Seq, since=w.Since) for w in line],
    )
