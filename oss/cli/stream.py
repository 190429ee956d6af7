"""`baton watch --api URL`: follow a task through the API's event stream instead of the store.

For an operator's laptop that reaches OSS but not the store: the API pushes each change as it
happens (GET /api/v1/tasks/{id}/events, Server-Sent Events), nothing polls from here. A dropped
connection is resumed where it stopped (Last-Event-ID).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Iterator


from common.engine.document import HistoryEvent, Task

RECONNECT_PAUSE = 1.0
MAX_RECONNECTS = 30


class StreamError(Exception):
    """The API refused the stream (no such task, a bad token): the message says which."""


def follow_stream(
    base_url: str,
    token: str,
    task_id: str,
    on_change: Callable[[Task, HistoryEvent], None],
) -> Task:
    """Call `on_change` for each history event, in order, until the task has ended; return it."""
    last_id, task, pending, failures = "", None, [], 0
    while True:
        try:
            for event, event_id, data in _events(base_url, token, task_id, last_id):
                failures = 0
                if event == "change":
                    pending.append(HistoryEvent.model_validate_json(data))
                elif event == "task":
                    task, last_id = _task(data), event_id
                    for change in pending:
                        on_change(task, change)
                    pending = []
                elif event == "end" and task is not None:
                    return task
        except _transport_errors() as exc:
            failures += 1
            if failures > MAX_RECONNECTS:
                raise StreamError(f"lost the event stream of {task_id}: {exc}") from exc
        time.sleep(RECONNECT_PAUSE)  # the stream ended (timeout) or dropped: resume after last_id


def _task(data: str) -> Task:
    """The task as the API shows it: the document's fields plus views (Attempts, ...) it adds."""
    from common.engine.document import Step

    shown = json.loads(data)
    document = {key: value for key, value in shown.items() if key in Task.model_fields}
    # A step's view adds fields of its own too (a fan-out's ItemCounts): the document has none.
    document["Steps"] = [{k: v for k, v in step.items() if k in Step.model_fields} for step in document.get("Steps", [])]
    return Task.model_validate(document)


def _events(base_url: str, token: str, task_id: str, last_id: str) -> Iterator[tuple[str, str, str]]:
    import httpx
    headers = {"Authorization": f"Bearer {token}", "Accept": "text/event-stream"}
    if last_id:
        headers["Last-Event-ID"] = last_id
    url = f"{base_url.rstrip('/')}/api/v1/tasks/{task_id}/events"
    with httpx.stream("GET", url, headers=headers, timeout=httpx.Timeout(10.0, read=60.0)) as response:
        if response.status_code != 200:
            response.read()
            try:
                message = response.json()["error"]["message"]
            except (ValueError, KeyError, TypeError):
                message = response.text[:200]
            raise StreamError(f"{response.status_code}: {message}")
        fields: dict[str, str] = {}
        for line in response.iter_lines():
            if line.startswith(":"):
                continue
            if line:
                name, _, value = line.partition(": ")
                fields[name] = value
                continue
            if "data" in fields:
                yield fields.get("event", "message"), fields.get("id", ""), fields["data"]
            fields = {}


__all__ = ["StreamError", "follow_stream"]


def _transport_errors() -> type[Exception]:
    import httpx

    return httpx.TransportError
