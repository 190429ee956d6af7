"""Per-key locks over REST (docs/design/locks.md): every busy key, who holds it, who waits, in the
order they will be granted. `baton locks` shows the same."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Query

from common.engine.views import MAX_KEY_LENGTH
from common.errors import UnreadableTask
from common.input_limits import NO_CONTROL_PATTERN
from common.store.gates.lock.table import LockTable
from oss.api.access import sees
from oss.api.auth import Context, Reader
from oss.settings import ApiToken
from oss.api.query import ASCII_INT
from oss.api.schemas import error_responses
from oss.services.lock_views import LockList, LockView, lock_view
from oss.api.gate_tables import lock_table

router = APIRouter(prefix="/api/v1", tags=["locks"])


Locks = Annotated[LockTable, Depends(lock_table)]


@router.get("/locks", response_model=LockList, summary="Busy lock keys, their holders and waiters",
            responses=error_responses(401, 503))  # fmt: skip
def list_locks(
    locks: Locks,
    context: Context,
    token: Reader,
    key: Annotated[str | None, Query(min_length=1, max_length=MAX_KEY_LENGTH, pattern=NO_CONTROL_PATTERN, description="Only this key")] = None,
    limit: Annotated[int, Query(ge=1, le=1000), ASCII_INT] = 100,
) -> LockList:
    """A token limited to namespaces sees the locks its tasks hold or wait for, and of their
    holders and waiters only its tasks (among the first 1,000 busy keys)."""
    found = [locks.get(key)] if key is not None else locks.list_locks(limit=limit if token.scope is None else 1000)
    shown = [lock_view(lock) for lock in found if lock is not None and not lock.idle]
    return LockList(items=shown if token.scope is None else _in_scope(context, token, shown)[:limit])


def _in_scope(context: Context, token: ApiToken, shown: list[LockView]) -> list[LockView]:
    seen: dict[str, bool] = {}

    def mine(task_id: str) -> bool:
        if task_id not in seen:
            try:
                seen[task_id] = sees(token, context.store.get(task_id))
            except UnreadableTask:  # its type and labels cannot be read: not shown as its
                seen[task_id] = False
        return seen[task_id]

    kept = []
    for view in shown:
        holders = [h for h in view.holders if mine(h.task_id)]
        waiters = [w for w in view.waiters if mine(w.task_id)]
        if holders or waiters:
            kept.append(view.model_copy(update={"holders": holders, "waiters": waiters}))
    return kept
