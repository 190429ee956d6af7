"""A busy lock key as the API (GET /api/v1/locks) and `baton locks` show it: holders since when,
waiters in the order they will be granted."""

from __future__ import annotations

from pydantic import BaseModel, Field

from common.engine.document import KeyLock
from common.engine.changes import line_of


_MODE = "Its lock mode: exclusive (a lock naming none) or one of flows.yaml's lock_modes"


class HolderView(BaseModel):
    task_id: str
    mode: str = Field(description=_MODE)
    since: float = Field(description="When it took the lock (epoch seconds)")


class WaiterView(BaseModel):
    task_id: str
    mode: str = Field(description=_MODE)
    priority: int
    submitted_at: float
    since: float = Field(description="When it joined the line (epoch seconds)")


class LockView(BaseModel):
    key: str
    limit: int = Field(description="How many tasks may hold the key at once")
    holders: list[HolderView]
    waiters: list[WaiterView] = Field(description="In the order they will be granted: priority, then submission; "
                                      "the first that cannot share the key with the holders holds back the rest")


class LockList(BaseModel):
    items: list[LockView]


def lock_view(lock: KeyLock) -> LockView:
    return LockView(
        key=lock.Key, limit=lock.Limit,
        holders=[HolderView(task_id=h.TaskId, mode=h.Mode, since=h.Since) for h in lock.Holders],
        waiters=[WaiterView(task_id=w.TaskId, mode=w.Mode, priority=w.Priority, submitted_at=w.Seq, since=w.Since)
                 for w in line_of(lock)],
    )
