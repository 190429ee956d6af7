"""A task's changes as they happen: `GET /api/v1/tasks/{id}/events`, Server-Sent Events.

Every event of the task's history is sent once, in order, as an event `change` (claimed,
step_succeeded, rollback_failed, cancelled ...: who, when, which step), followed by an event
`task` with the whole task as the API shows it (secrets masked). Changes that come faster than
the server looks are all sent (from the history), with one `task` after them. A `for_each` step
kept over item records changes its items without changing the task: while its items run, an
event `progress` carries its counts by state whenever they changed since the last one sent
(`{Step, Name, ItemCount, ItemCounts}`; one grouped count per such step and look;
docs/design/item-records.md, "Views and limits"); the task's own events and the step-level ones
still come as `change`, and a `task` again when a module drain holds or lets go such items (its
`WaitingFor`). The stream ends with `end` once the task is final and its outbox empty, or with
`timeout` after `timeout` seconds. Event ids are "<version>.<history length>": a client that
reconnects with `Last-Event-ID` gets only what came after. The server looks at the task every
BATON_EVENT_POLL_SECONDS: the client does not poll, and one stream costs one read by id per period.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator
from typing import Annotated

from fastapi import APIRouter, Header, Query, Request
from fastapi.responses import StreamingResponse
from starlette.concurrency import run_in_threadpool

from common.errors import UnreadableTask
from common.engine.views import counts_view, held_view, keeps_records, records_counts, settled, with_full_history
from common.engine.document import Task, WaitCondition
from common.store.items.port import ItemStore
from oss.api.access import read_visible
from oss.api.scoped_views import view_shown
from oss.api.auth import Context, Reader
from oss.api.query import ASCII_NUMBER
from oss.api.schemas import error_responses
from oss.api.views import task_view
from oss.services.item_views import item_runs

router = APIRouter(prefix="/api/v1", tags=["tasks"])
KEEP_ALIVE_SECONDS = 15.0
EVENT_ID = r"^[0-9]{1,19}\.[0-9]{1,19}$"  # "<version>.<history length>", as the stream sends them  # a comment line, so proxies do not close an idle stream


def _resume_point(last_event_id: str | None) -> tuple[int, int]:
    """(version, history events) a reconnecting client has seen; (-1, 0) for a new client."""
    version, _, events = (last_event_id or "").partition(".")
    # ASCII digits only: "²".isdigit() is true, and int("²") raises.
    if version.isascii() and events.isascii() and version.isdigit() and events.isdigit():
        return int(version), int(events)
    return -1, 0


def sse(event: str, data: str, event_id: str | None = None) -> str:
    head = f"id: {event_id}\n" if event_id is not None else ""
    return f"{head}event: {event}\ndata: {data}\n\n"


def progress_events(task: Task, items: ItemStore, counted: dict[int, tuple[int, dict[str, int]]]) -> list[dict]:
    """The counts of each step over records that changed since `counted` (updated in place).
    A step is counted while its items run, and once more after each change of the task (its
    last items settled, its rollback started): a settled step is not read again."""
    found = []
    for cursor, step in enumerate(task.Steps):
        if not keeps_records(step):
            continue
        version, sent = counted.get(cursor, (-1, None))
        if not step.ItemsOpen and version == task.Version:
            continue
        counts = counts_view(records_counts(step, items.count_by_state(task.TaskId, task.Generation, cursor)))
        counted[cursor] = (task.Version, counts)
        if counts != sent:
            found.append({"Step": cursor, "Name": step.Name, "ItemCount": step.ItemCount, "ItemCounts": counts})
    return found


def _wait_doc(wait: WaitCondition | None) -> dict | None:
    return None if wait is None else wait.model_dump(mode="json")


def _wait_changed(task: Task, items: ItemStore, shown: list[dict | None], now: float) -> bool:
    """Whether the task's `WaitingFor` moved without a change of the task: a drain holds, or
    lets go, an item kept in a record of its own (one small page per step whose items run), or
    a delayed start came due."""
    if not shown:
        return False
    runs = item_runs(task, items) if any(keeps_records(step) and step.ItemsOpen for step in task.Steps) else []
    return _wait_doc(task.WaitingFor or held_view(task, now, runs).wait) != shown[0]


def _ended(task: Task) -> bool:
    return settled(task)


@router.get(
    "/tasks/{task_id}/events",
    summary="A task's changes as Server-Sent Events, until it ends",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}},
                     "description": "events `change`, `task` and `progress`, then `end` or `timeout`"},
               **error_responses(401, 404, 422, 503)},  # fmt: skip
)
async def task_events(
    task_id: str,
    request: Request,
    context: Context,
    token: Reader,
    timeout: Annotated[float, Query(gt=0, le=3600, description="End the stream after this many seconds"), ASCII_NUMBER] = 600,
    # `str`, not `str | None`: a header is absent or a string, never null (a null in the schema
    # would have clients send the text "null").
    last_event_id: Annotated[str, Header(max_length=40, pattern=EVENT_ID,
                                         description="Resume after this event id")] = None,  # type: ignore[assignment]  # fmt: skip
) -> StreamingResponse:
    # 404 for a missing id, or one outside the token's namespaces (a task's type and labels never change)
    task = await run_in_threadpool(read_visible, context.store, token, task_id)
    seen_version, seen_events = _resume_point(last_event_id)
    poll = context.settings.event_poll_seconds

    counted: dict[int, tuple[int, dict[str, int]]] = {}  # cursor -> (task version, counts sent)
    shown_wait: list[dict | None] = []  # the WaitingFor the last `task` event showed

    async def stream(current: Task | None) -> AsyncIterator[str]:
        nonlocal seen_version, seen_events
        started, quiet_since = time.monotonic(), time.monotonic()
        while True:
            if current is not None and context.items is not None:
                for progress in await run_in_threadpool(progress_events, current, context.items, counted):
                    quiet_since = time.monotonic()
                    yield sse("progress", json.dumps(progress))
            moved = current is not None and current.Version > seen_version
            if current is not None and not moved and context.items is not None:
                moved = await run_in_threadpool(_wait_changed, current, context.items, shown_wait, context.clock())
            if current is not None and moved:
                full = await run_in_threadpool(with_full_history, context.store, current)
                shown = task_view(full, context.clock(), items=context.items)
                if token.scope is not None:  # the other tasks it names, only those in scope
                    shown = await run_in_threadpool(view_shown, context.store, token, shown)
                for event in shown.History[seen_events:]:
                    yield sse("change", event.model_dump_json())
                seen_version, seen_events = current.Version, len(shown.History)
                shown_wait[:] = [_wait_doc(shown.WaitingFor)]
                quiet_since = time.monotonic()
                yield sse("task", shown.model_dump_json(), f"{seen_version}.{seen_events}")
            if current is not None and _ended(current):
                yield sse("end", json.dumps({"TaskStatus": int(current.TaskStatus)}))
                return
            if time.monotonic() - started >= timeout:
                yield sse("timeout", json.dumps({"seconds": timeout}))
                return
            if time.monotonic() - quiet_since >= KEEP_ALIVE_SECONDS:
                quiet_since = time.monotonic()
                yield ": still here\n\n"
            if await request.is_disconnected():
                return
            await asyncio.sleep(poll)
            try:
                current = await run_in_threadpool(context.store.get, task_id)
            except UnreadableTask as exc:  # its document broke meanwhile: say so, end the stream
                yield sse("end", json.dumps({"error": "unreadable_task", "reason": exc.reason}))
                return

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(stream(task), media_type="text/event-stream", headers=headers)
